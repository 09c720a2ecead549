"""Reading text-experiment runs: identity checks shared by the tables and figures."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from noisyor_bench.experiments.acp.grid.corpora import classification_latents
from noisyor_bench.infra.errors import DataError
from noisyor_bench.reporting.collect import collect_runs, convergence_counts


def collect_text_runs(paths: Sequence[str | Path]) -> pd.DataFrame:
    """Runs (one row each, :func:`~noisyor_bench.reporting.collect.collect_runs`) with a checked ``K`` column.

    A ``classification-K<K>`` run must have learned K latents: the experiment name is what the
    tables and figures group by, so a mismatch would silently mislabel a panel.
    """
    runs = collect_runs(paths)
    if "K" not in runs.columns or runs["K"].isna().any():
        raise DataError(
            "runs lack the key 'K' in metrics.json (written by noisyor-bench acp-train / acp-train-cell)"
        )
    runs["K"] = runs["K"].astype(int)
    for r in runs.to_dict("records"):
        k = classification_latents(str(r["experiment"]))
        if k is not None and k != r["K"]:
            raise DataError(
                f"{r['run_dir']}: experiment {r['experiment']} but the run learned K={r['K']} latents"
            )
    return runs


def check_dataset(runs: pd.DataFrame, sha256: str, path: str | Path) -> None:
    """Every run must have been trained on the given dataset file (same sha256)."""
    if "dataset_sha256" not in runs.columns:
        return
    wrong = runs[runs["dataset_sha256"].notna() & (runs["dataset_sha256"] != sha256)]
    if len(wrong):
        raise DataError(
            f"run {wrong['run_dir'].iloc[0]} was trained on another file than {path} "
            f"(sha256 {str(wrong['dataset_sha256'].iloc[0])[:12]}... vs {sha256[:12]}...)"
        )


def add_convergence_columns(frame: pd.DataFrame, runs: pd.DataFrame) -> pd.DataFrame:
    """``n_runs`` and ``n_converged`` (the convergence counts every results table carries) of each row's run, by ``run_dir``:
    1 and 0/1 for a run's row (null ``converged`` = converged), 0 and 0 for a row without a run
    (the classification baseline)."""
    counts = {
        str(r["run_dir"]): convergence_counts(runs[runs["run_dir"] == r["run_dir"]])
        for r in runs.to_dict("records")
    }
    none = {"n_runs": 0, "n_converged": 0}
    out = frame.copy()
    for col in ("n_runs", "n_converged"):
        out[col] = [counts.get(str(d), none)[col] for d in out["run_dir"]]
    return out
