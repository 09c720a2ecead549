"""CLI: ``judge`` -- the claims of a folder of tables (a published reference's, a run's),
rebuilt by today's claim code without training: each paper's judge (``Paper.judge``) reads the
table CSVs, never the stored verdicts."""

from __future__ import annotations

import argparse
import logging
import time
from pathlib import Path

from noisyor_bench.commands.arguments import add_table_outputs

log = logging.getLogger(__name__)


def cmd_judge(args: argparse.Namespace) -> int:
    from noisyor_bench.experiments import papers
    from noisyor_bench.infra.errors import DataError
    from noisyor_bench.reporting.claims import verdict_counts_text, write_claims
    from noisyor_bench.reporting.judge import folder_label, tables_folder

    folder = tables_folder(args.tables)
    if not folder.is_dir():
        raise DataError(f"{args.tables}: no such folder of tables")
    chosen = papers.selected(args.paper) if args.paper else papers.papers()
    claims, lines = [], []
    for paper in chosen:
        start = time.perf_counter()
        mine = papers.judge(paper, folder)
        claims += mine
        if mine:
            seconds = time.perf_counter() - start
            lines.append(f"  {paper.name} ({seconds:.1f} s): {verdict_counts_text(mine)}")
    if not claims:
        names = ", ".join(p.id for p in chosen)
        raise DataError(f"{folder}: none of the tables the claims of {names} read")
    label = folder_label(folder)
    write_claims(
        claims, args.out_csv, args.out_md, title=f"Claims re-judged from {label} by today's claim code"
    )
    print(f"{label}: {len(claims)} claims re-judged from its tables")
    print("\n".join(lines))
    print(f"claims: {args.out_csv}" + (f", {args.out_md}" if args.out_md else ""))
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    from noisyor_bench.experiments import papers

    p = sub.add_parser(
        "judge",
        help="rebuild the claims of a reference or results folder from its tables with today's claim code "
        "(no training; stored verdicts are not read)",
    )
    p.add_argument(
        "--tables",
        required=True,
        type=Path,
        help="a reference or results directory (its tables/ is used) or a folder of table CSVs",
    )
    p.add_argument(
        "--paper",
        nargs="+",
        choices=papers.ids(),
        help="the papers to judge (default: every paper with tables in the folder)",
    )
    add_table_outputs(p, markdown_required=False)
    p.set_defaults(func=cmd_judge)
