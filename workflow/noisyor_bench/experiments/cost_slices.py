"""Calibration slices: short runs of a grid's jobs at their own sizes, the cost model's rows there.

Why: the cost model scales measured jobs by work, and a paper-grid job far from every measured
size (a 50,000-model pool, N_train = 40,000 at D = 500) is priced by a guess about how its cost
grows.  A slice runs a few units (steps, epochs) of the job at its real size, and the same slice
of the measured job the model priced it from at that job's size: the ratio of the two rates
(seconds per unit of work, same machine, same method) corrects the size scaling, and the
measured job keeps what a slice cannot see (how early its fits stop, its evaluation).  The row
is the job's estimate from them: the former estimate x the ratio.  A job the model could not
price (no measured job of its family) takes its slice's rate x its work, every fit run to its cap
(an upper bound where fits stop early).  Each paper that can slice its jobs has a ``slices``
module beside its cost module (``bench_name(cfg, job)``: the row a slice of ``job`` is recorded
under, or None; ``run(cfg, job, raw_data_dir)``: seconds, work, what ran).  A slice runs in a
fresh process, so its peak memory is its own.

The table (:data:`TABLE`, columns :data:`COLUMNS`) records with every row both rates, the
reference job, the CPU model, the peak memory, the commit and the date, and the estimate the
model gave the job without slices (``estimate_seconds``).  A slice that fails (killed for memory,
say) is recorded beside it (:data:`FAILURES`, :func:`record_failure`) until one succeeds, and the
cost model calls its job "not measured".
"""

from __future__ import annotations

import csv
import dataclasses
import importlib
import io
import math
import re
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from noisyor_bench.experiments.costs import (
    FAILURE_COLUMNS,
    SLICE_FAILURES,
    SLICE_TABLE,
    Estimate,
    Job,
    slice_failure_rows,
)
from noisyor_bench.infra.errors import DataError
from noisyor_bench.infra.io import write_text_atomic

#: What a row priced from its slice alone says (no measured job of its family to scale).
NO_REFERENCE = "no reference: priced from this slice alone (its rate x the job's work, every fit to its cap)"
#: The measured slices of the paper grid, relative to the repository.
TABLE = SLICE_TABLE
#: Columns of :data:`TABLE`.
COLUMNS = (
    "rule",
    "job",
    "seconds",
    "work",
    "cpu",
    "peak_mb",
    "what",
    "rate",
    "reference",
    "reference_rate",
    "estimate_seconds",
    "commit",
    "date",
)


@dataclass(frozen=True)
class Slice:
    """One measured slice: the row of :data:`TABLE`."""

    rule: str
    job: str
    seconds: float
    """The job's estimate from the slice (one CPU core, the job's whole work)."""
    work: float
    """The job's work in the cost model's unit (the estimate scales its siblings by theirs)."""
    cpu: str
    peak_mb: float
    what: str
    rate: float
    """Seconds per unit of work of the slice at the job's size."""
    reference: str
    """The measured job the model priced it from (``grid: rule/job``; '' : none)."""
    reference_rate: float
    """Seconds per unit of work of the same slice of the reference job (NaN: none)."""
    estimate_seconds: float
    """The job's estimate without slices (NaN: not measured then)."""
    commit: str
    date: str

    @property
    def ratio(self) -> float:
        """Sliced / former estimate (NaN when the job had none)."""
        return self.seconds / self.estimate_seconds if self.estimate_seconds > 0 else math.nan


