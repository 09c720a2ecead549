"""CLI: ``claims-evidence`` -- the headline verdict per claim from every source that judged it
(this run's claims and each published reference re-judged from its tables;
:mod:`noisyor_bench.reporting.evidence`).  Shared by the papers: nothing here knows one of them."""

from __future__ import annotations

import argparse
import logging

from noisyor_bench.commands.arguments import add_table_outputs, json_argument
from noisyor_bench.infra.errors import ConfigError

log = logging.getLogger(__name__)


def cmd_claims_evidence(args: argparse.Namespace) -> int:
    from pathlib import Path

    from noisyor_bench.reporting.claim_tables import timing_path
    from noisyor_bench.reporting.claims import read_claims
    from noisyor_bench.reporting.evidence import (
        DISAGREEMENTS,
        evidence_ladder,
        headline_counts,
        write_evidence,
    )
    from noisyor_bench.reporting.kept_claims import read_kept

    run_claims = read_claims(args.claims)
    paper_ids = args.papers or list(dict.fromkeys(c.paper for c in run_claims))
    references = list(dict.fromkeys(map(Path, args.reference or ())))
    datasets = json_argument(args.datasets, "--datasets") if args.datasets else None
    if datasets is not None and not isinstance(datasets, dict):
        raise ConfigError(
            f"--datasets: expected the config's datasets section (a JSON object), got {datasets!r}"
        )
    headlines = evidence_ladder(run_claims, args.grid, references, paper_ids, datasets=datasets)
    # set before writing, so the timing table's provenance is recorded like the others' (out_*)
    args.out_timing = args.out_timing or str(timing_path(args.out_csv))
    kept = None
    if args.keep_other_papers:
        kept = read_kept(args.out_csv, args.out_sources_csv, args.out_timing, paper_ids)
        if kept is not None:
            others = sorted({c.paper for c in kept.claims})
            log.info("kept %d earlier claims of papers not selected: %s", len(kept.claims), " ".join(others))
    write_evidence(
        headlines, args.out_csv, args.out_md, args.out_sources_csv, timing_csv=args.out_timing, kept=kept
    )
    disagreeing = sum(h.agreement in DISAGREEMENTS for h in headlines)
    counts = ", ".join(f"{label} {n}" for label, n in headline_counts(headlines).items())
    log.info(
        "%d claims from %d source(s) (headline from: %s); sources disagree on %d",
        len(headlines),
        1 + len(references),
        counts,
        disagreeing,
    )
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "claims-evidence",
        help="the headline verdict per claim: the strongest source that decides it, among this run "
        "and the published references re-judged from their tables; every source's verdict beside it",
    )
    p.add_argument("--claims", required=True, help="this run's merged claims (tables/claims_run.csv)")
    p.add_argument(
        "--grid", required=True, help="this run's grid (paper > extended > quick > smoke as evidence)"
    )
    p.add_argument(
        "--reference",
        nargs="*",
        default=[],
        help="published reference folders (each with tables/), re-judged by today's claim code",
    )
    p.add_argument(
        "--datasets",
        default=None,
        help="today's config datasets section (JSON or @file): a reference made on another draw of one "
        "of them is judged without its rows of that dataset",
    )
    p.add_argument(
        "--papers",
        nargs="*",
        default=[],
        help="the selected papers, whose references are judged (default: the papers of --claims)",
    )
    p.add_argument(
        "--keep-other-papers",
        action="store_true",
        help="keep the rows of papers not in --papers from the existing --out-csv, --out-sources-csv "
        "and --out-timing (a run of some papers keeps the others' answers from their last run)",
    )
    add_table_outputs(p)
    p.add_argument(
        "--out-sources-csv", required=True, help="every source's verdict of every claim (long table)"
    )
    p.add_argument(
        "--out-timing",
        default=None,
        help="the headline claims' wall-clock times, kept out of --out-csv because they differ between "
        "runs (default: claims_timing.csv beside --out-csv, named after it)",
    )
    p.set_defaults(func=cmd_claims_evidence)
