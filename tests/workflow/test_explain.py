"""``noisyor-bench explain CLAIM``: a claim's statement, verdict, numbers and qualifiers, the
tables it was judged from and the run folders behind them, read from the provenance records."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO, cli

from noisyor_bench.commands import explain as E
from noisyor_bench.reporting.claims import Claim, write_claims

CLAIM = "fig3a-acp-beats-avi-n20"
NUMBERS = "ACP−AVI = -6.94 [-7.37, -6.51] (paired, n=5); ACP 10.12 (n=5), AVI 17.06 (n=5); paper ACP 22.2 vs AVI 37.2"


def _sidecar(path: Path, inputs: list[tuple[str, str]]) -> None:
    """A provenance sidecar naming ``(relpath, role)`` inputs, as the CLI records them."""
    entries = [{"path": rel, "relpath": rel, "role": role} for rel, role in inputs]
    path.with_name(path.name + ".prov.json").write_text(json.dumps({"inputs": entries}))


@pytest.fixture
def results(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    """A results folder: two tables with their runs, a stage claims table and the merged one."""
    root = tmp_path / "results"
    tables = root / "tables"
    tables.mkdir(parents=True)
    runs = [f"runs/fig3a/syn-pattern/{m}/n20/seed{s}" for m in ("acp", "avi") for s in (0, 1, 2)]
    for run in runs[:-1]:  # the last run is not in this folder
        (root / run).mkdir(parents=True)
    for name, behind in (("fig3a.csv", runs), ("fig3b.csv", ["runs/fig3b/syn-pattern/ub-cdi/n0/seed0"])):
        (tables / name).write_text("x\n1\n")
        _sidecar(
            tables / name,
            [(f"../{r}/metrics.json", "--runs") for r in behind] + [("../b.json", "--baselines")],
        )
    claims = [
        Claim(CLAIM, "ACP beats AVI", "Figure 3(a)", "reproduced", NUMBERS, "the rule", low_power="n>=4"),
        Claim("fig3b-other", "other", "Figure 3(b)", "inconclusive", "x 1 (no CI: n=1)", "rule"),
    ]
    stage = tables / "claims_synthetic.csv"
    write_claims(claims, stage)
    _sidecar(stage, [("fig3a.csv", "--tables"), ("fig3b.csv", "--tables")])
    code, _, err = cli(["claims-merge", "--claims", stage, "--out-csv", tables / "claims.csv"], capsys)
    assert code == 0, err
    return root


def test_explain_prints_the_claim_its_sources_and_runs(results, capsys, monkeypatch):
    monkeypatch.chdir(REPO)  # the registered references are relative to the repository
    code, out, err = cli(["explain", CLAIM, "--results", results], capsys)
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].startswith(f"{CLAIM}  [ACP: ")
    assert "statement   ACP beats AVI" in lines and "verdict     reproduced" in lines
    assert "statistic   ACP−AVI = -6.94 [-7.37, -6.51] (paired, n=5)" in lines
    assert "ours        ACP 10.12 (n=5), AVI 17.06 (n=5)" in lines
    assert "paper's     paper ACP 22.2 vs AVI 37.2" in lines
    assert "qualifier   low power: n>=4" in lines
    assert any(line.endswith("claims_synthetic.csv") and "claims.csv <-" in line for line in lines)
    assert "  judged from: fig3a.csv, fig3b.csv" in lines
    # the runs of the table its id names (fig3a, not fig3b), seeds collapsed per cell
    assert "runs behind it (fig3a.csv): 6 run(s) in 2 cell(s); 1 not in this folder" in lines
    assert "  runs/fig3a/syn-pattern/acp/n20/seed{0,1,2}" in lines
    assert not any("fig3b/" in line for line in lines)
    # the registered reference that judged the same claim, with its verdict
    with open(REPO / "reference/paper-synpattern/tables/claims.csv", encoding="utf-8") as fh:
        theirs = next(r for r in csv.DictReader(fh) if r["claim_id"] == CLAIM)
    assert f"  also judged in reference/paper-synpattern: {theirs['verdict']}" in lines


def test_explain_names_close_claims_and_a_missing_table(results, tmp_path, capsys):
    code, _, err = cli(["explain", "fig3a-acp-beats", "--results", results], capsys)
    assert code == 2 and f"did you mean: {CLAIM}" in err
    code, _, err = cli(["explain", CLAIM, "--results", tmp_path / "nowhere"], capsys)
    assert code == 2 and "no claims table" in err and "--results" in err


def test_explain_refuses_a_verdict_edited_by_hand(results, capsys):
    merged = results / "tables" / "claims.csv"
    merged.write_text(merged.read_text(encoding="utf-8").replace("reproduced", "not reproduced", 1))
    code, _, err = cli(["explain", CLAIM, "--results", results], capsys)
    assert code == 2 and "claims.csv" in err


def test_numbers_are_split_outside_brackets():
    assert E.split_parts("a [1; 2]; b (x; y); c") == ["a [1; 2]", "b (x; y)", "c"]
    parts = E.classify_numbers(NUMBERS)
    assert parts == {
        "statistic": ["ACP−AVI = -6.94 [-7.37, -6.51] (paired, n=5)"],
        "ours": ["ACP 10.12 (n=5), AVI 17.06 (n=5)"],
        "paper": ["paper ACP 22.2 vs AVI 37.2"],
    }


def test_tables_named_by_the_claim_id():
    tables = [Path(n) for n in ("fig3a.csv", "fig3a_sensitivity.csv", "fig3b.csv", "avipam_table1.csv")]
    assert E.named_tables("fig3a-acp-beats-avi", tables) == tables[:2]
    assert E.named_tables("avipam-table1-order", [Path("avipam_table1.csv"), Path("avipam_table2.csv")]) == [
        Path("avipam_table1.csv")
    ]
    assert E.named_tables("mechanism-x", tables) == tables  # none named: every table of the stage


def test_explain_loads_no_statistics_library():
    """What keeps it well under 5 s on a busy machine: no pandas, no scipy."""
    probe = (
        "import sys, contextlib, io\nfrom noisyor_bench import cli\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    code = cli.main(['explain', {CLAIM!r}, '--results', 'reference/paper-synpattern'])\n"
        "print(code, sorted(m for m in ('pandas', 'scipy', 'torch') if m in sys.modules))"
    )
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=REPO, check=True)
    assert proc.stdout.split() == ["0", "[]"]
