"""noisyor-bench compare on a toy pair of result sets: agreement within CIs, deterministic
cells, missing cells and claim verdicts, decided by hand."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest
from conftest import REPO

from noisyor_bench.cli import main
from noisyor_bench.reporting.compare import AGREE, DISAGREE, MISSING, compare_cell


def _table(rows: list[tuple]) -> pd.DataFrame:
    return pd.DataFrame(
        rows, columns=["artifact", "dataset", "n_train", "method", "nelbo_mean", "nelbo_ci95", "nelbo_n"]
    )


def _results(root: Path, rows: list[tuple], verdicts: dict[str, str]) -> Path:
    (root / "tables").mkdir(parents=True)
    _table(rows).to_csv(root / "tables" / "fig5.csv", index=False)
    pd.DataFrame([{"claim_id": k, "verdict": v} for k, v in verdicts.items()]).to_csv(
        root / "tables" / "claims.csv", index=False
    )
    return root


def test_compare_cell_by_hand() -> None:
    # |10.0 - 10.5| = 0.5 <= hypot(0.3, 0.4) = 0.5: agree (boundary included)
    assert compare_cell(10.0, 0.3, 5, 10.5, 0.4, 5) == (pytest.approx(-0.5), pytest.approx(0.5), AGREE)
    assert compare_cell(10.0, 0.3, 5, 10.6, 0.4, 5)[2] == DISAGREE
    # deterministic vs deterministic: equal or not, no interval
    assert compare_cell(3.0, math.nan, 1, 3.0, math.nan, 1)[2] == AGREE
    assert compare_cell(3.0, math.nan, 1, 3.001, math.nan, 1)[2] == DISAGREE
    # deterministic vs sampled: inside the sampled interval
    assert compare_cell(3.0, math.nan, 1, 3.2, 0.25, 5)[2] == AGREE
    assert compare_cell(math.nan, math.nan, math.nan, 3.0, 0.1, 5)[2] == MISSING


def test_compare_command_on_a_toy_pair(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], judged_as_stored: None
) -> None:
    reference = _results(
        tmp_path / "reference",
        [
            ("fig5", "syn-random-1", 30, "acp", 12.0, 0.2, 5),  # ours 12.1 ± 0.2: agree
            ("fig5", "syn-random-1", 30, "avi", 13.0, 0.1, 5),  # ours 14.0 ± 0.1: differ
            ("fig5", "syn-random-1", 1000, "acp", 10.0, 0.1, 5),  # absent from ours: missing
        ],
        {"fig5-a": "reproduced", "fig5-b": "not reproduced", "fig5-c": "inconclusive"},
    )
    ours = _results(
        tmp_path / "ours",
        [
            ("fig5", "syn-random-1", 30, "acp", 12.1, 0.2, 5),
            ("fig5", "syn-random-1", 30, "avi", 14.0, 0.1, 5),
        ],
        {"fig5-a": "reproduced", "fig5-b": "inconclusive"},
    )
    assert main(["compare", "--results", str(ours), "--reference", str(reference)]) == 0
    out = capsys.readouterr().out
    assert "1 cells agree" in out and "1 differ, 1 missing" in out
    assert "claims: 1 same verdict, 1 different, 1 missing" in out
    # a hand run writes beside the workflow's tables/comparison.*, named by the reference
    table = pd.read_csv(ours / "comparisons" / f"{reference.name}.csv")
    assert table.set_index("key")["status"].to_dict() == {
        "artifact=fig5, dataset=syn-random-1, n_train=30, method=acp": AGREE,
        "artifact=fig5, dataset=syn-random-1, n_train=30, method=avi": DISAGREE,
        "artifact=fig5, dataset=syn-random-1, n_train=1000, method=acp": MISSING,
    }
    md = (ours / "comparisons" / f"{reference.name}.md").read_text()
    assert "method=avi" in md.split("## Cells that differ")[1].split("## Claims")[0]
    assert (
        main(["compare", "--results", str(ours), "--reference", str(reference), "--fail-on-difference"]) == 1
    )


def test_compare_names_a_missing_tables_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compare", "--results", str(tmp_path), "--reference", str(tmp_path / "nope")]) != 0
    assert "no tables directory" in capsys.readouterr().err


def test_per_seed_tables_are_summarised_over_seeds_first() -> None:
    from noisyor_bench.reporting.compare import compare_tables

    def per_seed(values: list[float]) -> pd.DataFrame:
        return pd.DataFrame(
            [{"artifact": "recovery", "dataset": "syn-pattern", "n_train": 200, "method": "acp", "seed": s, "recovered": v}
             for s, v in enumerate(values)]
        )  # fmt: skip

    # ours 6, 7, 8 (mean 7, CI 2.48); reference 8, 8, 8 (mean 8, n=3, CI 0): |−1| <= 2.48 agree
    cells = compare_tables("fig4_recovery", per_seed([6, 7, 8]), per_seed([8, 8, 8]))
    assert [(c.metric, c.status) for c in cells] == [("recovered", AGREE)]
    assert cells[0].half_width == pytest.approx(4.302652729911275 * 1.0 / math.sqrt(3))
    cells = compare_tables("fig4_recovery", per_seed([2, 2, 3]), per_seed([8, 8, 8]))
    assert cells[0].status == DISAGREE


def test_publish_reference_copies_tables_figures_and_sidecars(tmp_path: Path) -> None:
    import json

    results = _results(
        tmp_path / "run", [("fig5", "syn-random-1", 30, "acp", 12.0, 0.2, 5)], {"fig5-a": "reproduced"}
    )
    (results / "tables" / "claims.md").write_text("# Claims\n\n1 claims: 1 reproduced.\n")
    (results / "tables" / "fig5.csv.prov.json").write_text("{}")
    env = {
        "code": {"commit": "abc123", "dirty": False},
        "device": {"cpu_model": "TestCPU", "cpus_available": 2},
    }
    (results / "tables" / "claims.csv.prov.json").write_text(json.dumps({"environment": env}))
    (results / "figures").mkdir()
    (results / "figures" / "fig5.png").write_bytes(b"\x89PNG")
    (results / "runs").mkdir()  # never published
    bench = results / "benchmarks" / "search"
    bench.mkdir(parents=True)
    (bench / "a.tsv").write_text("s\th:m:s\tcpu_time\n60.0\t0:01:00\t50.5\n")
    (bench / "b.tsv").write_text("s\th:m:s\tcpu_time\n30.0\t0:00:30\t29.5\n")
    out = tmp_path / "reference"
    assert (
        main(
            [
                "publish-reference",
                "--results",
                str(results),
                "--out",
                str(out),
                "--command",
                "make x",
                "--wall-seconds",
                "120",
            ]
        )
        == 0
    )
    names = sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file())
    assert names == [
        "README.md",
        "figures/fig5.png",
        "tables/claims.csv",
        "tables/claims.csv.prov.json",
        "tables/claims.md",
        "tables/fig5.csv",
        "tables/fig5.csv.prov.json",
    ]
    readme = (out / "README.md").read_text()
    assert "`abc123`" in readme and "TestCPU, 2 cores" in readme and "`make x`" in readme
    assert "2.0 min (120 s)" in readme  # wall time
    assert "jobs | 2; summed job wall time 1.5 min (90 s); summed CPU time 1.3 min (80 s)" in readme
    assert "1 claims: 1 reproduced." in readme
    assert f"--reference {out.as_posix()}`" in readme  # outside a git checkout: as given
    # the reference compares equal to the run it was built from
    assert main(["compare", "--results", str(results), "--reference", str(out)]) == 0


def test_a_reference_inside_a_checkout_is_named_relative_to_it(tmp_path: Path) -> None:
    """The README's compare command names the folder as a reader of the repository types it,
    never the publishing machine's absolute path."""
    from noisyor_bench.reporting.reference import shown_path

    (tmp_path / "repo" / ".git").mkdir(parents=True)
    assert shown_path(tmp_path / "repo" / "reference" / "new-ref") == "reference/new-ref"
    assert shown_path(tmp_path / "elsewhere" / "ref") == (tmp_path / "elsewhere" / "ref").as_posix()


