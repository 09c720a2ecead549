"""The APE paper's reported numbers: the loader of ``paper_numbers.yaml`` (package data)."""

from __future__ import annotations

from typing import Any

from noisyor_bench.experiments import papers

PAPER = "ape"


def paper_numbers() -> dict[str, Any]:
    """The paper's numbers (a fresh copy; the one loader: :func:`noisyor_bench.experiments.papers.paper_numbers`)."""
    return papers.paper_numbers(PAPER)


def table1_row(dataset: str, method: str) -> dict[str, float]:
    """The paper's Table 1 entry of ``method`` on ``dataset`` ({} where the paper has none)."""
    return dict(paper_numbers()["table1"].get(dataset, {}).get(method) or {})


def claim_location(key: str) -> str:
    return str(paper_numbers()["claims"][key])
