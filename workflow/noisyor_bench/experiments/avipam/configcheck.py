"""aviPAM's config checks (its registry entry's ``config_checks``): the seed table of
``noisyor-bench check-config --explain seeds``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def seed_table(cfg: Mapping[str, Any]) -> list[tuple[str, list[int]]]:
    """``experiment method`` -> the seeds its runs use (a table's ``method_seeds`` over the
    section's ``seeds``; the collapse study's own ``seeds``), one row per corpus where they differ."""
    from noisyor_bench.experiments.avipam.cells import all_cells, section

    by_method: dict[tuple[str, str], dict[str, list[int]]] = {}
    for cell in all_cells(section(cfg)):
        by_corpus = by_method.setdefault((cell.experiment, cell.method), {})
        by_corpus.setdefault(cell.corpus, []).append(int(cell.seed))
    rows: list[tuple[str, list[int]]] = []
    for (experiment, method), by_corpus in by_method.items():
        distinct = {tuple(v) for v in by_corpus.values()}
        if len(distinct) == 1:
            rows.append((f"{experiment} {method}", list(next(iter(distinct)))))
        else:
            rows += [(f"{experiment} {method} {corpus}", v) for corpus, v in by_corpus.items()]
    return rows
