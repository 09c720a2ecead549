"""CLI: runtime per rule from Snakemake's benchmark files (the report's "Runtime" section).

Benchmark files are not declared outputs of any rule, so this command reads a directory
rather than a file list; the workflow runs it after every artifact so the directory is complete.
"""

from __future__ import annotations

import argparse
import logging
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)


def cmd_runtime_table(args: argparse.Namespace) -> int:
    from noisyor_bench.infra.errors import ConfigError
    from noisyor_bench.reporting.runtime import collect, markdown, missing_benchmarks, per_rule, plot
    from noisyor_bench.reporting.tables import write_table

    if args.top < 1:
        raise ConfigError(f"--top must be >= 1, got {args.top}")
    jobs = collect(args.benchmarks, args.jobs)
    rules = per_rule(jobs)
    missing = missing_benchmarks(args.jobs) if args.jobs is not None else 0
    text = markdown(rules, jobs, args.top, listed=args.jobs is not None, missing=missing)
    write_table(rules, args.out_csv, text, args.out_md)
    if args.out_jobs_csv:
        write_table(jobs, args.out_jobs_csv)
    if args.out_png:
        plot(rules, args.out_png)
    log.info(
        "runtime: %d jobs of %d rules, %.0f s in total -> %s",
        len(jobs),
        len(rules),
        jobs["s"].sum(),
        args.out_csv,
    )
    return 0


def _run_cpu(runtime_jobs: str) -> str | None:
    """The CPU model a run recorded beside its runtime table (``<table>.prov.json``), or None."""
    import json

    try:
        record = json.loads(Path(f"{runtime_jobs}.prov.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return ((record.get("environment") or {}).get("device") or {}).get("cpu_model") or None


def _measured_work(config: str, grid: str) -> dict[tuple[str, str], float]:
    """Each compute job's work in ``grid`` of ``config`` (as the cost model's measured grid ran it)."""
    from noisyor_bench.experiments import costs, papers
    from noisyor_bench.experiments.config import load_config

    cfg = load_config(config, {"grid": grid})
    return {
        (j.rule, j.job): j.work for pid in papers.ids() for j in costs.paper_jobs(cfg, pid, reference=True)
    }


def cmd_job_seconds(args: argparse.Namespace) -> int:
    import csv

    from noisyor_bench.experiments import job_seconds
    from noisyor_bench.infra.errors import DataError
    from noisyor_bench.infra.provenance import cpu_model

    runs = []
    for path in args.runtime_jobs:
        try:
            with open(path, newline="") as fh:
                rows = list(csv.DictReader(fh))
        except FileNotFoundError:
            raise DataError(
                f"{path}: no such runtime table (write it with 'noisyor-bench runtime-table --out-jobs-csv')"
            ) from None
        if rows and not {"rule", "job", "s"} <= set(rows[0]):
            raise DataError(f"{path}: not a runtime_jobs.csv table (expected columns rule, job, s)")
        cpu = args.cpu or _run_cpu(path)
        if cpu is None:
            cpu = cpu_model()
            log.warning("job-seconds: %s records no CPU model: taking this machine's (%s)", path, cpu)
        runs.append([{**row, "cpu": cpu} for row in rows])
    kept = {}
    if args.keep:
        if not Path(args.keep).is_file():
            raise DataError(f"{args.keep}: no such job-seconds table (--keep)")
        kept = job_seconds.load_rows(args.keep)
    rows = job_seconds.merge(runs, kept, _measured_work(args.config, args.grid))
    if args.rebase_slices:
        _rebase_slices(args, {(rule, job): row for rule, job, row in rows})
    job_seconds.write(rows, args.out)
    measured = {(r["rule"], r["job"]) for rs in runs for r in rs}
    log.info(
        "job-seconds: %d jobs from %d runtime tables, %d kept from %s -> %s",
        len(rows),
        len(runs),
        len(set(kept) - measured),
        args.keep or "no earlier table",
        args.out,
    )
    return 0


def _rebase_slices(args: argparse.Namespace, new: dict[tuple[str, str], Any]) -> None:
    """Move the calibration-slice rows that scale from a job of ``--out`` (the table they were
    priced from) to its new measurement (:func:`~noisyor_bench.experiments.cost_slices.rebase_references`)."""
    import time

    from noisyor_bench.experiments import cost_slices, job_seconds
    from noisyor_bench.experiments.costs import REFERENCE_GRID

    rows = cost_slices.load(args.rebase_slices)
    old = job_seconds.load_rows(args.out)
    note = f"{time.strftime('%Y-%m-%d', time.gmtime())} ({', '.join(args.runtime_jobs)})"
    rebased, moved = cost_slices.rebase_references(rows, args.grid or REFERENCE_GRID, old, new, note)
    for reference, (factor, n) in sorted(moved.items()):
        print(f"  {reference}: x{factor:.3f} ({n} slice row(s))")
    cost_slices.write(rebased, args.rebase_slices)
    print(
        f"job-seconds: {sum(n for _, n in moved.values())} of {len(rows)} slice rows in {args.rebase_slices} "
        f"moved to the new measurements of {len(moved)} reference job(s)"
    )


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "runtime-table",
        help="per-rule runtime (jobs, total/mean/max s, slowest job) from Snakemake benchmark TSVs",
    )
    p.add_argument("--benchmarks", required=True, help="directory <results>/benchmarks (<rule>/<job>.tsv)")
    p.add_argument(
        "--jobs",
        nargs="+",
        help="only these benchmark files (the current workflow's jobs; @FILE: one a line); default: "
        "every file under --benchmarks, stale ones of earlier layouts included",
    )
    p.add_argument("--out-csv", required=True, help="per-rule totals")
    p.add_argument("--out-md", required=True, help="per-rule totals and the slowest jobs")
    p.add_argument("--out-jobs-csv", help="every job, slowest first (the base of compute extrapolations)")
    p.add_argument("--out-png", help="bar chart of total seconds per rule")
    p.add_argument("--top", type=int, default=10, help="slowest jobs listed in the Markdown (default 10)")
    p.set_defaults(func=cmd_runtime_table)

    p = sub.add_parser(
        "job-seconds",
        help="measured seconds per job (the workflow's scheduling order) from runtime_jobs.csv tables",
    )
    p.add_argument(
        "--runtime-jobs",
        nargs="+",
        required=True,
        help="results/tables/runtime_jobs.csv of reference runs (a job in several: its smallest time)",
    )
    p.add_argument("--out", required=True, help="the table to write, e.g. config/job_seconds.csv")
    p.add_argument(
        "--grid",
        default="quick",
        help="the grid the runs ran (default: quick): each job's work is its cost-model size there",
    )
    p.add_argument(
        "--config", default="config/config.yaml", help="the config the runs ran (default: config/config.yaml)"
    )
    p.add_argument(
        "--cpu", help="CPU model of the runs (default: each table's <table>.prov.json, else this machine's)"
    )
    p.add_argument(
        "--keep",
        help="an earlier table (e.g. config/job_seconds.csv itself) whose jobs no runtime table measured "
        "are kept: cells of grids not re-run keep their order",
    )
    p.add_argument(
        "--rebase-slices",
        nargs="?",
        const="benchmarks/results/cost_slices.csv",
        default=None,
        metavar="SLICE_TABLE",
        help="also move the calibration-slice rows that scale from a job of --out (the table they "
        "were priced from) to the job's new seconds per unit of work (default table: "
        "benchmarks/results/cost_slices.csv)",
    )
    p.set_defaults(func=cmd_job_seconds)
