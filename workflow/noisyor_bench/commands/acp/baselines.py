"""CLI: ``noisyor-bench acp-baselines`` -- reference scores of one dataset for the NELBO tables.

Writes ``results/baselines/<dataset>.json`` (:func:`noisyor_bench.experiments.acp.baselines.baselines_record`):
the independent-Bernoulli NLL of every ``--n-train`` value and, for synthetic data, the true
model's held-out ``-log p(x)`` (``--nll``: exact or AIS, beside the baseline on the same rows),
its exact enumeration where K is small and (unless ``--no-bounds``) its importance-weighted /
per-datapoint-ELBO scores.  Its provenance sidecar
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
    from noisyor_bench.commands.arguments import json_argument
    from noisyor_bench.evaluation.noisyor_likelihood import LikelihoodConfig

    nll = json_argument(args.nll, "--nll") if args.nll is not None else None
    run_nll = json_argument(args.run_nll, "--run-nll") if args.run_nll is not None else None
    for flag, value in (("--nll", nll), ("--run-nll", run_nll)):
        if value is not None and not isinstance(value, dict):
            raise ConfigError(f"{flag} must be a JSON object, got {value!r}")
        if value is not None:
            try:  # the bad key named before any work
                LikelihoodConfig.from_mapping(value)
            except ConfigError as err:
                raise ConfigError(f"{flag}: {err}") from None
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
            bounds=not args.no_bounds,
            nll=nll,
            n_train_values=args.n_train,
            path=args.dataset,
        )
        truth["threads"] = threads
    record = baselines_record(data, name, args.dataset, args.n_train, truth, run_nll=run_nll)
    record["dataset_sha256"] = sha256_file(args.dataset)
    write_json_atomic(args.out_json, record)
    for row in record["independent_bernoulli"]["rows"]:
        log.info("%s: independent Bernoulli, N_train=%d: %.3f", name, row["n_train"], row["nelbo"])
    if truth is not None and truth.get("elbo_nelbo") is not None:
        log.info(
            "%s: true model exact %s, IW %s, ELBO (per-datapoint, %d rows) %.3f; inference %.1fs",
            name,
            truth["exact_nll"],
            truth["iw_nll"],
            truth["n_test_scored"],
            truth["elbo_nelbo"],
            truth["inference_seconds"],
        )
    if truth is not None and truth.get("nll") is not None:
        t = truth["nll"]
        log.info(
            "%s: true model -log p(x) %.3f (%s, %s; %.1fs)",
            name,
            t["nll_test"],
            t["nll_estimator"],
            t["nll_rows_label"],
            t["nll_seconds"],
        )
        for c in t["baseline"]:
            log.info(
                "  independent Bernoulli N_train=%d on these rows %.3f: truth - baseline %.3f +- %s",
                c["n_train"],
                c["baseline_nll"],
                c["diff"],
                c["diff_se"],
            )
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    from noisyor_bench.infra.constants import BASELINE_IW_SAMPLES, BASELINE_MAX_ROUNDS, BASELINE_MAX_ROWS

    p = sub.add_parser(
        "acp-baselines",
        help="independent-Bernoulli and true-model reference scores of a dataset (test split)",
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
    p.add_argument(
        "--nll",
        help="JSON likelihood config: score the true model's -log p(x) (exact or AIS) beside the baseline "
        'on the same rows, e.g. \'{"max_rows": 100, "ais": {"steps": 100}}\' (docs/baselines.md)',
    )
    p.add_argument(
        "--run-nll",
        help="JSON likelihood config of the runs (evaluation.nll): also score the baseline on their nll_test rows",
    )
    p.add_argument(
        "--no-bounds",
        action="store_true",
        help="skip the true model's IW bound and mean-field NELBO (superseded by --nll)",
    )
    p.add_argument("--out-json", required=True, help="output: results/baselines/<dataset>.json")
    p.set_defaults(func=cmd_baselines)
