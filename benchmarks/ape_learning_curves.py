"""Learning curves of the APE quick grid's training runs: where each meets the convergence rule.

Why: the quick grid's ``ape-train`` and ``ape-vi`` runs stopped at their step caps still
improving.  This script trains each cell once per seed for a long step budget, exactly
as ``noisyor-bench ape-train`` / ``ape-vi`` would (same dataset file, settings, seeds and random
streams), and records the validation curve with the CPU seconds it cost (``time.process_time``:
independent of how busy the shared machine is).  Because the learning-rate schedule and the
random streams do not depend on the step budget, the curve of a run capped at S steps is this
curve cut at S; so for every candidate budget S (a multiple of ``eval_every``) the script
reports the verdict :func:`noisyor_bench.inference.convergence.assess` would give that run.

Cells (``--cells``): ``<dataset>:<method>`` with method ``standard``, ``ape-model-aware``,
``ape-naive`` (encoders; ``training`` / ``standard_training`` of the grid) or ``vi`` (VI from
random initialisation on the evaluation combinations, with its rule switched off up to
``--steps`` so that the first step where the rule fires is read off the losses).  Example::

    python benchmarks/ape_learning_curves.py --data-dir /work/quick-ape/data --grid quick \
        --cells toybars:ape-model-aware,toybars:standard --steps 10000 --seeds 0,1,2 \
        --out benchmarks/results/ape_learning_curves.csv

Writes one CSV row per (cell, seed, candidate budget) with the verdict, plus
``<out>.curves.csv`` (every evaluation: step, validation NELBO, CPU seconds).
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from pathlib import Path

import numpy as np
import torch

from noisyor_bench.experiments.config import load_config
from noisyor_bench.inference.convergence import assess
from noisyor_bench.inference.fitting import EpochRecord, FitBudget
from noisyor_bench.infra.io import write_csv_atomic


def grid_section(config_path: str, grid: str, dataset: str) -> dict:
    config = load_config(config_path)
    return dict(config["grids"][grid]["ape"]["datasets"][dataset])


def encoder_curve(data_dir: Path, dataset: str, method: str, seed: int, section: dict, steps: int):
    """(rows of step / val_nelbo / cpu_seconds, eval_every, window, rel_tol) of one long run."""
    from noisyor_bench.data.synthetic.theta_pool import ThetaPool
    from noisyor_bench.experiments.ape import pairs
    from noisyor_bench.experiments.ape.train import ENCODER_KINDS, n_models, training_config, training_section
    from noisyor_bench.inference.seeding import stream_seed
    from noisyor_bench.inference.topics.ape_encoders import build_encoder
    from noisyor_bench.inference.topics.ape_training import train_encoder
    from noisyor_bench.infra.io import load_npz
    from noisyor_bench.models.topics.logistic_normal import ape_prior

    arrays = load_npz(data_dir / f"ape-{dataset}.npz")
    documents = np.asarray(arrays["documents"], dtype=np.float32)
    pool = ThetaPool.from_arrays(arrays)
    standard = method == "standard"
    budget = dict(training_section(section, method))
    budget["max_steps"] = steps
    budget["epochs"] = 10**6  # the step budget decides
    config, _, _ = training_config(budget, documents.shape[0], n_models(method, pool.size))
    thetas, m = (torch.from_numpy(pool.draw([0])), 1) if standard else pairs.training_models(pool)
    valid_x, valid_theta = pairs.validation_pairs(
        documents, pool, int(budget.get("validation_pairs", 500)), standard
    )
    encoder = build_encoder(
        ENCODER_KINDS[method],
        documents.shape[1],
        pool.n_topics,
        seed=stream_seed(seed, f"ape-encoder-init-{method}"),
    )
    rows: list[dict] = []
    cpu0 = time.process_time()

    def progress(row):
        rows.append(
            {
                "step": int(row["step"]),
                "val_nelbo": row["val_nelbo"],
                "cpu_seconds": time.process_time() - cpu0,
            }
        )
        print(
            f"EVAL {dataset}:{method},{seed},{rows[-1]['step']},{row['val_nelbo']:.6f},{rows[-1]['cpu_seconds']:.3f}",
            flush=True,
        )

    train_encoder(
        encoder,
        torch.from_numpy(documents),
        thetas,
        ape_prior(pool.n_topics, dtype=torch.float32),
        config,
        seed=stream_seed(seed, f"ape-train-{method}"),
        valid_x=valid_x,
        valid_theta=valid_theta,
        n_models=m,
        device=torch.device("cpu"),
        progress=progress,
    )
    return rows, config.eval_every, config.convergence_window, config.convergence_rel_tol


def encoder_verdicts(rows: list[dict], eval_every: int, window: int, rel_tol: float) -> list[dict]:
    """The assess() verdict of the run capped at every evaluation's step."""
    out = []
    for i in range(1, len(rows) + 1):
        records = [
            EpochRecord(epoch=j + 1, train_nelbo=None, val_nelbo=r["val_nelbo"], seconds=0.0)
            for j, r in enumerate(rows[:i])
        ]
        vals = [r["val_nelbo"] for r in rows[:i]]
        budget = FitBudget(
            max_epochs=i,
            patience=i + 1,
            batch_size=100,
            convergence_window=window,
            convergence_rel_tol=rel_tol,
        )
        verdict = assess(records, "max_epochs", int(np.argmin(vals)) + 1, budget)
        out.append(
            {
                "budget_steps": rows[i - 1]["step"],
                "converged": verdict.converged,
                "rule": verdict.rule,
                "relative_improvement": verdict.relative_improvement,
                "val_nelbo": rows[i - 1]["val_nelbo"],
                "best_val_nelbo": min(vals),
                "cpu_seconds": rows[i - 1]["cpu_seconds"],
            }
        )
    return out


