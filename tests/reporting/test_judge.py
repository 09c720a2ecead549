"""Re-judging a folder of tables (``Paper.judge``, ``noisyor-bench judge``): the claims a run's own
claims steps write today from the same tables, whatever verdicts the folder stored.

The expectation is built by running today's claims step in process on the same CSVs, with the
arguments the workflow would pass for the grid that made the folder (its experiments, its
not-run reasons, from config/config.yaml), so a judge that drifts from the steps fails here.
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import asdict
from pathlib import Path

import pandas as pd
import pytest
from conftest import REPO, cli

from noisyor_bench.experiments import papers
from noisyor_bench.experiments.acp import grid as acp_grid
from noisyor_bench.experiments.config import load_config
from noisyor_bench.reporting.claims import NOT_TESTED, REPRODUCED, read_claims

REFERENCES = {  # reference folder -> its grid (config/config.yaml) and the papers it holds
    "paper-synpattern": ("paper-synpattern", ("acp",)),
    "paper-fig5-table4": ("paper-fig5-table4", ("acp",)),
    "extended-acp": ("extended", ("acp",)),
    "extended-fig5": ("extended-fig5", ("acp",)),
    "paper-ape-toybars": ("paper-ape-toybars", ("ape",)),
    "paper-avipam-table1": ("paper-avipam-table1", ("avipam",)),
    "paper-avipam-nips": ("paper-avipam-nips", ("avipam",)),
    "paper-avipam-table2-timing": ("paper-avipam-table2-timing", ("avipam",)),
}

SMOKE_TABLES = os.environ.get("NOISYOR_SMOKE_TABLES", "")
"""A finished smoke-grid run's ``tables/`` (optional): every paper, the text claims included."""

ACP_SYNTHETIC = (
    "fig3a.csv",
    "fig3b.csv",
    "fig4_recovery.csv",
    "suppfig2_recovery.csv",
    "fig5.csv",
    "table4.csv",
    "ablation_acp_sg.csv",
    "search_draws.csv",
)
ACP_TEXT = ("table5.csv", "classification.csv", "tsne.csv")
AVIPAM = tuple(f"avipam_{t}.csv" for t in ("table1", "table2", "table3", "table4", "collapse"))


def _present(folder: Path, names: tuple[str, ...]) -> list[str]:
    return [str(folder / n) for n in names if (folder / n).is_file()]


def _step_claims(argv: list[str], out: Path, capsys: pytest.CaptureFixture[str]) -> list[dict]:
    """Today's claims step run in process on ``argv``, its CSV read back."""
    code, _, err = cli([*argv, "--out-csv", out, "--out-md", out.with_suffix(".md")], capsys)
    assert code == 0, err
    return [asdict(c) for c in read_claims(out)]


def expected_claims(
    paper: str, folder: Path, grid: str, tmp: Path, capsys: pytest.CaptureFixture[str], monkeypatch
) -> list[dict]:
    """What the paper's claims steps write from ``folder``'s tables for grid ``grid``."""
    if paper == "acp":
        cfg = load_config(REPO / "config" / "config.yaml", {"grid": grid})
        not_run = [f"{k}={v}" for k, v in acp_grid.not_run_experiments(cfg).items()]
        argv = ["acp-claims-synthetic", "--tables", *_present(folder, ACP_SYNTHETIC)]
        argv += ["--experiments", *acp_grid.experiments(cfg), "--not-run", *not_run]
        claims = _step_claims(argv, tmp / "synthetic.csv", capsys)
        text = _present(folder, ACP_TEXT)
        if text:
            best = int(pd.read_csv(folder / "table5.csv")["best_topics"].iloc[0])
            argv = ["acp-claims-text", "--tables", *text, "--best-topics", best]
            claims += _step_claims(argv, tmp / "text.csv", capsys)
        return claims
    if paper == "ape":
        argv = ["ape-claims", "--table", folder / "ape_table1.csv", "--figure1", folder / "ape_figure1.csv"]
        return _step_claims(argv, tmp / "ape.csv", capsys)
    if paper == "avipam":  # the step names the machine it runs on: the one that made the tables
        sidecar = json.loads((folder / "avipam_table1.csv.prov.json").read_text(encoding="utf-8"))
        machine = sidecar["environment"]["device"]["cpu_model"]
        monkeypatch.setattr("noisyor_bench.infra.provenance.cpu_model", lambda: machine)
        return _step_claims(
            ["avipam-claims", "--tables", *_present(folder, AVIPAM)], tmp / "avipam.csv", capsys
        )
    # APE on noisy-OR: the report step judges the table it has just built, the one written here
    from noisyor_bench.reporting.ape_noisyor.claims import ape_noisyor_claims
    from noisyor_bench.reporting.tables import read_table

    return [asdict(c) for c in ape_noisyor_claims(read_table(folder / "ape_noisyor.csv"))]


