"""The SLURM runs that wrote a results directory, and their jobs still queued or running.

Why: a Snakemake driver that dies (SIGKILL, a lost login session, a rebooted login node) leaves
the jobs it submitted in SLURM's queue, and they run anyway.  A rerun started before they end
finds their outputs missing and submits the same jobs again: two copies of one job writing the
same files, and the work done twice.

Each Snakemake driver of the SLURM executor records its run ID (the plugin's name for all its
jobs, ``SLURM run ID: <id>`` in its log) in ``<results_dir>/`` :data:`RECORD_FILE` when it
starts to execute (``onstart`` in rules/common.smk).  It holds the results directory's lock by
then (:mod:`noisyor_bench.infra.results_lock`), so every driver the record names has ended.
Before recording its own ID it asks ``squeue`` for the jobs of the recorded runs and refuses to
start while one of them is still queued or running (:func:`guard`), naming them and the two ways
out: wait until they end, or cancel them (``scancel --name <run ID>``).  Once none is left the
record names this run alone.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from noisyor_bench.infra.io import write_text_atomic

#: The record of the SLURM runs of a results directory, inside it.
RECORD_FILE = ".noisyor-bench-slurm-runs"
#: The line the SLURM executor plugin logs at the start of a run.
RUN_ID = re.compile(r"^SLURM run ID: (\S+)\s*$", re.M)
#: squeue's format: job ID, state, name (the run ID), comment (rule and wildcards).
SQUEUE_FORMAT = "%i|%T|%j|%k"
#: Run IDs per squeue call (``--name`` takes a comma-separated list).
_CHUNK = 50


@dataclass(frozen=True)
class LiveJob:
    """A job of a recorded run that SLURM still lists as queued or running."""

    job_id: str
    state: str
    run_id: str
    comment: str


def recorded_runs(results_dir: str | os.PathLike[str]) -> list[str]:
    """The run IDs in the record of ``results_dir`` (first column of each line; [] without one)."""
    path = Path(results_dir) / RECORD_FILE
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return []
    return [line.split("\t", 1)[0] for line in text.splitlines() if line.strip() and not line.startswith("#")]


def run_id_from_logs(logs: str | os.PathLike[str] | Iterable[str | os.PathLike[str]] | None) -> str | None:
    """This run's SLURM run ID from its Snakemake log file(s) (``onstart``'s ``log``), or None."""
    if logs is None:
        return None
    paths = [logs] if isinstance(logs, str | os.PathLike) else list(logs)
    for path in paths:
        try:
            with open(path, encoding="utf-8", errors="replace") as fh:
                found = RUN_ID.search(fh.read(1 << 16))  # logged right after the DAG is built
        except OSError:
            continue
        if found:
            return found.group(1)
    return None


def live_jobs(run_ids: Sequence[str], squeue: str = "squeue") -> list[LiveJob]:
    """The jobs of ``run_ids`` that ``squeue`` lists without ``--states`` (pending, running,
    suspended, completing, configuring: every job that has not ended).  OSError or
    CalledProcessError when squeue cannot be asked."""
    found: list[LiveJob] = []
    for start in range(0, len(run_ids), _CHUNK):
        names = ",".join(run_ids[start : start + _CHUNK])
        proc = subprocess.run(
            [squeue, "--noheader", f"--format={SQUEUE_FORMAT}", f"--name={names}"],
            capture_output=True,
            text=True,
            check=True,
            timeout=120,
        )
        for line in proc.stdout.splitlines():
            cells = line.strip().split("|", 3)
            if len(cells) == 4 and cells[2] in run_ids:
                found.append(LiveJob(*cells))
    return found


def refusal(live: Sequence[LiveJob], results_dir: str | os.PathLike[str]) -> str:
    """The message that refuses a run while ``live`` jobs of earlier runs have not ended."""
    runs = sorted({job.run_id for job in live})
    listed = "\n".join(
        f"  {job.job_id} {job.state} {job.comment} (run {job.run_id})" for job in live[:10]
    ) + (f"\n  ... and {len(live) - 10} more" if len(live) > 10 else "")
    names = ",".join(runs)
    return (
        f"{len(live)} SLURM job(s) submitted by an earlier Snakemake driver of {results_dir} "
        f"(SLURM run ID {', '.join(runs)}) are still queued or running; they run although that driver "
        f"has ended, and this run would submit them again:\n{listed}\n"
        f"Wait until `squeue --name {names}` lists none, or cancel them (`scancel --name {names}`), "
        "then rerun (docs/cluster.md, 'A driver that died')."
    )


def record(results_dir: str | os.PathLike[str], run_id: str, keep: bool = False) -> None:
    """Record ``run_id``: the one run of the record (the earlier runs have no job left), or after
    the earlier lines (``keep``: their jobs could not be checked)."""
    path = Path(results_dir) / RECORD_FILE
    earlier = path.read_text(encoding="utf-8").splitlines(keepends=True)[1:] if keep and path.exists() else []
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime())
    write_text_atomic(
        path,
        "# SLURM run ID, pid, host, start, working directory of the Snakemake drivers writing this "
        "directory (noisyor_bench.infra.slurm_runs)\n"
        + "".join(earlier)
        + f"{run_id}\t{os.getpid()}\t{socket.gethostname()}\t{stamp}\t{os.getcwd()}\n",
    )


def guard(
    results_dir: str | os.PathLike[str], logs: object, squeue: str = "squeue"
) -> tuple[str | None, str | None]:
    """Check the recorded runs of ``results_dir`` and record this one (run ID from ``logs``).

    Returns ``(error, warning)``: an error (the run must not start: jobs of an earlier driver
    have not ended), or a warning (squeue could not be asked, or this run's ID was not found in
    its log: the check or the record is skipped, the run goes on), or neither."""
    earlier = recorded_runs(results_dir)
    warning = None
    if earlier:
        try:
            live = live_jobs(earlier, squeue)
        except (OSError, subprocess.SubprocessError) as err:
            detail = getattr(err, "stderr", None) or str(err)
            warning = (
                f"could not ask squeue for the jobs of earlier SLURM runs of {results_dir} "
                f"({' '.join(str(detail).split())[:200]}): jobs an earlier driver left queued are not "
                f"checked; see `squeue --name {','.join(earlier)}`"
            )
        else:
            if live:
                return refusal(live, results_dir), None
    run_id = run_id_from_logs(logs)  # type: ignore[arg-type]
    if run_id is None:
        return None, warning or (
            "no 'SLURM run ID' in this run's log: its jobs are not recorded for a later run's check"
        )
    record(results_dir, run_id, keep=warning is not None)
    return None, warning


__all__ = [
    "LiveJob",
    "RECORD_FILE",
    "guard",
    "live_jobs",
    "record",
    "recorded_runs",
    "refusal",
    "run_id_from_logs",
]
