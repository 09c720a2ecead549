"""Wall time of the quick profile's training jobs from measured per-epoch costs (docs/convergence.md).

    python benchmarks/estimate_quick.py [--seeds fig4=10 --seeds fig5=5 ...] [--add fig4:syn-pattern:acp-sg=200/1000]

Why: the quick profile must finish within 20 minutes on the 2-core machine with most of its
learning-mode runs converged, and a finished run's ``runtime_jobs.csv`` is not always at hand.
Every training job of the grid (search draws and seeds, text cells) is charged

    fixed + epochs * cpu_per_epoch

with ``cpu_per_epoch`` the CPU seconds of one epoch measured by ``benchmarks/learning_curves.py``
(process CPU time: independent of how busy the shared machine was) and ``epochs`` the measured
epochs to the early stop under the chosen defaults, capped at the cell's ``max_epochs``.  Jobs
run two at a time; the estimate is the CPU total over 2 cores.  ``--seeds`` and ``--add`` state
grid changes not yet in the config (seeds per experiment, extra methods).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "workflow"))

from noisyor_bench import grid  # noqa: E402
from noisyor_bench.config import load_config  # noqa: E402
from noisyor_bench.textexp import grid as textgrid  # noqa: E402

# dataset -> (CPU seconds per AVI/ACP epoch at N_train <= 2,560 rows, epochs to the early stop
# under the defaults with patience 10).  Epochs of >= 20 optimiser steps of 128 rows cost the
# same below 2,560 rows; above, the cost grows with N_train.  From benchmarks/results
# (learning_curves_*.csv, epoch_cost_*.csv); see docs/convergence.md.
AMORTIZED = {
    "syn-pattern": (0.06, 60),
    "syn-random-1": (0.06, 60),
    "syn-random-2": (0.07, 60),
    "syn-random-3": (0.08, 60),
    "syn-random-4": (0.5, 30),
    "syn-random-5": (0.5, 30),
    "syn-random-6": (0.6, 30),
    "syn-random-7": (0.45, 30),
    "multi-mnist": (0.6, 60),
    "neurips-titles": (0.3, 20),
    "reuters": (0.5, 20),
}
# SVI / LB-CDI learning runs (whole job, CPU seconds) per (dataset, N_train), measured with the
# quick method_budget (eval_every 5, patience 2).
CLASSICAL = {
    ("syn-pattern", 1000): 60.0,
    ("syn-random-1", 300): 20.0,
    ("syn-random-1", 30): 10.0,
}
INFERENCE_JOB = 5.0  # an inference-mode AVI/ACP job (fig3a), CPU seconds
FIXED = 4.0  # per job: interpreter + torch import, data loading, test evaluation
MIN_ROWS = 20 * 128


def amortized_job(dataset: str, n_train: int, max_epochs: int) -> float:
    per_epoch, epochs = AMORTIZED[dataset]
    return FIXED + min(epochs, max_epochs) * per_epoch * max(1.0, n_train / MIN_ROWS)


def job_cost(exp: str, mode: str, dataset: str, method: str, n_train: int, max_epochs: int) -> float:
    if mode == "inference":
        return INFERENCE_JOB if method in ("avi", "acp", "acp-sg") else FIXED + 10.0
    if method in ("avi", "acp", "acp-sg"):
        return amortized_job(dataset, n_train, max_epochs)
    return CLASSICAL.get((dataset, n_train), 120.0)


def parse_pairs(items: list[str]) -> dict[str, str]:
    return dict(item.split("=", 1) for item in items)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--config", type=Path, default=ROOT / "config" / "config.yaml")
    p.add_argument("--profile", default="quick")
    p.add_argument("--seeds", action="append", default=[], help="EXPERIMENT=N (or text=N): seeds per experiment")
    p.add_argument("--add", action="append", default=[], help="EXP:DATASET:METHOD=N1/N2: extra cells")
    p.add_argument("--cores", type=int, default=2)
    a = p.parse_args(argv)
    cfg = load_config(a.config, {"profile": a.profile})
    seeds = {k: int(v) for k, v in parse_pairs(a.seeds).items()}
    cells = [(c.experiment, c.mode, c.dataset, c.method, c.n_train) for c in grid.cells(cfg)]
    modes = {c.experiment: c.mode for c in grid.cells(cfg)}
    for key, sizes in parse_pairs(a.add).items():
        exp, dataset, method = key.split(":")
        cells += [(exp, modes[exp], dataset, method, int(n)) for n in sizes.split("/")]
    rows: dict[str, list[float]] = {}
    for exp, mode, dataset, method, n in cells:
        cell = grid.Cell(exp, dataset, "acp" if method == "acp-sg" else method, n, mode)
        draws = grid.n_draws(cfg, cell)
        n_seeds = seeds.get(exp, len(grid.seeds(cfg)))
        cost = job_cost(exp, mode, dataset, method, n, int(grid.budget(cfg, cell)["max_epochs"]))
        jobs = n_seeds + (draws if draws > 1 else 0)
        rows.setdefault(exp, [0, 0.0])
        rows[exp][0] += jobs
        rows[exp][1] += jobs * cost
    t_epochs = int(textgrid.budget(cfg)["max_epochs"])
    t_seeds = seeds.get("text", len(textgrid.seeds(cfg)))
    for c in textgrid.cells(cfg):
        key = f"text:{c.experiment}"
        rows.setdefault(key, [0, 0.0])
        per_epoch, epochs = AMORTIZED[c.dataset]
        scale = max(1.0, c.n_train / MIN_ROWS) * max(1.0, c.latents / 20)
        rows[key][0] += t_seeds
        rows[key][1] += t_seeds * (FIXED + min(epochs, t_epochs) * per_epoch * scale)
    total = sum(v[1] for v in rows.values())
    print(f"{'experiment':<28}{'jobs':>6}{'CPU s':>10}")
    for exp, (jobs, cpu) in rows.items():
        print(f"{exp:<28}{jobs:>6}{cpu:>10.0f}")
    print(f"{'total':<28}{sum(v[0] for v in rows.values()):>6}{total:>10.0f}")
    print(f"wall on {a.cores} cores: {total / a.cores / 60:.1f} min (training jobs only)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
