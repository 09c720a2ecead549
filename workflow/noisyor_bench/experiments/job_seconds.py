"""Measured seconds per job: the scheduling order of the workflow (longest jobs first).

Snakemake starts the ready job with the highest ``priority:`` first.  On a machine with few
cores the grid's wall time depends on that order: a long job started last leaves the other
cores idle at the end.  The order comes from measurement, not from a hand-kept list: a table
``rule,job,seconds`` (one row per benchmark file, ``<results>/benchmarks/<rule>/<job>.tsv``)
written by ``noisyor-bench job-seconds`` from the ``runtime_jobs.csv`` tables of reference
runs, read by the workflow (config key ``job_seconds``), and turned into a job's priority by
:func:`priority`.  A job the table does not list (a new cell, another grid's sizes) gets
priority 0, Snakemake's default, and runs after the measured ones.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Iterable, Mapping
from pathlib import Path

from noisyor_bench.infra.errors import DataError
from noisyor_bench.infra.io import write_text_atomic

#: Columns of the table (``config/job_seconds.csv``).
COLUMNS = ("rule", "job", "seconds")

#: Priority of data preparation (datasets, corpus ingestion, raw-input checks): above every
#: measured job.  Priorities only order the jobs that are ready, so a cheap upstream job left
#: low would wait behind every long training job and start its own long children last.
UPSTREAM_PRIORITY = 1_000_000

JobSeconds = Mapping[tuple[str, str], float]


def load(path: str | Path | None) -> dict[tuple[str, str], float]:
    """The table at ``path`` as ``{(rule, job): seconds}``; ``None`` or a missing file: empty."""
    if path is None:
        return {}
    path = Path(path)
    if not path.is_file():
        return {}
    with open(path, newline="") as fh:
        reader = csv.DictReader(fh)
        if tuple(reader.fieldnames or ()) != COLUMNS:
            raise DataError(f"{path}: expected the header {','.join(COLUMNS)}; got {reader.fieldnames}")
        table: dict[tuple[str, str], float] = {}
        for line, row in enumerate(reader, start=2):
            try:
                seconds = float(row["seconds"])
            except (TypeError, ValueError):
                raise DataError(
                    f"{path}, line {line}: seconds must be a number; got {row['seconds']!r}"
                ) from None
            if not math.isfinite(seconds) or seconds < 0:
                raise DataError(f"{path}, line {line}: seconds must be finite and >= 0; got {seconds}")
            key = (row["rule"], row["job"])
            if key in table:
                raise DataError(f"{path}, line {line}: job {key[0]} {key[1]} is listed twice")
            table[key] = seconds
    return table


def priority(table: JobSeconds, rule: str, job: str) -> int:
    """The job's measured seconds, rounded (longest first); 0 for a job without a measurement."""
    seconds = table.get((rule, job))
    return 0 if seconds is None else round(seconds)


def merge(
    runs: Iterable[Iterable[Mapping[str, object]]], kept: JobSeconds | None = None
) -> list[tuple[str, str, float]]:
    """Rows ``(rule, job, seconds)`` from several runs' ``runtime_jobs.csv`` rows (columns
    ``rule``, ``job``, ``s``); a job measured in several runs keeps its smallest time, the one
    least inflated by other work on the machine.  ``kept`` (an earlier table, :func:`load`)
    supplies the jobs none of the runs measured -- cells of a grid not re-run -- and never
    overrides a new measurement."""
    best: dict[tuple[str, str], float] = {}
    for rows in runs:
        for row in rows:
            key = (str(row["rule"]), str(row["job"]))
            seconds = float(row["s"])  # type: ignore[arg-type]
            if math.isfinite(seconds):
                best[key] = min(seconds, best.get(key, math.inf))
    for key, seconds in (kept or {}).items():
        best.setdefault(key, seconds)
    return sorted(((rule, job, s) for (rule, job), s in best.items()), key=lambda r: (-r[2], r[0], r[1]))


def write(rows: Iterable[tuple[str, str, float]], path: str | Path) -> None:
    """The table, longest job first, seconds to 0.1 s (atomically)."""
    lines = [",".join(COLUMNS)]
    for rule, job, seconds in rows:
        if "," in rule or "," in job:
            raise DataError(f"job names must not contain commas; got {rule} {job}")
        lines.append(f"{rule},{job},{seconds:.1f}")
    write_text_atomic(Path(path), "\n".join(lines) + "\n")


__all__ = ["COLUMNS", "UPSTREAM_PRIORITY", "load", "merge", "priority", "write"]
