"""The aviPAM smoke DAG: every aviPAM rule is scheduled, in the convergence and claims tables,
and `papers` without avipam schedules none of it (dry runs; the DAG itself runs in make test)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from conftest import smoke_dry_run

AVIPAM_RULES = (
    "avipam_data",
    "avipam_npmi_counts",
    "avipam_run",
    "avipam_tables",
    "avipam_collapse",
    "claims_avipam",
)


def _dry_run(tmp_path: Path, papers: str) -> str:
    return smoke_dry_run(tmp_path, f"papers={papers}")


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