def assert_same_claims(judged: list, expected: list[dict], folder: Path) -> None:
    """Every claim the steps wrote, field for field; a claim only the judge lists (an experiment
    the grid does not run) is "not tested" and names the folder."""
    by_id = {c.claim_id: asdict(c) for c in judged}
    assert [c["claim_id"] for c in expected] == [i for i in by_id if i in {c["claim_id"] for c in expected}]
    label = f"{folder.parent.name}/{folder.name}"
    for claim in expected:
        got = by_id[claim["claim_id"]]
        if claim["verdict"] == NOT_TESTED and got["verdict"] == NOT_TESTED and got != claim:
            # the grid's reason for an experiment it does not run is the grid's, not in the tables:
            # the judge names the folder that lacks the experiment's table instead
            assert label in got["numbers"], got
            continue
        assert got == claim
    extra = [c for c in judged if c.claim_id not in {e["claim_id"] for e in expected}]
    assert all(c.verdict == NOT_TESTED and label in c.numbers for c in extra), [asdict(c) for c in extra]


@pytest.mark.parametrize(("reference", "paper"), [(r, p) for r, (_, ps) in REFERENCES.items() for p in ps])
def test_judging_a_reference_gives_todays_claims_steps_verdicts(
    reference, paper, tmp_path, capsys, monkeypatch
):
    folder = REPO / "reference" / reference / "tables"
    expected = expected_claims(paper, folder, REFERENCES[reference][0], tmp_path, capsys, monkeypatch)
    assert expected
    assert_same_claims(papers.judge(paper, folder), expected, folder)


@pytest.mark.skipif(not SMOKE_TABLES, reason="NOISYOR_SMOKE_TABLES names no finished smoke run's tables/")
@pytest.mark.parametrize("paper", papers.ids())
def test_judging_a_smoke_run_gives_its_claims_steps_verdicts(paper, tmp_path, capsys, monkeypatch):
    folder = Path(SMOKE_TABLES)
    expected = expected_claims(paper, folder, "smoke", tmp_path, capsys, monkeypatch)
    assert expected
    judged = papers.judge(paper, folder)
    assert_same_claims(judged, expected, folder)
    assert len(judged) == len(expected)  # the smoke grid runs every experiment: nothing added


def test_a_references_stored_verdict_is_ignored_for_todays():
    folder = REPO / "reference" / "paper-synpattern" / "tables"
    claim = "fig3b-ubcdi-tighter-bound-worse-elbo"
    stored = {c.claim_id: c for c in read_claims(folder / "claims.csv")}[claim]
    judged = {c.claim_id: c for c in papers.judge("acp", folder)}[claim]
    assert stored.verdict == "inconclusive"  # judged under an older rule: one setting had no CI
    assert judged.verdict == REPRODUCED and "exact" in judged.numbers


def test_stored_claims_are_never_read(tmp_path):
    """A folder whose claims CSVs say otherwise (or are gone) is judged the same."""
    source = REPO / "reference" / "paper-ape-toybars" / "tables"
    bare = tmp_path / "tables"
    shutil.copytree(source, bare, ignore=shutil.ignore_patterns("claims*"))
    assert not list(bare.glob("claims*"))
    assert [asdict(c) for c in papers.judge("ape", bare)] == [asdict(c) for c in papers.judge("ape", source)]


def test_a_paper_without_tables_in_the_folder_has_no_claims_there():
    folder = REPO / "reference" / "paper-ape-toybars" / "tables"
    assert papers.judge("acp", folder) == [] and papers.judge("avipam", folder) == []
    assert papers.judge("ape_noisyor", folder) == []
    assert all(p.judge for p in papers.papers())


