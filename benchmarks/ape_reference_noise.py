"""How far VI's ranking of APE's test models agrees with itself: the VI-vs-VI ceiling
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

import logging
import time

import numpy as np
import pandas as pd
import torch
from _common import ape_inputs, ape_parser, evaluation_vi, int_list, machine_line, start, write_results

from noisyor_bench.evaluation.ranking import pairwise_agreement, reference_ceilings
from noisyor_bench.experiments.ape.pairs import evaluation_combinations
from noisyor_bench.experiments.ape.ranking import RankingSet, fit_ranking_vi, model_elbo_totals, ranking_set
from noisyor_bench.inference.seeding import stream_seed

log = logging.getLogger("ape_reference_noise")


def main(argv: list[str] | None = None) -> int:
    ap = ape_parser(
        __doc__.split("\n")[0], "mdreviews", "0,1,2", "benchmarks/results/ape_reference_noise_mdreviews.csv"
    )
    ap.add_argument("--documents", type=int_list, default="30,100", help="documents ranked over")
    ap.add_argument("--draws", type=int_list, default="50,1000", help="ELBO draws per (document, model)")
    args = ap.parse_args(argv)
    started = start()
    section, arrays = ape_inputs(args)
    n_eval = int(np.unique(evaluation_combinations(arrays).doc_index).size)
    seeds, draw_counts = args.seeds, args.draws
    rows = []
    for docs in args.documents:
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
                fit = evaluation_vi(arrays, section, seed)
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
        f"Seeds {seeds}. {machine_line(started)} (shared machine).",
    ]
    write_results(args.out, frame.to_dict("records"), lines)
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