def vi_curve(data_dir: Path, dataset: str, seed: int, section: dict, steps: int):
    """VI from random init on the evaluation combinations with the grid's stopping rule (A.2 with
    its window / rel_tol / min_steps) and ``steps`` as the cap: (curve rows, the step where the
    rule fired or None, CPU seconds per step)."""
    from noisyor_bench.experiments.ape import pairs
    from noisyor_bench.experiments.ape.baselines import vi_config
    from noisyor_bench.inference.seeding import stream_seed
    from noisyor_bench.inference.topics.ape_vi import fit_vi
    from noisyor_bench.infra.io import load_npz
    from noisyor_bench.models.topics.logistic_normal import ape_prior

    arrays = load_npz(data_dir / f"ape-{dataset}.npz")
    combos = pairs.evaluation_combinations(arrays, torch.float32)
    config = dataclasses.replace(vi_config(section), max_steps=steps)
    cpu0 = time.process_time()

    def progress(row):
        print(
            f"VI {dataset},{seed},{int(row['step'])},{row.get('eval_elbo', float('nan')):.4f},{time.process_time() - cpu0:.3f}",
            flush=True,
        )

    result = fit_vi(
        combos.x,
        combos.theta,
        ape_prior(combos.theta.shape[1], dtype=torch.float32),
        config,
        seed=stream_seed(seed, "ape-vi"),
        device=torch.device("cpu"),
        progress=progress,
        progress_every=250,
    )
    cpu = time.process_time() - cpu0
    rows = [
        {
            "step": int(r["step"]),
            "val_nelbo": -float(r["eval_elbo"]),
            "cpu_seconds": cpu * r["step"] / max(result.steps, 1),
        }
        for r in result.curve
        if "eval_elbo" in r and r["eval_elbo"] == r["eval_elbo"]
    ]
    fire = result.steps if result.converged else None
    return rows, fire, cpu / max(result.steps, 1)


def from_logs(paths: list[Path], config_path: str, grid: str) -> tuple[list[dict], list[dict]]:
    """(summary, curves) rebuilt from the ``EVAL`` lines of logs of runs cut short (the curve
    up to the last evaluation logged is exact; its verdicts are the capped runs')."""
    curves: dict[tuple[str, int], list[dict]] = {}
    for path in paths:
        for line in Path(path).read_text().splitlines():
            if line.startswith("EVAL "):
                cell, seed, step, val, cpu = line[5:].split(",")
                curves.setdefault((cell, int(seed)), []).append(
                    {"step": int(step), "val_nelbo": float(val), "cpu_seconds": float(cpu)}
                )
    from noisyor_bench.experiments.ape.train import training_section

    summary, flat = [], []
    for (cell, seed), rows in curves.items():
        dataset, method = cell.split(":")
        section = grid_section(config_path, grid, dataset)
        budget = training_section(section, method)
        window, rel_tol = int(budget.get("window", 5)), float(budget.get("rel_tol", 1e-3))
        for v in encoder_verdicts(rows, int(budget.get("eval_every", 500)), window, rel_tol):
            summary.append({"cell": cell, "seed": seed, **v})
        flat.extend({"cell": cell, "seed": seed, **r} for r in rows)
    return summary, flat


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--data-dir", type=Path, help="results/data of a built grid (not needed with --from-logs)"
    )
    parser.add_argument("--config", default="config/config.yaml")
    parser.add_argument("--grid", default="quick")
    parser.add_argument("--cells", default="")
    parser.add_argument("--steps", type=int, default=0)
    parser.add_argument(
        "--from-logs", nargs="*", type=Path, help="rebuild the CSVs from these logs' EVAL lines"
    )
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--out", required=True, type=Path)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    seeds = [int(s) for s in args.seeds.split(",")]
    summary, curves = [], []
    if args.from_logs:
        summary, curves = from_logs(args.from_logs, args.config, args.grid)
    for cell in [c for c in args.cells.split(",") if c and not args.from_logs]:
        dataset, method = cell.split(":")
        section = grid_section(args.config, args.grid, dataset)
        for seed in seeds:
            t0 = time.perf_counter()
            if method == "vi":
                rows, fire, per_step = vi_curve(args.data_dir, dataset, seed, section, args.steps)
                summary.append(
                    {
                        "cell": cell,
                        "seed": seed,
                        "budget_steps": fire,
                        "converged": fire is not None,
                        "rule": "method-criterion (A.2 window rule)" if fire else "still-improving",
                        "relative_improvement": None,
                        "val_nelbo": None,
                        "best_val_nelbo": None,
                        "cpu_seconds": per_step * (fire or args.steps),
                    }
                )
                print(
                    f"{cell} seed {seed}: A.2 rule fires at step {fire}; {per_step * 1000:.1f} CPU ms/step",
                    flush=True,
                )
            else:
                rows, every, window, rel_tol = encoder_curve(
                    args.data_dir, dataset, method, seed, section, args.steps
                )
                verdicts = encoder_verdicts(rows, every, window, rel_tol)
                for v in verdicts:
                    summary.append({"cell": cell, "seed": seed, **v})
                first = next((v["budget_steps"] for v in verdicts if v["converged"]), None)
                per_step = rows[-1]["cpu_seconds"] / rows[-1]["step"]
                print(
                    f"{cell} seed {seed}: first converged cap {first}; {per_step * 1000:.1f} CPU ms/step "
                    f"(incl. validation); {time.perf_counter() - t0:.0f} s wall",
                    flush=True,
                )
            for r in rows:
                curves.append({"cell": cell, "seed": seed, **r})
    write_csv_atomic(args.out, summary)
    write_csv_atomic(args.out.with_suffix(".curves.csv"), curves)
    return 0


if __name__ == "__main__":
    sys.exit(main())
