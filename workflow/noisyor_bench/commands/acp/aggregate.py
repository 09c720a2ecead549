"""CLI: synthetic-data tables, figures and claim verdicts (paper Sections 4.2-4.4, Figs. 3-5, Table 4).

Every input is an explicit list of files (Snakemake expands them), never a directory glob,
so the workflow DAG knows every input.  ``--runs`` takes run directories or their
``metrics.json`` files, interchangeably.
"""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

from noisyor_bench.commands.arguments import add_table_outputs
from noisyor_bench.infra.errors import ConfigError

log = logging.getLogger(__name__)


def cmd_table_fig3a(args: argparse.Namespace) -> int:
    from noisyor_bench.reporting.acp.baselines import read_baselines
    from noisyor_bench.reporting.acp.synthetic_tables import fig3a_markdown, fig3a_table
    from noisyor_bench.reporting.collect import collect_runs
    from noisyor_bench.reporting.tables import write_table

    table = fig3a_table(collect_runs(args.runs), baselines=read_baselines(args.baselines))
    write_table(table, args.out_csv, fig3a_markdown(table), args.out_md)
    log.info("fig3a: %d rows -> %s", len(table), args.out_csv)
    return 0


def cmd_table4(args: argparse.Namespace) -> int:
    from noisyor_bench.reporting.acp.baselines import read_baselines
    from noisyor_bench.reporting.acp.synthetic_tables import (
        parse_missing_reasons,
        table4_markdown,
        table4_table,
    )
    from noisyor_bench.reporting.collect import collect_runs
    from noisyor_bench.reporting.tables import write_table

    table = table4_table(
        collect_runs(args.runs),
        parse_missing_reasons(args.missing_reason),
        baselines=read_baselines(args.baselines),
    )
    write_table(table, args.out_csv, table4_markdown(table), args.out_md)
    log.info(
        "table4: %d cells (%d measured) -> %s",
        len(table),
        int((table["status"] == "measured").sum()),
        args.out_csv,
    )
    return 0


def _dataset_titles(paths: list[str] | None) -> dict[str, str]:
    """Panel titles ``name (D=.., K=.., sparsity ..%)`` from dataset sidecars."""
    from noisyor_bench.infra.io import read_json
    from noisyor_bench.infra.provenance import note_input

    titles = {}
    for path in paths or []:
        sidecar = Path(path).with_suffix(".json")
        if not sidecar.exists():
            raise ConfigError(f"--datasets: sidecar {sidecar} of {path} not found")
        note_input(sidecar, "dataset sidecar")
        meta = read_json(sidecar)
        sparsity = meta.get("sparsity_percent", {}).get("all")
        extra = f", sparsity {sparsity:.1f}%" if isinstance(sparsity, (int, float)) else ""
        titles[meta["name"]] = f"{meta['name']} (D={meta['D']}, K={meta['K']}{extra})"
    return titles


def cmd_figure_fig5(args: argparse.Namespace) -> int:
    from noisyor_bench.reporting.acp.baselines import read_baselines
    from noisyor_bench.reporting.acp.figures import plot_fig5
    from noisyor_bench.reporting.acp.synthetic_tables import fig5_markdown, fig5_table
    from noisyor_bench.reporting.collect import collect_runs
    from noisyor_bench.reporting.tables import write_table

    table = fig5_table(collect_runs(args.runs), read_baselines(args.baselines))
    write_table(table, args.out_csv, fig5_markdown(table), args.out_md)
    plot_fig5(table, args.out_png, args.out_pdf, titles=_dataset_titles(args.datasets))
    log.info("fig5: %d datasets -> %s", table["dataset"].nunique(), args.out_png)
    return 0


def cmd_figure_fig3b(args: argparse.Namespace) -> int:
    from noisyor_bench.reporting.acp.figures import plot_fig3b
    from noisyor_bench.reporting.acp.paper import paper_numbers
    from noisyor_bench.reporting.acp.synthetic_tables import collect_curves, fig3b_markdown, generators_first
    from noisyor_bench.reporting.tables import write_table

    curves = collect_curves(args.runs)
    write_table(curves, args.out_csv, fig3b_markdown(curves), args.out_md)
    # the figure is the paper's: its dataset's curves (a generator variant's are in the table)
    (shown, *_) = generators_first(curves["dataset"].dropna(), paper_numbers()["fig3a"]["dataset"])
    plot_fig3b(curves[curves["dataset"] == shown], args.out_png, args.out_pdf)
    log.info("fig3b: %d seeds -> %s", curves["seed"].nunique(), args.out_png)
    return 0


