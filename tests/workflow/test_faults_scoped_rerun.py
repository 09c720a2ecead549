"""Fault catalogue: a scoped rerun (``--config 'papers=[ape]'``) into a results directory that
holds an earlier run of ACP and aviPAM must not overwrite their answer.

The results directory is built by hand -- each paper's stage claims CSV, the merged
``tables/claims.csv`` of the latest run (APE alone) and the run records the Snakefile's
``onsuccess`` writes -- and ``noisyor-bench run-summary`` (what the console prints at the end of
a run) runs in process: every paper is listed, each labelled with the run it came from.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from noisyor_bench.cli import main
from noisyor_bench.reporting.answer import write_run_record
from noisyor_bench.reporting.claims import Claim, write_claims


def _claims(*ids_verdicts: tuple[str, str]) -> list[Claim]:
    return [Claim(i, f"statement {i}", "Table 1", v, "x = 1", "rule") for i, v in ids_verdicts]


def _scoped_rerun(results: Path) -> None:
    tables = results / "tables"
    tables.mkdir(parents=True)
    acp = _claims(("fig5-a", "reproduced"), ("fig5-b", "inconclusive"))
    avipam = _claims(("avipam-order", "not reproduced"), ("avipam-calibration-avitm", "reproduced"))
    ape = _claims(("ape-a", "reproduced"))
    write_claims(acp, tables / "claims_synthetic.csv", tables / "claims_synthetic.md")
    write_claims(avipam, tables / "claims_avipam.csv", tables / "claims_avipam.md")
    write_claims(acp + avipam, tables / "claims.csv", tables / "claims.md")
    write_run_record(results, 1000.0, 1600.0, 40, "quick", ["acp", "avipam"], "aaaaaaaaaaaaaaaa")
    write_claims(ape, tables / "claims_ape.csv", tables / "claims_ape.md")
    write_claims(ape, tables / "claims.csv", tables / "claims.md")  # claims-merge of papers=[ape]
    write_run_record(results, 5000.0, 5120.0, 7, "quick", ["ape"], "bbbbbbbbbbbbbbbb")


def test_run_summary_after_a_scoped_rerun_lists_every_paper(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    results = tmp_path / "results"
    _scoped_rerun(results)
    assert main(["run-summary", "--results", str(results)]) == 0
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    lines = captured.out.splitlines()
    earlier = "(grid quick, papers acp avipam, commit aaaaaaaaaaaa)"
    latest = "(grid quick, papers ape, commit bbbbbbbbbbbb)"
    by_paper = {
        line.split(":")[0]: line
        for line in lines
        if " claims reproduced" in line or " claim reproduced" in line
    }
    assert set(by_paper) == {"ACP", "APE", "aviPAM"}
    assert by_paper["ACP"].startswith("ACP: 1 of 2 claims reproduced") and earlier in by_paper["ACP"]
    assert by_paper["aviPAM"].startswith("aviPAM: 0 of 1 claim reproduced") and earlier in by_paper["aviPAM"]
    assert by_paper["APE"].startswith("APE: 1 of 1 claim reproduced") and latest in by_paper["APE"]
    assert "  aviPAM calibration: 1 of 1 within tolerance (avipam-calibration-avitm)" in lines
    assert any(line.startswith("Run: grid quick; papers ape; commit bbbbbbbbbbbb") for line in lines)
