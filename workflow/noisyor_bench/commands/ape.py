"""CLI: the APE paper (rules/ape.smk): data, encoder training, VI / NUTS, evaluation, Table 1,
Figures 1-2 and claims.  Each subcommand takes the dataset's config section
(``grids.<grid>.ape.datasets.<name>``) as JSON (inline or ``@file``) where it needs settings.
"""

from __future__ import annotations

import argparse
import logging
from pathlib import Path
from typing import Any

from noisyor_bench.commands.arguments import add_segment_arguments, add_table_outputs, json_argument
from noisyor_bench.infra.errors import ConfigError

log = logging.getLogger(__name__)

DATASETS = ("toybars", "mdreviews")


def _section(args: argparse.Namespace) -> dict[str, Any]:
    value = json_argument(args.settings, "--settings")
    if not isinstance(value, dict):
        raise ConfigError(
            "--settings: expected a JSON object (the dataset's grids.<grid>.ape.datasets section)"
        )
    return value


# An array only one APE dataset has: a file without its sidecar is still told apart.
OWN_ARRAY = {"toybars": "true_topics", "mdreviews": "vocab"}
# --settings sections each command reads (a wrong section used to end in a KeyError).
NEEDED_SECTIONS = {"ape-train": ("training",), "ape-vi": ("vi",), "ape-nuts": ("nuts",), "ape-evaluate": ()}


def _check_inputs(args: argparse.Namespace, command: str) -> dict[str, Any]:
    """Seed, file kind, ``--dataset`` against the file and the settings' sections, before any
    fit; the settings."""
    from noisyor_bench.data.labels import check_label, check_seed, require_kind

    check_seed(args.seed)
    names = require_kind(args.dataset_file, "topic-dataset", "--dataset-file")
    check_label(args.dataset_file, args.dataset, "dataset", "--dataset")
    own = [name for name, array in OWN_ARRAY.items() if array in names]
    if len(own) == 1 and own[0] != args.dataset:
        raise ConfigError(
            f"--dataset {args.dataset!r} disagrees with {args.dataset_file}: it holds {OWN_ARRAY[own[0]]!r}, "
            f"an array of the {own[0]} dataset"
        )
    section = _section(args)
    missing = [key for key in NEEDED_SECTIONS[command] if not isinstance(section.get(key), dict)]
    if missing:
        raise ConfigError(
            f"--settings: no {missing} section; {command} expects grids.<grid>.ape.datasets.{args.dataset}"
        )
    return section


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
            provenance.file_entry(
                paths[name], f"raw:{key}", Path(args.out).parent, pinned_sha256=REGISTRY[key].sha256
            )
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
    sidecar["provenance"] = provenance.artifact_record(
        "dataset", inputs, [Path(args.out)], Path(args.out).parent
    )
    write_json_atomic(Path(args.out).with_suffix(".json"), sidecar)
    log.info("ape-%s: %s -> %s", args.dataset, facts, args.out)
    return 0


def cmd_ape_train(args: argparse.Namespace) -> int:
    from noisyor_bench.experiments.ape.train import train_run
    from noisyor_bench.infra.device import set_threads

    section = _check_inputs(args, "ape-train")
    set_threads(args.threads)
    previous = _previous(args)
    train_run(
        args.dataset_file, args.dataset, args.method, args.seed, section, args.out_dir, args.device, previous
    )
    return 0


def _previous(args: argparse.Namespace) -> str | None:
    """``--previous``: the last segment's output (an empty value: none); a named file must exist."""
    if not args.previous:
        return None
    if not Path(args.previous).is_file():
        raise ConfigError(
            f"--previous {args.previous}: no such segment checkpoint (run the training's earlier "
            "segments, rule ape_train_segment, first)"
        )
    return str(args.previous)


def cmd_ape_train_segment(args: argparse.Namespace) -> int:
    from noisyor_bench.experiments.ape.train import train_segment
    from noisyor_bench.infra.device import set_threads

    section = _check_inputs(args, "ape-train")
    set_threads(args.threads)
    train_segment(
        args.dataset_file,
        args.dataset,
        args.method,
        args.seed,
        section,
        args.segment,
        args.segments,
        args.out,
        _previous(args),
        args.device,
    )
    return 0


def cmd_ape_vi(args: argparse.Namespace) -> int:
    from noisyor_bench.experiments.ape.baselines import run_vi
    from noisyor_bench.infra.device import set_threads

    section = _check_inputs(args, "ape-vi")
    set_threads(args.threads)
    run_vi(args.dataset_file, args.dataset, args.seed, section, args.out_dir)
    return 0


def cmd_ape_nuts(args: argparse.Namespace) -> int:
    from noisyor_bench.experiments.ape.baselines import run_nuts
    from noisyor_bench.infra.device import set_threads

    section = _check_inputs(args, "ape-nuts")
    set_threads(args.threads)
    run_nuts(args.dataset_file, args.dataset, args.seed, section, args.vi_dir, args.out_dir)
    return 0


