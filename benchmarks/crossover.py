"""Per-step time of the project's sparse and dense paths of AVI/ACP on one dataset (docs/performance.md).

    python benchmarks/crossover.py syn-random-7 acp

CPU time (``process_time``: robust to other jobs on the machine), best of 3 alternating fits of
20 steps of 128 rows; the density thresholds of ``noisyor_bench.models.noisyor.sparse`` are forced to 1 (every
batch takes the sparse path) or -1 (every batch the dense one).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "workflow"))
sys.path.insert(0, str(ROOT / "benchmarks"))

import bench  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402

import noisyor_bench.models.noisyor.sparse as sparse  # noqa: E402
from noisyor_bench.inference.fitting import FitBudget  # noqa: E402
from noisyor_bench.inference.noisyor.registry import get_method  # noqa: E402
from noisyor_bench.models.noisyor.model import NoisyOR  # noqa: E402

STEPS = 20


def main(dataset: str, method: str) -> None:
    torch.set_num_threads(1)
    x, x_val, k = bench._load(dataset, STEPS * bench.BATCH)
    shape = NoisyOR.from_numpy(np.ones((x.shape[1], k)), np.ones(x.shape[1]), np.full(k, 0.1))
    get_method(method)(shape, "learning", {}, seed=0).fit(
        x[: bench.BATCH], x_val, FitBudget(max_epochs=1)
    )  # warm-up

    def fit_seconds(threshold: float) -> float:
        sparse.SPARSE_MAX_DENSITY = sparse.LINEAR_MAX_DENSITY = threshold
        model = get_method(method)(shape, "learning", {}, seed=0)
        start = time.process_time()
        model.fit(x, x_val, FitBudget(max_epochs=1, patience=1, batch_size=bench.BATCH))
        return time.process_time() - start

    sparse_s, dense_s = [], []
    for _ in range(3):
        sparse_s.append(fit_seconds(1.0))
        dense_s.append(fit_seconds(-1.0))
    print(
        f"{dataset:14} {method} density {float(x.float().mean()):.3f}: sparse {min(sparse_s) * 1000 / STEPS:6.1f} ms/step, "
        f"dense {min(dense_s) * 1000 / STEPS:6.1f} ms/step, dense/sparse {min(dense_s) / min(sparse_s):.2f}"
    )


if __name__ == "__main__":
    main(*sys.argv[1:3])
