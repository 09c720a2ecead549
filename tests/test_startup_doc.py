"""The start-up benchmark's generated block of docs/performance.md is exactly what
``benchmarks/startup.py --write-doc`` renders from the recorded ``benchmarks/results/startup.json``,
and that file covers every command the rules call (no timing here: nothing is re-measured)."""

from __future__ import annotations

import importlib.util
import json
import statistics

import pytest
from conftest import REPO

_spec = importlib.util.spec_from_file_location("startup", REPO / "benchmarks" / "startup.py")
startup = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(startup)

PAGE = REPO / "docs" / "performance.md"
RESULT = REPO / "benchmarks" / "results" / "startup.json"


@pytest.fixture(scope="module")
def result() -> dict:
    return json.loads(RESULT.read_text())


def test_the_doc_block_is_the_rendering_of_the_recorded_results(result):
    block = startup.extract_block(PAGE.read_text())
    assert block == startup.render_block(result), (
        "docs/performance.md's start-up block is stale: run make bench-startup"
    )
    assert (RESULT.parent / "startup.md").read_text() == block + "\n\n" + startup.command_table(result) + "\n"


def test_the_results_cover_the_rules_commands_and_are_consistent(result):
    assert [r["command"] for r in result["rows"]] == startup.rule_commands()
    assert result["cpu"] and result["cpu"] != "unknown"
    for row in result["rows"]:
        assert len(row["runs_s"]) == result["repeats"]
        assert row["cpu_s"] == pytest.approx(statistics.median(row["runs_s"]), rel=1e-9)
        assert row["family"] == startup.family(row["command"], row["loads"])
    assert result["families"] == startup.summarise(result["rows"])


def test_replacing_the_block_keeps_the_rest_and_needs_exactly_one(result):
    page = f"intro\n{startup.BEGIN}\nold\n{startup.END}\noutro\n"
    new = startup.replace_block(page, startup.render_block(result))
    assert new.startswith("intro\n") and new.endswith("\noutro\n") and "old" not in new
    with pytest.raises(ValueError, match="exactly one"):
        startup.replace_block("no block here", "x")