def test_a_run_is_compared_with_each_selected_papers_own_references(tmp_path: Path) -> None:
    """reference_dir 'registered': the selected papers' registered reference folders that exist,
    in paper order; a path: that folder; null: none (folders without tables/ are skipped)."""
    from noisyor_bench.experiments.papers import reference_dirs

    for rel in ("reference/paper-synpattern", "reference/paper-ape-toybars"):
        (tmp_path / rel / "tables").mkdir(parents=True)
    names = [d.name for d in reference_dirs("registered", ["ape", "acp", "avipam"], tmp_path)]
    assert names == ["paper-synpattern", "paper-ape-toybars"]  # fig5-table4, avipam: no tables/ here
    assert reference_dirs("registered", ["avipam"], tmp_path) == []
    assert [d.name for d in reference_dirs("reference/paper-ape-toybars", ["acp"], tmp_path)] == [
        "paper-ape-toybars"
    ]
    assert reference_dirs(None, ["acp"], tmp_path) == []


def test_several_references_name_their_cells_and_claims(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], judged_as_stored: None
) -> None:
    one = _results(
        tmp_path / "ref-a", [("fig5", "syn-random-1", 30, "acp", 12.0, 0.2, 5)], {"fig5-a": "reproduced"}
    )
    two = _results(
        tmp_path / "ref-b", [("fig5", "syn-random-1", 30, "avi", 13.0, 0.1, 5)], {"fig5-b": "reproduced"}
    )
    ours = _results(
        tmp_path / "ours",
        [
            ("fig5", "syn-random-1", 30, "acp", 12.1, 0.2, 5),
            ("fig5", "syn-random-1", 30, "avi", 14.0, 0.1, 5),
        ],
        {"fig5-a": "reproduced", "fig5-b": "inconclusive"},
    )
    workflow_outputs = ["--out-csv", str(ours / "tables" / "comparison.csv")]  # as rule compare
    workflow_outputs += ["--out-md", str(ours / "tables" / "comparison.md")]
    assert (
        main(["compare", "--results", str(ours), "--reference", str(one), str(two), *workflow_outputs]) == 0
    )
    out = capsys.readouterr().out
    assert "ref-a: 1 cells agree" in out and "claims: 1 same verdict" in out
    assert "ref-b: 0 cells agree with the reference within their 95% intervals, 1 differ" in out
    table = pd.read_csv(ours / "tables" / "comparison.csv")
    assert table.set_index("reference_set")["status"].to_dict() == {"ref-a": AGREE, "ref-b": DISAGREE}
    md = (ours / "tables" / "comparison.md").read_text()
    assert "| ref-b | fig5 |" in md and "reference_set" in md.split("## Claims")[1]


