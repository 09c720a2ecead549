"""The APE paper's claims re-judged from a folder of tables (``Paper.judge`` of APE): the same
claims as a run's ``ape-claims`` step (:func:`~noisyor_bench.reporting.ape.claims.ape_claims`),
per dataset Table 1 has rows for, from ``ape_table1.csv`` and ``ape_figure1.csv``."""

from __future__ import annotations

from pathlib import Path

from noisyor_bench.reporting.ape.claims import ape_claims
from noisyor_bench.reporting.claims import Claim
from noisyor_bench.reporting.tables import read_table

TABLE = "ape_table1.csv"
FIGURE1 = "ape_figure1.csv"


def judge(tables_dir: str | Path) -> list[Claim]:
    """Every APE claim judged from ``tables_dir``; none without its Table 1 (the claims are per
    dataset of that table).  Without Figure 1's table the warm-start claim has no data."""
    folder = Path(tables_dir)
    if not (folder / TABLE).is_file():
        return []
    figure1 = read_table(folder / FIGURE1) if (folder / FIGURE1).is_file() else None
    return ape_claims(read_table(folder / TABLE), figure1)


__all__ = ["FIGURE1", "TABLE", "judge"]
