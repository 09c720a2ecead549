"""APE on noisy-OR: its claims re-judged from a folder of tables (``Paper.judge``): the claims
``ape-noisyor-report`` writes beside its table
(:func:`~noisyor_bench.reporting.ape_noisyor.claims.ape_noisyor_claims`), from ``ape_noisyor.csv``."""

from __future__ import annotations

from pathlib import Path

from noisyor_bench.reporting.ape_noisyor.claims import ape_noisyor_claims
from noisyor_bench.reporting.claims import Claim
from noisyor_bench.reporting.tables import read_table

TABLE = "ape_noisyor.csv"


def judge(tables_dir: str | Path) -> list[Claim]:
    """Every claim of the study judged from ``tables_dir``; none without its table."""
    path = Path(tables_dir) / TABLE
    return ape_noisyor_claims(read_table(path)) if path.is_file() else []


__all__ = ["TABLE", "judge"]
