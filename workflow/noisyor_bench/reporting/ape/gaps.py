"""What APE's Table 1 can compare: gaps to VI on identical combinations, and where
absolute paper-style values come from.

The paper-style metric carries the document constant (multinomial coefficient + the authors'
prior normaliser, :mod:`noisyor_bench.models.topics.paper_metric`), a property of the evaluated
documents alone; it cancels in a difference between two methods scored on the same
combinations.  So methods are compared by their **gap to VI** per seed (method - VI, paper-style
and clean IS; NUTS against VI on NUTS's combinations), with the paper's gaps beside them, and the
absolute values are shown with the document constant and VI's spread over random document sets
(:mod:`noisyor_bench.experiments.ape.docsets`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from noisyor_bench.experiments.rundir import read_metrics_record
from noisyor_bench.reporting.ape.paper import table1_row

GAP_METRICS = ("gap_paper", "gap_is", "ll_paper_words", "doc_constant")
# the method each row is measured against: VI on the same combinations
YARDSTICK = {"nuts": "vi-nuts-subset"}
NO_GAP = ("vi", "vi-nuts-subset")
DOCSET_COLUMNS = (
    "docsets_n",
    "docsets_vi_min",
    "docsets_vi_median",
    "docsets_vi_max",
    "docsets_is_min",
    "docsets_is_max",
    "docsets_constant_min",
    "docsets_constant_max",
    "docsets_slope",
    "docsets_intercept",
    "docsets_residual_sd",
    "docsets_paper_vi_below",
)


NUTS_CHAIN_COLUMNS = (
    "nuts_documents",
    "nuts_step_size",
    "nuts_acceptance",
    "nuts_divergences",
    "nuts_ess_median",
    "nuts_ess_min",
    "nuts_rhat_max",
    "nuts_moved_fraction",
    "nuts_sd_ratio",
    "nuts_stuck",
    "nuts_half_shift",  # paper-style LL/word, second half of the samples - first half
)


def nuts_chain_columns(subset: Mapping[str, Any]) -> dict[str, float]:
    """:data:`NUTS_CHAIN_COLUMNS` of one evaluation's ``nuts_subset`` (NaN where a run from before
    chain diagnostics recorded none); ``nuts_stuck`` 1.0 when the chain barely moved
    (:func:`noisyor_bench.inference.topics.ape_nuts.chain_diagnostics`)."""
    chain = subset.get("chain") or {}
    diag = chain.get("diagnostics") or {}

    def num(v: Any) -> float:
        return math.nan if v is None else float(v)

    halves = subset.get("ll_paper_halves") or [None, None]
    shift = math.nan if None in halves else float(halves[1]) - float(halves[0])

    return {
        "nuts_documents": num(subset.get("documents")),
        "nuts_step_size": num(chain.get("step_size")),
        "nuts_acceptance": num(chain.get("acceptance")),
        "nuts_divergences": num(chain.get("divergences")),
        "nuts_ess_median": num(diag.get("ess_median")),
        "nuts_ess_min": num(diag.get("ess_min")),
        "nuts_rhat_max": num(diag.get("rhat_max")),
        "nuts_moved_fraction": num(diag.get("moved_fraction")),
        "nuts_sd_ratio": num(diag.get("sd_ratio_median")),
        "nuts_stuck": num(diag.get("stuck")),
        "nuts_half_shift": shift,
    }


def add_gaps(rows: pd.DataFrame) -> pd.DataFrame:
    """``gap_paper`` and ``gap_is``: per (dataset, seed), the row's ``ll_paper`` / ``ll_is`` minus
    its yardstick's (VI on the same combinations); NaN for the yardsticks themselves."""
    out = rows.copy()
    index = {(r.dataset, r.seed, r.method): r for r in rows.itertuples()}
    for metric, column in (("ll_paper", "gap_paper"), ("ll_is", "gap_is")):
        values = []
        for r in rows.itertuples():
            ref = index.get((r.dataset, r.seed, YARDSTICK.get(r.method, "vi")))
            ok = r.method not in NO_GAP and ref is not None
            values.append(float(getattr(r, metric)) - float(getattr(ref, metric)) if ok else math.nan)
        out[column] = values
    return out


def paper_gap(dataset: str, method: str) -> float:
    """The paper's Table 1 value of ``method`` minus its VI's (NaN where the paper has none)."""
    if method in NO_GAP:
        return math.nan
    own, vi = table1_row(dataset, method).get("ll"), table1_row(dataset, "vi").get("ll")
    return math.nan if own is None or vi is None else float(own) - float(vi)


