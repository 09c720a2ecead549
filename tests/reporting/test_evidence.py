"""The evidence ladder (reporting.evidence, ``noisyor-bench claims-evidence``): the headline verdict
of a claim is its strongest deciding source, every source's verdict beside it, disagreements with
their reason; references are re-judged from their tables, never read for their stored verdicts."""

from __future__ import annotations

import csv
from pathlib import Path

import pandas as pd
import pytest
from conftest import cli, smoke_dry_run

from noisyor_bench.experiments import papers
from noisyor_bench.reporting import evidence as E
from noisyor_bench.reporting.claims import Claim, read_claims, write_claims

CLAIM = "fig3a-acp-beats-avi-n20"


def claim(verdict: str, n: int | None = 5, claim_id: str = CLAIM, **qualifiers: str) -> Claim:
    numbers = "not tested: no fig3a" if verdict == "not tested" else "ACP−AVI = -1.00"
    if n is not None and verdict != "not tested":
        numbers += f" [-1.50, -0.50] (paired, n={n}); ACP 10.00 (n={n})"
    return Claim(claim_id, "ACP beats AVI", "Figure 3(a)", verdict, numbers, "the rule", **qualifiers)


REF = E.reference_source("reference/paper-synpattern")
REF2 = E.reference_source("reference/paper-fig5-table4")
QUICK = E.run_source("quick")
PAPER_RUN = E.run_source("paper")
SMOKE = E.run_source("smoke")

