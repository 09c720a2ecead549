"""The answer per paper (console, report landing page, README), the per-paper claims
pages, the table views' width and height, provenance on every page, the captions free of
docutils errors, and the compact console.

The layout is checked twice: statically here (every table's narrowest possible width from its
longest unbreakable words, the rows a page shows before any toggle is opened), and in headless
Chromium where it is installed (Debian: ``apt-get install chromium``; skipped elsewhere).
"""

from __future__ import annotations

import html
import io
import json
import re
from collections import Counter
from pathlib import Path

import jinja2
import pandas as pd
import pytest
from conftest import REPO
from docutils.core import publish_parts

from noisyor_bench.reporting import answer, claims_pages, console, htmltables, provenance_view, summary

PAPERS = ("acp", "ape", "avipam", "ape_noisyor")


# ------------------------------------------------------------------------------ toy results
def _claims() -> pd.DataFrame:
    """Claims of three papers and the study beyond them, with the qualifier columns."""
    rows = []
    verdicts = {
        "fig5": ["reproduced", "reproduced", "not reproduced", "inconclusive", "not tested"] * 6,
        "ape": ["reproduced", "inconclusive", "not tested"],
        "avipam": ["not reproduced", "reproduced"],
        "ape-noisyor": ["inconclusive"],
    }
    for prefix, vs in verdicts.items():
        for i, v in enumerate(vs):
            rows.append(
                {
                    "claim_id": f"{prefix}-claim-{i}",
                    "statement": f"statement {i} " + "word " * 30,
                    "location": "Figure 5, Section 4.4"
                    if prefix == "fig5" and i % 2
                    else "Table 4; Section 5",
                    "verdict": v,
                    "numbers": "ACP-AVI = -1.2 ± 0.4; " * 8,
                    "rule": "RULE-TEXT " + "x " * 300,
                    "evidence": "3/3 runs converged",
                    "protocol_deviation": "seeds 2/5" if i % 3 == 0 else "",
                    "unconverged": "1 run" if i % 4 == 0 else "",
                    "weak_learning": "",
                    "bound_gap": "",
                    "low_power": "",
                }
            )
    return pd.DataFrame(rows)


def _results(tmp_path: Path) -> Path:
    results = tmp_path / "results"
    (results / "tables").mkdir(parents=True)
    _claims().to_csv(results / "tables" / "claims.csv", index=False)
    (results / ".noisyor-bench-results.json").write_text(
        json.dumps(
            {
                "grid": "quick",
                "papers": list(PAPERS),
                "config_hash": "abcdef0123456789",
                "updated": {"commit": "0123456789abcdef0123"},
            }
        )
    )
    pd.DataFrame(
        {
            "rule": ["train_cell", "train_cell", "search_chunk", "ape_train", "avipam_run", "claims_merge"],
            "job": ["a", "b", "c", "d", "e", "f"],
            "s": [300.0, 240.0, 60.0, 90.0, 45.0, 1000.0],
            # CPU time where measured (a job that waited for a core: wall 240 s, CPU 60 s)
            "cpu_time_s": [300.0, 60.0, None, 90.0, 45.0, 1000.0],
        }
    ).to_csv(results / "tables" / "runtime_jobs.csv", index=False)
    return results


# ------------------------------------------------------------------------------ the answer
def test_answer_counts_each_paper_apart_and_the_study_after(tmp_path: Path):
    items, run = summary.read_answers(_results(tmp_path))
    assert [a.paper_id for a in items] == ["acp", "ape", "avipam", "ape_noisyor"]  # the study last
    acp = items[0]
    # 6 repeats of (2 reproduced, 1 not reproduced, 1 inconclusive, 1 not tested), counted by hand
    assert acp.counts == Counter({"reproduced": 12, "not reproduced": 6, "inconclusive": 6, "not tested": 6})
    assert acp.qualifiers == Counter({"protocol_deviation": 10, "unconverged": 8})  # i % 3, i % 4 of 0..29
    # compute per paper: its cost model's compute rules only (claims_merge is nobody's)
    # job b counts its 60 s of CPU, not its 240 s of wall; job c, without a CPU time, its wall
    assert run.job_seconds == {"acp": 420.0, "ape": 90.0, "avipam": 45.0, "ape_noisyor": 0.0}
    line = answer.answer_line(acp, run, "results/claims/acp_claims.html")
    assert line == (
        "ACP: 12 of 30 claims reproduced, 6 not reproduced, 6 inconclusive, 6 not tested "
        "(grid quick, 7 min of job CPU time) -> results/claims/acp_claims.html"
    )
    lines = answer.answer_lines(items, run)
    assert [x.split(":")[0] for x in lines[:3]] == ["ACP", "APE", "aviPAM"]
    assert lines[3].startswith("Beyond the papers") and lines[4].startswith(
        "  APE on noisy-OR: 0 of 1 claim reproduced"
    )
    assert lines[-1] == "Run: grid quick; papers acp ape avipam ape_noisyor; commit 0123456789ab"


