"""Reference rows beside the methods: the independent-Bernoulli baseline and the true model.

``results/baselines/<dataset>.json`` (``noisyor-bench acp-baselines``) gives, per dataset, the
independent-Bernoulli NLL at each N_train and the true model's scores; here they become
``baseline_nelbo`` / ``below_baseline`` columns and reference rows (``status = baseline``) of
any table with a NELBO column, and the Markdown notes that explain them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from noisyor_bench.evaluation.nll_labels import doubling_check_text, upper_bound_label
from noisyor_bench.infra.errors import DataError
from noisyor_bench.reporting.collect import read_json_record
from noisyor_bench.reporting.methods import method_label
from noisyor_bench.reporting.tables import format_number, markdown_table, stat_cell, summarise

BASELINE_STATUS = "baseline"
"""``status`` of reference rows (independent Bernoulli, true model): never "measured", so
:func:`noisyor_bench.reporting.claims.table_values` and the plots' method lines leave them out."""


BASELINE_LABELS: dict[str, str] = {
    "indep-bernoulli": "independent Bernoulli",
    "true-nll": "true model (−log p(x))",
    "true-exact": "true model (exact)",
    "true-iw": "true model (IW bound)",
    "true-elbo": "true model (ELBO, per-datapoint)",
}


BELOW_MARK = "†"
BELOW_NOTE = (
    f"{BELOW_MARK}: mean NELBO worse (higher) than the independent-Bernoulli baseline fitted on the "
    "same N_train training rows (`below_baseline` in the CSV): the model has learned less than the "
    "pixel marginals.\n"
)


def read_baselines(paths: Sequence[str | Path] | None) -> dict[str, dict[str, Any]]:
    """``results/baselines/<dataset>.json`` files (``noisyor-bench acp-baselines``) by dataset name."""
    out: dict[str, dict[str, Any]] = {}
    for path in paths or []:
        path = Path(path)
        record = read_json_record(path, "baselines file not found (made by 'noisyor-bench acp-baselines')")
        if not isinstance(record, dict) or "dataset" not in record or "independent_bernoulli" not in record:
            raise DataError(
                f"{path}: not a baselines file (expected keys 'dataset', 'independent_bernoulli')"
            )
        if record["dataset"] in out:
            raise DataError(f"{path}: a second baselines file for dataset {record['dataset']!r}")
        out[str(record["dataset"])] = record
    return out


def baseline_nelbo(baselines: Mapping[str, Mapping[str, Any]], dataset: str, n_train: int) -> float:
    """Independent-Bernoulli NLL of ``dataset`` fitted on ``n_train`` rows; NaN when not computed."""
    record = baselines.get(dataset)
    if not record:
        return float("nan")
    for row in record["independent_bernoulli"]["rows"]:
        if int(row["n_train"]) == int(n_train):
            return float(row["nelbo"])
    return float("nan")


def baseline_nll_rows(
    baselines: Mapping[str, Mapping[str, Any]], dataset: str, n_train: int
) -> tuple[float, float, float]:
    """``(NLL, SE, rows)`` of the independent Bernoulli fitted on ``n_train`` rows, scored on the
    rows of the runs' ``nll_test`` (``--run-nll``); NaNs when not computed."""
    nan = (float("nan"),) * 3
    record = baselines.get(dataset)
    if not record:
        return nan
    for row in record["independent_bernoulli"]["rows"]:
        if int(row["n_train"]) == int(n_train) and row.get("nll_rows_nll") is not None:
            se = row.get("nll_rows_se")
            return (
                float(row["nll_rows_nll"]),
                float("nan") if se is None else float(se),
                float(row["nll_rows"]),
            )
    return nan


PAIRED_NLL_COLUMNS: tuple[str, ...] = (
    "nll_diff",
    "nll_diff_se",
    "nll_diff_df",
    "nll_diff_rows",
    "nll_diff_rows_label",
    "nll_diff_values",
)
"""The learned model minus the independent baseline, paired per test row (:func:`add_paired_nll_columns`)."""


def baseline_row_values(
    baselines: Mapping[str, Mapping[str, Any]], dataset: str, n_train: int
) -> tuple[str, np.ndarray] | None:
    """``(rows' fingerprint, per-row NLL)`` of the independent Bernoulli fitted on ``n_train`` rows,
    on the rows of the runs' ``nll_test`` (baselines files since the per-row NLL); None otherwise."""
    record = baselines.get(dataset)
    if not record:
        return None
    indep = record["independent_bernoulli"]
    digest = indep.get("nll_rows_digest")
    for row in indep["rows"]:
        if int(row["n_train"]) == int(n_train) and digest and row.get("nll_rows_values") is not None:
            return str(digest), np.asarray(row["nll_rows_values"], dtype=np.float64)
    return None


