"""The ACP paper's claims re-judged from a folder of tables (``Paper.judge`` of ACP).

The same claims, from the same CSVs, as a run's two claims steps: ``acp-claims-synthetic``
(:func:`~noisyor_bench.reporting.acp.synthetic_claims.synthetic_claims`) and ``acp-claims-text``
(:func:`~noisyor_bench.reporting.acp.text_claims.text_claims`).  What those steps take from the
grid comes from the folder: an experiment runs when its table is there (:data:`SYNTHETIC_TABLES`),
one whose table is absent is "not tested" naming the folder, and Table 5's ``best_topics`` is
the table's own column.
"""

from __future__ import annotations

from pathlib import Path

from noisyor_bench.reporting.acp.synthetic_claims import synthetic_claims
from noisyor_bench.reporting.acp.text_claims import text_claims
from noisyor_bench.reporting.acp.topics_table import DEFAULT_BEST_TOPICS
from noisyor_bench.reporting.claims import Claim
from noisyor_bench.reporting.judge import absent, not_tested, present
from noisyor_bench.reporting.tables import read_tables

SYNTHETIC_TABLES: dict[str, tuple[str, ...]] = {
    "fig3a": ("fig3a.csv", "fig3b.csv"),
    "fig4": ("fig4_recovery.csv",),
    "suppfig2": ("suppfig2_recovery.csv",),
    "fig5": ("fig5.csv",),
    "table4": ("table4.csv",),
}
"""Each synthetic experiment's tables, in the order the workflow hands them to the claims step;
the first one says the experiment ran (Fig. 3b's table is made from Fig. 3a's runs)."""

SHARED_TABLES = ("ablation_acp_sg.csv", "search_draws.csv")
"""Tables the synthetic claims read beside the experiments' (the ACP-SG mechanism claims; the
searches behind the cells, for ``protocol_deviation``), each where the folder has it."""

TEXT_TABLES = ("table5.csv", "classification.csv", "tsne.csv")
"""The real-corpus tables the text claims read."""


def judge(tables_dir: str | Path) -> list[Claim]:
    """Every ACP claim judged from the tables in ``tables_dir`` (synthetic, then real-corpus);
    none when the folder holds no ACP claim table."""
    folder = Path(tables_dir)
    runs = [e for e, names in SYNTHETIC_TABLES.items() if (folder / names[0]).is_file()]
    text_paths = present(folder, TEXT_TABLES)
    if not runs and not text_paths:
        return []
    paths = present(folder, [n for e in runs for n in SYNTHETIC_TABLES[e]] + list(SHARED_TABLES))
    not_run = {e: absent(folder, names[0]) for e, names in SYNTHETIC_TABLES.items() if e not in runs}
    claims = synthetic_claims(read_tables(paths), runs, not_run)
    if not text_paths:
        return claims + not_tested(text_claims({}), absent(folder, " or ".join(TEXT_TABLES)))
    text = read_tables(text_paths)
    return claims + text_claims(text, best_topics=best_topics(text))


def best_topics(tables: dict) -> int:
    """The topics Table 5 compared rank by rank (its ``best_topics`` column; the paper's 4 without)."""
    table5 = tables.get("table5")
    if table5 is None or "best_topics" not in table5 or table5["best_topics"].dropna().empty:
        return DEFAULT_BEST_TOPICS
    return int(table5["best_topics"].dropna().iloc[0])


__all__ = ["SHARED_TABLES", "SYNTHETIC_TABLES", "TEXT_TABLES", "best_topics", "judge"]
