"""The training-pool effect: APE (model-aware) trained on pools of M models, scored
on the evaluation combinations with the agreement measure and its VI-vs-VI ceiling.

Why: the quick grid trains on 2,000 (toy bars) / 300 (reviews) models where the paper used
50,000; is that why APE's agreement with VI is low?  Each pool size gets the same training
budget (the grid's ``training`` section: its step cap binds for every M, its stopping rule
applies), the same seeds and random streams as ``noisyor-bench ape-train``; the pools are
nested (model m is the same in every pool: ``ThetaPool``'s recipe), so only M changes.

Per (M, seed): steps, convergence and CPU seconds of the training; the clean IS log-likelihood
per word of APE and VI and their gap; the agreement of APE's ranking with VI's reference
(``ranking.elbo_draws`` draws per (document, model) on the evaluation documents:
:mod:`noisyor_bench.experiments.ape.ranking`), the Monte Carlo ceiling and the VI-vs-VI ceiling
across the seeds.  VI is fitted once per seed (as ``noisyor-bench ape-vi``).  Example::

    python benchmarks/ape_pool_sweep.py --dataset toybars --pools 300,3000,10000 --seeds 0,1 \
        --out benchmarks/results/ape_pool_sweep_toybars.csv

Writes the CSV (one row per (M, seed)) and ``<out>.md`` (means per M, the machine, wall time).
"""

from __future__ import annotations

import logging
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from _common import ape_inputs, ape_parser, evaluation_vi, int_list, machine_line, start, write_results

from noisyor_bench.evaluation.ranking import reference_ceilings
from noisyor_bench.experiments.ape.pairs import evaluation_combinations
from noisyor_bench.experiments.ape.ranking import RankingSet, ranking_agreement, ranking_settings
from noisyor_bench.experiments.ape.train import load_encoder, train_run
from noisyor_bench.inference.seeding import stream_seed
from noisyor_bench.infra.io import write_npz_atomic

log = logging.getLogger("ape_pool_sweep")


def clean_ll(combos, mu, log_sigma, samples: int, seed: int) -> float:
    """Importance-sampled log p(x | theta) per word, q as proposal (Table 1's clean column)."""
    from noisyor_bench.models.topics.logistic_normal import ape_prior, per_word_log_likelihood

    gen = torch.Generator().manual_seed(stream_seed(seed, "ape-eval-is"))
    with torch.no_grad():
        ll, _ = per_word_log_likelihood(
            combos.x.double(),
            combos.theta.double(),
            mu.double(),
            log_sigma.double(),
            ape_prior(combos.theta.shape[1]),
            samples,
            gen,
        )
    return float(ll)