def paired_nll_difference(
    runs: pd.DataFrame, baselines: Mapping[str, Mapping[str, Any]], dataset: str, n_train: int
) -> dict[str, Any] | None:
    """The cell's (``runs``: its runs) learned ``-log p(x)`` minus the independent baseline's, paired
    per test row and averaged over rows and seeds, with its standard error over rows and seeds
    (:func:`noisyor_bench.reporting.statistics.row_seed_mean`, where the unit is argued): the
    :data:`PAIRED_NLL_COLUMNS` of the cell.  None unless every run scored the likelihood with
    per-row values (``nll_per_row``) on the rows the baseline's per-row NLL is on (same
    ``nll_rows_digest``): a cell of older runs keeps the unpaired columns only."""
    from noisyor_bench.reporting.statistics import row_seed_mean

    if runs.empty or "nll_per_row" not in runs.columns or "nll_rows_digest" not in runs.columns:
        return None
    base = baseline_row_values(baselines, dataset, n_train)
    if base is None:
        return None
    digest, base_values = base
    per_row = list(runs["nll_per_row"])
    if any(not isinstance(v, np.ndarray) or v.shape != base_values.shape for v in per_row):
        return None
    if set(runs["nll_rows_digest"]) != {digest} or base_values.size == 0:
        return None
    diffs = np.stack(per_row) - base_values[None, :]
    stat = row_seed_mean(diffs)
    labels = sorted({str(v) for v in runs.get("nll_rows_label", pd.Series(dtype=str)).dropna()})
    return {
        "nll_diff": stat.mean,
        "nll_diff_se": stat.se,
        "nll_diff_df": stat.df,
        "nll_diff_rows": stat.rows,
        "nll_diff_rows_label": "; ".join(labels),
        "nll_diff_values": ";".join(
            f"{int(seed)}:{float(v)!r}" for seed, v in zip(runs["seed"], diffs.mean(axis=1))
        ),
    }


def add_paired_nll_columns(
    table: pd.DataFrame, runs: pd.DataFrame, baselines: Mapping[str, Mapping[str, Any]]
) -> pd.DataFrame:
    """:data:`PAIRED_NLL_COLUMNS` on every measured row of ``table`` (one per dataset, N_train,
    method) from its runs (:func:`paired_nll_difference`); NaN / "" where a cell has none."""
    table = table.copy()
    groups = {
        (str(d), int(n), str(m)): g
        for (d, n, m), g in runs.groupby(["dataset", "n_train", "method"], sort=False)
    }
    values: dict[str, list[Any]] = {c: [] for c in PAIRED_NLL_COLUMNS}
    for r in table.to_dict("records"):
        g = groups.get((str(r.get("dataset")), int(r["n_train"]), str(r.get("method"))))
        measured = r.get("status", "measured") == "measured"
        paired = (
            paired_nll_difference(g, baselines, r["dataset"], int(r["n_train"]))
            if measured and g is not None
            else None
        )
        for c in PAIRED_NLL_COLUMNS:
            values[c].append(
                (paired or {}).get(c, "" if c in ("nll_diff_rows_label", "nll_diff_values") else np.nan)
            )
    for c in PAIRED_NLL_COLUMNS:
        table[c] = values[c]
    return table


def add_baseline_columns(table: pd.DataFrame, baselines: Mapping[str, Mapping[str, Any]]) -> pd.DataFrame:
    """``baseline_nelbo`` and ``below_baseline`` (mean NELBO > baseline) on every learning-mode row,
    and ``baseline_nll`` / ``baseline_nll_se`` / ``baseline_nll_rows``: the baseline on the rows of
    the runs' held-out ``-log p(x)`` (column ``nll``), the like-for-like comparison.

    Rows without a measurement (``status`` not "measured") or without a baseline get
    ``below_baseline = False``.
    """
    table = table.copy()
    records = table.to_dict("records")
    base = [baseline_nelbo(baselines, r["dataset"], int(r["n_train"])) for r in records]
    table["baseline_nelbo"] = base
    same_rows = [baseline_nll_rows(baselines, r["dataset"], int(r["n_train"])) for r in records]
    table["baseline_nll"] = [v[0] for v in same_rows]
    table["baseline_nll_se"] = [v[1] for v in same_rows]
    table["baseline_nll_rows"] = [v[2] for v in same_rows]
    measured = (
        table["status"] == "measured" if "status" in table.columns else pd.Series(True, index=table.index)
    )
    mean = pd.to_numeric(table["nelbo_mean"], errors="coerce") if "nelbo_mean" in table.columns else np.nan
    table["below_baseline"] = (measured & (mean > table["baseline_nelbo"])).astype(bool)
    return table


