"""CLI: ``calibrate-costs``, short slices of a grid's jobs at their own sizes for the cost model.

Why: ``check-cluster`` sets every job's limit from the cost model, and a job priced from a run a
hundred times smaller (or not at all) is killed at its limit or refused.  This command runs one
slice per paper, rule and method family (its longest job; ``--job`` adds others), prints the
job's estimate from the slice beside the former one, and writes the slices where the cost model
reads them (:data:`noisyor_bench.experiments.cost_slices.TABLE`).
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path


def _hours(seconds: float) -> str:
    if not math.isfinite(seconds):
        return "not measured"
    return f"{seconds / 3600:,.2f} h" if seconds >= 360 else f"{seconds / 60:,.1f} min"


def cmd_calibrate_costs(args: argparse.Namespace) -> int:
    from noisyor_bench.experiments import cost_slices, costs, papers
    from noisyor_bench.experiments.config import load_config
    from noisyor_bench.infra.errors import ConfigError
    from noisyor_bench.infra.provenance import code_version_label, cpu_model

    root = Path(args.snakefile).resolve().parent
    cfg = load_config(root / "config" / "config.yaml", {"grid": args.grid})
    wanted = [p for chunk in (args.papers or []) for p in chunk.split(",") if p]
    unknown = [p for p in wanted if p not in papers.ids()]
    if unknown:
        raise ConfigError(f"--papers: unknown paper(s) {unknown}; allowed values: {list(papers.ids())}")
    ids = wanted or [p for p in papers.ids() if cost_slices.slicer(p) is not None]
    table = root / cost_slices.TABLE
    if args.retime_references:
        return _retime_references(args, cfg, table)
    # the estimates the slices correct: without any slice table
    references = [r for r in costs.load_references(root, cfg.get("job_seconds")) if r.source != str(table)]
    # whole trainings and searches, as slices record them (a split job's slice prices its parts)
    estimates = costs.estimate_jobs(cfg, references, ids, whole=True)
    jobs = {pid: costs.paper_jobs(cfg, pid, reference=True) for pid in ids}
    wanted = list(args.job or ())
    if args.missing:  # every job the slices and measured runs do not price at its own size yet
        wanted += _extrapolated(cfg, root, ids, jobs)
    planned = cost_slices.plan(cfg, estimates, jobs, wanted)
    if args.only or args.missing:
        planned = [p for p in planned if f"{p.job.rule}/{p.job.job}" in wanted]
    if args.max_slices is not None:
        planned = planned[: args.max_slices]
    print(f"calibrate-costs: {len(planned)} slices of the {args.grid} grid ({', '.join(ids)})")
    if args.dry_run:
        for p in planned:
            ref = f"{p.reference[1].rule} {p.reference[1].job}" if p.reference else "no reference"
            print(
                f"  {p.bench[0]} {p.bench[1]} (for {p.job.rule} {p.job.job}, now "
                f"{_hours(p.estimate.cpu_seconds)}; beside {ref})"
            )
        return 0
    print("| rule | job | slice | peak MB | measured (sliced) | estimated (former) | measured / estimated |")
    print("|---|---|---|---|---|---|---|")

    def report(s: cost_slices.Slice) -> None:
        print(
            f"| {s.rule} | {s.job} | {s.what} | {s.peak_mb:,.0f} "
            f"| {_hours(s.seconds)} | {_hours(s.estimate_seconds)} | {s.ratio:.2f} |",
            flush=True,
        )

    out = Path(args.out) if args.out else table
    failures = out.with_name(Path(cost_slices.FAILURES).name)
    cpu, commit = cpu_model(), code_version_label()
    done, failed = 0, []
    reference_rates: dict = {}  # a reference slice shared by several cells runs once
    slices_run: dict = {}  # and a slice two rows share (an ACP cell's search and training)
    for p in planned:  # each slice written as it ends: a failed or killed one loses only itself
        try:
            rows = cost_slices.measure(
                [p],
                cfg,
                args.raw_data_dir,
                cpu,
                commit,
                report=report,
                reference_rates=reference_rates,
                slices_run=slices_run,
            )
        except Exception as err:  # noqa: BLE001 - one slice's failure is reported, the others run
            reason = " ".join(str(err).split())[:300]
            failed.append(f"{p.bench[0]} {p.bench[1]}: {reason}")
            print(f"| {p.bench[0]} | {p.bench[1]} | failed: {failed[-1]} | | | | |", flush=True)
            # its job stays "not measured" until a slice of it succeeds
            cost_slices.record_failure(failures, *p.bench, cpu, commit, reason, time.strftime("%Y-%m-%d"))
            continue
        cost_slices.write(cost_slices.merge(cost_slices.load(out), rows), out)
        cost_slices.clear_failures(failures, [(r.rule, r.job) for r in rows])
        done += 1
    print(f"calibrate-costs: {done} slices -> {out}")
    if failed:
        print(f"calibrate-costs: {len(failed)} slice(s) failed:\n  " + "\n  ".join(failed), file=sys.stderr)
        return 1
    return 0


def _retime_references(args: argparse.Namespace, cfg, table: Path) -> int:
    """``--retime-references``: every reference slice of the table timed again, its rows rescaled."""
    from noisyor_bench.experiments import cost_slices
    from noisyor_bench.infra.provenance import code_version_label

    out = Path(args.out) if args.out else table
    rows = cost_slices.load(out)
    references = sorted({r.reference for r in rows if r.reference and math.isfinite(r.reference_rate)})
    print(f"calibrate-costs: {len(references)} reference slices of {out}")
    if args.dry_run:
        for name in references:
            print(f"  {name} ({sum(r.reference == name for r in rows)} rows)")
        return 0
    print("| reference | rows | former rates (s per unit) | new rate | rows' estimates x |")
    print("|---|---|---|---|---|")

    def report(name: str, former: list[float], rate: float) -> None:
        low, high = min(former), max(former)
        print(
            f"| {name} | {len(former)} | {low:.4g}-{high:.4g} | {rate:.4g} | {low / rate:.2f}-{high / rate:.2f} |",
            flush=True,
        )

    new = cost_slices.retime_references(rows, cfg, args.raw_data_dir, code_version_label(), report=report)
    cost_slices.write(new, out)
    print(f"calibrate-costs: {len(references)} references re-timed -> {out}")
    return 0


def _extrapolated(cfg, root: Path, ids, jobs) -> list[str]:
    """``RULE/JOB`` of every sliceable job whose estimate, with every table (slices included), is
    still scaled from another job or size, longest first, one per cell (key and size: a slice
    prices the jobs of its cell, its seeds and chunks, at their own size)."""
    from noisyor_bench.experiments import cost_slices, costs

    current = costs.estimate_jobs(cfg, costs.load_references(root, cfg.get("job_seconds")), ids, whole=True)
    out, seen = [], set()
    for e in sorted(current, key=lambda e: -e.cpu_seconds):
        if e.basis != "extrapolated":
            continue
        job = next(j for j in jobs[e.paper] if (j.rule, j.job) == (e.rule, e.job))
        bench = cost_slices.slicer(e.paper).bench_name(cfg, job) if cost_slices.slicer(e.paper) else None
        cell = (e.paper, job.measured_rule or job.rule, job.method_family, job.key, job.size)
        if bench is not None and cell not in seen:
            seen.add(cell)
            out.append(f"{e.rule}/{e.job}")
    return out


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "calibrate-costs",
        help="run short slices of a grid's jobs at their own sizes (steps, epochs) and record them for "
        "the cost model: one per paper, rule and method family",
    )
    p.add_argument("--grid", default="paper", help="the grid whose jobs are sliced (default: paper)")
    p.add_argument("--papers", nargs="*", help="only these papers (default: every paper with slices)")
    p.add_argument("--job", action="append", help="also slice this job (RULE/JOB as estimate-time names it)")
    p.add_argument("--only", action="store_true", help="slice only the --job jobs")
    p.add_argument(
        "--retime-references",
        action="store_true",
        help="time every reference slice of the table again (a short one: the fastest of several runs) "
        "and rescale the rows that scale from it, instead of slicing jobs",
    )
    p.add_argument(
        "--missing",
        action="store_true",
        help="slice every job still priced from another job or size (one slice per cell or run, "
        "longest first; rerun to continue where an interrupted one stopped)",
    )
    p.add_argument("--max-slices", type=int, default=None, help="run at most this many slices")
    p.add_argument("--raw-data-dir", default=None, help="raw-data mirror (default: $NOISYOR_RAW_DATA)")
    p.add_argument(
        "--out", default=None, help="the table to update (default: benchmarks/results/cost_slices.csv)"
    )
    p.add_argument(
        "--snakefile", default="Snakefile", help="the workflow's Snakefile (its folder is the root)"
    )
    p.add_argument("--dry-run", action="store_true", help="list the slices without running them")
    p.set_defaults(func=cmd_calibrate_costs)
