"""``noisyor-bench paper-numbers``: every registered paper's published numbers as a flat table
(key path, value), read through the paper registry's one loader."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from conftest import cli

from noisyor_bench.commands import papernumbers
from noisyor_bench.experiments import papers


def test_flatten_names_every_leaf_by_its_key_path() -> None:
    nested = {"t": {"rows": [{"n": 1, "m": "avi"}, {"n": 2, "m": None}], "minutes": {}, "ok": True}}
    assert list(papernumbers.flatten(nested)) == [
        ("t.rows[0].n", 1),
        ("t.rows[0].m", "avi"),
        ("t.rows[1].n", 2),
        ("t.rows[1].m", None),
        ("t.minutes", {}),
        ("t.ok", True),
    ]
    assert [papernumbers.format_value(v) for v in (0.17, None, True, {}, [], "a b")] == [
        "0.17",
        "null",
        "true",
        "{}",
        "[]",
        "a b",
    ]


def test_choices_are_the_papers_with_numbers() -> None:
    expected = [p.id for p in papers.papers() if p.paper_numbers is not None]
    assert papernumbers.papers_with_numbers() == expected
    assert expected and "ape_noisyor" not in expected  # a study of ours: nothing published


@pytest.mark.parametrize("paper_id", papernumbers.papers_with_numbers())
def test_every_paper_prints_a_row_per_leaf(paper_id: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = cli(["paper-numbers", "--paper", paper_id], capsys)
    assert code == 0, err
    leaves = list(papernumbers.flatten(papers.paper_numbers(paper_id)))
    body = [line for line in out.splitlines() if line.startswith("| `")]
    assert len(body) == len(leaves) > 0
    assert out.startswith(f"# {papers.get(paper_id).name}: the published numbers")


def test_writes_csv_and_markdown(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    md, table = tmp_path / "acp.md", tmp_path / "acp.csv"
    code, out, err = cli(["paper-numbers", "--paper", "acp", "--out-md", md, "--out-csv", table], capsys)
    assert code == 0, err
    assert out == ""  # written, not printed
    with table.open(newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    numbers = papers.paper_numbers("acp")
    assert rows[0].keys() == {"key", "value"}
    assert len(rows) == len(list(papernumbers.flatten(numbers)))
    by_key = {r["key"]: r["value"] for r in rows}
    first = numbers["fig3a"]["rows"][0]
    assert by_key["fig3a.rows[0].method"] == first["method"]
    assert float(by_key["fig3a.rows[0].nelbo"]) == first["nelbo"]
    assert "| `fig3a.rows[0].method` | avi |" in md.read_text(encoding="utf-8")


def test_a_paper_without_numbers_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        cli(["paper-numbers", "--paper", "ape_noisyor"], capsys)
    assert exit_info.value.code == 2
    assert "invalid choice" in capsys.readouterr().err