def baseline_rows(
    baselines: Mapping[str, Mapping[str, Any]], dataset: str, n_values: Iterable[int], artifact: str
) -> list[dict[str, Any]]:
    """Reference rows (status "baseline") of one dataset: the independent Bernoulli at each N_train
    of ``n_values`` that has a baseline, then the true model (``n_train`` 0: it uses no training data)."""
    record = baselines.get(dataset)
    if not record:
        return []
    rows = []

    n_test = record.get("n_test")

    def row(method: str, n_train: int, value: Any, n_scored: Any, note: str) -> dict[str, Any]:
        return {
            "artifact": artifact,
            "dataset": dataset,
            "n_train": int(n_train),
            "method": method,
            "method_label": subset_label(BASELINE_LABELS[method], n_scored, n_test),
            "status": BASELINE_STATUS,
            "nelbo_mean": float(value),
            "nelbo_n": 1,
            "n_test_scored": n_scored,
            "note": note,
        }

    wanted = {int(n) for n in n_values}
    for r in record["independent_bernoulli"]["rows"]:
        if int(r["n_train"]) in wanted:
            rows.append(
                row(
                    "indep-bernoulli",
                    r["n_train"],
                    r["nelbo"],
                    r.get("n_test_scored"),
                    record["independent_bernoulli"].get("smoothing", ""),
                )
            )
    truth = record.get("true_model") or {}
    nll = truth.get("nll") or {}
    if nll.get("nll_test") is not None:
        rows.append(row("true-nll", 0, nll["nll_test"], nll.get("nll_rows"), true_nll_note(nll)))
        rows[-1]["method_label"] = f"{BASELINE_LABELS['true-nll'][:-1]}, {nll.get('nll_estimator')})"
        rows[-1]["method_label"] = subset_label(rows[-1]["method_label"], nll.get("nll_rows"), n_test)
        if upper_bound_label(nll):
            rows[-1]["method_label"] += f", {upper_bound_label(nll)}"
        rows[-1].update(
            nll_se=nll.get("nll_test_se"),
            nll_estimator=nll.get("nll_estimator"),
            truth_minus_baseline=_gibbs_gap(nll),
        )
    if truth.get("exact_nll") is not None:
        rows.append(
            row(
                "true-exact",
                0,
                truth["exact_nll"],
                truth.get("exact_n_test_scored"),
                "exact -log p(x) by enumeration of the 2^K latent states",
            )
        )
    if truth.get("iw_nll") is not None:
        rows.append(
            row(
                "true-iw",
                0,
                truth["iw_nll"],
                truth.get("n_test_scored"),
                f"importance-weighted bound, {truth.get('iw_samples')} samples, proposal = LB-CDI q; "
                f"{truth.get('rows', '')}",
            )
        )
    if truth.get("elbo_nelbo") is not None:
        rounds = ((truth.get("inference") or {}).get("hparams") or {}).get("max_rounds")
        same = truth.get("exact_nll_scored_rows")
        same = f"; exact −log p(x) on these rows {float(same):.2f}" if same is not None else ""
        rows.append(
            row(
                "true-elbo",
                0,
                truth["elbo_nelbo"],
                truth.get("n_test_scored"),
                f"NELBO of LB-CDI's E-step (<= {rounds} rounds) with the truth fixed; {truth.get('rows', '')}"
                + same,
            )
        )
    return rows


def _gibbs_gap(nll: Mapping[str, Any]) -> str:
    """``truth - baseline`` on the same rows per N_train, e.g. ``N=30: -0.21 ± 0.02``."""
    return "; ".join(
        f"N={int(c['n_train'])}: {float(c['diff']):+.2f} ± {float(c['diff_se'] or float('nan')):.2f}"
        for c in nll.get("baseline") or []
    )


def true_nll_note(nll: Mapping[str, Any]) -> str:
    """How the truth's ``-log p(x)`` was computed and the baseline beside it on the same rows."""
    paths = ", ".join(f"{k} {v}" for k, v in (nll.get("nll_paths") or {}).items() if v)
    ais = ""
    if nll.get("nll_ais_rows"):
        bound = upper_bound_label(nll)
        ais = (
            f"; {doubling_check_text(nll)}, MC SE {float(nll.get('nll_test_mc_se') or 0):.3f} "
            f"({bound or 'converged'}; AIS over-estimates -log p(x) until converged: conservative)"
        )
    base = "; ".join(
        f"independent Bernoulli (N_train={int(c['n_train'])}) {float(c['baseline_nll']):.2f}"
        for c in nll.get("baseline") or []
    )
    return (
        f"held-out -log p(x) of the generating model, {nll.get('nll_rows_label')} ({paths}){ais}; "
        f"on the same rows: {base}; truth - baseline: {_gibbs_gap(nll)}"
    )


