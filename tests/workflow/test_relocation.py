"""Relocatable results: no job of the smoke DAG names an absolute path.

Snakemake reruns a job whose params, set of input paths or shell command changed since its
metadata was recorded (keyed by output path). With a relative results_dir, an absolute path in
any of them (the checkout's, the raw-data mirror's) would rerun that job, and all after it, once
the working directory or the mirror moves. The moves themselves run in
tests/workflow/test_workflow_smoke.py (a copied results directory, another mirror path) and in
the fault catalogue (a copied working directory with its metadata).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import MIRROR, REPO


def test_no_absolute_path_in_any_job_of_the_smoke_dag(tmp_path: Path) -> None:
    if MIRROR is None:
        pytest.skip("raw-data mirror not found")
    results = os.path.relpath(tmp_path / "results", REPO)
    env = {**os.environ, "NOISYOR_RAW_DATA": str(MIRROR), "PYTHONPATH": str(REPO / "workflow")}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    cmd = [sys.executable, "-m", "snakemake", "--dry-run", "--printshellcmds", "--cores", "1"]
    cmd += ["--config", "grid=smoke", f"results_dir={results}"]
    proc = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    fields = re.compile(r"\s*(Shell command|input|output|log|benchmark):")
    lines = [line for line in proc.stdout.splitlines() if fields.match(line)]
    assert sum(line.lstrip().startswith("Shell command") for line in lines) > 100
    absolute = sorted({m for line in lines for m in re.findall(r"(?:^|[\s'\"=@,:])(/[^\s'\",]+)", line)})
    assert absolute == [], absolute[:20]
    assert not (tmp_path / "results").exists()  # a dry run writes nothing there
