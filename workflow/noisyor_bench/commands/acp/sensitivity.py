"""CLI: the Fig. 3a sensitivity table and figure (SVI / LB-CDI against per-datapoint steps)."""

from __future__ import annotations

import argparse
import logging

from noisyor_bench.commands.arguments import add_table_outputs

log = logging.getLogger(__name__)


def cmd_sensitivity(args: argparse.Namespace) -> int:
    from noisyor_bench.infra.device import set_threads
    from noisyor_bench.reporting.acp.figures_sensitivity import plot_sensitivity
    from noisyor_bench.reporting.acp.sensitivity import (
        crossing_sentence,
        crossings,
        sensitivity_markdown,
        sensitivity_table,
    )
    from noisyor_bench.reporting.tables import write_table

    set_threads(args.threads)
    table = sensitivity_table(args.runs, args.dataset, args.steps)
    write_table(table, args.out_csv, sensitivity_markdown(table), args.out_md)
    plot_sensitivity(table, args.out_png, args.out_pdf)
    log.info(
        "fig3a sensitivity: %d rows -> %s; %s", len(table), args.out_csv, crossing_sentence(crossings(table))
    )
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "acp-figure-fig3a-sensitivity",
        help="Fig. 3a sensitivity: SVI/LB-CDI held-out NELBO, F1, EM against the per-datapoint step cap",
    )
    p.add_argument(
        "--runs",
        nargs="+",
        required=True,
        help="Fig. 3a SVI / LB-CDI run directories or metrics.json files (lowest seed per method used)",
    )
    p.add_argument("--dataset", required=True, help="the runs' dataset .npz (ground truth and test split)")
    p.add_argument(
        "--steps",
        nargs="+",
        type=int,
        default=None,
        help="step caps (default: 0 1 2 3 5 7 10 15 20 30 50 100 200)",
    )
    p.add_argument("--threads", type=int, default=1, help="torch threads")
    add_table_outputs(p)
    p.add_argument("--out-png", required=True)
    p.add_argument("--out-pdf")
    p.set_defaults(func=cmd_sensitivity)
