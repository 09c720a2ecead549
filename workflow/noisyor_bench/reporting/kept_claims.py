"""The headline claims of the papers a scoped run did not select, kept as they are.

A run of some papers (``--config 'papers=[ape]'``) judges those papers' claims only. The headline
tables it rewrites (``claims.csv``, ``claims_sources.csv``, ``claims_timing.csv``) are every
paper's answer, which the README, the results page and the report read: so the other papers'
rows are taken over from the tables as they are (each paper labelled with its own last run,
:func:`noisyor_bench.reporting.answer.paper_runs`), instead of shrinking the answer to the
selected papers. Snakemake leaves the rule's outputs in place while its job runs (``update()``,
``rules/common.smk``); each table is checked against its provenance record before it is read.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import pandas as pd

from noisyor_bench.experiments import papers
from noisyor_bench.infra.errors import DataError
from noisyor_bench.infra.integrity import verify_recorded_file
from noisyor_bench.reporting.claims import Claim, read_claims


@dataclass(frozen=True)
class Kept:
    """Earlier headline claims of unselected papers: the claims (their times included) and their
    rows of the three headline tables, as written."""

    claims: tuple[Claim, ...]
    rows: pd.DataFrame
    sources: pd.DataFrame
    timing: pd.DataFrame


def _rows(path: Path, ids: set[str]) -> pd.DataFrame:
    """The rows of ``ids`` of an earlier table (empty when the table does not exist)."""
    if not path.is_file():
        return pd.DataFrame(columns=["claim_id"])
    verify_recorded_file(path)  # a hand-edited table is refused, not carried on
    try:
        frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    except (OSError, ValueError) as err:
        raise DataError(f"{path}: cannot read it ({err})") from None
    if "claim_id" not in frame.columns:
        raise DataError(f"{path}: no 'claim_id' column (columns: {list(frame.columns)})")
    return frame[frame["claim_id"].isin(ids)].reset_index(drop=True)


def read_kept(
    claims_csv: str | Path, sources_csv: str | Path, timing_csv: str | Path, selected: Sequence[str]
) -> Kept | None:
    """The earlier headline rows of every registered paper not in ``selected``; None when there is
    no earlier ``claims_csv`` or it holds no such paper."""
    path = Path(claims_csv)
    if not path.is_file():
        return None
    claims = [c for c in read_claims(path) if c.paper not in selected and c.paper in papers.ids()]
    if not claims:
        return None
    ids = {c.claim_id for c in claims}
    timing = _rows(Path(timing_csv), ids)
    times = dict(zip(timing["claim_id"], timing.get("timing", pd.Series(dtype=str)), strict=False))
    claims = [replace(c, timing=times.get(c.claim_id, c.timing)) for c in claims]
    return Kept(tuple(claims), _rows(path, ids), _rows(Path(sources_csv), ids), timing)


def in_registry_order(frame: pd.DataFrame, paper_of: dict[str, str]) -> pd.DataFrame:
    """``frame``'s rows ordered by the paper of their ``claim_id`` (registry order), each paper's
    rows in their own order."""
    rank = {p: i for i, p in enumerate(papers.ids())}
    keys = [rank.get(paper_of.get(i, ""), len(rank)) for i in frame["claim_id"]]
    order = sorted(range(len(keys)), key=keys.__getitem__)  # stable
    return frame.iloc[order].reset_index(drop=True)
