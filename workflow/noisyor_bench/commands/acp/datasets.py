"""CLI: build synthetic datasets, draw their patterns, tabulate them (paper Tables 2-3)."""

from __future__ import annotations

import argparse
import logging
from pathlib import Path
from typing import Any

from noisyor_bench.commands.arguments import add_table_outputs, json_argument
from noisyor_bench.experiments.config import load_config, raw_data_dir
from noisyor_bench.infra.errors import ConfigError, DataError
from noisyor_bench.infra.io import load_npz, read_json, write_json_atomic, write_npz_atomic, write_text_atomic

log = logging.getLogger(__name__)


def sidecar_path(npz_path: str | Path) -> Path:
    return Path(npz_path).with_suffix(".json")


def dataset_integrity(npz_path: str | Path) -> str | None:
    """None if a built dataset is intact (or not built yet), else what is wrong with it.

    Intact: its bytes have the sha256 its sidecar recorded when ``acp-make-dataset`` wrote it.
    A dataset without a sidecar or without a recorded sha256 is not judged (Snakemake
    rebuilds a dataset whose sidecar is missing anyway).
    """
    from noisyor_bench.infra.hashing import sha256_file_memo

    npz = Path(npz_path)
    side = sidecar_path(npz)
    if not npz.is_file() or not side.is_file():
        return None
    try:
        record = read_json(side).get("provenance") or {}
    except (ValueError, AttributeError) as err:
        return f"{side}: corrupt sidecar ({err})"
    if not isinstance(record, dict):
        return f"{side}: corrupt sidecar (its 'provenance' is not an object)"
    recorded = next(
        (o.get("sha256") for o in record.get("outputs") or [] if Path(o.get("path", "")).name == npz.name),
        None,
    )
    if recorded is None:
        return None
    now = sha256_file_memo(npz)
    if now != recorded:
        return (
            f"{npz}: sha256 {now[:12]}... differs from the {recorded[:12]}... recorded in {side} when it was built "
            f"({npz.stat().st_size} bytes now; truncated, overwritten or replaced)"
        )
    return None


def cmd_make_dataset(args: argparse.Namespace) -> int:
    from noisyor_bench.data.synthetic.build import build_dataset
    from noisyor_bench.reporting.acp.paper import paper_sparsity

    if args.spec is not None:
        from noisyor_bench.experiments.config import check_name, validate_dataset_spec

        spec = json_argument(args.spec, "--spec")
        check_name(args.name, "--name")
        validate_dataset_spec(args.name, spec, "--spec")
        mirror = Path(args.raw_data_dir) if args.raw_data_dir else raw_data_dir({})
    else:
        cfg = load_config(args.config)
        if args.name not in cfg["datasets"]:
            raise ConfigError(
                f"--name: unknown dataset {args.name!r}; allowed values: {sorted(cfg['datasets'])}"
            )
        spec = cfg["datasets"][args.name]
        mirror = Path(args.raw_data_dir) if args.raw_data_dir else raw_data_dir(cfg)
    arrays, sidecar = build_dataset(args.name, spec, mirror, args.cache_dir)
    sidecar["raw_data_dir"] = str(mirror) if mirror else None
    write_npz_atomic(args.out, **arrays)
    # Only the sidecar carries the record (timestamps): the .npz stays byte-identical.
    sidecar["provenance"] = _dataset_provenance(args, spec, mirror)
    write_json_atomic(sidecar_path(args.out), sidecar)
    s = sidecar["sparsity_percent"]["all"]
    paper = paper_sparsity(args.name)
    variant = spec.get("variant_of") if isinstance(spec, dict) else None
    against = (
        f"paper {paper}%"
        if paper is not None
        else f"a generator variant of {variant}"
        if variant
        else "not in the paper"
    )
    log.info(
        "%s: D=%d K=%d sparsity %.1f%% (%s) -> %s",
        args.name,
        sidecar["D"],
        sidecar["K"],
        s,
        against,
        args.out,
    )
    return 0


def _dataset_provenance(args: argparse.Namespace, spec: Any, mirror: Path | None) -> dict[str, Any]:
    """The sidecar's provenance: the config entry and the raw files it was built from."""
    from noisyor_bench.data.rawdata import dataset_raw_keys, entry, expected_location
    from noisyor_bench.infra import provenance

    base = Path(args.out).parent
    inputs = [
        provenance.file_entry(
            expected_location(key, mirror, args.cache_dir),
            f"raw:{key}",
            base,
            pinned_sha256=entry(key).sha256,
        )
        for key in dataset_raw_keys(spec)
    ]
    if args.spec is None:
        inputs.insert(0, provenance.file_entry(args.config, "config", base))
    source = "--spec" if args.spec is not None else f"{args.config}: datasets.{args.name}"
    config = {"name": args.name, "source": source, "entry": spec}
    return provenance.artifact_record("dataset", inputs, [args.out], base, config)


