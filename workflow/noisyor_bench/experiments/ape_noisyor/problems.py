"""The problem file of one family: ``results/data/ape-noisyor-<family>.npz``.

Arrays (results/README.md): ``<split>_theta`` (P, C, D, K) candidate rates (candidate 0 = the
truth), ``<split>_x`` (P, N, D) uint8 data sampled from the truth, for split in train, val,
test; ``theta0`` (D,), ``mu`` (K,) shared by every model; ``test_log_px`` (P, C, N) the exact
log-likelihood of every test row under every candidate (2^K enumeration).
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

from noisyor_bench.data.synthetic.ape_noisyor import ProblemSet, make_problems
from noisyor_bench.experiments.ape_noisyor.settings import Settings
from noisyor_bench.infra.errors import ConfigError, DataError
from noisyor_bench.infra.io import load_npz, write_npz_atomic
from noisyor_bench.models.noisyor.exact import check_enumerable, exact_log_marginal

log = logging.getLogger(__name__)
SPLITS = ("train", "val", "test")


def build_problems(settings: Settings, family: str) -> dict[str, np.ndarray]:
    """Every array of the family's problem file (module docstring)."""
    if family not in settings.families:
        raise ConfigError(
            f"ape_noisyor: unknown family {family!r}; configured: {', '.join(settings.families)}"
        )
    spec = settings.families[family]
    perturbation = float(spec["perturbation"])
    arrays: dict[str, np.ndarray] = {}
    for split in SPLITS:
        ps = make_problems(
            spec,
            split,
            settings.problems[split],
            settings.rows[split],
            settings.candidates,
            perturbation,
            settings.seed,
        )
        arrays[f"{split}_theta"], arrays[f"{split}_x"] = ps.theta, ps.x
        arrays["theta0"], arrays["mu"] = ps.theta0, ps.mu
    check_enumerable(arrays["mu"].shape[0])
    test = problem_set(arrays, "test")
    start = time.perf_counter()
    log_px = np.empty((test.n_problems, test.n_candidates, test.x.shape[1]))
    for p in range(test.n_problems):
        x = torch.as_tensor(test.x[p], dtype=torch.float64)
        for c in range(test.n_candidates):
            log_px[p, c] = exact_log_marginal(test.model(p, c), x).numpy()
    arrays["test_log_px"] = log_px
    log.info(
        "%s: exact log p(x) of %d test candidates in %.1f s",
        family,
        log_px.shape[0] * log_px.shape[1],
        time.perf_counter() - start,
    )
    return arrays


def problem_set(arrays: dict[str, np.ndarray], split: str) -> ProblemSet:
    return ProblemSet(arrays[f"{split}_theta"], arrays[f"{split}_x"], arrays["theta0"], arrays["mu"])


def write_problems(path: str | Path, arrays: dict[str, np.ndarray]) -> None:
    write_npz_atomic(path, **arrays)


def read_problems(path: str | Path) -> dict[str, Any]:
    arrays = load_npz(path)
    missing = [
        k
        for k in ("theta0", "mu", "test_log_px", *(f"{s}_{a}" for s in SPLITS for a in ("theta", "x")))
        if k not in arrays
    ]
    if missing:
        raise DataError(f"{path}: not an ape-noisyor problem file (missing {missing})")
    return arrays


__all__ = ["build_problems", "problem_set", "read_problems", "write_problems"]