def test_claims_rejudged_later_name_the_commit_that_judged_them(tmp_path: Path):
    """The run line names the run's commit and, when claims.csv was re-judged by other code
    (its provenance record), that commit too -- not the run's alone."""
    results = _results(tmp_path)
    prov = {"environment": {"code": {"commit": "fedcba9876543210", "dirty": True}}}
    (results / "tables" / "claims.csv.prov.json").write_text(json.dumps(prov))
    line = answer.run_line(answer.run_info(results))
    assert "commit 0123456789ab" in line
    assert line.endswith("claims judged at commit fedcba987654 with uncommitted changes")
    prov["environment"]["code"] = {"commit": "0123456789abcdef0123", "dirty": False}
    (results / "tables" / "claims.csv.prov.json").write_text(json.dumps(prov))
    assert "claims judged" not in answer.run_line(answer.run_info(results))


def test_a_run_continued_by_later_code_names_the_commit_that_made_its_results(tmp_path: Path):
    """Results made by one commit and partly re-run by another: the run line names both."""
    results = _results(tmp_path)
    record = json.loads((results / ".noisyor-bench-results.json").read_text())
    assert "results first made" not in answer.run_line(answer.run_info(results))  # no "created" yet
    record["created"] = {"commit": "aaaabbbbccccdddd"}
    (results / ".noisyor-bench-results.json").write_text(json.dumps(record))
    line = answer.run_line(answer.run_info(results))
    assert "commit 0123456789ab; results first made at commit aaaabbbbcccc" in line
    record["created"] = {"commit": "0123456789abcdef0123"}  # the same commit: said once
    (results / ".noisyor-bench-results.json").write_text(json.dumps(record))
    assert "first made" not in answer.run_line(answer.run_info(results))


def test_an_older_verdict_is_counted_not_dropped():
    frame = pd.DataFrame({"claim_id": ["fig5-a", "fig5-b"], "verdict": ["budget-limited", "reproduced"]})
    (acp,) = answer.answers(frame)
    assert answer.ordered_counts(acp.counts) == [
        ("reproduced", 1),
        ("not reproduced", 0),
        ("inconclusive", 0),
        ("not tested", 0),
        ("budget-limited", 1),
    ]


def test_the_run_record_gives_the_wall_time(tmp_path: Path):
    results = _results(tmp_path)
    answer.write_run_record(results, 1000.0, 1000.0 + 14 * 60, 322, "quick", ["acp"])
    run = answer.run_info(results)
    assert run.wall_seconds == 840.0 and run.jobs == 322
    assert "last invocation 14 min wall, 322 jobs, finished 1970-01-01T00:30:40+00:00" in answer.run_line(run)


def test_the_same_line_in_the_console_the_readme_and_the_landing_page(tmp_path: Path):
    items, run = summary.read_answers(_results(tmp_path))
    text = answer.answer_lines(items, run)
    markdown = answer.answer_markdown(items, run, lambda p: f"docs/results.md#claims-{p}")
    rst = answer.answer_rst(items, run, lambda p: f"{p}_claims.html")
    counts = answer.counts_phrase(items[0])
    assert counts in text[0] and counts in markdown and counts in rst
    # the landing page's RST renders without a docutils message, each line linking its claims page
    links = "\n".join(f".. _{p}_claims.html: javascript:void(0)" for p in PAPERS)
    messages = io.StringIO()
    body = publish_parts(
        rst + "\n\n" + links, writer="html", settings_overrides={"warning_stream": messages}
    )["body"]
    assert messages.getvalue() == ""
    assert body.count("<li>") == 4 and 'href="javascript:void(0)">acp_claims.html</a>' in body


