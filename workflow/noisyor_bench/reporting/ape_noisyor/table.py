"""``tables/ape_noisyor.{csv,md}``: per family and encoder, ranking agreement and ELBO gaps.

Per run (one seed of an encoder, or the deterministic per-datapoint baseline) from its
``scores.npz`` (the exact ELBO of every test row under every candidate) and the family's
problem file (the exact log-likelihoods):

* ``agreement_exact``: mean over test problems of the fraction of the C(C-1)/2 candidate
  pairs ordered as the exact mean log-likelihood orders them (:func:`pairwise_agreement`);
  ``agreement_pairs`` = problems x C(C-1)/2, so its values lie on a lattice of step
  1 / ``agreement_pairs`` (the claims' count resolution);
* ``agreement_svi``: the same against per-datapoint SVI's ranking (APE's own reference);
* ``gap_exact``: mean ``log p(x) - ELBO`` in nats per (row, candidate);
* ``gap_svi`` / ``gap_lbcdi``: mean ``ELBO_SVI - ELBO`` / ``ELBO_LB-CDI - ELBO`` (positive:
  the per-datapoint bound is tighter);
* ``inference_seconds``: wall time of computing ``q`` for every (row, candidate) of the test set.

Then mean ± 95% CI over seeds per (family, method) via :func:`~noisyor_bench.reporting.tables.summarise`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from noisyor_bench.evaluation.ranking import pairwise_agreement
from noisyor_bench.infra.errors import DataError
from noisyor_bench.infra.integrity import verified_run_file
from noisyor_bench.infra.io import load_npz
from noisyor_bench.reporting.ape_noisyor.labels import NOISYOR_LABELS
from noisyor_bench.reporting.collect import read_metrics
from noisyor_bench.reporting.tables import CI_NOTE, markdown_table, stat_cell, summarise

ARTIFACT = "ape-noisyor"
METRICS = ("agreement_exact", "agreement_svi", "gap_exact", "gap_svi", "gap_lbcdi", "inference_seconds")
BASELINES = ("svi", "lb-cdi")


def mean_agreement(scores: np.ndarray, reference: np.ndarray) -> float:
    """Mean over problems of the pairwise agreement of ``scores`` (P, C, N) with ``reference`` (P, C, N),
    each candidate scored by its mean over the rows."""
    return float(
        np.mean(
            [
                pairwise_agreement(scores[p].mean(-1), reference[p].mean(-1)).fraction
                for p in range(scores.shape[0])
            ]
        )
    )


def agreement_pairs(shape: Sequence[int]) -> int:
    """Candidate pairs an agreement is counted over for scores of ``shape`` (P, C, N): P x C(C-1)/2."""
    problems, candidates = int(shape[0]), int(shape[1])
    return problems * candidates * (candidates - 1) // 2


def run_rows(metrics_files: Sequence[str | Path], log_px: Mapping[str, np.ndarray]) -> pd.DataFrame:
    """One row per run with the metrics of the module docstring; ``log_px``: family -> (P, C, N)."""
    runs = []
    for path in metrics_files:
        row = read_metrics(path)
        elbo = load_npz(verified_run_file(Path(row["run_dir"]) / "scores.npz"))["elbo"]
        family = row["dataset"]
        if family not in log_px:
            raise DataError(f"{path}: no problem file for family {family!r}")
        if elbo.shape != log_px[family].shape:
            raise DataError(f"{path}: scores of shape {elbo.shape}, problem file has {log_px[family].shape}")
        runs.append((row, elbo))
    base = {(r["dataset"], r["method"]): e for r, e in runs if r["method"] in BASELINES}
    rows = []
    for row, elbo in runs:
        family = row["dataset"]
        ref = log_px[family]
        svi, lbcdi = base.get((family, "svi")), base.get((family, "lb-cdi"))
        rows.append(
            {
                **{
                    k: row.get(k)
                    for k in ("dataset", "method", "mode", "n_train", "seed", "converged", "run_dir")
                },
                "base_method": row.get("base_method", row["method"]),
                "encoder_input": row.get("encoder_input", ""),
                "agreement_pairs": agreement_pairs(elbo.shape),
                "agreement_exact": mean_agreement(elbo, ref),
                "agreement_svi": float("nan") if svi is None else mean_agreement(elbo, svi),
                "gap_exact": float((ref - elbo).mean()),
                "gap_svi": float("nan") if svi is None else float((svi - elbo).mean()),
                "gap_lbcdi": float("nan") if lbcdi is None else float((lbcdi - elbo).mean()),
                "inference_seconds": float(row.get("inference_seconds", float("nan"))),
            }
        )
    return pd.DataFrame(rows)


def ape_noisyor_table(runs: pd.DataFrame) -> pd.DataFrame:
    """Mean ± CI per (family, method) (:func:`summarise`), encoders in config order, baselines last."""
    if runs.empty:
        raise DataError("ape-noisyor table: no runs")
    table = summarise(runs, ["dataset", "method"], METRICS)
    extra = (
        runs.groupby(["dataset", "method"], sort=False)[
            [c for c in ("base_method", "encoder_input", "agreement_pairs") if c in runs.columns]
        ]
        .first()
        .reset_index()
    )
    table = table.merge(extra, on=["dataset", "method"], how="left")
    table.insert(0, "artifact", ARTIFACT)
    order = {m: i for i, m in enumerate(runs["method"].drop_duplicates())}
    table["_o"] = table["method"].map(lambda m: (m in BASELINES, order[m]))
    return table.sort_values(["dataset", "_o"]).drop(columns="_o").reset_index(drop=True)


def ape_noisyor_markdown(table: pd.DataFrame, caption: Mapping[str, Any]) -> str:
    """The Markdown view: one section per family."""
    lines = [
        "# APE's question on noisy-OR: amortizing inference across models, scored against exact log-likelihoods",
        "",
        "No paper has these numbers (beyond the paper; docs/ape_noisyor.md). "
        f"Grid: {caption.get('grid', '?')}; {caption.get('detail', '')}",
        "",
        "Agreement: fraction of the C(C-1)/2 pairs of candidate models that the method's mean exact ELBO "
        "orders as the exact mean log-likelihood does (2^K enumeration), averaged over the test problems; "
        "'vs SVI': the same against per-datapoint SVI's ranking (APE's reference). Gaps in nats per (row, "
        "candidate): log p(x) - ELBO, and ELBO_SVI - ELBO, ELBO_LB-CDI - ELBO (positive: the per-datapoint "
        "bound is tighter). Time: seconds to compute q for every (row, candidate) of the test set.",
        "",
        CI_NOTE,
    ]
    header = [
        "method",
        "agreement (exact)",
        "agreement (vs SVI)",
        "gap to log p",
        "gap to SVI",
        "gap to LB-CDI",
        "inference s",
        "runs conv.",
    ]
    for family, part in table.groupby("dataset", sort=False):
        rows = []
        for r in part.to_dict("records"):
            rows.append(
                [
                    NOISYOR_LABELS.get(r["method"], r["method"]),
                    stat_cell(r, "agreement_exact", 3),
                    stat_cell(r, "agreement_svi", 3),
                    stat_cell(r, "gap_exact", 3),
                    stat_cell(r, "gap_svi", 3),
                    stat_cell(r, "gap_lbcdi", 3),
                    stat_cell(r, "inference_seconds", 2),
                    f"{int(r['n_converged'])}/{int(r['n_runs'])}",
                ]
            )
        lines += [f"## {family}", "", markdown_table(header, rows)]
    return "\n".join(lines)


__all__ = [
    "ARTIFACT",
    "METRICS",
    "agreement_pairs",
    "ape_noisyor_markdown",
    "ape_noisyor_table",
    "mean_agreement",
    "run_rows",
]