def cmd_plot_patterns(args: argparse.Namespace) -> int:
    from noisyor_bench.infra.provenance import note_input
    from noisyor_bench.reporting.acp.patterns import plot_patterns

    data = load_npz(args.dataset)
    note_input(sidecar_path(args.dataset), "dataset sidecar")
    meta = read_json(sidecar_path(args.dataset))
    shape = tuple(meta["image_shape"]) if meta.get("image_shape") else None
    title = f"{meta['name']}: generating patterns (D={meta['D']}, K={meta['K']})"
    plot_patterns(data["theta"], shape, args.out_png, args.out_pdf, title=title, leak=data["theta0"])
    return 0


TABLE_COLUMNS = [
    "dataset",
    "D",
    "K",
    "mu",
    "n_train_pool",
    "n_test",
    "sparsity",
    "expected_sparsity",
    "paper_sparsity",
    "difference",
    "seed",  # the parameter and sample seed: which draw of the generator the dataset is
]


def dataset_rows(paths: list[str]) -> list[dict[str, Any]]:
    from noisyor_bench.infra.provenance import note_input
    from noisyor_bench.reporting.acp.paper import paper_sparsity

    rows = []
    for path in paths:
        sidecar = sidecar_path(path)
        if not sidecar.exists():
            raise DataError(
                f"dataset sidecar {sidecar} is missing; rebuild {path} with 'noisyor-bench acp-make-dataset'"
            )
        problem = dataset_integrity(path)  # a table of a damaged dataset would pass as right
        if problem:
            raise DataError(f"{problem}; rebuild it with 'noisyor-bench acp-make-dataset'")
        note_input(sidecar, "dataset sidecar")
        meta = read_json(sidecar)
        if not isinstance(meta, dict) or not {"config", "sparsity_percent", "name"} <= set(meta):
            raise DataError(
                f"dataset sidecar {sidecar} is corrupt (not an acp-make-dataset sidecar); rebuild {path}"
            )
        cfg = meta["config"]
        measured = meta["sparsity_percent"]["all"]
        paper = paper_sparsity(meta["name"])
        mu = cfg.get("mu", f"Beta({cfg.get('alpha_mu')},{cfg.get('beta_mu')})")
        rows.append(
            {
                "dataset": meta["name"],
                "D": meta["D"],
                "K": meta["K"],
                "mu": mu,
                "n_train_pool": meta["n_train_pool"],
                "n_test": meta["n_test"],
                "sparsity": round(measured, 2),
                "expected_sparsity": round(meta["expected_sparsity_percent"], 2),
                "paper_sparsity": paper,
                "difference": None if paper is None else round(measured - paper, 2),
                "seed": meta.get("seed", cfg.get("seed")),
            }
        )
    return rows


def markdown_table(rows: list[dict[str, Any]], columns: list[str]) -> str:
    def fmt(v: Any) -> str:
        return "" if v is None else (f"{v:g}" if isinstance(v, float) else str(v))

    lines = ["| " + " | ".join(columns) + " |", "|" + "|".join("---" for _ in columns) + "|"]
    lines += ["| " + " | ".join(fmt(r[c]) for c in columns) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def cmd_dataset_table(args: argparse.Namespace) -> int:
    import pandas as pd

    rows = dataset_rows(args.datasets)
    frame = pd.DataFrame(rows, columns=TABLE_COLUMNS)
    write_text_atomic(args.out_csv, frame.to_csv(index=False))
    header = (
        "# Synthetic datasets (paper Tables 2 and 3)\n\n"
        "Sparsity = percentage of zeros in x over train pool, validation and test sets; "
        "expected = exact expectation under the generating parameters.\n\n"
    )
    write_text_atomic(args.out_md, header + markdown_table(rows, TABLE_COLUMNS))
    print(markdown_table(rows, TABLE_COLUMNS), end="")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "acp-make-dataset", help="sample a synthetic dataset (results/data/<name>.npz + .json)"
    )
    p.add_argument("--name", required=True, help="dataset name, a key of the config's datasets section")
    src = p.add_mutually_exclusive_group()
    src.add_argument(
        "--config", default="config/config.yaml", help="config file to take the dataset entry from"
    )
    src.add_argument("--spec", help="the dataset entry as JSON (or @file); used by the workflow")
    p.add_argument(
        "--raw-data-dir",
        help="raw-data mirror (default: config raw_data_dir, $NOISYOR_RAW_DATA, else download)",
    )
    p.add_argument("--cache-dir", default="results/raw", help="where downloaded raw inputs are kept")
    p.add_argument("--out", required=True, help="output .npz path (the .json sidecar is written beside it)")
    p.set_defaults(func=cmd_make_dataset)

    p = sub.add_parser("acp-plot-patterns", help="draw a dataset's generating patterns (paper Fig. 2a/2b)")
    p.add_argument("--dataset", required=True, help="dataset .npz")
    p.add_argument("--out-png", required=True)
    p.add_argument("--out-pdf")
    p.set_defaults(func=cmd_plot_patterns)

    p = sub.add_parser("acp-dataset-table", help="results/tables/datasets.csv: measured vs paper sparsity")
    p.add_argument("datasets", nargs="+", help="dataset .npz files")
    add_table_outputs(p)
    p.set_defaults(func=cmd_dataset_table)