def _float(path: Path, line: int, column: str, text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise DataError(f"{path}, line {line}: {column} must be a number; got {text!r}") from None
    if column not in ("estimate_seconds", "reference_rate") and (not math.isfinite(value) or value < 0):
        raise DataError(f"{path}, line {line}: {column} must be finite and >= 0; got {value}")
    return value


def load(path: str | Path) -> list[Slice]:
    """The slices of the table at ``path`` ([] when it does not exist)."""
    path = Path(path)
    if not path.is_file():
        return []
    with open(path, newline="") as fh:
        reader = csv.DictReader(fh)
        if tuple(reader.fieldnames or ()) != COLUMNS:
            raise DataError(f"{path}: expected the header {','.join(COLUMNS)}; got {reader.fieldnames}")
        out = []
        for line, row in enumerate(reader, start=2):
            numbers = {
                c: _float(path, line, c, row[c])
                for c in ("seconds", "work", "peak_mb", "rate", "reference_rate", "estimate_seconds")
            }
            if numbers["work"] <= 0:
                raise DataError(f"{path}, line {line}: work must be > 0; got {numbers['work']}")
            out.append(
                Slice(
                    row["rule"],
                    row["job"],
                    cpu=row["cpu"],
                    what=row["what"],
                    commit=row["commit"],
                    date=row["date"],
                    reference=row["reference"],
                    **numbers,
                )  # fmt: skip
            )
    keys = [(s.rule, s.job) for s in out]
    if len(set(keys)) != len(keys):
        raise DataError(f"{path}: a job is listed twice")
    return out


def write(slices: Iterable[Slice], path: str | Path) -> None:
    """The table, the longest sliced estimate first (atomically)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(COLUMNS)
    for s in sorted(slices, key=lambda s: (-s.seconds, s.rule, s.job)):
        writer.writerow(
            [
                s.rule,
                s.job,
                f"{s.seconds:.1f}",
                repr(float(s.work)),
                s.cpu,
                f"{s.peak_mb:.0f}",
                s.what,
                f"{s.rate:.4g}",
                s.reference,
                f"{s.reference_rate:.4g}",
                f"{s.estimate_seconds:.1f}",
                s.commit,
                s.date,
            ]  # fmt: skip
        )
    write_text_atomic(Path(path), out.getvalue())


FAILURES = SLICE_FAILURES


def record_failure(
    path: str | Path, rule: str, job: str, cpu: str, commit: str, reason: str, date: str
) -> None:
    """Add (or replace) the failed slice of ``(rule, job)`` in the failures table (atomically)."""
    rows = slice_failure_rows(path)
    rows[(rule, job)] = {"date": date, "cpu": cpu, "commit": commit, "reason": " ".join(reason.split())}
    _write_failures(path, rows)


def clear_failures(path: str | Path, keys: Iterable[tuple[str, str]]) -> None:
    """Drop the failures of jobs whose slice has now succeeded (the table goes when it empties)."""
    rows = slice_failure_rows(path)
    if any(rows.pop(k, None) is not None for k in list(keys)):
        if rows:
            _write_failures(path, rows)
        else:
            Path(path).unlink()


def _write_failures(path: str | Path, rows: Mapping[tuple[str, str], Mapping[str, str]]) -> None:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(FAILURE_COLUMNS)
    for (rule, job), r in sorted(rows.items()):
        writer.writerow([rule, job, r["date"], r["cpu"], r["commit"], r["reason"]])
    write_text_atomic(Path(path), out.getvalue())


def slicer(paper_id: str) -> Any | None:
    """The paper's slices module (its registry entry's ``cost_slices``), or None where it names none."""
    from noisyor_bench.experiments import papers

    name = papers.get(paper_id).cost_slices
    return None if name is None else importlib.import_module(name)


@dataclass(frozen=True)
class Planned:
    """A slice to run: the job it stands for, where it is recorded, the estimate without slices
    and the measured job (its grid's config) that estimate scaled from, sliced too (None: none)."""

    paper: str
    job: Job
    bench: tuple[str, str]
    estimate: Estimate
    reference: tuple[dict[str, Any], Job] | None = None


def _reference(cfg: Mapping[str, Any], pid: str, estimate: Estimate) -> tuple[dict[str, Any], Job] | None:
    """(config of its grid, job) of the measured job ``estimate`` scaled from, where a slice can
    run it (None: not measured, or no slice of it)."""
    if not estimate.measured:
        return None
    return reference_job(cfg, pid, estimate.reference)


def reference_job(cfg: Mapping[str, Any], pid: str, reference: str) -> tuple[dict[str, Any], Job] | None:
    """(config of its grid, job) of a measured job named ``grid: rule/job`` in paper ``pid``,
    where a slice can run it (None: no such job, or no slice of it)."""
    from noisyor_bench.experiments import costs

    if ": " not in reference:
        return None
    grid, _, name = reference.partition(": ")
    rule, _, job = name.partition("/")
    ref_cfg = costs.grid_config(cfg, grid)
    if grid not in (cfg.get("grids") or {}):
        return None
    found = next(
        (j for j in costs.paper_jobs(ref_cfg, pid, reference=True) if (j.rule, j.job) == (rule, job)), None
    )
    if found is None or slicer(pid).bench_name(ref_cfg, found) is None:
        return None
    return ref_cfg, found


def plan(
    cfg: Mapping[str, Any],
    estimates: Sequence[Estimate],
    jobs: Mapping[str, Sequence[Job]],
    wanted: Sequence[str] = (),
) -> list[Planned]:
    """The slices of a grid: per paper, measured rule and method family, its longest job (the
    estimates' order), plus every job named in ``wanted`` (``RULE/JOB``), each recorded once."""
    by_job = {(e.rule, e.job): e for e in estimates}
    out: dict[tuple[str, str], Planned] = {}
    seen: set[tuple[str, str, str]] = set()
    for pid, paper_jobs in jobs.items():
        module = slicer(pid)
        if module is None:
            continue
        ranked = sorted(paper_jobs, key=lambda j: -by_job[(j.rule, j.job)].cpu_seconds)
        for job in ranked:
            bench = module.bench_name(cfg, job)
            if bench is None or bench in out:
                continue
            group = (pid, job.measured_rule or job.rule, job.method_family)
            named = f"{job.rule}/{job.job}" in wanted
            if group in seen and not named:
                continue
            seen.add(group)
            estimate = by_job[(job.rule, job.job)]
            # a slice that measures every cost of a unit of the job's work prices it alone
            alone = getattr(module, "PRICED_ALONE", False)
            out[bench] = Planned(pid, job, bench, estimate, None if alone else _reference(cfg, pid, estimate))
    missing = sorted(set(wanted) - {f"{p.job.rule}/{p.job.job}" for p in out.values()})
    if missing:
        from noisyor_bench.infra.errors import ConfigError

        raise ConfigError(
            f"--job: no slice for {', '.join(missing)} (a compute job of the grid with a slice)"
        )
    return list(out.values())


#: A slice whose process had less than this share of a core over its run (CPU / wall time) was
#: starved by other work on the machine, and its wall-clock timings read high: it runs once more.
MIN_CPU_SHARE = 0.85
#: A slice that timed less than this many seconds (a small reference cell's epoch: a tenth of a
#: second) runs again in its process, up to :data:`SHORT_SLICE_RUNS` times, and keeps its fastest
#: run: one timing of it is noisy, and every job scaled from a reference moves with its timing.
SHORT_SLICE_SECONDS = 1.0
SHORT_SLICE_RUNS = 5


def _child(
    paper: str, cfg: Mapping[str, Any], job: Job, raw: str | None
) -> tuple[float, float, str, float, float]:
    """Runs in the slice's own process: (seconds, work, what, peak MB of this process, its CPU
    time over its wall time)."""
    import resource

    from noisyor_bench.infra.device import set_threads

    set_threads(1)
    wall, cpu = time.perf_counter(), time.process_time()
    runs = [slicer(paper).run(cfg, job, raw)]
    while runs[-1][0] < SHORT_SLICE_SECONDS and len(runs) < SHORT_SLICE_RUNS:
        runs.append(slicer(paper).run(cfg, job, raw))
    seconds, work, what = min(runs, key=lambda r: r[0])
    if len(runs) > 1:
        timed = [r[0] for r in runs]
        what = f"{what}; fastest of {len(runs)} runs ({min(timed):.3g}-{max(timed):.3g} s)"
    share = (time.process_time() - cpu) / max(time.perf_counter() - wall, 1e-9)
    return seconds, work, what, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, share


def run_slice(
    paper: str, cfg: Mapping[str, Any], job: Job, raw_data_dir: str | None, child: Callable[..., Any] = _child
) -> tuple[float, float, str, float]:
    """(seconds, work, what, peak MB) of one slice of ``job`` at ``cfg``, run in a fresh process;
    run again once when the first run was starved (:data:`MIN_CPU_SHARE`), and marked when the
    second was too."""
    import multiprocessing
    import os
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    ctx = multiprocessing.get_context("spawn")
    for attempt in (1, 2):
        with ProcessPoolExecutor(max_workers=1, mp_context=ctx) as pool:
            try:
                seconds, work, what, peak, share = pool.submit(
                    child, paper, dict(cfg), job, raw_data_dir
                ).result()
            except BrokenProcessPool:
                memory = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") / 2**20
                raise DataError(
                    f"slice of {job.rule} {job.job}: its process was killed while running, as the "
                    f"kernel's out-of-memory killer does (this machine: {memory:,.0f} MB)"
                ) from None
        if share >= MIN_CPU_SHARE:
            break
        print(
            f"calibrate-costs: {job.rule} {job.job} had {share:.0%} of a core (attempt {attempt})", flush=True
        )
    if share < MIN_CPU_SHARE:
        what = f"{what}; starved: {share:.0%} of a core, timings high"
    return seconds, work, what, peak


Runner = Callable[[str, Mapping[str, Any], Job, str | None], tuple[float, float, str, float]]


def _rate(seconds: float, work: float, what: str) -> float:
    if not (work > 0 and seconds > 0):
        raise DataError(f"slice of {what}: no time or work measured ({seconds} s, {work})")
    return seconds / work


def measure(
    planned: Sequence[Planned],
    cfg: Mapping[str, Any],
    raw_data_dir: str | None,
    cpu: str,
    commit: str,
    runner: Runner = run_slice,
    report: Callable[[Slice], None] | None = None,
    reference_rates: dict[tuple[str, str, str], float] | None = None,
    slices_run: dict[tuple[str, str], tuple[float, float, str, float]] | None = None,
) -> list[Slice]:
    """Run every planned slice and that of its reference job (``runner``: injectable); their rows.
    ``reference_rates``: the reference slices already run in this calibration, (grid, rule, job)
    -> rate, reused (many cells scale from one quick cell) and filled in; ``slices_run``: the
    same for the jobs' own slices, keyed by the paper's ``slice_key`` where it has one (an ACP
    cell's search and its training fit the same draw, one slice for both)."""
    out = []
    rates = {} if reference_rates is None else reference_rates
    done = {} if slices_run is None else slices_run
    for p in planned:
        module = slicer(p.paper)
        key_of = getattr(module, "slice_key", None) if module is not None else None
        key = (p.paper, key_of(cfg, p.job)) if key_of is not None else None
        if key is None or key not in done:
            result = runner(p.paper, cfg, p.job, raw_data_dir)
            if key is not None:
                done[key] = result
        seconds, work, what, peak = done[key] if key is not None else result
        rate = _rate(seconds, work, f"{p.bench[0]} {p.bench[1]}")
        if p.reference is not None:
            ref_cfg, ref = p.reference
            key = (str(ref_cfg.get("grid")), ref.rule, ref.job)
            if key not in rates:
                ref_seconds, ref_work, _, _ = runner(p.paper, ref_cfg, ref, raw_data_dir)
                rates[key] = _rate(ref_seconds, ref_work, f"{ref.rule} {ref.job}")
            ref_rate = rates[key]
            job_seconds = p.estimate.cpu_seconds * rate / ref_rate
            what = f"{what}; x{rate / ref_rate:.3g} the same slice of the reference"
        else:
            ref_rate, job_seconds = math.nan, rate * p.job.work
            what = f"{what}; {NO_REFERENCE}"
        row = Slice(
            p.bench[0],
            p.bench[1],
            job_seconds,
            p.job.work,
            cpu,
            peak,
            what,
            rate,
            p.estimate.reference if p.reference is not None else "",
            ref_rate,
            p.estimate.cpu_seconds if p.estimate.measured else math.nan,
            commit,
            time.strftime("%Y-%m-%d", time.gmtime()),
        )
        out.append(row)
        if report is not None:
            report(row)
    return out


_RATIO_TEXT = re.compile(r"x\S+ the same slice of the reference")
_RETIMED_TEXT = re.compile(r"; reference re-timed [^;]*")


def retime_references(
    rows: Sequence[Slice],
    cfg: Mapping[str, Any],
    raw_data_dir: str | None,
    commit: str,
    runner: Runner = run_slice,
    report: Callable[[str, list[float], float], None] | None = None,
) -> list[Slice]:
    """``rows`` with every reference slice timed again and the rows that scale from it rescaled.

    Why: a row's estimate is its reference's measured seconds x (its rate / the reference's
    rate), and a reference slice of a small cell times a fraction of a second, once per
    calibration: rows of different calibrations that scale from one reference carried different
    timings of it.  Each reference runs once here, under the short-slice rule
    (:data:`SHORT_SLICE_RUNS`), and every row that names it takes its new rate: ``seconds x
    old rate / new rate`` (exactly the estimate the row would have with it).  ``report(reference,
    the rows' former rates of it, its new rate)`` after each.
    """
    from noisyor_bench.experiments import papers

    pids = [pid for pid in papers.ids() if slicer(pid) is not None]
    groups: dict[str, list[Slice]] = {}
    for row in rows:
        if row.reference and math.isfinite(row.reference_rate):
            groups.setdefault(row.reference, []).append(row)
    out = {(r.rule, r.job): r for r in rows}
    date = time.strftime("%Y-%m-%d", time.gmtime())
    for reference, group in groups.items():
        found = next(
            ((pid, f) for pid in pids if (f := reference_job(cfg, pid, reference)) is not None), None
        )
        if found is None:
            raise DataError(
                f"the reference {reference!r} of {len(group)} slice row(s) is no job a slice can run"
            )
        pid, (ref_cfg, ref) = found
        seconds, work, _, _ = runner(pid, ref_cfg, ref, raw_data_dir)
        rate = _rate(seconds, work, f"{ref.rule} {ref.job}")
        for row in group:
            what = _RATIO_TEXT.sub(f"x{row.rate / rate:.3g} the same slice of the reference", row.what)
            what = _RETIMED_TEXT.sub("", what) + f"; reference re-timed {date} ({commit})"
            out[(row.rule, row.job)] = dataclasses.replace(
                row, seconds=row.seconds * row.reference_rate / rate, reference_rate=rate, what=what
            )
        if report is not None:
            report(reference, [r.reference_rate for r in group], rate)
    return list(out.values())


_REMEASURED_TEXT = re.compile(r"; reference re-measured [^;]*")


def rebase_references(
    rows: Sequence[Slice],
    grid: str,
    old: Mapping[tuple[str, str], Any],
    new: Mapping[tuple[str, str], Any],
    note: str,
) -> tuple[list[Slice], dict[str, tuple[float, int]]]:
    """``rows`` with every row that scales from a job of ``grid``'s measured table moved from that
    job's ``old`` measurement to its ``new`` one (tables of
    :func:`noisyor_bench.experiments.job_seconds.load_rows`); also, per reference moved, (factor, rows).

    Why: a row's estimate is its reference's measured seconds x (its rate / the reference's rate)
    (:func:`measure`).  When the reference grid's table is re-measured (``config/job_seconds.csv``
    after a new ``make reproduce``), rows left on the former seconds would price the paper grid
    from one measurement of a job and the quick grid from another.  A row moves by the reference's
    new seconds per unit of work / its old ones, exactly the estimate it would have had from the
    new table; a reference the new table lacks, measures without a work or measures the same
    keeps its rows.
    ``note`` (the date and what was re-measured) goes into the rows' ``what``.
    """
    prefix = f"{grid}: "
    out, moved = [], {}
    for row in rows:
        if not row.reference.startswith(prefix):
            out.append(row)
            continue
        rule, _, job = row.reference[len(prefix) :].partition("/")
        before, after = old.get((rule, job)), new.get((rule, job))
        if before is None or after is None or not (before.work and after.work and before.seconds > 0):
            out.append(row)
            continue
        factor = (after.seconds / after.work) / (before.seconds / before.work)
        if factor == 1.0:  # measured the same: the row stands as it is
            out.append(row)
            continue
        what = _REMEASURED_TEXT.sub("", row.what) + f"; reference re-measured {note}"
        out.append(
            dataclasses.replace(
                row,
                seconds=row.seconds * factor,
                estimate_seconds=row.estimate_seconds * factor,
                what=what,
            )
        )
        n = moved.get(row.reference, (factor, 0))[1]
        moved[row.reference] = (factor, n + 1)
    return out, moved


def merge(old: Iterable[Slice], new: Iterable[Slice]) -> list[Slice]:
    """``old`` with the rows of ``new`` replacing those of the same job."""
    rows = {(s.rule, s.job): s for s in old}
    rows.update({(s.rule, s.job): s for s in new})
    return list(rows.values())


__all__ = [
    "COLUMNS",
    "FAILURES",
    "NO_REFERENCE",
    "TABLE",
    "Planned",
    "Slice",
    "clear_failures",
    "load",
    "measure",
    "merge",
    "plan",
    "record_failure",
    "reference_job",
    "retime_references",
    "write",
]