# (sources: (source, claim)), expected headline source, agreement, words of the reason
CASES = {
    "a stronger source overrides a weaker one": (
        [(QUICK, claim("not reproduced", 2)), (REF, claim("reproduced", 5))],
        REF,
        E.CONFLICT,
        ("vs this run (quick):", "seeds n=5 vs n=2", "paper protocol vs grid quick"),
    ),
    "a deciding weaker source wins over an undecided stronger one": (
        [(QUICK, claim("reproduced", 2)), (REF, claim("inconclusive", 5, low_power="n>=9 would resolve it"))],
        QUICK,
        E.DIFFERS,
        ("vs reference/paper-synpattern:", "seeds n=2 vs n=5", "low power: n>=9"),
    ),
    "at the same protocol more seeds win": (
        [(PAPER_RUN, claim("not reproduced", 3)), (REF, claim("reproduced", 5))],
        REF,
        E.CONFLICT,
        ("seeds n=5 vs n=3",),
    ),
    "at the same protocol and seeds a converged source wins": (
        [(REF, claim("reproduced", 5, unconverged="2 of 10 runs")), (PAPER_RUN, claim("not reproduced", 5))],
        PAPER_RUN,
        E.CONFLICT,
        ("reference/paper-synpattern unconverged: 2 of 10 runs",),
    ),
    "a budget-limited source does not decide": (
        [
            (REF, claim("inconclusive", 5, budget="coherence still rising by 0.04 > effect 0.008")),
            (QUICK, claim("reproduced", 2)),
        ],
        QUICK,
        E.DIFFERS,
        ("reference/paper-synpattern budget: coherence still rising",),
    ),
    "a source that did not test never outranks one that did": (
        [(REF, claim("not tested")), (SMOKE, claim("inconclusive", 1))],
        SMOKE,
        E.ONE_SOURCE,
        (),
    ),
    "sources that agree": (
        [(QUICK, claim("reproduced", 2)), (REF, claim("reproduced", 5)), (REF2, claim("not tested"))],
        REF,
        E.AGREE,
        (),
    ),
    "no source tested it: this run's claim says what its grid lacks": (
        [(REF, claim("not tested")), (QUICK, claim("not tested"))],
        QUICK,
        E.NONE,
        (),
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_headline_is_the_strongest_deciding_source(name: str) -> None:
    sources, expected, agreement, reason_words = CASES[name]
    (head,) = E.ladder([(source, [c]) for source, c in sources])
    assert head.chosen.source == expected
    assert head.agreement == agreement
    for word in reason_words:
        assert word in head.disagreement, head.disagreement
    if agreement not in E.DISAGREEMENTS:
        assert head.disagreement == ""
    assert head.claim == dict(sources)[expected]  # the chosen source's own claim: numbers unchanged
    assert len(head.judged) == len(sources)


def _at(verdict: str, estimate: str, n: int = 3) -> Claim:
    """A Table 3 claim whose numbers print one comparison: ``estimate`` = "+0.088 [+0.058, +0.117]"."""
    numbers = f"avipam-pam4 - pam4-gibbs: {estimate} (welch, n={n} vs {n}); avipam-pam5: not run"
    return Claim("avipam-table3-nips", "aviPAM beats Gibbs", "Table 3", verdict, numbers, "the rule")


@pytest.mark.parametrize(
    ("reference", "overruled"),
    [
        ("+0.017 [-0.009, +0.042]", True),  # the paper's protocol moves the estimate out of quick's CI
        ("+0.080 [-0.010, +0.170]", False),  # the same estimate, measured less precisely
        ("+0.050 [-0.010, +0.058]", False),  # CIs that touch are not disjoint
    ],
)
def test_a_stronger_protocol_with_a_disjoint_ci_overrules_a_deciding_weaker_source(
    reference, overruled
) -> None:
    quick = _at("reproduced", "+0.088 [+0.058, +0.117]")
    ref = _at("inconclusive", reference)
    (head,) = E.ladder([(QUICK, [quick]), (REF, [ref])])
    assert head.agreement == E.DIFFERS
    if overruled:
        assert head.chosen.source == REF and head.claim == ref and head.claim.verdict == "inconclusive"
        assert head.disagreement.startswith(
            "overruled: this run (quick) decides reproduced on avipam-pam4 - pam4-gibbs: +0.088 [+0.058, +0.117], "
            "reference/paper-synpattern (paper protocol) estimates +0.017 [-0.009, +0.042]: disjoint 95% CIs"
        ), head.disagreement
        assert "vs this run (quick): paper protocol vs grid quick" in head.disagreement
    else:
        assert head.chosen.source == QUICK and "overruled" not in head.disagreement


def test_only_a_stronger_protocol_that_does_not_decide_overrules() -> None:
    quick = _at("reproduced", "+0.088 [+0.058, +0.117]")
    # another quick-grid source (same protocol) with a disjoint CI: ranked, not overruling
    (same,) = E.ladder(
        [(QUICK, [quick]), (E.run_source("my-grid"), [_at("inconclusive", "+0.01 [-0.02, +0.04]")])]
    )
    assert "overruled" not in same.disagreement
    # a deciding stronger source is the headline anyway, by rank
    (decides,) = E.ladder([(QUICK, [quick]), (REF, [_at("not reproduced", "+0.01 [+0.005, +0.02]")])])
    assert decides.chosen.source == REF and "overruled" not in decides.disagreement


def test_estimates_are_read_with_their_labels() -> None:
    numbers = (
        "difference +11.3 [+5.1, +17.6] (paired, n=3); N=1000 ACP−AVI = -1.13 [-1.57, -0.69] (paired, n=5)"
    )
    assert E.estimates(numbers) == {
        ("difference", 0): (11.3, 5.1, 17.6),
        ("N=1000 ACP−AVI =", 0): (-1.13, -1.57, -0.69),
    }
    assert E.estimates("no interval here (n=3)") == {}


@pytest.mark.parametrize(
    ("grid", "rank"),
    [
        ("paper", 3),
        ("paper-synpattern", 3),
        ("extended", 2),
        ("extended-fig5", 2),
        ("extendedx", 1),
        ("quick", 1),
        ("smoke", 0),
        ("my-grid", 1),
    ],
)
def test_grid_ranks(grid: str, rank: int) -> None:
    assert E.grid_rank(grid) == rank


@pytest.mark.parametrize(
    ("command", "rank", "protocol"),
    [
        ("snakemake --cores 1 --config grid=extended 'papers=[acp]'", 2, "grid extended"),
        ("snakemake --cores 1 --config grid=paper-synpattern", 3, "paper protocol"),
        ("snakemake --cores 2 --config grid=quick", 1, "grid quick"),
        ("a command that names no grid", 3, "paper protocol"),
    ],
)
def test_a_reference_ranks_by_the_grid_its_readme_names(
    tmp_path, command: str, rank: int, protocol: str
) -> None:
    folder = tmp_path / "ref-x"
    folder.mkdir()
    (folder / "README.md").write_text(f"| command | `{command}` |\n", encoding="utf-8")
    source = E.reference_source(folder)
    assert (source.rank, source.protocol, source.label) == (rank, protocol, "reference/ref-x")


def test_a_paper_reference_outranks_an_extended_one_that_outranks_quick(tmp_path) -> None:
    folder = tmp_path / "extended-ref"
    folder.mkdir()
    (folder / "README.md").write_text("command: snakemake --config grid=extended\n", encoding="utf-8")
    extended = E.reference_source(folder)
    head = E.headline(
        [E.Judged(QUICK, claim("reproduced", 5)), E.Judged(extended, claim("not reproduced", 5))]
    )
    assert head.chosen.source == extended and "grid extended vs grid quick" in head.disagreement
    head = E.headline([E.Judged(extended, claim("not reproduced", 5)), E.Judged(REF, claim("reproduced", 3))])
    assert head.chosen.source == REF


@pytest.mark.parametrize(
    ("numbers", "n"),
    [
        ("d = -1 [-2, -0.5] (paired, n=5); A 1.0 (n=5)", 5),
        ("d = -1 [-2, -0.5] (welch, n=5 vs 4)", 4),
        ("d = -1 [-2, -0.5] (vs constant, n=5 vs 1)", 5),
        ("d = -1 (no CI: n=1 vs constant)", 1),
        ("d = -1 (no CI: n=2 vs 3); e = 2 [1, 3] (paired, n=5)", 2),
        ("d = -2.0 (exact: two deterministic settings)", 0),
        ("rank 3 (N_min=5)", 0),
    ],
)
def test_seeds_of_a_claim(numbers: str, n: int) -> None:
    assert E.claim_n(Claim(CLAIM, "s", "l", "inconclusive", numbers, "r")) == n


def test_the_sources_column_lists_every_verdict_those_not_testing_last() -> None:
    (head,) = E.ladder(
        [(QUICK, [claim("reproduced", 2)]), (REF2, [claim("not tested")]), (REF, [claim("reproduced", 5)])]
    )
    assert head.sources_text() == (
        "reference/paper-synpattern: reproduced (n=5); this run (quick): reproduced (n=2); "
        "not tested: reference/paper-fig5-table4"
    )


def _reference(root: Path, stored_verdict: str) -> Path:
    """A published reference folder whose stored claims.csv says ``stored_verdict``."""
    folder = root / "reference" / "paper-synpattern"
    (folder / "tables").mkdir(parents=True)
    (folder / "tables" / "fig3a.csv").write_text("x\n1\n")
    write_claims([claim(stored_verdict, 5)], folder / "tables" / "claims.csv")
    return folder


@pytest.fixture
def fake_judge(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, Path]]:
    """The registered judge replaced: ACP's claims from a reference folder are re-judged as
    "reproduced" at n=5 (the stored claims.csv says otherwise); every call is recorded."""
    calls: list[tuple[str, Path]] = []

    def judge(paper: str, tables_dir: str | Path) -> list[Claim]:
        calls.append((paper, Path(tables_dir)))
        if paper != "acp":
            return []
        return [claim("reproduced", 5), claim("not tested", claim_id="fig3a-acp-beats-avi-n100")]

    monkeypatch.setattr(papers, "judge", judge)
    return calls


def _run_folder(root: Path, capsys: pytest.CaptureFixture[str], extra: list[Claim] | None = None) -> Path:
    """A smoke-like results folder: a stage claims table merged into tables/claims_run.csv."""
    tables = root / "results" / "tables"
    tables.mkdir(parents=True)
    stage = tables / "claims_synthetic.csv"
    write_claims(
        [
            claim("not reproduced", 2),
            claim("inconclusive", 1, claim_id="fig3a-acp-beats-avi-n100"),
            claim("inconclusive", 1, claim_id="ape-standard-fails-toybars"),
            *(extra or []),
        ],
        stage,
    )
    code, _, err = cli(
        [
            "claims-merge",
            "--claims",
            stage,
            "--out-csv",
            tables / "claims_run.csv",
            "--out-md",
            tables / "claims_run.md",
        ],
        capsys,
    )
    assert code == 0, err
    return root / "results"


def _evidence(results: Path, reference: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tables = results / "tables"
    code, _, err = cli(
        [
            "claims-evidence",
            "--claims",
            tables / "claims_run.csv",
            "--grid",
            "quick",
            "--reference",
            reference,
            "--papers",
            "acp",
            "ape",
            "--out-csv",
            tables / "claims.csv",
            "--out-md",
            tables / "claims.md",
            "--out-sources-csv",
            tables / "claims_sources.csv",
        ],
        capsys,
    )
    assert code == 0, err


def test_a_references_stored_verdict_is_ignored_for_its_rejudged_one(tmp_path, capsys, fake_judge) -> None:
    reference = _reference(tmp_path, stored_verdict="not reproduced")
    results = _run_folder(tmp_path, capsys)
    _evidence(results, reference, capsys)
    assert ("acp", reference / "tables") in fake_judge  # ACP registers paper-synpattern
    assert all(paper == "acp" for paper, _ in fake_judge)  # APE registers no reference of that name
    headline = {c.claim_id: c for c in read_claims(results / "tables" / "claims.csv")}
    assert headline[CLAIM].verdict == "reproduced"  # the judge's, not the stored "not reproduced"
    rows = list(csv.DictReader((results / "tables" / "claims_sources.csv").open(encoding="utf-8")))
    mine = {r["source"]: r for r in rows if r["claim_id"] == CLAIM}
    assert set(mine) == {"reference/paper-synpattern", "this run (quick)"}
    assert mine["reference/paper-synpattern"]["verdict"] == "reproduced"
    assert mine["reference/paper-synpattern"]["n"] == "5" and mine["this run (quick)"]["n"] == "2"
    assert list(rows[0]) == list(E.SOURCE_COLUMNS)


def test_the_headline_table_is_read_by_every_consumer(tmp_path, capsys, fake_judge) -> None:
    from noisyor_bench.commands.explain import explain
    from noisyor_bench.reporting import summary

    reference = _reference(tmp_path, stored_verdict="reproduced")
    results = _run_folder(tmp_path, capsys)
    _evidence(results, reference, capsys)
    tables = results / "tables"

    claims = read_claims(tables / "claims.csv")  # the extra columns are ignored
    assert [c.claim_id for c in claims] == [CLAIM, "fig3a-acp-beats-avi-n100", "ape-standard-fails-toybars"]
    frame = pd.read_csv(tables / "claims.csv", dtype=str, keep_default_na=False).set_index("claim_id")
    assert list(frame.columns[-4:]) == list(E.EVIDENCE_COLUMNS)
    assert frame.loc[CLAIM, "source"] == "reference/paper-synpattern"
    assert frame.loc[CLAIM, "agreement"] == E.CONFLICT
    assert "seeds n=5 vs n=2" in frame.loc[CLAIM, "disagreement"]
    assert (
        frame.loc["fig3a-acp-beats-avi-n100", "source"] == "this run (quick)"
    )  # the reference did not test it
    assert frame.loc["ape-standard-fails-toybars", "agreement"] == E.ONE_SOURCE
    assert "## Where each verdict comes from" in (tables / "claims.md").read_text(encoding="utf-8")

    console = summary.run_summary(results)
    assert "Sources disagree on 1 claim" in console
    assert (
        f"{CLAIM} [conflict]: reference/paper-synpattern: reproduced (n=5); this run (quick): not reproduced"
        in console
    )
    assert "verdicts from reference/paper-synpattern 1, this run (quick) 1" in console

    landing = summary.write_landing_answer(results, results / "claims" / "answer.rst", ["acp", "ape"])
    assert "Sources disagree on 1 claim" in landing.read_text(encoding="utf-8")

    page = results / "claims" / "acp_claims.html"
    code, _, err = cli(
        [
            "claims-pages",
            "--claims",
            tables / "claims.csv",
            "--results",
            results,
            "--papers",
            "acp",
            "--out-html",
            page,
        ],
        capsys,
    )
    assert code == 0, err
    html = page.read_text(encoding="utf-8")
    assert "from reference/paper-synpattern" in html and "Sources conflict:" in html

    lines = "\n".join(explain(results, CLAIM))
    assert "source      reference/paper-synpattern" in lines
    assert "claims_synthetic.csv" in lines  # the stage table, through claims_run.csv
    assert "also judged in this run (quick): not reproduced (n=2)" in lines


TIMED = "ape-close-to-vi-faster-toybars"
TIMES = "time VI 5.25 (n=3) s, APE 0.042 (n=3) s; log10(time VI / time APE) +2.10 = 125x"


def timed_claim(timing: str = TIMES) -> Claim:
    numbers = (
        "gap 0.3 [0.2, 0.4] (paired, n=3); speed: time VI / time APE judged above 100x (figures in timing)"
    )
    return Claim(TIMED, "APE is 100x faster", "Table 1", "reproduced", numbers, "the rule", timing=timing)


def test_write_evidence_keeps_the_times_out_of_claims_csv(tmp_path) -> None:
    headlines = E.ladder(
        [(QUICK, [claim("reproduced", 2), timed_claim()]), (REF, [timed_claim("time VI 9 s, APE 0.07 s")])]
    )
    tables = tmp_path / "tables"
    tables.mkdir()
    E.write_evidence(headlines, tables / "claims.csv", tables / "claims.md", tables / "claims_sources.csv")
    frame = pd.read_csv(tables / "claims.csv", dtype=str, keep_default_na=False)
    assert list(frame.columns) == [*E.HEADLINE_CLAIM_COLUMNS, *E.EVIDENCE_COLUMNS]
    assert "timing" not in frame.columns
    assert not any("s, APE" in v for v in frame.to_numpy().ravel())  # no time in any column
    sources = pd.read_csv(tables / "claims_sources.csv", dtype=str, keep_default_na=False)
    assert (
        list(sources.columns) == list(E.SOURCE_COLUMNS) and not sources["numbers"].str.contains(" s, ").any()
    )
    # beside it: one row per headline claim with times, from the headline's source
    timing = pd.read_csv(tables / "claims_timing.csv", dtype=str, keep_default_na=False)
    assert list(timing.columns) == list(E.TIMING_COLUMNS)
    assert timing.to_dict("records") == [
        {"claim_id": TIMED, "source": "reference/paper-synpattern", "timing": "time VI 9 s, APE 0.07 s"}
    ]
    md = (tables / "claims.md").read_text(encoding="utf-8")
    assert "(figures in timing); timing: time VI 9 s, APE 0.07 s" in md
    # two runs whose times differ write the same claims.csv; only claims_timing.csv differs
    other = E.ladder([(QUICK, [claim("reproduced", 2), timed_claim()]), (REF, [timed_claim("time VI 30 s")])])
    E.write_evidence(
        other, tmp_path / "b.csv", None, tmp_path / "b_sources.csv", timing_csv=tmp_path / "t.csv"
    )
    assert (tmp_path / "b.csv").read_bytes() == (tables / "claims.csv").read_bytes()
    assert (tmp_path / "b_sources.csv").read_bytes() == (tables / "claims_sources.csv").read_bytes()
    assert "time VI 30 s" in (tmp_path / "t.csv").read_text(encoding="utf-8")
    assert not (tmp_path / "b_timing.csv").exists()  # timing_csv given: written there only
    # no claim with times: the table is there, with its header only
    E.write_evidence(
        E.ladder([(QUICK, [claim("reproduced", 2)])]), tmp_path / "c.csv", None, tmp_path / "cs.csv"
    )
    assert (tmp_path / "c_timing.csv").read_text(encoding="utf-8") == "claim_id,source,timing\n"


def test_the_times_reach_people_beside_the_headline_table(tmp_path, capsys, fake_judge) -> None:
    from noisyor_bench.commands.explain import explain
    from noisyor_bench.reporting import summary

    reference = _reference(tmp_path, stored_verdict="reproduced")
    results = _run_folder(tmp_path, capsys, extra=[timed_claim()])
    _evidence(results, reference, capsys)  # no --out-timing: claims_timing.csv beside --out-csv
    tables = results / "tables"
    assert "timing" not in (tables / "claims.csv").read_text(encoding="utf-8").splitlines()[0].split(",")
    assert (tables / "claims_timing.csv.prov.json").is_file()  # recorded like every output
    assert summary.read_claims(tables / "claims.csv").set_index("claim_id").loc[TIMED, "timing"] == TIMES
    lines = explain(results, TIMED)
    assert any(line.startswith("timing      time VI 5.25 (n=3) s") for line in lines), lines
    assert not any("qualifier" in line and "timing" in line for line in lines)
    assert not any(line.startswith("timing") for line in explain(results, CLAIM))
    page = results / "claims" / "ape_claims.html"
    args = ["claims-pages", "--claims", tables / "claims.csv", "--results", results]
    code, _, err = cli([*args, "--papers", "ape", "--out-html", page], capsys)
    assert code == 0, err
    assert "figures in timing); timing: time VI 5.25 (n=3) s" in page.read_text(encoding="utf-8")


def test_without_sources_nothing_is_listed() -> None:
    frame = pd.DataFrame({"claim_id": [CLAIM], "verdict": ["reproduced"]})
    assert E.disagreement_lines(frame) == []


@pytest.mark.slow
def test_the_smoke_dag_plans_the_evidence_step(tmp_path: Path) -> None:
    plan = smoke_dry_run(tmp_path, print_shell=True)
    assert "rule claims_evidence:" in plan and "rule claims_merge:" in plan
    assert f"--out-csv {tmp_path}/tables/claims_run.csv" in plan
    assert f"--out-timing {tmp_path}/tables/claims_timing.csv" in plan  # the times beside claims.csv
    # the reference folders as arguments (their tables are the step's inputs)
    assert "--reference reference/paper-synpattern" in plan


def _dataset_judge(paper: str, tables_dir: str | Path) -> list[Claim]:
    """A judge that decides one claim per dataset row of the folder's fig5.csv (not tested where
    the dataset has no row): what a claim sees of a reference's tables."""
    if paper != "acp":
        return []
    present = set(pd.read_csv(Path(tables_dir) / "fig5.csv")["dataset"])
    return [
        claim("reproduced" if ds in present else "not tested", claim_id=f"fig5-acp-better-small-n-{ds}")
        for ds in ("syn-random-1", "syn-random-2")
    ]


def test_a_reference_made_on_another_draw_answers_nothing_for_that_dataset(tmp_path, caplog) -> None:
    """Today's config draws syn-random-1 with another seed than the reference recorded: the
    reference is judged without its syn-random-1 rows (a warning names them); its claim on
    syn-random-2, drawn the same way, stands."""
    datasets = {
        "syn-random-1": {"family": "random", "seed": 20200111036},
        "syn-random-2": {"family": "random", "seed": 20200112171},
    }
    tables = tmp_path / "reference" / "extended-fig5" / "tables"
    tables.mkdir(parents=True)
    pd.DataFrame(
        {
            "dataset": ["syn-random-1", "syn-random-2"],
            "expected_sparsity": [93.75, 71.79],
            "seed": [2020011100, 20200112171],
        }
    ).to_csv(tables / "datasets.csv", index=False)
    pd.DataFrame({"dataset": ["syn-random-1", "syn-random-2"], "nelbo": [11.0, 30.0]}).to_csv(
        tables / "fig5.csv", index=False
    )
    # a provenance record beside the table, as published: the judged copy must not carry it over
    # to the filtered table (whose sha256 it no longer matches)
    import hashlib
    import json

    digest = hashlib.sha256((tables / "fig5.csv").read_bytes()).hexdigest()
    (tables / "fig5.csv.prov.json").write_text(
        json.dumps({"outputs": [{"relpath": "fig5.csv", "sha256": digest}]})
    )

    def verifying_judge(paper: str, tables_dir: str | Path) -> list[Claim]:
        from noisyor_bench.infra.integrity import verify_recorded_file

        verify_recorded_file(Path(tables_dir) / "fig5.csv")  # as every consumer of a table does
        return _dataset_judge(paper, tables_dir)

    with caplog.at_level("WARNING"):
        judged = {
            c.claim_id: c.verdict
            for c in E.judge_reference(tables.parent, ["acp"], verifying_judge, datasets)
        }
    assert judged == {
        "fig5-acp-better-small-n-syn-random-1": "not tested",
        "fig5-acp-better-small-n-syn-random-2": "reproduced",
    }
    assert "drawn with seed 2020011100, today's config draws seed 20200111036" in caplog.text
    assert len(pd.read_csv(tables / "fig5.csv")) == 2  # the published folder itself is untouched
    # without today's datasets (a hand-run judge) the folder is judged as it is
    plain = {c.claim_id: c.verdict for c in E.judge_reference(tables.parent, ["acp"], _dataset_judge)}
    assert set(plain.values()) == {"reproduced"}


def test_a_reference_without_seeds_is_compared_on_its_expected_sparsity(tmp_path) -> None:
    """Tables written before the seed column: the printed expected sparsity against today's draw."""
    from noisyor_bench.reporting.reference_data import expected_sparsity_today, stale_datasets

    spec = {
        "family": "random",
        "D": 20,
        "K": 30,
        "alpha_theta": 1,
        "beta_theta": 5,
        "alpha_mu": 1,
        "beta_mu": 10,
        "s": 0.9,
        "seed": 7,
    }
    today = expected_sparsity_today("r", spec)
    pd.DataFrame({"dataset": ["r"], "expected_sparsity": [round(today, 2)]}).to_csv(
        tmp_path / "datasets.csv", index=False
    )
    assert stale_datasets(tmp_path, {"r": spec}) == {}
    pd.DataFrame({"dataset": ["r"], "expected_sparsity": [round(today + 0.02, 2)]}).to_csv(
        tmp_path / "datasets.csv", index=False
    )
    assert "today's config builds" in stale_datasets(tmp_path, {"r": spec})["r"]
    assert stale_datasets(tmp_path / "none", {"r": spec}) == {}


def test_the_headline_carries_the_generator_verdicts_of_the_source_that_ran_the_variants() -> None:
    """The paper-protocol reference decides the verdict but ran SYN-PATTERN only; the extended
    run judged the claim on the generator variants too: the headline keeps the reference's
    verdict and numbers and shows the variants' verdicts and sensitivity, named by source."""
    ext = E.reference_source("reference/extended-acp")
    per = "syn-pattern: reproduced (margin 0.20 nats); syn-pattern-leak2: inconclusive"
    varied = claim(
        "reproduced",
        5,
        generators=per,
        generator_sensitive="syn-pattern reproduced, syn-pattern-leak2 inconclusive",
    )
    (head,) = E.ladder([(ext, [varied]), (REF, [claim("reproduced", 10)])])
    assert head.chosen.source == REF and head.claim.numbers == claim("reproduced", 10).numbers
    assert head.claim.generators == f"(reference/extended-acp) {per}"
    assert head.claim.generator_sensitive.startswith("(reference/extended-acp) syn-pattern reproduced")
    assert head.row()["generators"] == head.claim.generators
    # without a source that ran the variants the columns stay empty
    (plain,) = E.ladder([(QUICK, [claim("reproduced", 2)]), (REF, [claim("reproduced", 10)])])
    assert plain.claim.generators == "" and plain.claim.generator_sensitive == ""
