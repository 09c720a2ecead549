"""Files dated ahead of this machine's clock, found before Snakemake plans on their times.

Snakemake checks after every job that its outputs are newer than its newest input; an input
dated in the future fails that check for every job that reads it, and Snakemake then deletes the
fresh outputs of the job.  So an invocation is refused when its DAG is built, before any job
starts, naming the newest such file and how to reset the times.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable
from datetime import datetime
from pathlib import Path

from noisyor_bench.infra.errors import UserError

TOLERANCE_SECONDS = 2.0
"""How far ahead a file may be before it counts (a file written this instant is never refused)."""

SKIPPED_DIRS = frozenset({".snakemake"})


def future_files(roots: Iterable[str | os.PathLike[str]], now: float) -> list[tuple[float, Path]]:
    """(mtime, path) of every file under ``roots`` dated more than TOLERANCE_SECONDS after ``now``,
    newest first (links are not followed; Snakemake's own .snakemake/ is skipped)."""
    found = []
    for root in roots:
        for folder, dirs, files in os.walk(root):
            dirs[:] = [d for d in dirs if d not in SKIPPED_DIRS]
            for name in files:
                path = Path(folder) / name
                try:
                    mtime = path.lstat().st_mtime
                except OSError:  # removed meanwhile
                    continue
                if mtime > now + TOLERANCE_SECONDS:
                    found.append((mtime, path))
    return sorted(found, reverse=True)


def _ahead(seconds: float) -> str:
    if seconds >= 86400:
        return f"{seconds / 86400:.1f} days"
    if seconds >= 3600:
        return f"{seconds / 3600:.1f} hours"
    return f"{seconds:.0f} s"


def refuse_future_files(roots: Iterable[str | os.PathLike[str]], now: float | None = None) -> None:
    """UserError naming the newest file under ``roots`` dated ahead of the clock, if any."""
    now = time.time() if now is None else now
    roots = [Path(r) for r in roots if Path(r).is_dir()]
    found = future_files(roots, now)
    if not found:
        return
    mtime, newest = found[0]
    dated = datetime.fromtimestamp(mtime).isoformat(sep=" ", timespec="seconds")
    where = " ".join(f"'{r}'" for r in roots if any(path.is_relative_to(r) for _, path in found))
    raise UserError(
        f"{newest} is dated {dated}, {_ahead(mtime - now)} ahead of this machine's clock "
        f"({len(found)} file(s) are); every job reading such a file would fail Snakemake's "
        f"clock check and lose its fresh outputs. Fix the clock, or reset those times: "
        f"find {where} -newermt now -exec touch -h {{}} +   then run again"
    )
