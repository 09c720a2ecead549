"""The aviPAM smoke DAG: every aviPAM rule is scheduled, in the convergence and claims tables,
and `papers` without avipam schedules none of it (dry runs; the DAG itself runs in make test)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import MIRROR, REPO

AVIPAM_RULES = (
    "avipam_data",
    "avipam_npmi_counts",
    "avipam_run",
    "avipam_tables",
    "avipam_collapse",
    "claims_avipam",
)


def _dry_run(tmp_path: Path, papers: str) -> str:
    snakemake = Path(sys.executable).with_name("snakemake")
    proc = subprocess.run(
        [str(snakemake), "-n", "--config", "grid=smoke", f"papers={papers}", f"results_dir={tmp_path}"],
        cwd=REPO,
        env={**os.environ, "NOISYOR_RAW_DATA": str(MIRROR)} if MIRROR else None,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


@pytest.mark.slow
def test_avipam_smoke_dag_schedules_every_avipam_rule(tmp_path: Path) -> None:
    if not Path(os.environ.get("NOISYOR_RAW_DATA", "/work/shared/data"), "20news").is_dir():
        pytest.skip("needs the raw-data mirror")
    out = _dry_run(tmp_path, "[avipam]")
    for rule in AVIPAM_RULES:
        assert f"rule {rule}:" in out, rule
    assert "convergence_avipam-small.csv" in out and "claims_avipam.csv" in out
    other = _dry_run(tmp_path, "[acp]")
    assert not any(f"rule {rule}:" in other for rule in AVIPAM_RULES)
