"""A copy of this checkout that a test may edit, and how to run Python and the CLI in it.

Why: the registry tests add a paper or a method the way a newcomer would, by editing the
registry's source; that edit must happen in a copy, and everything the copy runs must import the
copy's package, not the editable install of this checkout.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

SKIPPED = ("results/", "reference/", "benchmarks/results/")
"""Folders of run outputs that the copy leaves out (large, and no test of a copy reads them)."""


def copy_checkout(repo: Path, dest: Path) -> None:
    """Copy the tracked and the untracked-but-not-ignored files of ``repo`` to ``dest``."""
    tracked = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=repo,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split("\0")
    for rel in filter(None, tracked):
        if rel.startswith(SKIPPED):
            continue
        src = repo / rel
        if src.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)


def checkout_env(checkout: Path) -> dict[str, str]:
    """The environment whose ``noisyor_bench`` (and ``noisyor-bench``, Snakemake) is the copy's."""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(checkout / "workflow")  # ahead of the editable install of the real checkout
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    return env


def run_python(checkout: Path, code: str) -> str:
    """Standard output of ``python -c code`` in the copy; its stderr if it fails."""
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=checkout, env=checkout_env(checkout), capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout
