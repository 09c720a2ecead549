"""How far VI's ranking of APE's test models agrees with itself (issue 32): the VI-vs-VI ceiling
of the agreement measure against the documents ranked over and the ELBO draws per (document, model).

Why: Table 1's agreement counts the pairs of the 10 test models that a method orders as VI's
total ELBO does; if VI's own ranking moves between seeds or between draw samples, that count
measures noise.  For each document count D (the first D documents x the test models) and seed,
VI is fitted as the evaluation fits it (D = the evaluation documents: the ``ape-vi`` run's
streams; otherwise the ranking fit's, one problem per test model) and its per-model ELBO totals
are estimated with every ``--draws`` count from two independent draw streams (a, b:
:func:`noisyor_bench.experiments.ape.ranking.model_elbo_totals`).  Reported per (D, draws): the
Monte Carlo ceiling (a vs b, per seed) and the VI-vs-VI ceiling across seeds (stream a of each
seed: :func:`noisyor_bench.evaluation.ranking.reference_ceilings`).  Example::

    python benchmarks/ape_reference_noise.py --dataset mdreviews --documents 30,100 --draws 50,1000 \
        --seeds 0,1,2 --out benchmarks/results/ape_reference_noise_mdreviews.csv
"""

from __future__ import annotations

import argparse
import logging
import platform
import time
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from noisyor_bench.evaluation.ranking import pairwise_agreement, reference_ceilings
from noisyor_bench.experiments.ape.baselines import fit_vi_grouped, vi_config
from noisyor_bench.experiments.ape.pairs import evaluation_combinations
from noisyor_bench.experiments.ape.ranking import RankingSet, fit_ranking_vi, model_elbo_totals, ranking_set
from noisyor_bench.experiments.config import load_config
from noisyor_bench.inference.seeding import stream_seed
from noisyor_bench.infra.io import load_npz, write_csv_atomic, write_text_atomic

log = logging.getLogger("ape_reference_noise")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dataset", default="mdreviews", choices=["toybars", "mdreviews"])
    ap.add_argument("--grid", default="quick")
    ap.add_argument("--config", default="config/config.yaml")
    ap.add_argument("--data-dir", default="results/data")
    ap.add_argument("--documents", default="30,100")
    ap.add_argument("--draws", default="50,1000")
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--out", default="benchmarks/results/ape_reference_noise_mdreviews.csv")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", datefmt="%H:%M:%S")
    torch.set_num_threads(1)
    start = time.perf_counter()
    from noisyor_bench.models.topics.logistic_normal import ape_prior

    section = dict(load_config(args.config)["grids"][args.grid]["ape"]["datasets"][args.dataset])
    arrays = load_npz(Path(args.data_dir) / f"ape-{args.dataset}.npz")
    n_eval = int(np.unique(evaluation_combinations(arrays).doc_index).size)
    seeds = [int(s) for s in args.seeds.split(",")]
    draw_counts = [int(d) for d in args.draws.split(",")]
    rows = []
    for docs in (int(d) for d in args.documents.split(",")):
        evaluation = docs == n_eval  # the evaluation documents: VI as the ape-vi run fits it
        ranking = (
            RankingSet.from_combinations(evaluation_combinations(arrays))
            if evaluation
            else ranking_set(arrays, docs, torch.float64)
        )
        totals: dict[tuple[int, str], dict[int, np.ndarray]] = {}
        for seed in seeds:
            cpu = time.process_time()
            if evaluation:
                f32 = evaluation_combinations(arrays, torch.float32)
                fit = fit_vi_grouped(
                    f32,
                    ape_prior(f32.theta.shape[1], dtype=torch.float32),
                    vi_config(section),
                    stream_seed(seed, "ape-vi"),
                    bool((section.get("vi") or {}).get("group_by_model", False)),
                )
                mu, log_sigma, steps, converged = fit.mu, fit.log_sigma, fit.steps, fit.converged
            else:
                mu, log_sigma, meta = fit_ranking_vi(ranking, section, seed)
                steps, converged = meta["steps"], meta["converged"]
            cpu = time.process_time() - cpu
            mu, log_sigma = mu.double(), log_sigma.double()
            for draws in draw_counts:
                for name in ("a", "b"):
                    gen = torch.Generator().manual_seed(stream_seed(seed, f"ape-ranking-{name}"))
                    totals.setdefault((draws, name), {})[seed] = model_elbo_totals(
                        ranking, mu, log_sigma, draws, gen
                    )
                mc = pairwise_agreement(totals[(draws, "b")][seed], totals[(draws, "a")][seed])
                rows.append(
                    {
                        "dataset": args.dataset,
                        "documents": docs,
                        "draws": draws,
                        "seed": seed,
                        "vi_converged": bool(converged),
                        "vi_cpu_s": round(cpu, 1),
                        "mc_ceiling": mc.agree,
                        "pairs": mc.pairs,
                        "spread_nats": float(np.ptp(totals[(draws, "a")][seed])),
                    }
                )
            log.info(
                "D %d seed %d: VI %d steps, %.0f s CPU, converged %s",
                docs,
                seed,
                steps,
                cpu,
                converged,
            )
        for draws in draw_counts:
            ceilings = reference_ceilings(totals[(draws, "a")])
            for row in rows:
                if row["documents"] == docs and row["draws"] == draws:
                    row["vi_ceiling"] = ceilings.get(row["seed"], float("nan"))
    frame = pd.DataFrame(rows)
    out = Path(args.out)
    write_csv_atomic(out, frame.to_dict("records"))
    lines = [
        f"# VI's ranking reference against itself: {args.dataset} ({args.grid} grid's VI settings)",
        "",
        "Pairs of the test models (of 45) that VI's per-model total ELBO orders alike: **MC ceiling** = "
        "one VI fit, two independent draw samples; **VI-vs-VI ceiling** = median over the other seeds "
        "(another VI fit and other draws). Spread: max - min of VI's per-model totals (nats).",
        "",
        "| documents | draws | MC ceiling per seed | VI-vs-VI ceiling per seed | mean VI-vs-VI | spread (nats, mean) | VI CPU s (mean) |",
        "|---|---|---|---|---|---|---|",
    ]
    for (docs, draws), g in frame.groupby(["documents", "draws"]):
        lines.append(
            f"| {docs} | {draws:,} | {'/'.join(str(int(v)) for v in g.mc_ceiling)} | "
            f"{'/'.join(f'{v:g}' for v in g.vi_ceiling)} | {g.vi_ceiling.mean():.1f} | {g.spread_nats.mean():.0f} | "
            f"{g.vi_cpu_s.mean():.0f} |"
        )
    lines += [
        "",
        f"Seeds {seeds}. Machine: {platform.machine()} {platform.processor() or platform.platform()}, one thread; "
        f"wall time {(time.perf_counter() - start) / 60:.1f} min (shared machine).",
    ]
    write_text_atomic(out.with_suffix(".md"), "\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
