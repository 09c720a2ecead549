"""A tiny synthetic dataset for the run, failure and provenance tests."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from noisyor_bench.infra.io import write_npz_atomic
from noisyor_bench.models.noisyor.model import NoisyOR


def write_toy_dataset(path: Path, n_train: int = 60, n_val: int = 30, n_test: int = 40) -> Path:
    """D=10, K=3, every cause with a pixel of its own, written as ``acp-make-dataset`` would (fixed seeds)."""
    rng = np.random.default_rng(0)
    d, k = 10, 3
    theta = rng.gamma(2.0, 0.7, size=(d, k)) * (rng.random((d, k)) < 0.6)
    theta[np.arange(k), np.arange(k)] = 1.5
    mu = np.array([0.2, 0.3, 0.25])
    model = NoisyOR.from_numpy(theta, np.full(d, 0.05), mu)
    g = torch.Generator().manual_seed(1)
    arrays: dict[str, np.ndarray] = {"theta": theta, "theta0": np.full(d, 0.05), "mu": mu}
    for split, n in (("train", n_train), ("val", n_val), ("test", n_test)):
        z, x = model.sample(n, generator=g)
        arrays[f"x_{split}"] = x.numpy().astype(np.uint8)
        arrays[f"z_{split}"] = z.numpy().astype(np.uint8)
    write_npz_atomic(path, **arrays)
    return path
