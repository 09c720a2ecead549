"""CLI: the APE paper (rules/ape.smk): data, encoder training, VI / NUTS, evaluation, Table 1,
Figures 1-2 and claims.  Each subcommand takes the dataset's config section
(``grids.<grid>.ape.datasets.<name>``) as JSON (inline or ``@file``) where it needs settings.
"""

from __future__ import annotations

import argparse
import logging
from pathlib import Path
from typing import Any

from noisyor_bench.commands.arguments import json_argument
from noisyor_bench.infra.errors import ConfigError

log = logging.getLogger(__name__)

DATASETS = ("toybars", "mdreviews")


def _section(args: argparse.Namespace) -> dict[str, Any]:
    value = json_argument(args.settings, "--settings")
    if not isinstance(value, dict):
        raise ConfigError("--settings: expected a JSON object (the dataset's grids.<grid>.ape.datasets section)")
    return value


def cmd_ape_data(args: argparse.Namespace) -> int:
    from noisyor_bench.experiments.ape import datasets
    from noisyor_bench.infra import provenance
    from noisyor_bench.infra.io import write_json_atomic, write_npz_atomic

    section = _section(args)
    inputs: list[dict[str, Any]] = []
    if args.dataset == "toybars":
        arrays, facts = datasets.toybars_arrays(section)
    else:
        from noisyor_bench.data.corpora.mdreviews import RAW_KEYS
        from noisyor_bench.data.rawdata import REGISTRY, fetch, resolve_raw_data_dir

        mirror = resolve_raw_data_dir(args.raw_data_dir)
        paths = {name: fetch(key, mirror, args.cache_dir) for name, key in RAW_KEYS.items()}
        arrays, facts = datasets.mdreviews_arrays(section, paths)
        inputs = [
            provenance.file_entry(paths[name], f"raw:{key}", Path(args.out).parent, pinned_sha256=REGISTRY[key].sha256)
            for name, key in RAW_KEYS.items()
        ]
    write_npz_atomic(args.out, **arrays)
    sidecar = {
        "dataset": args.dataset,
        "facts": facts,
        "settings": section["data"],
        "theta_pool": section["theta_pool"],
        "arrays": {k: list(v.shape) for k, v in sorted(arrays.items())},
    }
    sidecar["provenance"] = provenance.artifact_record("dataset", inputs, [Path(args.out)], Path(args.out).parent)
    write_json_atomic(Path(args.out).with_suffix(".json"), sidecar)
    log.info("ape-%s: %s -> %s", args.dataset, facts, args.out)
    return 0


def cmd_ape_train(args: argparse.Namespace) -> int:
    from noisyor_bench.experiments.ape.train import train_run
    from noisyor_bench.infra.device import set_threads

    set_threads(args.threads)
    train_run(args.dataset_file, args.dataset, args.method, args.seed, _section(args), args.out_dir, args.device)
    return 0


def cmd_ape_vi(args: argparse.Namespace) -> int:
    from noisyor_bench.experiments.ape.baselines import run_vi
    from noisyor_bench.infra.device import set_threads

    set_threads(args.threads)
    run_vi(args.dataset_file, args.dataset, args.seed, _section(args), args.out_dir)
    return 0


def cmd_ape_nuts(args: argparse.Namespace) -> int:
    from noisyor_bench.experiments.ape.baselines import run_nuts
    from noisyor_bench.infra.device import set_threads

    set_threads(args.threads)
    run_nuts(args.dataset_file, args.dataset, args.seed, _section(args), args.vi_dir, args.out_dir)
    return 0


def cmd_ape_evaluate(args: argparse.Namespace) -> int:
    from noisyor_bench.experiments.ape.evaluate import evaluate_seed
    from noisyor_bench.infra.device import set_threads

    set_threads(args.threads)
    runs: dict[str, str] = {}
    for item in args.encoder or []:
        method, sep, path = item.partition("=")
        if not sep or not path:
            raise ConfigError(f"--encoder {item!r}: expected METHOD=RUN_DIR")
        runs[method] = path
    evaluate_seed(
        args.dataset_file, args.dataset, args.seed, _section(args), runs, args.vi_dir, args.nuts_dir, args.out_dir
    )
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("ape-data", help="APE: build results/data/ape-<dataset>.npz (toy bars, reviews)")
    p.add_argument("--dataset", choices=DATASETS, required=True)
    p.add_argument("--settings", required=True, help="JSON (or @file): grids.<grid>.ape.datasets.<dataset>")
    p.add_argument("--raw-data-dir", default=None, help="raw-data mirror (default $NOISYOR_RAW_DATA, else download)")
    p.add_argument("--cache-dir", default="results/raw", help="download cache (download mode)")
    p.add_argument("--out", required=True, help="the dataset .npz (a .json sidecar is written beside it)")
    p.set_defaults(func=cmd_ape_data)

    p = subparsers.add_parser("ape-train", help="APE: train one encoder for one seed (a run directory)")
    p.add_argument("--dataset", choices=DATASETS, required=True)
    p.add_argument("--dataset-file", required=True, help="results/data/ape-<dataset>.npz")
    p.add_argument("--method", choices=("standard", "ape-naive", "ape-model-aware"), required=True)
    p.add_argument("--seed", type=int, required=True)
    p.add_argument("--settings", required=True, help="JSON (or @file): grids.<grid>.ape.datasets.<dataset>")
    p.add_argument("--device", default="cpu")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--out-dir", required=True, help="the run directory")
    p.set_defaults(func=cmd_ape_train)

    for name, func, what in (
        ("ape-vi", cmd_ape_vi, "VI from random initialisation on the test combinations (a run directory)"),
        ("ape-nuts", cmd_ape_nuts, "NUTS warm-started from VI on the first test combinations (a run directory)"),
        ("ape-evaluate", cmd_ape_evaluate, "score every method of one seed on the test combinations"),
    ):
        p = subparsers.add_parser(name, help=f"APE: {what}")
        p.add_argument("--dataset", choices=DATASETS, required=True)
        p.add_argument("--dataset-file", required=True, help="results/data/ape-<dataset>.npz")
        p.add_argument("--seed", type=int, required=True)
        p.add_argument("--settings", required=True, help="JSON (or @file): grids.<grid>.ape.datasets.<dataset>")
        p.add_argument("--threads", type=int, default=1)
        p.add_argument("--out-dir", required=True, help="the run directory")
        if name != "ape-vi":
            p.add_argument("--vi-dir", required=True, help="the seed's ape-vi run directory")
        if name == "ape-evaluate":
            p.add_argument("--encoder", nargs="*", default=[], help="METHOD=RUN_DIR of each trained encoder")
            p.add_argument("--nuts-dir", default=None, help="the seed's ape-nuts run directory (optional)")
        p.set_defaults(func=func)
