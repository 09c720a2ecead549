"""Run ``noisyor-bench check-cluster`` as a user would: a subprocess in the repository root,
with this interpreter's scripts first on PATH and the raw-data mirror beside the checkout."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from conftest import REPO


def run_check_cluster(
    profile: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess:
    """The machine's own sinfo (a SLURM another test brought up, or a half-installed one) is not
    consulted unless the test gives captured output (--sinfo-file). ``env``: variables added."""
    if "--sinfo-file" not in args:
        args = (*args, "--no-sinfo")
    env = {**os.environ, **(env or {})}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env.setdefault("NOISYOR_RAW_DATA", str(REPO.parent / "shared" / "data"))
    cmd = [sys.executable, "-m", "noisyor_bench", "check-cluster", "--profile", str(profile), *args]
    return subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
