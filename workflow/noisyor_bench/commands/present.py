"""CLI: how results are presented -- HTML views of tables, the per-paper claims pages, the answer
per paper, the software page, README's answer block and the results page."""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from noisyor_bench.experiments import papers

log = logging.getLogger(__name__)


def cmd_table_html(args: argparse.Namespace) -> int:
    from noisyor_bench.infra.errors import UserError
    from noisyor_bench.reporting.htmltables import csv_to_html, html_path_for

    outs = args.out_html or [str(html_path_for(p)) for p in args.tables]
    if len(outs) != len(args.tables):
        raise UserError(f"--out-html names {len(outs)} files for {len(args.tables)} --tables")
    for csv_path, html_path in zip(args.tables, outs):
        csv_to_html(csv_path, html_path)
    log.info("table-html: %d HTML table view(s) written", len(outs))
    return 0


def cmd_software_html(args: argparse.Namespace) -> int:
    from noisyor_bench.infra.io import write_text_atomic
    from noisyor_bench.infra.provenance import environment
    from noisyor_bench.reporting.htmltables import software_page

    write_text_atomic(args.out_html, software_page(environment()))
    return 0


def cmd_run_summary(args: argparse.Namespace) -> int:
    from noisyor_bench.reporting.summary import run_summary

    print(run_summary(args.results, args.report))
    return 0


def cmd_claims_pages(args: argparse.Namespace) -> int:
    from noisyor_bench.infra.errors import UserError
    from noisyor_bench.reporting.claims_pages import write_claims_pages

    if len(args.papers) != len(args.out_html):
        raise UserError(f"--out-html names {len(args.out_html)} files for {len(args.papers)} --papers")
    unknown = [p for p in args.papers if p not in papers.ids()]
    if unknown:
        raise UserError(f"--papers: unknown paper(s) {unknown}; allowed values: {list(papers.ids())}")
    written = write_claims_pages(args.claims, args.results, dict(zip(args.papers, map(Path, args.out_html))))
    log.info("claims-pages: %d page(s) written", len(written))
    return 0


def cmd_console(args: argparse.Namespace) -> int:
    from noisyor_bench.reporting.console import (
        Console,
        LockedLog,
        follow,
        rule_papers,
        stdin_lines,
    )
    from noisyor_bench.reporting.work_plan import load_work_plan

    print(f"Snakemake's full log: {args.log} (this console shows one line per finished job)", flush=True)
    plan = None
    if args.grid:
        factor = args.speed_factor
        if factor is None:  # this machine against the measuring CPU, as estimate-time scales
            from noisyor_bench.experiments import calibration
            from noisyor_bench.reporting.summary import load_estimates

            table = Path(args.repo) / "config" / "runtime_estimates.yaml"
            factor = calibration.speed(load_estimates(table)).factor if table.is_file() else 1.0
        plan = load_work_plan(args.grid, args.repo, factor)
    console = Console(rule_papers(args.repo), lambda text: print(text, flush=True), plan=plan)
    log = LockedLog(args.log)
    try:
        follow(stdin_lines(sys.stdin, console), log, console)
    finally:
        unlogged = log.close()
    if unlogged:  # refused, or nothing to do: its words here, the log untouched
        print(f"(not added to {args.log}: this invocation did not take the results lock)", flush=True)
        print("".join(unlogged[-40:]), end="", flush=True)
    return 0


def cmd_answer(args: argparse.Namespace) -> int:
    from noisyor_bench.reporting.answer import answer_lines
    from noisyor_bench.reporting.summary import read_answers

    items, run = read_answers(args.results)
    print("\n".join(answer_lines(items, run)), flush=True)
    return 0


def cmd_readme_results(args: argparse.Namespace) -> int:
    from noisyor_bench.reporting.summary import update_readme

    changed = update_readme(args.readme, args.results, args.reference, args.results_page)
    log.info(
        "readme-results: %s", ", ".join(f"{p} updated" for p in changed) if changed else "already current"
    )
    return 0


def cmd_estimate_time(args: argparse.Namespace) -> int:
    import os

    from noisyor_bench.infra.errors import UserError
    from noisyor_bench.reporting.summary import estimate_time, load_estimates

    cores = args.cores or (
        len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    )
    if args.deprecated_profile is not None:
        print(
            f"noisyor-bench: estimate-time --profile is deprecated: use --grid {args.deprecated_profile}",
            file=sys.stderr,
        )
    grid = args.grid if args.deprecated_profile is None else args.deprecated_profile
    wanted = [p for chunk in (args.papers or []) for p in chunk.split(",") if p]
    unknown = [p for p in wanted if p not in papers.ids()]
    if unknown:
        raise UserError(f"--papers: unknown paper(s) {unknown}; allowed values: {list(papers.ids())}")
    from noisyor_bench.experiments import calibration
    from noisyor_bench.reporting.runtime import config_check, cost_model_table

    measured = load_estimates(args.table)
    speed = calibration.speed(measured)  # this machine against the measuring CPU
    if args.slots or grid == "paper":  # a cluster grid: the cost model
        unit = "slot" if args.slots else "core"
        slots = args.slots or cores
        table = cost_model_table(grid, wanted or None, slots, args.gpu, unit=unit, factor=speed.factor)
        if table is not None:
            print("\n".join([table, *speed.lines()]), flush=True)
            return 0
    hashes, modelled = config_check(measured, grid, wanted or None, cores)
    print(estimate_time(measured, grid, cores, wanted or None, speed, hashes, modelled), flush=True)
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "table-html", help="HTML view of table CSVs (ours ± CI beside the paper; verdicts coloured)"
    )
    p.add_argument("--tables", nargs="+", required=True, help="table CSVs (results/tables/*.csv)")
    p.add_argument(
        "--out-html", nargs="+", help="one HTML file per table, in order (default: next to each CSV)"
    )
    p.set_defaults(func=cmd_table_html)

    p = sub.add_parser("software-html", help="report page: package versions, git commit, machine")
    p.add_argument("--out-html", required=True, help="HTML file to write")
    p.set_defaults(func=cmd_software_html)

    p = sub.add_parser("run-summary", help="print the claims' verdict counts and where the outputs are")
    p.add_argument("--results", default="results", help="results directory (default: results)")
    p.add_argument("--report", help="path of the Snakemake report, to mention it")
    p.set_defaults(func=cmd_run_summary)

    p = sub.add_parser(
        "claims-pages",
        help="one HTML claims page per paper (verdict counts, claims grouped by paper section, rules behind toggles)",
    )
    p.add_argument("--claims", required=True, help="the merged claims table (results/tables/claims.csv)")
    p.add_argument(
        "--results", default="results", help="results directory: its run records (default: results)"
    )
    p.add_argument(
        "--papers", nargs="+", required=True, help=f"paper ids, one page each: {' '.join(papers.ids())}"
    )
    p.add_argument("--out-html", nargs="+", required=True, help="one HTML file per paper, in order")
    p.set_defaults(func=cmd_claims_pages)

    p = sub.add_parser(
        "console",
        help="compact console: read Snakemake's output on stdin, keep all of it in --log, print the plan, "
        "one line per finished job (paper, progress, ETA) and failures in full",
    )
    p.add_argument("--log", required=True, help="file for Snakemake's full output")
    p.add_argument("--repo", default=".", help="repository root (its rules/ name each rule's paper)")
    p.add_argument(
        "--grid",
        help="the grid Snakemake runs: the ETA from the cost model's estimate of each job "
        "(default: none, the ETA from the time per finished job)",
    )
    p.add_argument(
        "--speed-factor",
        type=float,
        help="this machine's seconds per measuring-CPU second (default: the calibration estimate-time "
        "runs, against config/runtime_estimates.yaml)",
    )
    p.set_defaults(func=cmd_console)

    p = sub.add_parser(
        "answer", help="print the answer per paper: verdict counts, grid and compute (one line each)"
    )
    p.add_argument("--results", default="results", help="results directory (default: results)")
    p.set_defaults(func=cmd_answer)

    p = sub.add_parser(
        "readme-results",
        help="rewrite README's per-paper verdict table and the results page (every claim, the main "
        "tables) from a results directory",
    )
    p.add_argument("--results", default="results", help="results directory (default: results)")
    p.add_argument(
        "--reference",
        help="also rewrite the results page's <!-- reference --> block from this published reference "
        "(e.g. reference/paper-synpattern)",
    )
    p.add_argument(
        "--readme",
        default="README.md",
        help="README with <!-- verdicts --> markers: the verdict counts per paper (default: README.md)",
    )
    p.add_argument(
        "--results-page",
        help="page with <!-- results --> (and <!-- reference -->) markers: every claim and the main "
        "tables (default: docs/results.md beside the README)",
    )
    p.set_defaults(func=cmd_readme_results)

    p = sub.add_parser(
        "estimate-time", help="print the expected wall time of an experiment grid (measured table)"
    )
    p.add_argument(
        "--grid", default="quick", help="experiment grid: a key of config.yaml's grids (default: quick)"
    )
    p.add_argument("--profile", dest="deprecated_profile", help="deprecated spelling of --grid")
    p.add_argument("--cores", type=int, help="cores the run may use (default: this machine's)")
    p.add_argument("--table", default="config/runtime_estimates.yaml", help="measured times per grid")
    p.add_argument(
        "--papers",
        nargs="+",
        help=f"papers the run builds: {' '.join(papers.ids())}, space- or comma-separated "
        "(default: every registered paper)",
    )
    p.add_argument(
        "--slots", type=int, help="parallel job slots (cluster jobs or cores): the cost model's wall time"
    )
    p.add_argument(
        "--gpu", action="store_true", help="say which jobs could run on GPUs (GPU time: where measured)"
    )
    p.set_defaults(func=cmd_estimate_time)