def cmd_figure_patterns(args: argparse.Namespace) -> int:
    import pandas as pd

    from noisyor_bench.evaluation.recovery import match_patterns
    from noisyor_bench.experiments.rundir import load_posterior
    from noisyor_bench.infra.provenance import note_input
    from noisyor_bench.reporting.acp.baselines import read_baselines
    from noisyor_bench.reporting.acp.figures import (
        PatternRow,
        plot_pattern_grid,
        representative_runs,
        row_title,
    )
    from noisyor_bench.reporting.acp.recovery_tables import recovery_markdown, recovery_table
    from noisyor_bench.reporting.collect import collect_runs, load_dataset_truth
    from noisyor_bench.reporting.tables import write_table

    if not 0.0 < args.threshold <= 1.0:
        raise ConfigError(f"--threshold must be in (0, 1], got {args.threshold}")
    truths = {}  # name -> (theta, theta0, shape): the figure's dataset first, then its generator variants
    for path in args.dataset:
        theta, theta0, shape, name = load_dataset_truth(path)
        if Path(path).with_suffix(".json").is_file():  # read for the image shape
            note_input(Path(path).with_suffix(".json"), "dataset sidecar")
        truths[name] = (theta, theta0, shape)
    name = next(iter(truths))
    theta, theta0, shape = truths[name]
    if shape is None:
        raise ConfigError(
            f"--dataset {args.dataset[0]}: no image_shape in its sidecar; pattern grids need image data"
        )
    runs = collect_runs(args.runs)
    unknown = sorted(set(runs["dataset"]) - set(truths))
    if unknown:
        raise ConfigError(f"--runs are from dataset(s) {unknown} not given by --dataset ({sorted(truths)})")
    baselines = read_baselines(args.baselines)
    table = pd.concat(
        [
            recovery_table(
                runs[runs["dataset"] == ds],
                truths[ds][0],
                args.threshold,
                baselines=baselines,
                paper_dataset=name,
            )
            for ds in truths
            if (runs["dataset"] == ds).any()
        ],
        ignore_index=True,
    )
    write_table(table, args.out_csv, recovery_markdown(table), args.out_md)
    table_shown = table[table["dataset"] == name]
    # the figure shows the runs that learn K_true columns (K = 2 x K_true rows: the table only)
    primary = table_shown[table_shown["n_learned"] == table_shown["n_true"]]
    rows = []
    for pick in representative_runs(primary).to_dict("records"):
        post = load_posterior(pick["run_dir"])
        rows.append(
            PatternRow(
                row_title(pick, primary),
                post["theta"],
                post.get("theta0"),
                match_patterns(theta, post["theta"], args.threshold),
            )
        )
    title = (
        args.title or f"Learned patterns on {name} (matched to the true order; threshold {args.threshold:g})"
    )
    plot_pattern_grid(theta, theta0, rows, shape, args.out_png, args.out_pdf, title=title)
    log.info("patterns %s: %d runs, %d rows -> %s", name, len(table), len(rows), args.out_png)
    return 0


def cmd_ablation_table(args: argparse.Namespace) -> int:
    from noisyor_bench.infra.provenance import note_input
    from noisyor_bench.reporting.acp.ablation import ablation_markdown, ablation_table
    from noisyor_bench.reporting.collect import collect_runs, load_dataset_truth
    from noisyor_bench.reporting.tables import write_table

    if not 0.0 < args.threshold <= 1.0:
        raise ConfigError(f"--threshold must be in (0, 1], got {args.threshold}")
    truths = {}
    for path in args.datasets or []:
        theta, _, _, name = load_dataset_truth(path)
        if Path(path).with_suffix(".json").is_file():  # read for the dataset's name
            note_input(Path(path).with_suffix(".json"), "dataset sidecar")
        truths[name] = theta
    table = ablation_table(collect_runs(args.runs), truths, args.threshold)
    write_table(table, args.out_csv, ablation_markdown(table), args.out_md)
    log.info("ablation: %d cells -> %s", len(table), args.out_csv)
    return 0