def document_set_rows(eval_files: Sequence[str | Path]) -> pd.DataFrame:
    """One row per (dataset, seed, random document set) of the evaluations' ``document_sets``."""
    rows: list[dict[str, Any]] = []
    for path in eval_files:
        data = read_metrics_record(Path(path))
        block = data.get("document_sets") or {}
        for i, s in enumerate(block.get("sets") or []):
            rows.append(
                {
                    "dataset": data["dataset"],
                    "seed": int(data["seed"]),
                    "set": i,
                    **{k: s.get(k) for k in ("ll_paper", "ll_paper_words", "ll_is", "doc_constant")},
                }
            )
    return pd.DataFrame(
        rows, columns=["dataset", "seed", "set", "ll_paper", "ll_paper_words", "ll_is", "doc_constant"]
    )


def document_set_summary(docsets: pd.DataFrame | None, dataset: str) -> dict[str, float]:
    """:data:`DOCSET_COLUMNS` of one dataset: VI's paper-style and clean values over the random
    sets, their document constants, the least-squares line paper-style = slope x constant +
    intercept and its residual sd, and the fraction of sets whose VI value lies below the paper's."""
    out = {c: math.nan for c in DOCSET_COLUMNS}
    out["docsets_n"] = 0
    if docsets is None or docsets.empty:
        return out
    d = docsets[docsets["dataset"] == dataset].dropna(subset=["ll_paper", "doc_constant"])
    if d.empty:
        return out
    paper, constant = d["ll_paper"].to_numpy(float), d["doc_constant"].to_numpy(float)
    out.update(
        docsets_n=int(len(d)),
        docsets_vi_min=float(paper.min()),
        docsets_vi_median=float(np.median(paper)),
        docsets_vi_max=float(paper.max()),
        docsets_is_min=float(d["ll_is"].min()),
        docsets_is_max=float(d["ll_is"].max()),
        docsets_constant_min=float(constant.min()),
        docsets_constant_max=float(constant.max()),
    )
    if len(d) >= 3 and np.ptp(constant) > 0:
        slope, intercept = np.polyfit(constant, paper, 1)
        residual = paper - (slope * constant + intercept)
        out.update(
            docsets_slope=float(slope),
            docsets_intercept=float(intercept),
            docsets_residual_sd=float(residual.std(ddof=2)),
        )
    vi_paper = table1_row(dataset, "vi").get("ll")
    if vi_paper is not None:
        out["docsets_paper_vi_below"] = float((paper < float(vi_paper)).mean())
    return out


def document_caption(row: Mapping[str, Any], dataset: str) -> str:
    """The per-dataset caption of absolute paper-style values: the document constant of the
    evaluated combinations and VI's spread over the random document sets (empty without them)."""
    parts = []
    constant = row.get("doc_constant_mean")
    if constant is not None and not _nan(constant):
        parts.append(
            f"document constant of the evaluated combinations (multinomial coefficient + the authors' "
            f"prior normaliser, per word) {float(constant):.2f} nats/word"
        )
    n = row.get("docsets_n")
    if n and not _nan(n) and int(n) > 0:
        vi_paper = table1_row(dataset, "vi").get("ll")
        below = row.get("docsets_paper_vi_below")
        where = ""
        if vi_paper is not None and not _nan(below):
            frac = float(below)
            where = f"; the paper's VI value {float(vi_paper):.2f} lies " + (
                "above every set"
                if frac == 1.0
                else "below every set"
                if frac == 0.0
                else f"inside the spread (above {frac:.0%} of the sets)"
            )
        fit = ""
        if not _nan(row.get("docsets_slope")):
            fit = (
                f"; paper-style = {float(row['docsets_slope']):.2f} x constant "
                f"{float(row['docsets_intercept']):+.2f} (residual sd {float(row['docsets_residual_sd']):.3f})"
            )
        parts.append(
            f"VI's paper-style value over {int(n)} random evaluation-document sets of the same size: "
            f"{float(row['docsets_vi_min']):.2f} to {float(row['docsets_vi_max']):.2f} "
            f"(median {float(row['docsets_vi_median']):.2f}; clean IS {float(row['docsets_is_min']):.2f} to "
            f"{float(row['docsets_is_max']):.2f}; document constants {float(row['docsets_constant_min']):.2f} to "
            f"{float(row['docsets_constant_max']):.2f}){fit}{where}"
        )
    return "; ".join(parts)


def _nan(v: Any) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v))


__all__ = [
    "DOCSET_COLUMNS",
    "GAP_METRICS",
    "NUTS_CHAIN_COLUMNS",
    "add_gaps",
    "document_caption",
    "document_set_rows",
    "document_set_summary",
    "nuts_chain_columns",
    "paper_gap",
]
