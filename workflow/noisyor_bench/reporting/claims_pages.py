"""One claims page per paper for the report: the paper's answer line, then its claims grouped by
where the paper makes them (Figure 5, Table 4, ...), each group collapsed behind a summary with
its verdict counts, each claim's rule text behind its own toggle.

Why not the merged claims table: a reader asks "what holds of *this* paper", the merged view
repeats a ~500-character rule in every row (once 33,000 px tall) and mixes the papers.
The page is derived from ``tables/claims.csv`` alone (whichever columns it has: the qualifier
columns when present), so it needs no change when a paper adds claims. A headline table
(:mod:`noisyor_bench.reporting.evidence`) names each verdict's source under it and, where the
sources disagree, every source's verdict and the reason under the numbers.
"""

from __future__ import annotations

import html
import re
from collections import Counter
from pathlib import Path

import pandas as pd

from noisyor_bench.reporting.answer import (
    QUALIFIER_COLUMNS,
    PaperAnswer,
    RunInfo,
    answer_line,
    answers,
    calibration_line,
    ordered_counts,
    run_line,
)
from noisyor_bench.reporting.claims import numbers_cell, verdict_label
from noisyor_bench.reporting.evidence import CONFLICT, DISAGREEMENTS
from noisyor_bench.reporting.htmltables import VERDICT_CLASSES, page

PAGE_STYLE = """
table.claims { table-layout: fixed; width: 100%; max-width: 980px; }
table.claims td, table.claims th { overflow-wrap: anywhere; }
table.claims col.claim { width: 42%; } table.claims col.verdict { width: 13%; }
table.claims col.qual { width: 17%; } table.claims col.numbers { width: 28%; }
details.group { margin: 6px 0; max-width: 980px; }
details.group > summary { cursor: pointer; font-weight: 600; padding: 3px 0; }
details.rule > summary { cursor: pointer; color: #0969da; font-size: 12px; }
details.rule p { font-size: 12px; color: #57606a; margin: 2px 0; }
span.tag { display: inline-block; background: #eaeef2; border-radius: 8px; padding: 0 6px;
           margin: 1px 2px; font-size: 11px; }
span.id { font-family: monospace; font-size: 11px; color: #57606a; }
p.sources { font-size: 12px; background: #fff8c5; margin: 4px 0; padding: 2px 4px; }
"""


CALIBRATION_GROUP = "Calibration (a check of our metric, not a claim of the paper; not counted)"
"""The group of a paper's calibration rows on its claims page (Paper.calibration_prefixes)."""


def section_of(location: object) -> str:
    """The paper artifact or section a claim belongs to: its location up to the first comma or
    semicolon (``"Figure 5, Section 4.4 ..."`` -> ``"Figure 5"``)."""
    text = "" if location is None or (isinstance(location, float) and location != location) else str(location)
    head = re.split(r"[,;]", text, maxsplit=1)[0].strip()
    return head[:60] or "other"


def _text(value: object) -> str:
    if value is None or (isinstance(value, float) and value != value):
        return ""
    return str(value).strip()


def _tags(row: dict[str, object]) -> str:
    tags = []
    for column in QUALIFIER_COLUMNS:
        value = _text(row.get(column))
        if value:
            label = column.replace("_", " ")
            tags.append(f'<span class="tag" title="{html.escape(value)}">{html.escape(label)}</span>')
    evidence = _text(row.get("evidence"))
    if evidence:
        tags.append(f'<span class="tag">{html.escape(evidence)}</span>')
    return " ".join(tags)


def _row(row: dict[str, object]) -> str:
    verdict = _text(row.get("verdict")) or "no verdict"
    budget = _text(row.get("budget"))
    shown = verdict_label(row) if budget else verdict
    why = f' title="{html.escape(budget)}"' if budget else ""
    rule = _text(row.get("rule"))
    location = _text(row.get("location"))
    toggle = (
        '<details class="rule"><summary>rule</summary>'
        + (f"<p>{html.escape(rule)}</p>" if rule else "")
        + (f"<p>Where: {html.escape(location)}</p>" if location else "")
        + "</details>"
    )
    return (
        "<tr>"
        f'<td class="text"><span class="id">{html.escape(_text(row.get("claim_id")))}</span><br>'
        f"{html.escape(_text(row.get('statement')))}</td>"
        f'<td class="text {VERDICT_CLASSES.get(verdict, "")}"{why}>{html.escape(shown)}{_source(row)}</td>'
        f'<td class="text">{_tags(row)}</td>'
        f'<td class="text">{html.escape(_numbers(row))}{_sources(row)}{toggle}</td>'
        "</tr>"
    )


