"""A published reference: a finished run's small outputs, with their provenance, in one folder.

``reference/`` holds what a reader needs to compare their own run against ours without
downloading anything: every table (CSV and Markdown), every figure (PNG), each with the provenance
sidecar (``<file>.prov.json``: command, inputs with sha256, code commit, machine) the workflow wrote
beside it, and a README saying which commit, command, machine and time produced them, with the
claims' verdicts.  Run directories, datasets and checkpoints are not copied: they are large and
every number in the tables traces back to them through the sidecars.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from noisyor_bench.infra.errors import DataError
from noisyor_bench.infra.integrity import verify_recorded_file
from noisyor_bench.infra.io import copy_file_atomic, write_text_atomic

PUBLISHED = (("tables", ("*.csv", "*.md")), ("figures", ("*.png",)))
"""What is copied: (folder, patterns); each file's ``.prov.json`` sidecar comes with it."""


@dataclass(frozen=True)
class RunTimes:
    """Times of a workflow run from Snakemake's benchmark files (one TSV per job)."""

    jobs: int
    job_seconds: float  # sum of the jobs' wall times
    cpu_seconds: float  # sum of the jobs' CPU times


def run_times(benchmarks: Path) -> RunTimes:
    jobs, wall, cpu = 0, 0.0, 0.0
    for path in sorted(benchmarks.rglob("*.tsv")):
        with path.open() as handle:
            for row in csv.DictReader(handle, delimiter="\t"):
                jobs += 1
                wall += float(row.get("s") or 0.0)
                value = row.get("cpu_time") or "0"
                cpu += float(value) if value not in ("NA", "-") else 0.0
    return RunTimes(jobs, wall, cpu)


def _environment(results: Path) -> dict[str, Any]:
    """The code and machine record of the run (from the claims table's provenance sidecar)."""
    sidecar = results / "tables" / "claims.csv.prov.json"
    if not sidecar.exists():
        raise DataError(
            f"{sidecar}: not found; publish a finished run (its claims table has a provenance record)"
        )
    record = json.loads(sidecar.read_text())
    return record.get("environment") or {}


def publish_reference(
    results: str | Path,
    out: str | Path,
    command: str,
    wall_seconds: float | None = None,
    note: str = "",
) -> list[Path]:
    """Copy the run's tables and figures (with sidecars) into ``out`` and write ``out/README.md``."""
    results, out = Path(results), Path(out)
    env = _environment(results)
    sources = [
        (folder, src)
        for folder, patterns in PUBLISHED
        for pattern in patterns
        for src in sorted((results / folder).glob(pattern))
    ]
    for _, src in sources:  # every file checked before any is copied: nothing edited is published
        verify_recorded_file(src)
    copied: list[Path] = []
    for folder, src in sources:
        for path in (src, src.with_name(src.name + ".prov.json")):
            if path.exists():
                dest = out / folder / path.name
                copy_file_atomic(path, dest)
                copied.append(dest)
    if not copied:
        raise DataError(f"{results}: no tables or figures to publish")
    times = run_times(results / "benchmarks")
    write_text_atomic(out / "README.md", readme(env, command, times, wall_seconds, results, note, out))
    return copied


def _fmt_minutes(seconds: float | None) -> str:
    return "not recorded" if seconds is None else f"{seconds / 60:.1f} min ({seconds:.0f} s)"


def shown_path(out: Path) -> str:
    """``out`` as a reader of the repository types it: relative to the git checkout that holds it
    (``reference/<name>``), else as given -- never the publishing machine's absolute path."""
    resolved = Path(out).resolve()
    for parent in resolved.parents:
        if (parent / ".git").exists():
            return resolved.relative_to(parent).as_posix()
    return Path(out).as_posix()


def readme(
    env: dict[str, Any],
    command: str,
    times: RunTimes,
    wall_seconds: float | None,
    results: Path,
    note: str,
    out: Path,
) -> str:
    code = env.get("code") or {}
    device = env.get("device") or {}
    packages = env.get("packages") or {}
    # the run's own verdicts (claims_run.md), not its headline: that one also ranks the references
    # the run was compared with, and a reference's README speaks for the reference alone
    claims_md = next(
        (p for p in (results / "tables" / n for n in ("claims_run.md", "claims.md")) if p.exists()), None
    )
    claims = claims_md.read_text().split("\n", 1)[1].strip() if claims_md else "(no claims table)"
    lines: Sequence[str] = [
        "# Reference results",
        "",
        "Outputs of one finished run of this workflow, committed so that a user can compare their own",
        f"run against it (`noisyor-bench compare --results results --reference {shown_path(out)}`) without",
        "running it. Every table and figure has its provenance record beside it (`<file>.prov.json`:",
        "the command, its inputs with sha256, the code commit, the machine).",
        "",
        "| | |",
        "|---|---|",
        f"| command | `{command}` |",
        f"| code commit | `{code.get('commit', 'unknown')}`{' (with uncommitted changes)' if code.get('dirty') else ''} |",
        f"| machine | {device.get('cpu_model', 'unknown')}, {device.get('cpus_available', '?')} cores available, "
        f"device {device.get('device', 'cpu')} |",
        f"| torch | {(packages.get('versions') or {}).get('torch', 'unknown')} |",
        f"| wall time of the run | {_fmt_minutes(wall_seconds)} |",
        f"| jobs | {times.jobs}; summed job wall time {_fmt_minutes(times.job_seconds)}; summed CPU time "
        f"{_fmt_minutes(times.cpu_seconds)} |",
        "",
        note,
        "",
        "## Claims",
        "",
        claims,
        "",
    ]
    return "\n".join(lines)