def cmd_ape_evaluate(args: argparse.Namespace) -> int:
    from noisyor_bench.experiments.ape.evaluate import eval_key, evaluate_seed
    from noisyor_bench.experiments.rundir import check_out_dir
    from noisyor_bench.infra.device import set_threads

    section = _check_inputs(args, "ape-evaluate")
    check_out_dir(args.out_dir, eval_key(args.dataset, args.seed))
    set_threads(args.threads)
    runs: dict[str, str] = {}
    for item in args.encoder or []:
        method, sep, path = item.partition("=")
        if not sep or not path:
            raise ConfigError(f"--encoder {item!r}: expected METHOD=RUN_DIR")
        runs[method] = path
    evaluate_seed(
        args.dataset_file,
        args.dataset,
        args.seed,
        section,
        runs,
        args.vi_dir,
        args.nuts_dir,
        args.out_dir,
    )
    return 0


def cmd_ape_table1(args: argparse.Namespace) -> int:
    from noisyor_bench.reporting.ape.gaps import document_set_rows
    from noisyor_bench.reporting.ape.offset import load_terms
    from noisyor_bench.reporting.ape.table1 import (
        encoder_windows,
        figure1_rows,
        seed_rows,
        table1,
        table1_markdown,
    )
    from noisyor_bench.reporting.tables import write_table

    settings = _section(args)
    documents = {_dataset_of(path): load_terms(path) for path in args.datasets or []}
    windows = encoder_windows(args.train_runs or [], documents)
    frame = table1(seed_rows(args.evals), document_set_rows(args.evals), documents, windows)
    write_table(frame, args.out_csv, table1_markdown(frame, settings), args.out_md)
    fig1 = figure1_rows(args.evals)
    write_table(fig1, args.out_figure1_csv)
    log.info("APE Table 1: %d rows -> %s", len(frame), args.out_md)
    return 0


def _dataset_of(path: str) -> str:
    """``mdreviews`` of ``results/data/ape-mdreviews.npz``."""
    stem = Path(path).stem
    if not stem.startswith("ape-") or stem[4:] not in DATASETS:
        raise ConfigError(f"{path}: not an APE dataset file (expected data/ape-<{'|'.join(DATASETS)}>.npz)")
    return stem[4:]


def cmd_ape_figures(args: argparse.Namespace) -> int:
    from noisyor_bench.reporting.ape import figures

    figures.figure1_left(args.evals, args.vi_dirs, args.dataset, args.out_left_png, args.out_left_pdf)
    figures.figure1_right(args.evals, args.dataset, args.out_right_png, args.out_right_pdf)
    log.info("APE Figure 1 (%s) -> %s, %s", args.dataset, args.out_left_png, args.out_right_png)
    return 0


def cmd_ape_figure2(args: argparse.Namespace) -> int:
    from noisyor_bench.reporting.ape.figures import figure2

    figure2(args.dataset_file, args.eval_dir, args.out_png, args.out_pdf)
    log.info("APE Figure 2 -> %s", args.out_png)
    return 0


def cmd_ape_claims(args: argparse.Namespace) -> int:
    from noisyor_bench.reporting.ape.claims import ape_claims
    from noisyor_bench.reporting.claims import write_claims
    from noisyor_bench.reporting.tables import read_table

    claims = ape_claims(read_table(args.table), read_table(args.figure1))
    write_claims(claims, args.out_csv, args.out_md, title="APE: claims of the paper and verdicts")
    log.info("APE claims: %s", ", ".join(f"{c.claim_id}: {c.verdict}" for c in claims))
    return 0


