"""APE's config checks (its registry entry's ``config_checks``): the seed table of
``noisyor-bench check-config --explain seeds``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from noisyor_bench.experiments.config import grid_section


def seed_table(cfg: Mapping[str, Any]) -> list[tuple[str, list[int]]]:
    """``dataset encoder`` -> training seeds (the section's ``seeds``; VI and the evaluation
    follow them), and ``dataset nuts`` -> the seeds with a NUTS run (``nuts.seeds``, else all)."""
    section = grid_section(cfg, "ape")
    seeds = [int(s) for s in section.get("seeds") or []]
    rows: list[tuple[str, list[int]]] = []
    for name, dataset in (section.get("datasets") or {}).items():
        rows += [(f"{name} {encoder}", seeds) for encoder in dataset.get("encoders") or []]
        rows.append((f"{name} vi", seeds))
        nuts = dataset.get("nuts") or {}
        rows.append((f"{name} nuts", [int(s) for s in nuts.get("seeds", seeds)]))
    return rows