# ------------------------------------------------------------------------------ claims pages
def test_claims_page_groups_by_section_with_rules_behind_toggles(tmp_path: Path):
    results = _results(tmp_path)
    outs = {p: tmp_path / f"{p}_claims.html" for p in PAPERS}
    claims_pages.write_claims_pages(results / "tables" / "claims.csv", results, outs)
    page = outs["acp"].read_text()
    groups = re.findall(r'<details class="group"><summary>(.*?)</summary>', page)
    # 30 ACP claims: odd i in "Figure 5", even i in "Table 4" (its location up to the ';')
    assert [html.unescape(g).split(" -- ")[0] for g in groups] == ["Table 4", "Figure 5"]
    assert html.unescape(groups[1]).startswith("Figure 5 -- 15 claims: ")
    assert page.count('<details class="rule"><summary>rule</summary>') == 30
    assert "RULE-TEXT" in page and "ape-claim" not in page  # only this paper's claims
    assert "Provenance:" in page and "noisyor-bench provenance" in page
    assert "APE on noisy-OR" in outs["ape_noisyor"].read_text()


# ------------------------------------------------------------------------------ layout, static
def _visible(page: str) -> str:
    """The page as shown before any toggle is opened: every <details> reduced to its summary."""
    return re.sub(r"(<details[^>]*>\s*<summary>.*?</summary>).*?</details>", r"\1", page, flags=re.S)


