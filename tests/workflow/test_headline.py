"""The headline: "N of M claims reproduced" per paper, calibration rows apart, and the answer of a
results directory after a run of some papers only (each paper from its own last run, labelled).

Results folders are built by hand (stage claims CSVs, the merged ``tables/claims.csv``, the run
records): no training.
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

from noisyor_bench.reporting import answer, claims_pages, summary
from noisyor_bench.reporting.claims import Claim, write_claims


def _claim(claim_id: str, verdict: str, location: str = "Table 1, Section 5") -> Claim:
    return Claim(claim_id, f"statement of {claim_id}", location, verdict, "x = 1", "rule")


ACP = [_claim("fig5-a", "reproduced"), _claim("fig5-b", "not reproduced"), _claim("table4-c", "not tested")]
APE = [_claim("ape-a", "reproduced"), _claim("ape-b", "inconclusive")]
AVIPAM = [
    _claim("avipam-table1-order", "not reproduced"),
    _claim("avipam-pam-beats-lda", "reproduced"),
    _claim("avipam-calibration-avitm", "reproduced", "Table 1 (calibration rows); AVITM"),
]
STAGES = {"acp": "claims_synthetic", "ape": "claims_ape", "avipam": "claims_avipam"}


def _stage(results: Path, paper: str, claims: list[Claim]) -> None:
    tables = results / "tables"
    tables.mkdir(parents=True, exist_ok=True)
    write_claims(claims, tables / f"{STAGES[paper]}.csv", tables / f"{STAGES[paper]}.md")


def _merged(results: Path, claims: list[Claim]) -> None:
    write_claims(claims, results / "tables" / "claims.csv", results / "tables" / "claims.md")


# ------------------------------------------------------------------------------ calibration
def test_calibration_rows_are_not_counted_and_have_their_own_section(tmp_path: Path):
    results = tmp_path / "results"
    _stage(results, "avipam", AVIPAM)
    _merged(results, AVIPAM)
    items, run = summary.read_answers(results)
    (avipam,) = items
    # 2 claims of the paper; the calibration row (reproduced) is not among them
    assert avipam.total == 2 and avipam.counts["reproduced"] == 1
    assert (
        answer.counts_phrase(avipam)
        == "1 of 2 claims reproduced, 1 not reproduced, 0 inconclusive, 0 not tested"
    )
    lines = answer.answer_lines(items, run)
    assert lines[0].startswith("aviPAM: 1 of 2 claims reproduced, 1 not reproduced")
    assert lines[1] == answer.CALIBRATION_HEADING
    assert lines[2] == "  aviPAM calibration: 1 of 1 within tolerance (avipam-calibration-avitm)"
    markdown = answer.answer_markdown(items, run)
    assert "- aviPAM calibration: 1 of 1 within tolerance" in markdown
    assert answer.answer_title(items) == "noisyor-bench: aviPAM 1 of 2 claims reproduced"
    # the claims Markdown: N of M of the paper, the calibration row under its own heading
    md = (results / "tables" / "claims.md").read_text()
    assert "- aviPAM: 1 of 2 claims reproduced, 1 not reproduced, 0 inconclusive, 0 not tested; " in md
    assert "calibration: 1 of 1 within tolerance (not counted)" in md
    paper_part, calibration_part = md.split("### Calibration", 1)
    assert "avipam-calibration-avitm" not in paper_part.split("## aviPAM", 1)[1]
    assert "| avipam-calibration-avitm | reproduced |" in calibration_part
    # the claims page: the calibration row in a group of its own, after the paper's sections
    out = tmp_path / "avipam_claims.html"
    claims_pages.write_claims_pages(results / "tables" / "claims.csv", results, {"avipam": out})
    page = out.read_text()
    groups = [html.unescape(g) for g in re.findall(r'<details class="group"><summary>(.*?)</summary>', page)]
    assert groups[0].startswith("Table 1 -- 2 claims: ")
    assert groups[-1].startswith(f"{claims_pages.CALIBRATION_GROUP} -- 1 claim: 1 reproduced")
    assert "aviPAM: 1 of 2 claims reproduced" in html.unescape(page)


def test_no_papers_reproduced_wording_in_titles():
    from conftest import REPO

    places = [REPO / "Snakefile", REPO / "Makefile", REPO / "README.md"]
    places += [*(REPO / "docs" / "captions").glob("*.rst"), *(REPO / "rules").glob("*.smk")]
    places += list((REPO / "workflow").rglob("*.py"))
    offending = [p for p in places if re.search(r"papers? reproduced", p.read_text(encoding="utf-8"))]
    assert offending == []


# ------------------------------------------------------------------------------ scoped reruns
def _two_runs(results: Path) -> None:
    """A run of ACP and aviPAM, then one of APE alone into the same results directory."""
    _stage(results, "acp", ACP)
    _stage(results, "avipam", AVIPAM)
    _merged(results, ACP + AVIPAM)
    answer.write_run_record(results, 1000.0, 1600.0, 40, "quick", ["acp", "avipam"], "1111111111111111")
    _stage(results, "ape", APE)
    _merged(results, APE)  # the merged claims of the latest run: APE alone
    answer.write_run_record(results, 5000.0, 5120.0, 7, "quick", ["ape"], "2222222222222222")


def test_a_scoped_rerun_keeps_every_paper_each_labelled_with_its_run(tmp_path: Path):
    results = tmp_path / "results"
    _two_runs(results)
    record = json.loads((results / answer.RUN_RECORD).read_text())
    assert record["papers"] == ["ape"] and record["commit"] == "2222222222222222"  # the latest invocation
    assert {p: r["commit"] for p, r in record[answer.PAPER_RUNS].items()} == {
        "acp": "1111111111111111",
        "ape": "2222222222222222",
        "avipam": "1111111111111111",
    }
    items, run = summary.read_answers(results)
    assert [a.paper_id for a in items] == ["acp", "ape", "avipam"]
    assert run.papers == ("ape",)
    lines = answer.answer_lines(items, run)
    first = "[from the run of 1970-01-01T00:26:40+00:00 (grid quick, papers acp avipam, commit 111111111111)]"
    second = "[from the run of 1970-01-01T01:25:20+00:00 (grid quick, papers ape, commit 222222222222)]"
    assert (
        lines[0]
        == f"ACP: 1 of 3 claims reproduced, 1 not reproduced, 0 inconclusive, 1 not tested (grid quick) {first}"
    )
    assert lines[1].startswith("APE: 1 of 2 claims reproduced") and lines[1].endswith(second)
    assert lines[2].startswith("aviPAM: 1 of 2 claims reproduced") and lines[2].endswith(first)
    assert "  aviPAM calibration: 1 of 1 within tolerance (avipam-calibration-avitm)" in lines
    # the landing page and README's block carry the same labels
    landing = summary.write_landing_answer(results, results / "claims" / "answer.rst", ["ape"])
    assert landing.read_text().count("from the run of") == 3
    assert (
        (results / "claims" / "title.rst")
        .read_text()
        .startswith(
            "noisyor-bench: ACP 1 of 3 claims reproduced; APE 1 of 2 claims reproduced; aviPAM 1 of 2 claims reproduced\n"
        )
    )
    block = summary.verdicts_block(results)
    assert "**ACP**" in block and "**aviPAM**" in block and "Not in this run: APE on noisy-OR." in block


def test_one_run_of_every_paper_needs_no_labels(tmp_path: Path):
    results = tmp_path / "results"
    _stage(results, "acp", ACP)
    _stage(results, "ape", APE)
    _merged(results, ACP + APE)
    answer.write_run_record(results, 1000.0, 1600.0, 40, "quick", ["acp", "ape"], "1111111111111111")
    items, run = summary.read_answers(results)
    assert [a.paper_id for a in items] == ["acp", "ape"]
    assert not any("from the run" in line for line in answer.answer_lines(items, run))


def test_a_paper_of_the_latest_run_never_answers_from_older_files(tmp_path: Path):
    """APE was selected last and its claims are absent from the merged table: its older stage
    file is not read back as if it were this run's."""
    results = tmp_path / "results"
    _stage(results, "ape", APE)
    _stage(results, "acp", ACP)
    _merged(results, ACP)
    answer.write_run_record(results, 1000.0, 1600.0, 40, "quick", ["acp", "ape"], None)
    items, _ = summary.read_answers(results)
    assert [a.paper_id for a in items] == ["acp"]


def test_a_record_from_before_per_paper_records_stands_for_its_papers(tmp_path: Path):
    results = tmp_path / "results"
    _stage(results, "acp", ACP)
    _merged(results, ACP)
    legacy = {"start": "s", "end": "2026-11-26T10:18:10+00:00", "wall_seconds": 60.0, "jobs": 3}
    (results / "logs").mkdir(parents=True)
    (results / answer.RUN_RECORD).write_text(json.dumps({**legacy, "grid": "quick", "papers": ["acp"]}))
    answer.write_run_record(results, 5000.0, 5120.0, 7, "quick", ["ape"], None)
    runs = answer.paper_runs(results)
    assert runs["acp"].finished == "2026-11-26T10:18:10+00:00" and runs["acp"].papers == ("acp",)
    assert runs["ape"].papers == ("ape",)
