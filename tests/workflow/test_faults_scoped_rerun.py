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


# ---------------------------------------------------------------------------------- claims.csv kept
def _evidence(results: Path, run_claims: list[Claim], papers: tuple[str, ...]) -> int:
    """Rule claims_evidence's command for ``papers`` on this run's claims (no references)."""
    tables = results / "tables"
    write_claims(run_claims, tables / "claims_run.csv", tables / "claims_run.md")
    return main(
        [
            *("claims-evidence", "--claims", str(tables / "claims_run.csv"), "--grid", "quick"),
            *("--papers", *papers, "--keep-other-papers"),
            *("--out-csv", str(tables / "claims.csv"), "--out-md", str(tables / "claims.md")),
            *("--out-sources-csv", str(tables / "claims_sources.csv")),
            *("--out-timing", str(tables / "claims_timing.csv")),
        ]
    )


def _rows(path: Path) -> dict[str, str]:
    lines = path.read_text().splitlines()
    return {line.split(",", 1)[0]: line for line in lines[1:]}


def test_scoped_rerun_keeps_the_other_papers_claims(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """A full run's headline tables, then a run of papers=[ape]: claims.csv (and the sources and
    timing tables) keep ACP's and aviPAM's rows as they were, in registry order, and hold APE's
    new ones; before, claims.csv shrank to the selected papers' claims (63 to 4)."""
    caplog.set_level("INFO")
    results = tmp_path / "results"
    (results / "tables").mkdir(parents=True)
    timed = Claim("fig5-speed", "fast", "Fig. 5", "reproduced", "x = 1", "rule", timing="time 3 s")
    earlier = [*_claims(("fig5-a", "reproduced"), ("fig5-b", "inconclusive")), timed]
    earlier += _claims(("ape-a", "not reproduced"), ("avipam-order", "not reproduced"))
    assert _evidence(results, earlier, ("acp", "ape", "avipam")) == 0
    tables = results / "tables"
    before = {
        name: _rows(tables / name) for name in ("claims.csv", "claims_sources.csv", "claims_timing.csv")
    }
    assert _evidence(results, _claims(("ape-a", "reproduced"), ("ape-b", "inconclusive")), ("ape",)) == 0
    assert "kept 4 earlier claims of papers not selected: acp avipam" in caplog.text
    after = {name: _rows(tables / name) for name in before}
    assert list(after["claims.csv"]) == ["fig5-a", "fig5-b", "fig5-speed", "ape-a", "ape-b", "avipam-order"]
    for name, rows in before.items():
        kept = {i: r for i, r in rows.items() if not i.startswith("ape-")}
        assert {i: after[name][i] for i in kept} == kept, name  # byte-identical rows
    assert (
        ",reproduced," in after["claims.csv"]["ape-a"]
        and "time 3 s" in after["claims_timing.csv"]["fig5-speed"]
    )
    assert (
        "fig5-speed" in (tables / "claims.md").read_text()
        and "time 3 s" in (tables / "claims.md").read_text()
    )


def test_scoped_rerun_refuses_an_edited_earlier_claims_table(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The rows kept are checked against their provenance record: a hand edit is named, not carried on."""
    results = tmp_path / "results"
    (results / "tables").mkdir(parents=True)
    assert (
        _evidence(results, _claims(("fig5-a", "not reproduced"), ("ape-a", "reproduced")), ("acp", "ape"))
        == 0
    )
    claims = results / "tables" / "claims.csv"
    claims.write_text(claims.read_text().replace("not reproduced", "reproduced"))
    capsys.readouterr()
    assert _evidence(results, _claims(("ape-a", "reproduced")), ("ape",)) == 2
    err = capsys.readouterr().err
    assert str(claims) in err and "Traceback" not in err
    assert ",reproduced," in claims.read_text()  # untouched: nothing written
