"""The ACP paper numbers (noisyor_bench.reporting.acp.paper): the blocks, and agreement with the paper text."""

from __future__ import annotations

from pathlib import Path

import pytest

from noisyor_bench.reporting.acp.paper import paper_numbers

REPO = Path(__file__).resolve().parents[2]


PAPER_TXT = REPO.parent / "shared" / "paper" / "acp_noisyor_paper.txt"


def test_paper_numbers_blocks():
    p = paper_numbers()
    assert [(r["n_train"], r["method"]) for r in p["fig3a"]["rows"]][:2] == [(1000, "avi"), (1000, "acp")]
    assert {r["n_train"]: r["lb-cdi"] for r in p["table4"]["rows"]} == {
        40000: None,
        20000: None,
        10000: None,
        5000: None,
        1000: 158.8,
    }
    assert p["table4"]["missing"]["lb-cdi"]["reason"] == "computational complexity"
    assert p["fig5"]["numbers"] is None and "no numbers" in p["fig5"]["note"]
    for block in ("fig3a", "table4", "table5", "table2", "table3", "fig4", "supp_fig1", "supp_fig2"):
        assert p[block]["source"]["lines"]
    p["fig3a"]["rows"].clear()  # callers get a copy
    assert paper_numbers()["fig3a"]["rows"]


@pytest.mark.skipif(not PAPER_TXT.exists(), reason="paper text not available")
def test_paper_numbers_match_paper_text():
    """Independent re-reading of the paper text (Fig. 3a and Table 4 rows, Table 5 PMIs)."""
    lines = PAPER_TXT.read_text(encoding="utf-8").splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith("N_{train}\tMethod\tNELBO"))
    text_rows = []
    for ln in lines[start + 1 : start + 10]:
        n, method, *nums = ln.split("\t")
        text_rows.append((int(n) if n.strip().isdigit() else 0, method.lower(), *map(float, nums)))
    p = paper_numbers()
    assert text_rows == [
        (r["n_train"], r["method"], r["nelbo"], r["f1"], r["em"]) for r in p["fig3a"]["rows"]
    ]
    start = next(i for i, ln in enumerate(lines) if ln.startswith("N_{train}\tAVI\tSVI\tLB-CDI\tACP"))
    for ln, row in zip(lines[start + 1 : start + 6], p["table4"]["rows"]):
        n, *cells = ln.split("\t")
        assert int(n.rstrip("k")) * 1000 == row["n_train"]
        assert [None if c == "-" else float(c) for c in cells] == [
            row[m] for m in ("avi", "svi", "lb-cdi", "acp")
        ]
    pmi_line = next(ln for ln in lines if ln.startswith("PMI: 3.82"))
    pmis = [float(x.split(": ")[1]) for x in pmi_line.split("\t")]
    t5 = {(r["n_train"], r["method"]): r for r in p["table5"]["rows"]}
    assert pmis == t5[(5241, "acp")]["topic_pmi"] + t5[(5241, "avi")]["topic_pmi"]
