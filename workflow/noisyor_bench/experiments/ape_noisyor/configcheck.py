"""The APE-on-noisy-OR study's config checks (its registry entry's ``config_checks``): the seed
table of ``noisyor-bench check-config --explain seeds``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from noisyor_bench.experiments.config import grid_section


def seed_table(cfg: Mapping[str, Any]) -> list[tuple[str, list[int]]]:
    """``family encoder`` -> the seeds of its training (the section's ``seeds``); the baselines
    are deterministic per problem and run once."""
    section = grid_section(cfg, "ape_noisyor")
    seeds = [int(s) for s in section.get("seeds") or []]
    return [
        (f"{family} {encoder}", seeds)
        for family in section.get("families") or {}
        for encoder in section.get("encoders") or {}
    ]
