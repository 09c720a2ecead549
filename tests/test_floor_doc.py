"""The floor benchmark's generated block of docs/performance.md is well-formed and is exactly what
``benchmarks/floor.py --write-doc`` renders from the recorded ``benchmarks/results/floor.json``
(no timing here: the numbers are checked for consistency, not re-measured)."""

from __future__ import annotations

import importlib.util
import json
import statistics
import sys

import pytest
from conftest import REPO

_spec = importlib.util.spec_from_file_location("floor_table", REPO / "benchmarks" / "floor_table.py")
floor_table = importlib.util.module_from_spec(_spec)
sys.modules["floor_table"] = floor_table  # its dataclass looks its module up there
_spec.loader.exec_module(floor_table)

PAGE = REPO / "docs" / "performance.md"
RESULT = REPO / "benchmarks" / "results" / "floor.json"
UNITS = {
    "noisy-OR step (AVI)",
    "noisy-OR step (ACP)",
    "Fig. 5 cell epoch (AVI)",
    "Fig. 5 cell epoch (ACP)",
    "aviPAM 4-PAM epoch",
    "APE training step (model-aware)",
    "APE evaluation (IS)",
    "4-PAM Gibbs sweep",
}


@pytest.fixture(scope="module")
def result() -> dict:
    return json.loads(RESULT.read_text())


def test_the_doc_block_is_the_rendering_of_the_recorded_results(result):
    block = floor_table.extract_block(PAGE.read_text())
    assert block == floor_table.render_block(result), (
        "docs/performance.md's floor block is stale: run python benchmarks/floor.py --write-doc docs/performance.md"
    )
    assert (RESULT.parent / "floor.md").read_text() == block + "\n"


def test_the_results_cover_every_heavy_unit_and_are_consistent(result):
    assert {row["unit"] for row in result["rows"]} == UNITS
    assert result["cpu"] and result["cpu"] != "unknown" and result["threads"] == 1
    for row in result["rows"]:
        assert row["product_ms"] > 0 and row["floor_ms"] > 0
        assert len(row["product_runs_ms"]) == len(row["floor_runs_ms"]) == result["repeats"]
        ratios = [p / f for p, f in zip(row["product_runs_ms"], row["floor_runs_ms"], strict=True)]
        assert row["ratio"] == pytest.approx(statistics.median(ratios), rel=1e-9)
        assert row["ratio_range"] == pytest.approx([min(ratios), max(ratios)], rel=1e-9)
        assert row["product_ms"] == pytest.approx(statistics.median(row["product_runs_ms"]), rel=1e-9)
    steps = [row for row in result["rows"] if row["unit"].startswith("noisy-OR step")]
    assert steps and all(row["target"] == 5.0 and "syn-random-7" in row["size"] for row in steps)
    assert result["checks"] and all(c["max_abs_diff"] <= c["tol"] for c in result["checks"])


def test_the_block_table_has_one_row_per_unit_with_every_column(result):
    lines = floor_table.extract_block(PAGE.read_text()).splitlines()
    header = "| " + " | ".join(floor_table.COLUMNS) + " |"
    start = lines.index(header)
    rows = [line for line in lines[start + 2 :] if line.startswith("| ")]
    assert len(rows) == len(result["rows"])
    for line, row in zip(rows, result["rows"], strict=True):
        cells = [c.strip() for c in line.strip("|").split("|")]
        assert len(cells) == len(floor_table.COLUMNS)
        assert cells[0] == row["unit"] and cells[5] == result["cpu"] and cells[6] == "1"
        assert float(cells[4].split()[0]) == pytest.approx(row["ratio"], abs=0.005)


def test_replacing_the_block_keeps_the_rest_and_needs_exactly_one(result):
    page = f"intro\n{floor_table.BEGIN}\nold\n{floor_table.END}\noutro\n"
    new = floor_table.replace_block(page, floor_table.render_block(result))
    assert new.startswith("intro\n") and new.endswith("\noutro\n") and "old" not in new
    with pytest.raises(ValueError, match="exactly one"):
        floor_table.replace_block("no block here", "x")
