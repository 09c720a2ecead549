"""CLI: the summaries over every paper of a grid (``rules/summary.smk``) -- the merged claims
table and the convergence tables.  Shared by the papers: nothing here knows one of them."""

from __future__ import annotations

import argparse
import logging

from noisyor_bench.commands.arguments import add_table_outputs

log = logging.getLogger(__name__)


def cmd_claims_merge(args: argparse.Namespace) -> int:
    from noisyor_bench.reporting.claims import read_claims, write_claims

    claims = [c for path in args.claims for c in read_claims(path)]
    write_claims(claims, args.out_csv, args.out_md, title="Claims of the papers and verdicts")
    return 0


def cmd_convergence_table(args: argparse.Namespace) -> int:
    from noisyor_bench.reporting.collect import collect_runs
    from noisyor_bench.reporting.convergence_tables import (
        convergence_markdown,
        convergence_table,
        summary_line,
    )
    from noisyor_bench.reporting.tables import write_table

    table = convergence_table(collect_runs(args.runs))
    write_table(table, args.out_csv, convergence_markdown(table), args.out_md)
    log.info("convergence %s: %s", table["experiment"].iloc[0], summary_line(table))
    return 0


def cmd_convergence_summary(args: argparse.Namespace) -> int:
    from noisyor_bench.reporting.convergence_tables import (
        read_convergence_tables,
        summary_markdown,
        summary_table,
    )
    from noisyor_bench.reporting.tables import write_table

    summary = summary_table(read_convergence_tables(args.tables))
    write_table(summary, args.out_csv, summary_markdown(summary), args.out_md)
    log.info("convergence summary: %d rows -> %s", len(summary), args.out_md)
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("claims-merge", help="concatenate claims CSVs of several stages into one")
    p.add_argument("--claims", nargs="+", required=True, help="claims CSVs")
    add_table_outputs(p, markdown_required=False)
    p.set_defaults(func=cmd_claims_merge)

    p = sub.add_parser(
        "convergence-table",
        help="one row per run of an experiment: converged, rule, stop reason, epochs, improvement",
    )
    p.add_argument(
        "--runs",
        nargs="+",
        required=True,
        help="run directories or their metrics.json files (one experiment)",
    )
    add_table_outputs(p)
    p.set_defaults(func=cmd_convergence_table)

    p = sub.add_parser(
        "convergence-summary", help="converged / total per experiment and method, learning-mode share overall"
    )
    p.add_argument("--tables", nargs="+", required=True, help="CSVs from convergence-table")
    add_table_outputs(p)
    p.set_defaults(func=cmd_convergence_summary)
