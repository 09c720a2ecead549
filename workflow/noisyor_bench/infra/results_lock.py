"""Who may write a results directory, as seen by commands that run outside Snakemake's jobs.

The one-writer lock itself is :func:`noisyor_bench.infra.io.lock_results_dir`.  A Snakemake
invocation takes it when it plans its first job (``rules/common.smk``), announces it on its
output (:data:`LOCKED_LINE`: the compact console opens its log only after that line, so a refused
invocation never touches the log of the one that holds it) and exports :data:`HELD_ENV`, so
that its jobs, which inherit the lock's holder as their parent, are not refused by it.  A
command that writes into a results directory by hand (``compare``) takes the same lock unless
it runs inside the invocation that holds it.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

HELD_ENV = "NOISYOR_RESULTS_LOCK_HELD"
"""The resolved results directory whose lock the invoking Snakemake holds (set for its jobs)."""

LOCKED_LINE = "noisyor-bench: results directory locked by this invocation: "
"""Start of the line a Snakemake invocation prints once it holds the results lock."""


def take_for_invocation(results_dir: str | os.PathLike[str]) -> Any:
    """Lock ``results_dir`` for this process and tell its jobs (:data:`HELD_ENV`); return the
    open lock file (UserError naming the holder when another invocation writes it)."""
    from noisyor_bench.infra.io import lock_results_dir

    lock = lock_results_dir(results_dir)
    os.environ[HELD_ENV] = str(Path(results_dir).resolve())
    return lock


def locked_line(results_dir: str | os.PathLike[str]) -> str:
    """The line that says this process holds ``results_dir``'s lock (read by the console)."""
    return f"{LOCKED_LINE}{results_dir} (pid {os.getpid()})"


def inherited(results_dir: str | os.PathLike[str]) -> bool:
    """Whether this process runs inside the invocation that holds ``results_dir``'s lock."""
    return os.environ.get(HELD_ENV) == str(Path(results_dir).resolve())


def hold_unless_inherited(results_dir: str | os.PathLike[str]) -> Any:
    """The results lock for a command writing into ``results_dir``: taken (UserError naming the
    holder when another invocation writes it; held until this process ends), or None inside the
    invocation that holds it or when ``results_dir`` does not exist (nothing there to protect)."""
    from noisyor_bench.infra.io import lock_results_dir

    if inherited(results_dir) or not Path(results_dir).is_dir():
        return None
    return lock_results_dir(results_dir)
