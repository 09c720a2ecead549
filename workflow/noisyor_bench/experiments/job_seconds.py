"""Measured seconds per job: the scheduling order of the workflow (longest jobs first).

Snakemake starts the ready job with the highest ``priority:`` first.  On a machine with few
cores the grid's wall time depends on that order: a long job started last leaves the other
cores idle at the end.  The order comes from measurement, not from a hand-kept list: a table
``rule,job,seconds,work,cpu`` (one row per benchmark file, ``<results>/benchmarks/<rule>/<job>.tsv``)
written by ``noisyor-bench job-seconds`` from the ``runtime_jobs.csv`` tables of reference
runs, read by the workflow (config key ``job_seconds``), and turned into a job's priority by
:func:`priority`.  A job the table does not list (a new cell, another grid's sizes) gets
priority 0, Snakemake's default, and runs after the measured ones.

A row also says what it measured, so that the cost model (:mod:`noisyor_bench.experiments.costs`)
never takes a measurement of other work for this one: ``work`` is the job's size in its paper's
cost-model unit at the config the run had (empty: not a compute job of that grid), ``cpu`` the
CPU model it ran on.  A table with only ``rule,job,seconds`` still loads (work and CPU unknown).
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from noisyor_bench.infra.errors import DataError
from noisyor_bench.infra.io import write_text_atomic

#: Columns of the table (``config/job_seconds.csv``).
COLUMNS = ("rule", "job", "seconds", "work", "cpu")
#: Columns of a table written before rows recorded their work and CPU.
SECONDS_ONLY = ("rule", "job", "seconds")

#: Priority of data preparation (datasets, corpus ingestion, raw-input checks): above every
#: measured job.  Priorities only order the jobs that are ready, so a cheap upstream job left
#: low would wait behind every long training job and start its own long children last.
UPSTREAM_PRIORITY = 1_000_000

JobSeconds = Mapping[tuple[str, str], float]


@dataclass(frozen=True)
class Row:
    """One measured job: its seconds, the work they measured and the CPU they ran on."""

    seconds: float
    work: float | None = None
    """Its size in the cost model's unit at the measured config (None: not recorded)."""
    cpu: str = ""
    """CPU model of the measuring machine ('' : not recorded)."""


def load_rows(path: str | Path | None) -> dict[tuple[str, str], Row]:
    """The table at ``path`` as ``{(rule, job): Row}``; ``None`` or a missing file: empty."""
    if path is None:
        return {}
    path = Path(path)
    if not path.is_file():
        return {}
    with open(path, newline="") as fh:
        reader = csv.DictReader(fh)
        if tuple(reader.fieldnames or ()) not in (COLUMNS, SECONDS_ONLY):
            raise DataError(f"{path}: expected the header {','.join(COLUMNS)}; got {reader.fieldnames}")
        table: dict[tuple[str, str], Row] = {}
        for line, row in enumerate(reader, start=2):
            seconds = _number(path, line, "seconds", row["seconds"])
            work = _number(path, line, "work", row["work"]) if row.get("work") else None
            key = (row["rule"], row["job"])
            if key in table:
                raise DataError(f"{path}, line {line}: job {key[0]} {key[1]} is listed twice")
            table[key] = Row(seconds, work, row.get("cpu") or "")
    return table


def _number(path: Path, line: int, column: str, text: str | None) -> float:
    try:
        value = float(text)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise DataError(f"{path}, line {line}: {column} must be a number; got {text!r}") from None
    if not math.isfinite(value) or value < 0:
        raise DataError(f"{path}, line {line}: {column} must be finite and >= 0; got {value}")
    return value


def load(path: str | Path | None) -> dict[tuple[str, str], float]:
    """The table at ``path`` as ``{(rule, job): seconds}``; ``None`` or a missing file: empty."""
    return {key: row.seconds for key, row in load_rows(path).items()}


def priority(table: JobSeconds, rule: str, job: str) -> int:
    """The job's measured seconds, rounded (longest first); 0 for a job without a measurement."""
    seconds = table.get((rule, job))
    return 0 if seconds is None else round(seconds)


def merge(
    runs: Iterable[Iterable[Mapping[str, object]]],
    kept: Mapping[tuple[str, str], Row] | None = None,
    work: Mapping[tuple[str, str], float] | None = None,
) -> list[tuple[str, str, Row]]:
    """Rows ``(rule, job, Row)`` from several runs' ``runtime_jobs.csv`` rows (columns ``rule``,
    ``job``, ``s``, and ``cpu`` where the caller knows the run's CPU model); a job measured in
    several runs keeps its smallest time, the one least inflated by other work on the machine,
    and that run's CPU.  ``work``: each measured job's size at the runs' config (the cost model's
    jobs).  ``kept`` (an earlier table, :func:`load_rows`) supplies the jobs none of the runs
    measured -- cells of a grid not re-run -- and never overrides a new measurement."""
    best: dict[tuple[str, str], Row] = {}
    for rows in runs:
        for row in rows:
            key = (str(row["rule"]), str(row["job"]))
            seconds = float(row["s"])  # type: ignore[arg-type]
            if math.isfinite(seconds) and seconds < best.get(key, Row(math.inf)).seconds:
                best[key] = Row(seconds, (work or {}).get(key), str(row.get("cpu") or ""))
    for key, row in (kept or {}).items():
        best.setdefault(key, row)
    return sorted(
        ((rule, job, row) for (rule, job), row in best.items()), key=lambda r: (-r[2].seconds, r[0], r[1])
    )


def _work_text(work: float | None) -> str:
    """Work exactly as computed (it is compared with the cost model's), '' when unknown."""
    if work is None:
        return ""
    return str(int(work)) if float(work).is_integer() else repr(float(work))


def write(rows: Iterable[tuple[str, str, Row]], path: str | Path) -> None:
    """The table, longest job first, seconds to 0.1 s (atomically)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(COLUMNS)
    for rule, job, row in rows:
        if "," in rule or "," in job:
            raise DataError(f"job names must not contain commas; got {rule} {job}")
        writer.writerow([rule, job, f"{row.seconds:.1f}", _work_text(row.work), row.cpu])
    write_text_atomic(Path(path), out.getvalue())


__all__ = [
    "COLUMNS",
    "SECONDS_ONLY",
    "UPSTREAM_PRIORITY",
    "Row",
    "load",
    "load_rows",
    "merge",
    "priority",
    "write",
]