def _min_width_px(table: str) -> int:
    """A lower bound of a table's laid-out width: per column its longest unbreakable word at
    ~7 px per character (12-px sans serif), plus cell padding and border."""
    widest: dict[int, int] = {}
    for row in re.findall(r"<tr[^>]*>(.*?)</tr>", table, flags=re.S):
        for i, cell in enumerate(re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", row, flags=re.S)):
            text = html.unescape(re.sub(r"<[^>]+>", " ", cell)).replace("\u200b", " ")
            longest = max((len(w) for w in text.split()), default=0)
            widest[i] = max(widest.get(i, 0), longest)
    return sum(7 * n + 9 for n in widest.values())


def _wide_table() -> pd.DataFrame:
    """fig3a's shape: three metrics with the paper's numbers, run counts, a settings tail."""
    n = 12
    frame = pd.DataFrame(
        {
            "artifact": ["fig3a"] * n,
            "n_train": [20, 100, 1000] * 4,
            "method": ["acp", "avi", "svi", "lb-cdi"] * 3,
            "method_label": ["ACP", "AVI", "SVI", "LB-CDI"] * 3,
            "status": ["measured"] * (n - 2)
            + ["not run in this grid (grids.quick.acp.experiments.fig3a.runs)"] * 2,
            "n_seeds": [3] * n,
            "seeds": ["0;1;2"] * n,
            "n_runs": [3] * n,
            "n_converged": [2] * n,
            "note": ["run_dir /tmp/a/very/long/path/without/spaces/runs/fig3a/syn-pattern/acp/n20"] * n,
        }
    )
    for m in ("nelbo", "f1", "em", "exact_nll", "exact_gap"):
        frame[f"paper_{m}"] = 14.4
        for s, v in (("mean", 14.0212), ("std", 0.1), ("n", 3), ("ci95", 0.2484), ("values", "0:1;1:2;2:3")):
            frame[f"{m}_{s}"] = v
    for setting in ("threads", "gibbs_iterations", "avi_max_epochs", "avi_lr", "mean_field_passes"):
        frame[setting] = 1000
    return frame


def _long_table() -> pd.DataFrame:
    """table5's shape: one row per (method, n_train, topic): 800 rows."""
    return pd.DataFrame(
        [
            {"method": m, "n_train": n, "topic": t, "words": "w1 w2 w3 w4 w5 w6 w7 w8 w9 w10", "pmi": 0.1 * t}
            for m in ("avi", "acp")
            for n in (2000, 5241)
            for t in range(200)
        ]
    )


def _pages(tmp_path: Path) -> dict[str, Path]:
    results = _results(tmp_path)
    pages = {}
    for name, frame in (("wide", _wide_table()), ("long", _long_table()), ("claims", _claims())):
        csv = results / "tables" / f"{name}.csv"
        frame.to_csv(csv, index=False)
        pages[name] = htmltables.csv_to_html(csv, csv.with_suffix(".html"))
    outs = {p: results / "claims" / f"{p}_claims.html" for p in PAPERS}
    outs["acp"].parent.mkdir()
    claims_pages.write_claims_pages(results / "tables" / "claims.csv", results, outs)
    pages.update({f"{p}_claims": path for p, path in outs.items()})
    return pages


def test_every_table_fits_a_1000_px_pane_and_pages_stay_short(tmp_path: Path):
    pages = _pages(tmp_path)
    for name, path in pages.items():
        page = path.read_text()
        visible = _visible(page)
        for table in re.findall(r"<table.*?</table>", visible, flags=re.S):
            assert _min_width_px(table) <= 980, name
        # at ~22 px a row: rows shown before a click, well under 8,000 px
        assert 22 * len(re.findall(r"<tr", visible)) < 8000, name
        assert "Provenance:" in page and "noisyor-bench provenance" in page, name  # one click away
    wide = pages["wide"].read_text()
    assert 'nelbo (ours)</th>\n<th class="paper">nelbo (paper)' in wide  # the paper's number beside ours
    assert "settings" in wide and "gibbs iterations 1000" in wide  # the settings tail: one column
    long = pages["long"].read_text()
    summaries = re.findall(r'<details class="rows"><summary>(.*?)</summary>', long)
    assert len(summaries) == 4 and html.unescape(summaries[0]) == "method = avi, n_train = 2000 (200 rows)"


def test_paper_columns_pair_with_their_metric_by_name():
    stems = ["npmi_external", "npmi_internal", "train_minutes", "ll_paper", "time_s", "agree_vi"]
    cols = ["paper_npmi", "paper_minutes", "paper_ll", "paper_ll_pm", "paper_time_s", "paper_agree"]
    assert htmltables.paper_partners(stems, cols) == {
        "time_s": "paper_time_s",
        "npmi_external": "paper_npmi",
        "ll_paper": "paper_ll",
        "agree_vi": "paper_agree",
        "train_minutes": "paper_minutes",
    }


def test_a_table_page_reads_like_the_papers_table_identity_then_ours_beside_the_paper():
    """Table 4's CSV has status and notes before the metric; its page shows N_train, the method,
    ours and the paper's number first, the notes after them (the paper's column was
    off-screen at 1,000 px)."""
    frame = pd.DataFrame(
        {
            "artifact": ["table4", "table4"],
            "n_train": [1000, 5000],
            "method_label": ["AVI", "ACP"],
            "status": ["measured", "measured"],
            "note": ["a long note about the cell", ""],
            "nelbo_mean": [156.1, 145.8],
            "nelbo_ci95": [0.3, 0.2],
            "nelbo_n": [3, 3],
            "paper_nelbo": [159.2, 151.2],
        }
    )
    header, rows, _ = htmltables.display_frame(htmltables.view_columns(frame))
    assert header[:4] == ["n_train", "method_label", "nelbo (ours)", "nelbo (paper)"]
    assert header.index("note") > header.index("nelbo (paper)")
    assert rows[1][2].startswith("145.8") and rows[1][3] == "151.2"


# ------------------------------------------------------------------------------ layout, Chromium
def test_chromium_lays_the_pages_out_within_the_pane(tmp_path: Path):
    from report_layout import chromium, measure

    if chromium() is None:
        pytest.skip("no Chromium installed (Debian: apt-get install chromium)")
    for name, path in _pages(tmp_path).items():
        width, height, table = measure(path, 1000)
        assert width <= 1000 and table <= 1000, (name, width, table)
        if name.endswith("_claims"):
            assert height < 8000, (name, height)


# ------------------------------------------------------------------------------ provenance
def test_provenance_block_names_commit_config_and_run_folders(tmp_path: Path):
    results = _results(tmp_path)
    table = results / "tables" / "fig5.csv"
    table.write_text("a\n1\n")
    record = {
        "environment": {"code": {"commit": "feedbeefcafe0123", "dirty": True}},
        "time": {"end": "2026-11-25T22:45:32+00:00"},
        "inputs": [
            {"relpath": "../runs/fig5/syn-random-1/acp/n10/seed0/metrics.json"},
            {"relpath": "../runs/fig5/syn-random-1/acp/n10/seed0/curve.csv"},
            {"relpath": "../runs/fig5/syn-random-1/acp/n10/seed1/metrics.json"},
            {"relpath": "../baselines/syn-random-1.json"},
        ],
    }
    (results / "tables" / "fig5.csv.prov.json").write_text(json.dumps(record))
    info = provenance_view.provenance_summary(table)
    assert info["run_folders"] == [
        "runs/fig5/syn-random-1/acp/n10/seed0",
        "runs/fig5/syn-random-1/acp/n10/seed1",
    ]
    block = html.unescape(provenance_view.provenance_html(table))
    assert "commit feedbeefcafe (uncommitted changes); config abcdef0123456789 (grid quick)" in block
    assert "from 4 input file(s); run folders: runs/fig5/syn-random-1/acp/n10/seed0, " in block
    assert f"noisyor-bench provenance {table.as_posix()}" in block


# ------------------------------------------------------------------------------ captions
class _Anything:
    """A stand-in for the report's ``snakemake`` object: any attribute or item is a word."""

    def __init__(self, config: dict) -> None:
        self.config = config

    def __getattr__(self, name: str) -> _Anything | str:
        return _Word(name)


class _Word(str):
    def __getattr__(self, name: str) -> _Word:
        return _Word(f"{self}.{name}")

    def __getitem__(self, key: object) -> _Word:  # type: ignore[override]
        return _Word(f"{self}[{key}]")


@pytest.mark.parametrize("caption", sorted(p.name for p in (REPO / "docs" / "captions").glob("*.rst")))
def test_every_caption_renders_without_a_docutils_message(caption: str, tmp_path: Path):
    """What `make report` enforces on the built report (no ERROR/WARNING in its output), checked on
    each caption alone: Jinja with a stand-in for the job, then docutils as Snakemake calls it."""
    results = tmp_path / "results"
    (results / "claims").mkdir(parents=True)
    (results / "tables").mkdir()
    pd.DataFrame({"claim_id": ["fig5-a"], "verdict": ["reproduced"]}).to_csv(
        results / "tables" / "claims.csv"
    )
    summary.write_landing_answer(results, results / "claims" / "answer.rst", [])  # and its title
    config = {"grid": "quick", "papers": ["acp", "ape"], "results_dir": str(results)}
    text = (REPO / "docs" / "captions" / caption).read_text(encoding="utf-8")
    rendered = (
        jinja2.Environment(trim_blocks=True, lstrip_blocks=True)
        .from_string(text)
        .render(snakemake=_Anything(config), categories={}, files=[])
    )
    messages = io.StringIO()
    publish_parts(rendered, writer="html", settings_overrides={"warning_stream": messages})
    assert messages.getvalue() == "", messages.getvalue()


# ------------------------------------------------------------------------------ console
SNAKEMAKE_OUTPUT = """Building DAG of jobs...
Job stats:
job            count
-----------  -------
train_cell         2
ape_train          1
claims_merge       1
all                1
total              5

[Wed Nov 25 20:22:56 2026]
rule train_cell:
    output: results/runs/x
    log: results/logs/train_cell/x.log
    jobid: 3
    wildcards: experiment=fig5, dataset=syn-random-1
    resources: tmpdir=/tmp
Shell command: noisyor-bench acp-train-cell ...
[Wed Nov 25 20:22:57 2026]
Finished jobid: 3 (Rule: train_cell)
1 of 5 steps (20%) done
Select jobs to execute...

rule ape_train:
    log: {log}
    jobid: 4
[Wed Nov 25 20:22:58 2026]
Error in rule ape_train:
    message: None
    jobid: 4
    log: {log} (check log file(s) for error details)
    shell:
        noisyor-bench ape-train ...

Exiting because a job execution failed. Look below for error messages
"""


def test_compact_console_one_line_per_job_and_failures_in_full(tmp_path: Path):
    log = tmp_path / "ape_train.log"
    log.write_text("line 1\nTraceback (most recent call last):\nValueError: bad theta\n")
    shown: list[str] = []
    ticks = iter(range(0, 1000, 10))
    owners = {"train_cell": "ACP", "ape_train": "APE"}
    con = console.Console(owners, shown.append, clock=lambda: float(next(ticks)))
    full = io.StringIO()
    console.follow(io.StringIO(SNAKEMAKE_OUTPUT.format(log=log)).readlines(), full, con)
    assert full.getvalue() == SNAKEMAKE_OUTPUT.format(log=log)  # everything kept in the log file
    assert shown[0] == "Plan: 4 jobs (ACP 2, APE 1, shared 1)"
    assert shown[1].startswith(
        "[1/5 20%] ACP 1/2: train_cell [experiment=fig5, dataset=syn-random-1] done in 0:10; elapsed 0:20, ETA 1:20"
    )
    error = shown.index("Error in rule ape_train:")
    assert "    shell:" in shown[error:]  # Snakemake's error block in full
    assert "    ValueError: bad theta" in shown  # then the tail of the job's log
    assert shown[-1].startswith("Exiting because a job execution failed")
    assert con.failures == 2


def test_every_rule_has_its_paper():
    owners = console.rule_papers(REPO)
    assert console.paper_of_rule("train_cell", owners) == "ACP"
    assert console.paper_of_rule("ape_train", owners) == "APE"
    assert console.paper_of_rule("ape_noisyor_train", owners) == "APE on noisy-OR (beyond the papers)"
    assert console.paper_of_rule("avipam_run", owners) == "aviPAM"
    assert console.paper_of_rule("claims_merge", owners) == console.SHARED
