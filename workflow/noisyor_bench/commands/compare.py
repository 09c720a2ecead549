"""CLI: ``noisyor-bench compare`` -- a user's results against a reference result set (issue 16)."""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

log = logging.getLogger(__name__)


def cmd_compare(args: argparse.Namespace) -> int:
    from noisyor_bench.reporting.compare import compare_results, write_comparison

    cells, claims = compare_results(args.results, args.reference)
    out_dir = Path(args.results) / "tables"
    out_csv = Path(args.out_csv) if args.out_csv else out_dir / "comparison.csv"
    out_md = Path(args.out_md) if args.out_md else out_dir / "comparison.md"
    summary = write_comparison(cells, claims, out_csv, out_md, str(args.reference))
    print(summary)
    print(f"details: {out_md}")
    if args.fail_on_difference and any(c.status == "differ" for c in cells):
        return 1
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "compare",
        help="which cells of your results agree with a reference result set within their 95%% CIs, "
        "and which claims got the same verdict",
    )
    p.add_argument(
        "--results", default="results", help="your results directory (with tables/; default: results)"
    )
    p.add_argument(
        "--reference", default="reference", help="the reference results directory (default: reference)"
    )
    p.add_argument("--out-csv", help="per cell and metric (default: <results>/tables/comparison.csv)")
    p.add_argument(
        "--out-md", help="the cells that differ and the claims (default: <results>/tables/comparison.md)"
    )
    p.add_argument(
        "--fail-on-difference", action="store_true", help="exit 1 when any cell differs (for CI pipelines)"
    )
    p.set_defaults(func=cmd_compare)