def _noisyor_runs() -> pd.DataFrame:
    """Per-run rows of the APE-on-noisy-OR table (three seeds; LB-CDI one deterministic run)."""
    values = {
        "avi": ([3.0, 3.1, 2.9], [0.80, 0.82, 0.81]),
        "avi-concat": ([2.0, 2.1, 2.2], [0.85, 0.86, 0.84]),
        "avi-model-aware": ([1.0, 1.1, 1.05], [0.90, 0.91, 0.92]),
        "acp": ([0.9, 1.0, 0.95], [0.91, 0.92, 0.91]),
        "lb-cdi": ([0.1], [1.0]),
    }
    rows = []
    for method, (gaps, agreements) in values.items():
        for seed, (gap, agree) in enumerate(zip(gaps, agreements, strict=True)):
            rows.append(
                {
                    "dataset": "fam",
                    "method": method,
                    "mode": "inference",
                    "n_train": 10,
                    "seed": seed,
                    "converged": None if method == "lb-cdi" else seed != 2,
                    "run_dir": f"runs/{method}/seed{seed}",
                    "base_method": method.split("-")[0],
                    "encoder_input": "",
                    "gap_exact": gap,
                    "agreement_exact": agree,
                    "gap_lbcdi": 0.0 if method == "lb-cdi" else gap - 0.1,
                    "agreement_svi": float("nan"),
                    "gap_svi": float("nan"),
                    "inference_seconds": 0.1,
                }
            )
    return pd.DataFrame(rows)


def test_ape_noisyor_judged_from_its_csv_as_the_report_judged_its_table(tmp_path):
    """The report step judges the table in memory; the judge reads the CSV it wrote."""
    from noisyor_bench.reporting.ape_noisyor.claims import ape_noisyor_claims
    from noisyor_bench.reporting.ape_noisyor.table import ape_noisyor_table
    from noisyor_bench.reporting.tables import write_table

    table = ape_noisyor_table(_noisyor_runs())
    write_table(table, tmp_path / "ape_noisyor.csv")
    expected = [asdict(c) for c in ape_noisyor_claims(table)]
    assert {c["verdict"] for c in expected} == {REPRODUCED} and any(c["unconverged"] for c in expected)
    assert [asdict(c) for c in papers.judge("ape_noisyor", tmp_path)] == expected


def test_acp_claims_of_absent_tables_are_not_tested_naming_the_folder(tmp_path):
    """Only Fig. 3a's tables: its claims judged, every other ACP claim not tested for the folder."""
    source = REPO / "reference" / "paper-synpattern" / "tables"
    folder = tmp_path / "mine" / "tables"
    folder.mkdir(parents=True)
    for name in ("fig3a.csv", "fig3b.csv"):
        for path in source.glob(f"{name}*"):
            shutil.copy(path, folder / path.name)
    judged = papers.judge("acp", folder)
    fig3a = [c for c in judged if c.claim_id.startswith(("fig3a-", "fig3b-"))]
    others = [c for c in judged if c not in fig3a]
    assert len(fig3a) == 6 and all(c.verdict != NOT_TESTED for c in fig3a)
    assert others and all(c.verdict == NOT_TESTED and "mine/tables has no" in c.numbers for c in others)
    assert any("fig4_recovery.csv" in c.numbers for c in others) and any(
        "table5.csv" in c.numbers for c in others
    )


def test_judge_command_writes_the_claims_of_a_reference(tmp_path, capsys):
    reference = REPO / "reference" / "paper-avipam-table1"
    out = tmp_path / "claims.csv"
    code, stdout, err = cli(
        ["judge", "--tables", reference, "--out-csv", out, "--out-md", tmp_path / "c.md"], capsys
    )
    assert code == 0, err
    assert "paper-avipam-table1/tables: 11 claims re-judged" in stdout
    judged = papers.judge("avipam", reference / "tables")
    assert [asdict(c) for c in read_claims(out)] == [asdict(c) for c in judged]
    assert "re-judged from paper-avipam-table1/tables" in (tmp_path / "c.md").read_text(encoding="utf-8")
    code, _, err = cli(["judge", "--tables", reference, "--paper", "ape", "--out-csv", out], capsys)
    assert code != 0 and "none of the tables the claims of ape read" in err