def _numbers(row: dict[str, object]) -> str:
    """The numbers, a speed claim's wall-clock times after them (``timing``: read from
    ``claims_timing.csv`` beside a headline table, reporting.summary.read_claims)."""
    return numbers_cell({"numbers": _text(row.get("numbers")), "timing": _text(row.get("timing"))})


def _source(row: dict[str, object]) -> str:
    """Under the verdict, the source it comes from (a headline table's ``source``, reporting.evidence)."""
    source = _text(row.get("source"))
    return f'<br><span class="id">from {html.escape(source)}</span>' if source else ""


def _sources(row: dict[str, object]) -> str:
    """Under the numbers, where the sources disagree: every source's verdict and the reason."""
    agreement = _text(row.get("agreement"))
    if agreement not in DISAGREEMENTS:
        return ""
    reason = _text(row.get("disagreement"))
    return (
        f'<p class="sources"><b>Sources {"conflict" if agreement == CONFLICT else "differ"}:</b> '
        f"{html.escape(_text(row.get('sources')))}"
        + (f"<br>Why: {html.escape(reason)}" if reason else "")
        + "</p>"
    )


def _counts(verdicts: pd.Series) -> str:
    counts = Counter(verdicts.fillna("no verdict").astype(str).str.strip())
    return ", ".join(f"{n} {v}" for v, n in ordered_counts(counts) if n)


def claims_page(frame: pd.DataFrame, answer: PaperAnswer, run: RunInfo, provenance: str = "") -> str:
    """The HTML claims page of one paper: ``frame`` holds that paper's rows of ``claims.csv``; its
    calibration rows (checks of our metric, not claims of the paper) in a group of their own, last."""
    from noisyor_bench.experiments.papers import is_calibration_claim

    section = frame["location"].map(section_of) if "location" in frame else pd.Series("claims", frame.index)
    calibration = frame["claim_id"].fillna("").astype(str).map(is_calibration_claim).astype(bool)
    section = section.where(~calibration, CALIBRATION_GROUP)
    groups = [g for g in dict.fromkeys(section) if g != CALIBRATION_GROUP]
    groups += [CALIBRATION_GROUP] if calibration.any() else []
    body = [
        f"<h1>{html.escape(answer.name)}: claims and verdicts</h1>",
        f'<p class="note">{html.escape(answer_line(answer, run))}</p>',
        *(
            [f'<p class="note">{html.escape(calibration_line(answer))} -- not counted</p>']
            if answer.calibration
            else []
        ),
        f'<p class="note">{html.escape(run_line(run))}. Each group opens on a click; each claim\'s '
        "decision rule is behind its 'rule' toggle. Qualifiers (tags) never change a verdict.</p>",
    ]
    for group in groups:
        rows = frame[section == group]
        table = [
            '<table class="claims"><colgroup><col class="claim"><col class="verdict"><col class="qual">'
            '<col class="numbers"></colgroup>',
            "<thead><tr><th>claim</th><th>verdict</th><th>qualifiers</th><th>numbers</th></tr></thead><tbody>",
            *(_row(r) for r in rows.to_dict("records")),
            "</tbody></table>",
        ]
        summary = f"{group} -- {len(rows)} claim{'s' if len(rows) != 1 else ''}: {_counts(rows['verdict'])}"
        body.append(
            f'<details class="group"><summary>{html.escape(summary)}</summary>{"".join(table)}</details>'
        )
    if provenance:
        body.append(provenance)
    text = page(f"{answer.name} claims", "\n".join(body))
    return text.replace("</style>", f"{PAGE_STYLE}</style>", 1)


def write_claims_pages(
    claims_csv: str | Path, results_dir: str | Path, outputs: dict[str, Path]
) -> list[Path]:
    """Write one page per paper id in ``outputs`` (paper id -> HTML path); a paper without claims
    in this run gets a page that says so (the report lists every selected paper)."""
    from noisyor_bench.infra.io import write_text_atomic
    from noisyor_bench.reporting.answer import run_info
    from noisyor_bench.reporting.provenance_view import provenance_html
    from noisyor_bench.reporting.summary import read_claims

    frame = read_claims(claims_csv)
    items = {a.paper_id: a for a in answers(frame)}
    run = run_info(results_dir)
    from noisyor_bench.experiments import papers

    owner = frame["claim_id"].fillna("").astype(str).map(papers.paper_of_claim)
    prov = provenance_html(claims_csv, results_dir)
    written = []
    for paper_id, out in outputs.items():
        entry = papers.get(paper_id)
        answer = items.get(paper_id) or PaperAnswer(paper_id, entry.name, entry.beyond_the_papers, Counter())
        write_text_atomic(out, claims_page(frame[owner == paper_id], answer, run, prov))
        written.append(Path(out))
    return written