def main(argv: list[str] | None = None) -> int:
    ap = ape_parser(__doc__.split("\n")[0], "toybars", "0,1", "benchmarks/results/ape_pool_sweep_toybars.csv")
    ap.add_argument("--pools", type=int_list, default="300,3000,10000")
    ap.add_argument("--max-steps", type=int, default=None, help="training step cap (default: the grid's)")
    ap.add_argument("--is-samples", type=int, default=None, help="default: the grid's evaluation.is_samples")
    ap.add_argument("--work", default=None, help="run directories (default: a temporary folder)")
    args = ap.parse_args(argv)
    started = start()
    section, arrays = ape_inputs(args)
    training = dict(section["training"])
    if args.max_steps:
        training["max_steps"] = args.max_steps
    training["epochs"] = 10**6  # the step cap binds for every pool size: the same budget
    section["training"] = training
    _, draws = ranking_settings(section)
    is_samples = args.is_samples or int(section["evaluation"].get("is_samples", 200))
    pools, seeds = args.pools, args.seeds
    combos = evaluation_combinations(arrays, torch.float64)
    n_docs = int(np.unique(combos.doc_index).size)
    reference_set = RankingSet.from_combinations(combos)
    work = Path(args.work or tempfile.mkdtemp(prefix="ape-pool-sweep-"))
    work.mkdir(parents=True, exist_ok=True)

    vi_q: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}
    vi_ll: dict[int, float] = {}
    for seed in seeds:  # as noisyor-bench ape-vi: the same streams
        fit = evaluation_vi(arrays, section, seed)
        vi_q[seed] = (fit.mu.double(), fit.log_sigma.double())
        vi_ll[seed] = clean_ll(combos, *vi_q[seed], is_samples, seed)
        log.info(
            "VI seed %d: %d steps, converged %s, clean LL/word %.4f",
            seed,
            fit.steps,
            fit.converged,
            vi_ll[seed],
        )

    rows = []
    references: dict[int, list[float]] = {}

    def report() -> list[str]:
        """Write the CSV and the table of the runs so far (after every run: a partial sweep is kept)."""
        ceilings = reference_ceilings(references)
        for row in rows:
            row["vi_ceiling"] = ceilings.get(row["seed"], float(row["mc_ceiling"]))
        frame = pd.DataFrame(rows)
        summary = frame.groupby("pool").agg(
            seeds=("seed", "count"),
            steps=("steps", "mean"),
            converged=("converged", "sum"),
            train_cpu_s=("train_cpu_s", "mean"),
            ll_is_ape=("ll_is_ape", "mean"),
            gap=("gap_vi_minus_ape", "mean"),
            agree=("agree", "mean"),
            agree_per_seed=("agree", lambda s: "/".join(str(int(v)) for v in s)),
            vi_ceiling=("vi_ceiling", "mean"),
            mc_ceiling=("mc_ceiling", "mean"),
        )
        lines = [
            f"# APE training-pool sweep: {args.dataset} ({args.grid} grid's budget)",
            "",
            f"Model-aware APE trained on M models (nested pools), step cap {training['max_steps']:,} "
            f"(batch {training.get('batch_size', 100)}), seeds {seeds}; scored on the {n_docs} evaluation "
            f"documents x {combos.n_models} test models. Agreement: pairs of the {combos.n_models} test models "
            f"ordered as VI's reference ({draws:,} ELBO draws per (document, model)); ceilings: VI vs VI "
            f"across seeds (an independent VI fit and draws) and Monte Carlo (two draw samples, one fit). "
            f"Gap: VI minus APE, clean IS log-likelihood per word ({is_samples} samples).",
            "",
            "| M | seeds | steps (mean) | converged | train CPU s | APE LL/word | gap VI - APE | agree (per seed) | VI-vs-VI ceiling | MC ceiling |",
            "|---|---|---|---|---|---|---|---|---|---|",
        ]
        for pool, r in summary.iterrows():
            lines.append(
                f"| {pool:,} | {r.seeds} | {r.steps:,.0f} | {int(r.converged)}/{r.seeds} | {r.train_cpu_s:.0f} | "
                f"{r.ll_is_ape:.4f} | {r.gap:.4f} | {r.agree:.1f} ({r.agree_per_seed}) / {combos.n_models * (combos.n_models - 1) // 2} | "
                f"{r.vi_ceiling:.1f} | {r.mc_ceiling:.1f} |"
            )
        lines += [
            "",
            f"{machine_line(started)} (a shared machine: CPU seconds are the comparable cost).",
        ]
        write_results(args.out, frame.to_dict("records"), lines)
        return lines

    for pool in pools:
        data = work / f"ape-{args.dataset}-M{pool}.npz"
        write_npz_atomic(data, **{**arrays, "theta_pool_size": np.asarray(pool, dtype=np.int64)})
        for seed in seeds:
            run = work / f"M{pool}" / f"seed{seed}"
            cpu = time.process_time()
            metrics = train_run(data, args.dataset, "ape-model-aware", seed, section, run)
            cpu = time.process_time() - cpu
            encoder = load_encoder(run).double().eval()
            with torch.no_grad():
                mu, log_sigma = encoder(combos.x, combos.theta)
            ranking = ranking_agreement(
                reference_set, {"vi": vi_q[seed], "ape": (mu, log_sigma)}, draws, seed
            )
            references[seed] = ranking["vi_totals"]
            ll = clean_ll(combos, mu, log_sigma, is_samples, seed)
            rows.append(
                {
                    "dataset": args.dataset,
                    "pool": pool,
                    "seed": seed,
                    "steps": metrics["steps"],
                    "converged": metrics["converged"],
                    "train_cpu_s": round(cpu, 1),
                    "ll_is_ape": ll,
                    "ll_is_vi": vi_ll[seed],
                    "gap_vi_minus_ape": vi_ll[seed] - ll,
                    "agree": ranking["methods"]["ape"]["agree"],
                    "pairs": ranking["pairs"],
                    "mc_ceiling": ranking["mc_ceiling"],
                    "documents": n_docs,
                    "elbo_draws": draws,
                }
            )
            log.info("M %d seed %d: %s", pool, seed, rows[-1])
            report()
    print("\n".join(report()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