def subset_label(label: str, n_scored: Any, n_test: Any) -> str:
    """``label``, naming the subset when a score covers fewer rows than the test split: a score on
    200 rows must not sit unlabelled beside one on all 1,000 (a true-model NELBO on a subset can be
    below the exact -log p(x) of the whole split while above it on its own rows)."""
    if n_scored is None or n_test is None or int(n_scored) >= int(n_test):
        return label
    return f"{label}, {int(n_scored)} of {int(n_test)} test rows"


def with_baselines(
    table: pd.DataFrame,
    baselines: Mapping[str, Mapping[str, Any]],
    artifact: str,
    learning: bool = True,
    runs: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """``table`` with baseline columns (learning mode; with its ``runs``, also the per-row paired
    difference to the baseline, :func:`add_paired_nll_columns`) and the reference rows of each of
    its datasets appended."""
    if not baselines:
        return table
    if learning:
        table = add_baseline_columns(table, baselines)
        if runs is not None:
            table = add_paired_nll_columns(table, runs, baselines)
    extra = []
    for dataset in dict.fromkeys(table["dataset"]):
        ns = sorted({int(n) for n in table.loc[table["dataset"] == dataset, "n_train"] if int(n) > 0})
        extra += baseline_rows(baselines, dataset, ns, artifact)
    if not extra:
        return table
    if "status" not in table.columns:
        table = table.assign(status="measured")
    ref = pd.DataFrame(extra)
    if learning:
        ref["baseline_nelbo"] = np.nan
        ref["below_baseline"] = False
    out = pd.concat([table, ref], ignore_index=True)
    # reference rows have no runs: keep the counts integers (empty there), not floats
    for col in ("n_seeds", "n_runs", "n_converged"):
        if col in out.columns:
            out[col] = out[col].astype("Int64")
    return out


def mark_below(row: Mapping[str, Any], text: str) -> str:
    """A cell's text with the below-baseline mark when its row is flagged."""
    return f"{text} {BELOW_MARK}" if text and bool(row.get("below_baseline", False)) else text


def reference_markdown(table: pd.DataFrame, digits: int = 2) -> str:
    """The true-model reference rows of a table as a short Markdown section ('' if none)."""
    if "status" not in table.columns:
        return ""
    ref = table[(table["status"] == BASELINE_STATUS) & (table["method"] != "indep-bernoulli")]
    if ref.empty:
        return ""
    rows = [
        [
            r["dataset"],
            r["method_label"],
            format_number(r["nelbo_mean"], digits),
            "" if pd.isna(r.get("n_test_scored")) else int(r["n_test_scored"]),
            r.get("note", ""),
        ]
        for r in ref.to_dict("records")
    ]
    return (
        "\n## Reference: the true model on the test split\n\n"
        "What the generating noisy-OR scores (nats per data point): its held-out −log p(x), exact "
        "(Quickscore, a forward pass over the latents, or 2^K enumeration) where the rows allow and annealed "
        "importance sampling elsewhere, beside the independent Bernoulli on the same rows (Gibbs' inequality: "
        "the truth is not worse in expectation); its exact −log p(x) on every row where 2^K states can be "
        "enumerated (docs/baselines.md).\n\n"
        + markdown_table(["dataset", "reference", "score", "test rows scored", "how"], rows)
    )


def nelbo_baseline_markdown(
    runs: pd.DataFrame, baselines: Mapping[str, Mapping[str, Any]], digits: int = 2
) -> str:
    """A note for tables that do not report NELBO (Table 5): each cell's held-out NELBO beside
    the independent-Bernoulli baseline of its training rows, flagged when worse ('' without baselines)."""
    if not baselines:
        return ""
    summary = summarise(runs, ["dataset", "method", "n_train"], ["nelbo"])
    summary = add_baseline_columns(summary, baselines)
    rows = [
        [
            r["dataset"],
            method_label(r["method"]),
            int(r["n_train"]),
            mark_below(r, stat_cell(r, "nelbo", digits)),
            format_number(r["baseline_nelbo"], digits),
        ]
        for r in summary.sort_values(["dataset", "n_train", "method"]).to_dict("records")
    ]
    return (
        "\n## Held-out NELBO beside the independent-Bernoulli baseline\n\n"
        "NELBO of the runs above on the test split (nats per document); independent Bernoulli: one rate per "
        "word fitted on the same N_train training documents (docs/baselines.md).\n"
        + BELOW_NOTE
        + "\n"
        + markdown_table(["dataset", "method", "N_train", "NELBO", "indep. Bernoulli"], rows)
    )


def learning_rows(table: pd.DataFrame) -> pd.DataFrame:
    """The method rows of a table (reference rows left out)."""
    return table[table["status"] != BASELINE_STATUS] if "status" in table.columns else table
