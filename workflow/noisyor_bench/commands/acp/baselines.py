"""CLI: ``noisyor-bench baselines`` -- reference scores of one dataset for the NELBO tables.

Writes ``results/baselines/<dataset>.json`` (:func:`noisyor_bench.experiments.acp.baselines.baselines_record`):
the independent-Bernoulli NLL of every ``--n-train`` value and, for synthetic data, the true
model's exact / importance-weighted / per-datapoint-ELBO scores.  Its provenance sidecar
``<out>.prov.json`` is written by the CLI (``--out-json``).
"""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

from noisyor_bench.infra.constants import MAX_EXACT_K

log = logging.getLogger(__name__)


def cmd_baselines(args: argparse.Namespace) -> int:
    from noisyor_bench.data.loading import has_truth, load_dataset
    from noisyor_bench.experiments.acp.baselines import baselines_record, true_model_scores
    from noisyor_bench.infra.device import set_threads
    from noisyor_bench.infra.errors import ConfigError
    from noisyor_bench.infra.hashing import sha256_file
    from noisyor_bench.infra.io import write_json_atomic

    for flag in ("max_rows", "iw_samples", "samples", "max_rounds"):
        value = getattr(args, flag)
        if value is not None and value < (0 if flag == "iw_samples" else 1):
            raise ConfigError(
                f"--{flag.replace('_', '-')} must be >= {0 if flag == 'iw_samples' else 1}, got {value}"
            )
    threads = set_threads(args.threads)
    data = load_dataset(args.dataset)
    name = args.dataset_name or Path(args.dataset).stem
    truth = None
    if has_truth(data) and not args.no_true_model:
        truth = true_model_scores(
            data,
            exact_max_k=args.exact_max_k,
            max_rows=args.max_rows,
            n_samples=args.samples,
            iw_samples=args.iw_samples,
            max_rounds=args.max_rounds,
            seed=args.seed,
        )
        truth["threads"] = threads
    record = baselines_record(data, name, args.dataset, args.n_train, truth)
    record["dataset_sha256"] = sha256_file(args.dataset)
    write_json_atomic(args.out_json, record)
    for row in record["independent_bernoulli"]["rows"]:
        log.info("%s: independent Bernoulli, N_train=%d: %.3f", name, row["n_train"], row["nelbo"])
    if truth is not None:
        log.info(
            "%s: true model exact %s, IW %s, ELBO (per-datapoint, %d rows) %.3f; inference %.1fs",
            name,
            truth["exact_nll"],
            truth["iw_nll"],
            truth["n_test_scored"],
            truth["elbo_nelbo"],
            truth["inference_seconds"],
        )
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    from noisyor_bench.infra.constants import BASELINE_IW_SAMPLES, BASELINE_MAX_ROUNDS, BASELINE_MAX_ROWS

    p = sub.add_parser(
        "baselines", help="independent-Bernoulli and true-model reference scores of a dataset (test split)"
    )
    p.add_argument("--dataset", required=True, help="the dataset .npz")
    p.add_argument("--dataset-name", help="name recorded in the output (default: file stem)")
    p.add_argument(
        "--n-train",
        type=int,
        nargs="+",
        required=True,
        help="N_train values of the learning-mode cells (first N_train rows of the pool)",
    )
    p.add_argument(
        "--max-rows",
        type=int,
        default=BASELINE_MAX_ROWS,
        help="score the true model's IW bound and ELBO on a fixed seeded subset of this many test rows",
    )
    p.add_argument("--samples", type=int, default=100, help="discrete samples of q per row for the NELBO")
    p.add_argument(
        "--iw-samples", type=int, default=BASELINE_IW_SAMPLES, help="importance samples (0 = skip)"
    )
    p.add_argument("--max-rounds", type=int, default=BASELINE_MAX_ROUNDS, help="LB-CDI E-step rounds (cap)")
    p.add_argument(
        "--exact-max-k", type=int, default=MAX_EXACT_K, help="exact -log p(x) by enumeration up to this K"
    )
    p.add_argument("--seed", type=int, default=0, help="seed of the Monte Carlo estimates")
    p.add_argument("--threads", type=int, default=1, help="torch threads (= the job's Snakemake threads)")
    p.add_argument("--no-true-model", action="store_true", help="only the independent-Bernoulli baseline")
    p.add_argument("--out-json", required=True, help="output: results/baselines/<dataset>.json")
    p.set_defaults(func=cmd_baselines)
