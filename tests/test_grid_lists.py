"""Code, help texts and comments name the grids through config/config.yaml (a key of its
``grids``), never by a hand-written list: such a list went stale when grids were added (three of
eight named)."""

from __future__ import annotations

import re
from pathlib import Path

from conftest import REPO

# "smoke|quick", "smoke/quick", "smoke, quick", "smoke or quick": an enumeration of grid names
GRID_LIST = re.compile(r"\bsmoke\s*(?:[|/,]|\bor\b|\band\b)\s*quick\b")


def grid_lists(text: str) -> list[str]:
    """The lines of ``text`` that enumerate grid names."""
    return [line.strip() for line in text.splitlines() if GRID_LIST.search(line)]


def _sources() -> list[Path]:
    files = [REPO / "Snakefile", REPO / "Makefile", *sorted((REPO / "rules").glob("*.smk"))]
    files += sorted((REPO / "workflow" / "noisyor_bench").rglob("*.py"))
    files += sorted((REPO / "workflow" / "noisyor_bench").rglob("*.yaml"))
    files += sorted((REPO / "profiles").rglob("*.yaml"))
    return files


def test_no_hand_written_list_of_grids() -> None:
    found = [
        f"{path.relative_to(REPO)}: {line}"
        for path in _sources()
        for line in grid_lists(path.read_text(encoding="utf-8"))
    ]
    assert not found, "name the grids through config.yaml's `grids`, not a list:\n" + "\n".join(found)


def test_a_list_of_grids_is_found() -> None:
    text = "# --config grid=smoke|quick|paper\nhelp='smoke, quick or paper'\n--grid smoke or quick\ngrid: quick\n"
    assert grid_lists(text) == [
        "# --config grid=smoke|quick|paper",
        "help='smoke, quick or paper'",
        "--grid smoke or quick",
    ]