@pytest.fixture
def judged_as_stored(monkeypatch: pytest.MonkeyPatch) -> None:
    """Re-judging a toy folder gives its own toy verdicts (toy claim ids have no claim code), so
    these tests exercise the verdict comparison; test_stored_reference_verdicts_are_ignored checks
    that real re-judging wins over what a reference stored."""
    from noisyor_bench.reporting import compare as compare_module

    monkeypatch.setattr(
        compare_module,
        "rejudged_claims",
        lambda tables: pd.read_csv(tables / "claims.csv", dtype=str, keep_default_na=False)[
            ["claim_id", "verdict"]
        ],
    )


def test_stored_reference_verdicts_are_ignored(tmp_path: Path) -> None:
    """A reference's claims are judged again from its tables: a verdict it stored for a claim its
    tables decide otherwise does not count (the headline's own evidence ladder does the same)."""
    from noisyor_bench.reporting.compare import compare_claims, rejudged_claims

    reference = REPO / "reference" / "paper-synpattern" / "tables"
    rejudged = rejudged_claims(reference)
    stored = pd.read_csv(reference / "claims.csv", dtype=str, keep_default_na=False)
    claim = "fig3b-ubcdi-tighter-bound-worse-elbo"
    assert stored.set_index("claim_id").loc[claim, "verdict"] == "inconclusive"  # the code of its day
    assert rejudged.set_index("claim_id").loc[claim, "verdict"] == "reproduced"  # today's code
    ours = tmp_path / "claims.csv"
    pd.DataFrame([{"claim_id": claim, "verdict": "reproduced"}]).to_csv(ours, index=False)
    row = compare_claims(ours, rejudged).set_index("claim_id").loc[claim]
    assert row["reference"] == "reproduced" and row["status"] == "same"


