"""The APE paper's reported numbers: the loader of ``paper_numbers.yaml`` (package data)."""

from __future__ import annotations

import copy
from functools import lru_cache
from importlib import resources
from typing import Any

import yaml


@lru_cache(maxsize=1)
def _cached() -> dict[str, Any]:
    text = (
        resources.files("noisyor_bench.reporting.ape")
        .joinpath("paper_numbers.yaml")
        .read_text(encoding="utf-8")
    )
    return yaml.safe_load(text)


def paper_numbers() -> dict[str, Any]:
    """The paper's numbers (a fresh copy)."""
    return copy.deepcopy(_cached())


def table1_row(dataset: str, method: str) -> dict[str, float]:
    """The paper's Table 1 entry of ``method`` on ``dataset`` ({} where the paper has none)."""
    return dict(_cached()["table1"].get(dataset, {}).get(method) or {})


def claim_location(key: str) -> str:
    return str(_cached()["claims"][key])
