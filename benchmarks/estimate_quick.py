"""Wall time of the quick grid's training jobs from measured per-epoch costs (docs/convergence.md).

    python benchmarks/estimate_quick.py [--seeds fig4=10 --seeds fig5=5 ...] [--add fig4:syn-pattern:acp-sg=200/1000]

Why: the quick grid must finish within 20 minutes on the 2-core machine with most of its
learning-mode runs converged, and a finished run's ``runtime_jobs.csv`` is not always at hand.
Every training job of the grid (search draws and seeds, text cells) is charged

    fixed + test evaluation + epochs * (steps per epoch * step cost + validation / eval_every)

with the costs measured by ``benchmarks/learning_curves.py`` (process CPU time) and ``epochs``
the measured epochs to the early stop under the chosen defaults, capped at ``max_epochs``.  Jobs
run two at a time; the estimate is the CPU total over 2 cores.  ``--seeds`` and ``--add`` state
grid changes not yet in the config (seeds per experiment, extra methods).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "workflow"))

from noisyor_bench.experiments.acp import grid  # noqa: E402
from noisyor_bench.experiments.acp.grid import corpora as corpus_grid  # noqa: E402
from noisyor_bench.experiments.config import load_config  # noqa: E402
from noisyor_bench.inference.noisyor import registry  # noqa: E402

# Measured costs, CPU seconds on the shared machine while ~10 other processes ran
# (benchmarks/results/epoch_cost_*.csv, learning_curves_*.csv; docs/convergence.md).
# dataset -> (seconds per optimiser step of 128 rows, seconds per validation, epochs to the
# early stop under the defaults).  An epoch is max(1, ceil(20 / batches)) passes.
AMORTIZED = {
    "syn-pattern": (0.0052, 0.010, 60),  # stops after 40-97 epochs (patience 10)
    "syn-random-1": (0.0078, 0.018, 45),  # 19-82
    "syn-random-2": (0.010, 0.03, 45),  # not measured: denser than syn-random-1
    "syn-random-3": (0.010, 0.03, 45),  # not measured
    "syn-random-4": (0.021, 0.3, 25),  # epoch 0.81-0.94 s; N_train = 30: 24-29 epochs
    "syn-random-5": (0.021, 0.3, 25),
    "syn-random-6": (0.021, 0.3, 25),
    "syn-random-7": (0.0186, 0.31, 22),  # 19-26
    "multi-mnist": (0.0207, 0.70, 110),  # best epoch 94 (AVI) / 103 (ACP) at N_train = 2,000
    "neurips-titles": (0.0074, 0.013, 13),  # best epoch 8-11
    "reuters": (0.016, 0.05, 13),  # step at K = 150; epochs as NeurIPS (not measured)
}
# Cells whose epochs to the stop differ from their dataset's: D = K = 500 at N_train = 1,000 is
# still improving slowly at 150 epochs (the windowed rule holds from epoch 90 on), so it runs
# to max_epochs.
EPOCHS_AT = {(f"syn-random-{i}", 1000): 150 for i in (4, 5, 6)}
# SVI / LB-CDI learning jobs (whole job, CPU seconds) per (dataset, N_train) with
# method_budget eval_every 10, patience 1 (their validation refits every validation point).
CLASSICAL = {
    ("syn-pattern", 1000, "svi"): 24.0,
    ("syn-pattern", 1000, "lb-cdi"): 22.0,
    ("syn-random-1", 300, "svi"): 40.0,
    ("syn-random-1", 300, "lb-cdi"): 39.0,
    ("syn-random-1", 30, "svi"): 25.0,
    ("syn-random-1", 30, "lb-cdi"): 17.0,
}
INFERENCE_EPOCHS = 40  # fig3a AVI/ACP (inference mode, max_epochs 60, patience 8)
CLASSICAL_INFERENCE = 20.0  # fig3a SVI / LB-CDI / UB-CDI on the 1,000 test points
FIXED = 4.0  # per job: interpreter + torch import, data loading, metrics
TEST_VALS = 5  # test evaluation = 50 samples on the test split ~ 5 validations
# CPU time on the busy machine against a quiet one: bench.py's quiet throughput (one thread)
# for the same training steps (syn-pattern: 0.041 s vs 0.124 s per epoch; syn-random-7: 0.17
# vs 0.45) -> 2.7.
CONTENTION = 2.7
BATCH, MIN_STEPS = 128, 20


def steps_per_epoch(n_train: int) -> int:
    batches = max(1, -(-n_train // BATCH))
    return batches * max(1, -(-MIN_STEPS // batches))


def amortized_job(
    dataset: str, n_train: int, budget: dict, latents_scale: float = 1.0, epochs: int | None = None
) -> float:
    step, val, measured = AMORTIZED[dataset]
    measured = EPOCHS_AT.get((dataset, n_train), measured)
    n_epochs = min(measured if epochs is None else epochs, int(budget["max_epochs"]))
    per_epoch = steps_per_epoch(n_train) * step * latents_scale + val / int(budget.get("eval_every", 1))
    return FIXED + TEST_VALS * val + n_epochs * per_epoch


def job_cost(mode: str, dataset: str, method: str, n_train: int, budget: dict) -> float:
    if method not in registry.AMORTIZED:
        return (
            CLASSICAL_INFERENCE if mode == "inference" else CLASSICAL.get((dataset, n_train, method), 120.0)
        )
    return amortized_job(dataset, n_train, budget, epochs=INFERENCE_EPOCHS if mode == "inference" else None)


def parse_pairs(items: list[str]) -> dict[str, str]:
    return dict(item.split("=", 1) for item in items)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--config", type=Path, default=ROOT / "config" / "config.yaml")
    p.add_argument("--grid", default="quick")
    p.add_argument(
        "--seeds", action="append", default=[], help="EXPERIMENT=N, EXPERIMENT:DATASET=N or text=N: seeds"
    )
    p.add_argument("--add", action="append", default=[], help="EXP:DATASET:METHOD=N1/N2: extra cells")
    p.add_argument("--cores", type=int, default=2)
    a = p.parse_args(argv)
    cfg = load_config(a.config, {"grid": a.grid})
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
        n_seeds = seeds.get(f"{exp}:{dataset}", seeds.get(exp, len(grid.seeds(cfg))))
        cost = job_cost(mode, dataset, method, n, grid.budget(cfg, cell))
        jobs = n_seeds + (draws if draws > 1 else 0)
        rows.setdefault(exp, [0, 0.0])
        rows[exp][0] += jobs
        rows[exp][1] += jobs * cost
    t_budget = corpus_grid.budget(cfg)
    t_seeds = seeds.get("text", len(corpus_grid.seeds(cfg)))
    for c in corpus_grid.cells(cfg):
        key = f"text:{c.experiment}"
        rows.setdefault(key, [0, 0.0])
        scale = max(c.latents / 150, 0.3) if c.dataset == "reuters" else 1.0
        rows[key][0] += t_seeds
        rows[key][1] += t_seeds * amortized_job(c.dataset, c.n_train, t_budget, scale)
    total = sum(v[1] for v in rows.values())
    print(f"{'experiment':<28}{'jobs':>6}{'CPU s':>10}")
    for exp, (jobs, cpu) in rows.items():
        print(f"{exp:<28}{jobs:>6}{cpu:>10.0f}")
    print(f"{'total':<28}{sum(v[0] for v in rows.values()):>6}{total:>10.0f}")
    print(
        f"wall on {a.cores} cores: {total / a.cores / 60:.1f} min at the measured (busy-machine) CPU cost, "
        f"{total / a.cores / 60 / CONTENTION:.1f} min on a quiet machine (/{CONTENTION}); training jobs only"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