def test_the_references_verdicts_come_from_the_evidence_steps_sources(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The workflow judges each reference once (claims-evidence): compare reads that reference's
    rows of claims_sources.csv and judges nothing itself; a budget-held verdict stays told apart."""
    from noisyor_bench.reporting import compare as compare_module

    def no_judging(tables: Path) -> pd.DataFrame:
        raise AssertionError(f"{tables} judged again")

    monkeypatch.setattr(compare_module, "rejudged_claims", no_judging)
    reference = _results(tmp_path / "ref-a", [("fig5", "syn-random-1", 30, "acp", 12.0, 0.2, 5)], {})
    ours = _results(
        tmp_path / "ours",
        [("fig5", "syn-random-1", 30, "acp", 12.1, 0.2, 5)],
        {"fig5-a": "reproduced", "fig5-b": "inconclusive"},
    )
    sources = tmp_path / "claims_sources.csv"
    pd.DataFrame(
        [
            {"claim_id": "fig5-a", "source": "this run (quick)", "verdict": "reproduced"},
            {"claim_id": "fig5-a", "source": "reference/ref-a", "verdict": "not reproduced"},
            {"claim_id": "fig5-b", "source": "reference/ref-a", "verdict": "inconclusive (budget)"},
            {"claim_id": "fig5-a", "source": "reference/other", "verdict": "reproduced"},
        ]
    ).to_csv(sources, index=False)
    args = ["compare", "--results", str(ours), "--reference", str(reference), "--sources", str(sources)]
    outputs = [
        "--out-csv",
        str(ours / "tables" / "comparison.csv"),
        "--out-md",
        str(ours / "tables" / "comparison.md"),
    ]
    assert main([*args, *outputs]) == 0  # the workflow's outputs, as rule compare names them
    claims = pd.read_csv(ours / "tables" / "comparison.csv")  # cells
    assert len(claims) == 1
    md = (ours / "tables" / "comparison.md").read_text()
    assert "| fig5-a | reproduced | not reproduced | different |" in md
    assert "| fig5-b | inconclusive | inconclusive (budget) | different |" in md
    missing = tmp_path / "nothing.csv"
    assert main([*args[:-1], str(missing)]) == 2  # a data error: named, no traceback
    assert "claims sources table" in capsys.readouterr().err


def test_a_references_readme_shows_the_runs_own_verdicts_not_its_headline(tmp_path: Path) -> None:
    """The headline (claims.md) also ranks the references the run was compared with; the README
    of a new reference speaks for that run alone (claims_run.md)."""
    import json

    results = _results(
        tmp_path / "run", [("fig5", "syn-random-1", 30, "acp", 12.0, 0.2, 5)], {"a": "reproduced"}
    )
    tables = results / "tables"
    (tables / "claims.md").write_text("# Claims\n\nheadline: 1 reproduced (from reference/other).\n")
    (tables / "claims_run.md").write_text("# Claims\n\nthis run: 1 inconclusive.\n")
    env = {"code": {"commit": "abc123"}, "device": {"cpu_model": "TestCPU", "cpus_available": 2}}
    (tables / "claims.csv.prov.json").write_text(json.dumps({"environment": env}))
    out = tmp_path / "reference"
    assert main(["publish-reference", "--results", str(results), "--out", str(out), "--command", "x"]) == 0
    readme = (out / "README.md").read_text()
    assert "this run: 1 inconclusive." in readme and "headline" not in readme