def cmd_claims(args: argparse.Namespace) -> int:
    from noisyor_bench.reporting.acp.synthetic_claims import synthetic_claims
    from noisyor_bench.reporting.claims import write_claims
    from noisyor_bench.reporting.tables import read_tables

    not_run: dict[str, str] = {}
    for item in args.not_run or ():
        name, sep, reason = item.partition("=")
        if not sep or not name or not reason:
            raise SystemExit(
                f"--not-run {item!r}: expected EXPERIMENT=REASON (e.g. 'suppfig2=paper grid only')"
            )
        not_run[name] = reason
    claims = synthetic_claims(read_tables(args.tables), args.experiments, not_run)
    write_claims(
        claims, args.out_csv, args.out_md, title="Claims of the paper (synthetic data, Sections 4.2-4.4)"
    )
    for c in claims:
        log.info("%-45s %s", c.claim_id, c.verdict)
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    runs_help = "run directories or their metrics.json files"
    baselines_help = (
        "results/baselines/<dataset>.json files (noisyor-bench acp-baselines): reference rows and columns"
    )

    p = sub.add_parser(
        "acp-table-fig3a", help="paper Fig. 3a table: NELBO/F1/EM per (N_train, method) beside the paper"
    )
    p.add_argument("--runs", nargs="+", required=True, help=runs_help)
    p.add_argument("--baselines", nargs="*", default=[], help=baselines_help)
    add_table_outputs(p)
    p.set_defaults(func=cmd_table_fig3a)

    p = sub.add_parser("acp-table4", help="paper Table 4: held-out NELBO, N_train x method, beside the paper")
    p.add_argument("--runs", nargs="+", required=True, help=runs_help)
    p.add_argument("--baselines", nargs="*", default=[], help=baselines_help)
    p.add_argument(
        "--missing-reason",
        action="append",
        default=[],
        metavar="[METHOD=]TEXT",
        help="text for cells without runs; 'lb-cdi=TEXT' for one method (repeatable)",
    )
    add_table_outputs(p)
    p.set_defaults(func=cmd_table4)

    p = sub.add_parser(
        "acp-figure-fig5", help="paper Fig. 5: NELBO vs N_train per SYN-RANDOM dataset (+ data table)"
    )
    p.add_argument("--runs", nargs="+", required=True, help=runs_help)
    p.add_argument("--baselines", nargs="*", default=[], help=baselines_help)
    p.add_argument("--datasets", nargs="*", help="dataset .npz files (their sidecars give panel titles)")
    p.add_argument("--out-png", required=True)
    p.add_argument("--out-pdf")
    add_table_outputs(p, markdown_required=False)
    p.set_defaults(func=cmd_figure_fig5)

    p = sub.add_parser(
        "acp-figure-fig3b", help="paper Fig. 3b: UB-CDI LL-UB and ELBO per fixed-point round (+ data)"
    )
    p.add_argument("--runs", nargs="+", required=True, help=runs_help + " (with curve.csv)")
    p.add_argument("--out-png", required=True)
    p.add_argument("--out-pdf")
    add_table_outputs(p, markdown_required=False)
    p.set_defaults(func=cmd_figure_fig3b)

    p = sub.add_parser(
        "acp-figure-patterns", help="paper Fig. 4 / supp. Figs. 1-2: learned patterns + recovery table"
    )
    p.add_argument("--runs", nargs="+", required=True, help=runs_help + " (with posterior_test.npz)")
    p.add_argument("--baselines", nargs="*", default=[], help=baselines_help)
    p.add_argument(
        "--dataset",
        nargs="+",
        required=True,
        help="the dataset .npz (true theta; sidecar gives image_shape) whose patterns the figure shows, "
        "then any generator variants of it whose runs the table adds beside the same paper counts",
    )
    p.add_argument(
        "--threshold", type=float, default=0.8, help="matched cosine similarity counted as recovered"
    )
    p.add_argument("--title", help="figure title (default: one naming the dataset)")
    p.add_argument("--out-png", required=True)
    p.add_argument("--out-pdf")
    add_table_outputs(p, markdown_required=False)
    p.set_defaults(func=cmd_figure_patterns)

    p = sub.add_parser(
        "acp-ablation-table",
        help="ablation ACP vs ACP-SG (theta stopped in eq. 11), paired by seed: NELBO, theta distance, recovery",
    )
    p.add_argument(
        "--runs",
        nargs="+",
        required=True,
        help=runs_help + " of ACP, ACP-SG and AVI cells (with posterior_test.npz)",
    )
    p.add_argument(
        "--datasets", nargs="*", help="dataset .npz files whose true theta gives the recovery columns"
    )
    p.add_argument(
        "--threshold", type=float, default=0.8, help="matched cosine similarity counted as recovered"
    )
    add_table_outputs(p, markdown_required=False)
    p.set_defaults(func=cmd_ablation_table)

    p = sub.add_parser(
        "acp-claims-synthetic",
        help="verdicts on the paper's synthetic-data claims from the table CSVs",
    )
    p.add_argument(
        "--tables",
        nargs="+",
        required=True,
        help="CSVs from acp-table-fig3a, acp-table4, acp-figure-fig5, acp-figure-fig3b, acp-figure-patterns, "
        "acp-ablation-table "
        "(any subset)",
    )
    p.add_argument(
        "--experiments",
        nargs="+",
        help="the experiments the grid runs (fig3a fig4 suppfig2 fig5 table4): claims of the others are "
        "left out (default: every claim, 'no data' where a table is missing)",
    )
    p.add_argument(
        "--not-run",
        nargs="*",
        metavar="EXPERIMENT=REASON",
        help="paper experiments the grid leaves out on purpose (its not_run_experiments): their claims "
        "are listed as not tested with the reason",
    )
    add_table_outputs(p, markdown_required=False)
    p.set_defaults(func=cmd_claims)