def _training_arguments(p: argparse.ArgumentParser) -> None:
    """The arguments ``ape-train`` and ``ape-train-segment`` share."""
    p.add_argument("--dataset", choices=DATASETS, required=True, help="APE dataset: toybars or mdreviews")
    p.add_argument("--dataset-file", required=True, help="results/data/ape-<dataset>.npz")
    p.add_argument(
        "--method",
        choices=("standard", "ape-naive", "ape-model-aware"),
        required=True,
        help="encoder to train",
    )
    p.add_argument("--seed", type=int, required=True, help="run seed (initialisation, sampling, evaluation)")
    p.add_argument("--settings", required=True, help="JSON (or @file): grids.<grid>.ape.datasets.<dataset>")
    p.add_argument("--device", default="cpu", help="auto (CUDA when present), cpu or cuda[:N]")
    p.add_argument("--threads", type=int, default=1, help="torch threads (= the job's Snakemake threads)")
    p.add_argument(
        "--previous",
        default="",
        help="the previous segment's output (rule ape_train_segment) to continue from; empty: none",
    )


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "ape-data", help="APE: build results/data/ape-<dataset>.npz (toy bars, reviews)"
    )
    p.add_argument("--dataset", choices=DATASETS, required=True, help="APE dataset: toybars or mdreviews")
    p.add_argument("--settings", required=True, help="JSON (or @file): grids.<grid>.ape.datasets.<dataset>")
    p.add_argument(
        "--raw-data-dir", default=None, help="raw-data mirror (default $NOISYOR_RAW_DATA, else download)"
    )
    p.add_argument("--cache-dir", default="results/raw", help="download cache (download mode)")
    p.add_argument("--out", required=True, help="the dataset .npz (a .json sidecar is written beside it)")
    p.set_defaults(func=cmd_ape_data)

    p = subparsers.add_parser("ape-train", help="APE: train one encoder for one seed (a run directory)")
    _training_arguments(p)
    p.add_argument("--out-dir", required=True, help="the run directory")
    p.set_defaults(func=cmd_ape_train)

    p = subparsers.add_parser(
        "ape-train-segment",
        help="APE: one segment of an encoder training that runs as several jobs (ape.max_job_hours): "
        "its steps, from the previous segment's state to its own",
    )
    _training_arguments(p)
    add_segment_arguments(p, "ape-train", "the loop state at the segment's last step (.pt)")
    p.set_defaults(func=cmd_ape_train_segment)

    for name, func, what in (
        ("ape-vi", cmd_ape_vi, "VI from random initialisation on the test combinations (a run directory)"),
        (
            "ape-nuts",
            cmd_ape_nuts,
            "NUTS warm-started from VI on the first test combinations (a run directory)",
        ),
        ("ape-evaluate", cmd_ape_evaluate, "score every method of one seed on the test combinations"),
    ):
        p = subparsers.add_parser(name, help=f"APE: {what}")
        p.add_argument("--dataset", choices=DATASETS, required=True, help="APE dataset: toybars or mdreviews")
        p.add_argument("--dataset-file", required=True, help="results/data/ape-<dataset>.npz")
        p.add_argument(
            "--seed", type=int, required=True, help="run seed (initialisation, sampling, evaluation)"
        )
        p.add_argument(
            "--settings", required=True, help="JSON (or @file): grids.<grid>.ape.datasets.<dataset>"
        )
        p.add_argument("--threads", type=int, default=1, help="torch threads (= the job's Snakemake threads)")
        p.add_argument("--out-dir", required=True, help="the run directory")
        if name != "ape-vi":
            p.add_argument("--vi-dir", required=True, help="the seed's ape-vi run directory")
        if name == "ape-evaluate":
            p.add_argument("--encoder", nargs="*", default=[], help="METHOD=RUN_DIR of each trained encoder")
            p.add_argument("--nuts-dir", default=None, help="the seed's ape-nuts run directory (optional)")
        p.set_defaults(func=func)

    p = subparsers.add_parser("ape-table1", help="APE: Table 1 (both datasets) and Figure 1's times")
    p.add_argument(
        "--evals", nargs="+", required=True, help="runs/ape-eval/<dataset>/all/n0/seed<s> metrics.json files"
    )
    p.add_argument(
        "--settings", required=True, help="JSON (or @file): grids.<grid>.ape (for the caption's reductions)"
    )
    p.add_argument(
        "--datasets",
        nargs="*",
        default=[],
        help="results/data/ape-<dataset>.npz files: the caption's offset to the paper's values among random document sets",
    )
    p.add_argument(
        "--train-runs",
        nargs="*",
        default=[],
        help="runs/ape-train/.../metrics.json of the encoders: how far their training was still moving "
        "(nats per word, the claims' budget rule; needs --datasets)",
    )
    add_table_outputs(p)
    p.add_argument("--out-figure1-csv", required=True, help="output file: Figure 1's times per seed (CSV)")
    p.set_defaults(func=cmd_ape_table1)

    p = subparsers.add_parser("ape-figures", help="APE: Figure 1 left and right of one dataset")
    p.add_argument("--dataset", choices=DATASETS, required=True, help="APE dataset: toybars or mdreviews")
    p.add_argument(
        "--evals", nargs="+", required=True, help="runs/ape-eval/<dataset>/all/n0/seed<s> metrics.json files"
    )
    p.add_argument(
        "--vi-dirs", nargs="+", required=True, help="runs/ape-vi/<dataset>/vi/n0/seed<s> directories"
    )
    for side in ("left", "right"):
        p.add_argument(f"--out-{side}-png", required=True)
        p.add_argument(f"--out-{side}-pdf", default=None)
    p.set_defaults(func=cmd_ape_figures)

    p = subparsers.add_parser("ape-figure2", help="APE: Figure 2 (toy bars: topics and reconstructions)")
    p.add_argument("--dataset-file", required=True, help="results/data/ape-toybars.npz")
    p.add_argument("--eval-dir", required=True, help="runs/ape-eval/toybars/all/n0/seed<s> (the first seed)")
    p.add_argument("--out-png", required=True)
    p.add_argument("--out-pdf", default=None)
    p.set_defaults(func=cmd_ape_figure2)

    p = subparsers.add_parser(
        "ape-claims", help="APE: the paper's claims and verdicts (tables/claims_ape.csv)"
    )
    p.add_argument("--table", required=True, help="tables/ape_table1.csv")
    p.add_argument("--figure1", required=True, help="tables/ape_figure1.csv")
    add_table_outputs(p)
    p.set_defaults(func=cmd_ape_claims)
