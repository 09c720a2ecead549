"""CLI: ``compare`` (a user's results against a reference result set) and ``publish-reference``
(a finished run's small outputs into ``reference/``)."""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

log = logging.getLogger(__name__)


def cmd_compare(args: argparse.Namespace) -> int:
    from noisyor_bench.infra.results_lock import hold_unless_inherited
    from noisyor_bench.reporting.compare import compare_many, write_comparison

    hold_unless_inherited(args.results)  # one writer per results directory, until this command ends
    cells, claims = compare_many(args.results, args.reference, args.sources)
    default_csv, default_md = hand_run_outputs(args.results, args.reference)
    out_csv = Path(args.out_csv) if args.out_csv else default_csv
    out_md = Path(args.out_md) if args.out_md else default_md
    summary = write_comparison(cells, claims, out_csv, out_md, ", ".join(map(str, args.reference)))
    print(summary)
    print(f"details: {out_md}")
    if args.fail_on_difference and any(c.status == "differ" for c in cells):
        return 1
    return 0


def hand_run_outputs(results: str | Path, references: list[str]) -> tuple[Path, Path]:
    """Where a hand-run comparison goes without ``--out-csv``/``--out-md``:
    ``<results>/comparisons/<reference folder names>.{csv,md}``.

    Not ``<results>/tables/comparison.*``: that is the workflow's own output (rule ``compare``,
    which names its paths), compared against the configured references and read by the report;
    a hand run against another reference would replace it without a word, and the workflow
    would take it for its own.  Not under ``tables/`` at all, where every CSV counts as a result
    table of the run (and is published with it).  Named by the references, so comparisons with
    different references sit side by side."""
    names = "+".join(dict.fromkeys(Path(r).resolve().name or "root" for r in references)) or "reference"
    folder = Path(results) / "comparisons"
    return folder / f"{names}.csv", folder / f"{names}.md"


def cmd_publish_reference(args: argparse.Namespace) -> int:
    from noisyor_bench.reporting.reference import publish_reference

    copied = publish_reference(args.results, args.out, args.command, args.wall_seconds, args.note)
    print(f"published {len(copied)} files to {args.out} (README: {args.out}/README.md)")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "publish-reference",
        help="copy a finished run's tables and figures, with their provenance, into a reference folder with a README",
    )
    p.add_argument("--results", required=True, help="the finished run's results directory")
    p.add_argument("--out", default="reference", help="the reference folder (default: reference)")
    p.add_argument(
        "--command", required=True, help="the command that produced the run (quoted in the README)"
    )
    p.add_argument(
        "--wall-seconds", type=float, help="the run's wall time, if measured (e.g. by /usr/bin/time)"
    )
    p.add_argument(
        "--note", default="", help="a paragraph for the README (e.g. what else ran on the machine)"
    )
    p.set_defaults(func=cmd_publish_reference)

    p = sub.add_parser(
        "compare",
        help="which cells of your results agree with a reference result set within their 95%% CIs, "
        "and which claims got the same verdict",
    )
    p.add_argument(
        "--results", default="results", help="your results directory (with tables/; default: results)"
    )
    p.add_argument(
        "--reference",
        nargs="+",
        default=["reference"],
        help="the reference results directories (default: reference); with several, each cell and "
        "claim row names its reference (column reference_set)",
    )
    p.add_argument(
        "--sources",
        help="the references' verdicts, re-judged once by the evidence step (its claims_sources.csv); "
        "without it each reference is judged here from its tables",
    )
    p.add_argument(
        "--out-csv",
        help="per cell and metric (default: <results>/comparisons/<reference names>.csv; the "
        "workflow's own comparison, <results>/tables/comparison.csv, is left alone)",
    )
    p.add_argument(
        "--out-md",
        help="the cells that differ and the claims (default: <results>/comparisons/<reference names>.md)",
    )
    p.add_argument(
        "--fail-on-difference", action="store_true", help="exit 1 when any cell differs (for CI pipelines)"
    )
    p.set_defaults(func=cmd_compare)
