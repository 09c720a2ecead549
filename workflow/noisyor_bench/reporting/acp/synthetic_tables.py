"""The ACP paper's synthetic-data tables (Sections 4.2-4.4): Fig. 3a, Table 4, Fig. 5, Fig. 3b.

Every table puts our measurement, ``mean +- 95% CI over seeds``, beside the paper's number
(:func:`noisyor_bench.reporting.acp.paper.paper_numbers`); rows the paper reports but the
grid did not run keep the paper's numbers with ``status = not run``.  The ``artifact``
column names the table (``fig3a``, ``table4``, ``fig5``, ``fig3b``).  Pattern recovery
(Fig. 4) is in :mod:`.recovery_tables`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from noisyor_bench.inference.noisyor.registry import METHOD_NAMES
from noisyor_bench.infra.errors import DataError
from noisyor_bench.infra.integrity import verified_run_file
from noisyor_bench.reporting.acp.baselines import (
    BASELINE_STATUS,
    BELOW_NOTE,
    learning_rows,
    mark_below,
    reference_markdown,
    with_baselines,
)
from noisyor_bench.reporting.acp.paper import paper_numbers
from noisyor_bench.reporting.collect import collect_runs, is_deterministic, single_value
from noisyor_bench.reporting.methods import method_label, method_rank
from noisyor_bench.reporting.tables import CI_NOTE, format_number, markdown_table, stat_cell, summarise

TABLE4_METHODS: tuple[str, ...] = ("avi", "svi", "lb-cdi", "acp")  # the paper's column order
FIG3A_METRICS: tuple[str, ...] = ("nelbo", "f1", "em", "exact_nll", "exact_gap")
DEFAULT_MISSING_REASON = "not run in this grid"


def _paper(value: Any, digits: int = 1) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return f"{float(value):.{digits}f}"


def _n_label(n_train: int) -> str:
    return "-" if int(n_train) == 0 else str(int(n_train))


def _fig3a_order(n_train: int, method: str) -> tuple[int, int, int]:
    """Paper order: amortized rows by N_train descending, then the held-out-optimised (N=0) rows."""
    return (1 if int(n_train) == 0 else 0, -int(n_train), method_rank(method))


def generators_first(datasets: Sequence[str], paper_dataset: str) -> list[str]:
    """The datasets of a table in report order: the paper's own first, then its generator
    variants (the other datasets an experiment runs, ``variant_of`` in the config) by name."""
    return sorted({str(d) for d in datasets}, key=lambda d: (d != paper_dataset, d))


def fig3a_table(
    runs: pd.DataFrame,
    paper: Mapping[str, Any] | None = None,
    baselines: Mapping[str, Mapping[str, Any]] | None = None,
) -> pd.DataFrame:
    """Fig. 3a (inference on SYN-PATTERN): one row per (dataset, N_train, method), paper rows first-class.

    Rows the paper reports but the runs lack keep the paper's numbers with ``status = not run``.
    Runs on SYN-PATTERN's generator variants (the grid's ``variant_of`` datasets) get rows of
    their own, beside the same paper numbers: the paper's rows placed on each generator.
    ``baselines`` (:func:`read_baselines`) adds reference rows (``status = baseline``): the
    independent Bernoulli at each amortized N_train and the true model's exact −log p(x).
    """
    paper = paper_numbers() if paper is None else paper
    if runs.empty or "dataset" not in runs.columns:
        raise DataError("fig3a: no runs (or runs without a dataset)")
    if "mode" in runs and set(runs["mode"].dropna()) - {"inference"}:
        raise DataError(
            f"fig3a: expected inference-mode runs, found modes {sorted(set(runs['mode'].dropna()))}"
        )
    runs = with_nll(runs)
    summary = summarise(runs, ["dataset", "n_train", "method"], (*FIG3A_METRICS, "nll"))
    summary = add_nll_columns(summary, runs, ["dataset", "n_train", "method"])
    measured = {(str(r["dataset"]), int(r["n_train"]), r["method"]): r for r in summary.to_dict("records")}
    ref = {(int(r["n_train"]), r["method"]): r for r in paper["fig3a"]["rows"]}
    rows = []
    for dataset in generators_first(runs["dataset"].dropna(), paper["fig3a"].get("dataset", "")):
        here = {(n, m) for d, n, m in measured if d == dataset}
        for n_train, method in sorted(here | set(ref), key=lambda k: _fig3a_order(*k)):
            p = ref.get((n_train, method), {})
            m = measured.get((dataset, n_train, method))
            row: dict[str, Any] = {
                "artifact": "fig3a",
                "dataset": dataset,
                "n_train": n_train,
                "method": method,
                "method_label": method_label(method),
                "paper_nelbo": p.get("nelbo"),
                "paper_f1": p.get("f1"),
                "paper_em": p.get("em"),
                "status": "measured" if m is not None else "not run",
            }
            if m is not None:
                row.update({k: v for k, v in m.items() if k not in ("dataset", "n_train", "method")})
            rows.append(row)
    table = _with_stat_columns(pd.DataFrame(rows), (*FIG3A_METRICS, "nll"))
    return with_baselines(table, baselines or {}, "fig3a", learning=False)


def _with_stat_columns(frame: pd.DataFrame, metrics: Sequence[str]) -> pd.DataFrame:
    """Make sure every stat column exists (a table of only 'not run' rows still has them)."""
    for col in [
        "n_seeds",
        "seeds",
        "n_runs",
        "n_converged",
        "max_last_window_nats",
        "max_projected_nats",
        "deterministic",
        "settings",
    ] + [f"{m}_{s}" for m in metrics for s in ("mean", "std", "n", "ci95", "values")]:
        if col not in frame.columns:
            frame[col] = np.nan
    return frame


NLL_COLUMNS: tuple[str, ...] = (
    "nll",
    "nll_se",
    "nll_rows",
    "nll_rows_digest",
    "nll_estimator",
    "nll_converged",
    "nll_rows_nelbo",
)


def with_nll(runs: pd.DataFrame) -> pd.DataFrame:
    """``runs`` with an ``nll`` column: each run's held-out ``-log p(x)`` (``nll_test``;
    NaN for runs evaluated before it existed), so :func:`summarise` gives ``nll_mean/_ci95/_values``."""
    runs = runs.copy()
    runs["nll"] = pd.to_numeric(runs["nll_test"], errors="coerce") if "nll_test" in runs else np.nan
    return runs


def add_nll_columns(summary: pd.DataFrame, runs: pd.DataFrame, by: Sequence[str]) -> pd.DataFrame:
    """Per cell: ``nll`` (mean over seeds of ``nll_test``), ``nll_se`` (root mean square of the
    runs' ``nll_test_se``: the standard error of one run's mean over the scored rows, which every
    seed shares), ``nll_rows`` (rows scored) and ``nll_rows_digest`` (which: the fingerprint every
    seed shares, else ""; a comparison with another result set reads the NLL only on equal rows),
    ``nll_estimator`` and ``nll_converged`` (False when an
    AIS schedule failed its doubled-schedule check), ``nll_rows_nelbo`` (mean over seeds of the
    NELBO on the rows the NLL scored: ``nll_rows_nelbo - nll`` is the bound's gap on the same rows;
    NaN for runs from before it was recorded).  ``nll_values`` / ``nll_ci95`` (over seeds)
    come from :func:`summarise`."""
    out = summary.copy()
    extra: dict[str, list[Any]] = {c: [] for c in NLL_COLUMNS}
    keys = [tuple(r[k] for k in by) for r in out.to_dict("records")]
    groups = {
        k if isinstance(k, tuple) else (k,): g for k, g in runs.groupby(list(by), sort=False, dropna=False)
    }
    for key in keys:
        g = groups.get(key)
        ok = g[g["nll"].notna()] if g is not None else pd.DataFrame()
        if ok.empty:
            for c in NLL_COLUMNS:
                extra[c].append("" if c in ("nll_estimator", "nll_rows_digest") else np.nan)
            continue
        se = pd.to_numeric(ok.get("nll_test_se", pd.Series(np.nan, index=ok.index)), errors="coerce")
        conv = ok["nll_ais_converged"] if "nll_ais_converged" in ok else pd.Series(None, index=ok.index)
        extra["nll"].append(float(ok["nll"].mean()))
        extra["nll_se"].append(
            float(np.sqrt(np.nanmean(se.to_numpy(dtype=float) ** 2))) if se.notna().any() else np.nan
        )
        rows = sorted({int(v) for v in ok.get("nll_rows", pd.Series(dtype=float)).dropna()})
        extra["nll_rows"].append(rows[0] if len(rows) == 1 else np.nan)
        digests = {str(v) for v in ok.get("nll_rows_digest", pd.Series(dtype=str)).dropna()} - {""}
        extra["nll_rows_digest"].append(digests.pop() if len(digests) == 1 else "")
        extra["nll_estimator"].append(
            ";".join(sorted({str(v) for v in ok.get("nll_estimator", pd.Series(dtype=str)).dropna()}))
        )
        extra["nll_converged"].append(not any(v is False for v in conv))
        same_rows = pd.to_numeric(
            ok.get("nll_rows_nelbo", pd.Series(np.nan, index=ok.index)), errors="coerce"
        )
        extra["nll_rows_nelbo"].append(float(same_rows.mean()) if same_rows.notna().all() else np.nan)
    for c in NLL_COLUMNS:
        out[c] = extra[c]
    return out


def nll_markdown(table: pd.DataFrame, digits: int = 2) -> str:
    """Learned models' held-out −log p(x) beside their NELBO and the independent Bernoulli on the
    same rows ('' when no run has ``nll_test``)."""
    rows_ = learning_rows(table)
    if "nll" not in rows_.columns or rows_["nll"].isna().all():
        return ""
    has_base = "baseline_nll" in rows_.columns
    body = []
    for r in rows_.sort_values(["dataset", "n_train"]).to_dict("records"):
        if r.get("status") not in (None, "measured") or pd.isna(r.get("nll")):
            continue
        base = format_number(r["baseline_nll"], digits) if has_base else ""
        if (
            has_base
            and not pd.isna(r.get("baseline_nll_rows"))
            and r.get("nll_rows") != r.get("baseline_nll_rows")
        ):
            base = ""  # other rows (e.g. a K other than the truth's): not comparable
        body.append(
            [
                r["dataset"],
                int(r["n_train"]),
                method_label(r["method"]),
                stat_cell(r, "nelbo", digits),
                stat_cell(r, "nll", digits)
                + ("" if r.get("nll_converged", True) is not False else " (AIS unconverged)"),
                format_number(r.get("nll_se"), digits + 1),
                base,
                "" if pd.isna(r.get("nll_rows")) else int(r["nll_rows"]),
                r.get("nll_estimator", ""),
                paired_cell(r),
            ]
        )
    if not body:
        return ""
    return (
        "\n## Held-out −log p(x) of the learned models\n\n"
        "The learned model's likelihood, not a bound: exact (Quickscore / forward pass / enumeration) or AIS "
        "(evaluation/noisyor_likelihood.py, docs/baselines.md), on the rows named in `nll_rows` -- the same "
        "rows for every method and for the independent Bernoulli beside it (fitted on the same N_train rows). "
        "NELBO is on all test rows. SE: standard error of one run's mean over the scored rows. "
        "Model − indep.: the learned −log p(x) minus the independent Bernoulli's, paired per row, mean over "
        "rows and seeds with its 95% CI over rows and seeds (statistics.row_seed_mean; the weak-learning "
        "qualifier's statistic).\n\n"
        + markdown_table(
            [
                "dataset",
                "N_train",
                "method",
                "NELBO",
                "−log p(x)",
                "SE (rows)",
                "indep. Bernoulli, same rows",
                "rows",
                "estimator",
                "model − indep., per row (95% CI)",
            ],
            body,
        )
    )


def paired_cell(r: Mapping[str, Any], digits: int = 3) -> str:
    """``+0.006 [+0.001, +0.011]``: a row's paired per-row difference to the independent baseline
    (``nll_diff``) with its 95% CI over rows and seeds; "" where the table has none."""
    from noisyor_bench.reporting.statistics import RowSeedMean

    diff = pd.to_numeric(pd.Series([r.get("nll_diff")]), errors="coerce").iloc[0]
    if pd.isna(diff):
        return ""
    se, df = (
        pd.to_numeric(pd.Series([r.get(k)]), errors="coerce").iloc[0] for k in ("nll_diff_se", "nll_diff_df")
    )
    low, high = RowSeedMean(float(diff), float(se), float(df), 0, 0).interval()
    if low == high:
        return f"{diff:+.{digits}f}"
    return f"{diff:+.{digits}f} [{low:+.{digits}f}, {high:+.{digits}f}]"


def fig3a_markdown(table: pd.DataFrame, digits: int = 2) -> str:
    """Fig. 3a for people: one table per dataset, the paper's SYN-PATTERN first, then each
    generator variant the grid ran, every one beside the paper's numbers."""
    paper_dataset = paper_numbers()["fig3a"].get("dataset", "")
    datasets = generators_first(table["dataset"].dropna(), paper_dataset) if len(table) else []
    src = paper_numbers()["fig3a"]["source"]
    first = datasets[0] if datasets else ""
    text = (
        f"# Fig. 3a: inference on {first} (paper {src['item']}, Section {src['section']})\n\n"
        "NELBO: held-out negative ELBO, nats per data point (lower is better); F1 (macro) and EM in percent "
        "(higher is better). exact −log p(x): exact held-out negative log-likelihood under the true model; "
        "exact gap = exact NELBO − exact −log p(x) = mean KL(q ‖ p(z|x)) ≥ 0. "
        "N_train '-': optimised directly on the held-out set (SVI, LB-CDI, UB-CDI). Reference rows: "
        "independent Bernoulli fitted on N_train training rows; true model (exact): −log p(x) of the fixed "
        "generative model (every row's model here).\n"
        + CI_NOTE
        + "\n"
        + _fig3a_markdown_one(table[table["dataset"] == first] if first else table, digits)
    )
    for dataset in datasets[1:]:
        text += (
            f"\n\n## Generator variant {dataset}\n\nThe same inference on {dataset}, a generator variant "
            f'of {paper_dataset} (docs/patterns.md, "Generator variants"), beside the paper\'s '
            f"{paper_dataset} numbers.\n\n" + _fig3a_markdown_one(table[table["dataset"] == dataset], digits)
        )
    return text


def _fig3a_markdown_one(table: pd.DataFrame, digits: int) -> str:
    header = [
        "N_train",
        "Method",
        "NELBO",
        "NELBO (paper)",
        "F1",
        "F1 (paper)",
        "EM",
        "EM (paper)",
        "exact −log p(x)",
        "exact gap",
        "seeds",
    ]
    rows = []
    for r in table.to_dict("records"):
        if r["status"] == BASELINE_STATUS:
            rows.append(
                [
                    _n_label(r["n_train"]),
                    r["method_label"],
                    format_number(r["nelbo_mean"], digits),
                    "",
                    "",
                    "",
                    "",
                    "",
                    "",
                    "",
                    "reference",
                ]
            )
            continue
        if r["status"] != "measured":
            rows.append(
                [
                    _n_label(r["n_train"]),
                    r["method_label"],
                    "not run",
                    _paper(r["paper_nelbo"]),
                    "",
                    _paper(r["paper_f1"]),
                    "",
                    _paper(r["paper_em"]),
                    "",
                    "",
                    "",
                ]
            )
            continue
        rows.append(
            [
                _n_label(r["n_train"]),
                r["method_label"],
                stat_cell(r, "nelbo", digits),
                _paper(r["paper_nelbo"]),
                stat_cell(r, "f1", digits),
                _paper(r["paper_f1"]),
                stat_cell(r, "em", digits),
                _paper(r["paper_em"]),
                stat_cell(r, "exact_nll", digits),
                stat_cell(r, "exact_gap", digits),
                r["seeds"],
            ]
        )
    return markdown_table(header, rows)


def parse_missing_reasons(items: Sequence[str] | None) -> dict[str, str]:
    """``["text", "lb-cdi=text"]`` -> ``{"*": text, "lb-cdi": text}`` (a known method name before '=')."""
    out: dict[str, str] = {}
    for item in items or []:
        head, sep, tail = item.partition("=")
        if sep and head.strip() in METHOD_NAMES:
            out[head.strip()] = tail.strip()
        else:
            out["*"] = item
    return out


def table4_table(
    runs: pd.DataFrame,
    missing_reasons: Mapping[str, str] | None = None,
    paper: Mapping[str, Any] | None = None,
    baselines: Mapping[str, Mapping[str, Any]] | None = None,
) -> pd.DataFrame:
    """Table 4 (generative modelling, SYN-RANDOM D=500 K=100): long form, one row per (N_train, method).

    Cells the runs lack get ``status = not run`` and ``note`` = the reason for that method
    (``missing_reasons[method]``, else ``missing_reasons["*"]``, else a generic text).
    """
    paper = paper_numbers() if paper is None else paper
    reasons = dict(missing_reasons or {})
    dataset = single_value(runs, "dataset", "table4")
    runs = with_nll(runs)
    summary = summarise(runs, ["n_train", "method"], ["nelbo", "nll"])
    summary = add_nll_columns(summary, runs, ["n_train", "method"])
    measured = {(int(r["n_train"]), r["method"]): r for r in summary.to_dict("records")}
    p_rows = {int(r["n_train"]): r for r in paper["table4"]["rows"]}
    p_missing = paper["table4"].get("missing", {})
    n_values = sorted({n for n, _ in measured} | set(p_rows), reverse=True)
    methods = list(TABLE4_METHODS) + sorted({m for _, m in measured} - set(TABLE4_METHODS), key=method_rank)
    rows = []
    for n_train in n_values:
        for method in methods:
            m = measured.get((n_train, method))
            p_value = p_rows.get(n_train, {}).get(method)
            p_note = ""
            if n_train in p_rows and p_value is None and method in p_missing:
                p_note = f"not run in the paper: {p_missing[method]['reason']}"
            row: dict[str, Any] = {
                "artifact": "table4",
                "dataset": dataset,
                "n_train": n_train,
                "method": method,
                "method_label": method_label(method),
                "paper_nelbo": p_value,
                "paper_note": p_note,
                "status": "measured" if m is not None else "not run",
                "note": ""
                if m is not None
                else reasons.get(method, reasons.get("*", DEFAULT_MISSING_REASON)),
            }
            if m is not None:
                row.update({k: v for k, v in m.items() if k not in ("n_train", "method")})
            rows.append(row)
    return with_baselines(
        _with_stat_columns(pd.DataFrame(rows), ["nelbo", "nll"]), baselines or {}, "table4", runs=runs
    )


def table4_markdown(table: pd.DataFrame, digits: int = 2) -> str:
    full, table = table, learning_rows(table)
    has_base = "baseline_nelbo" in table.columns
    methods = list(dict.fromkeys(table["method"]))
    header = ["N_train"] + [h for m in methods for h in (method_label(m), f"{method_label(m)} (paper)")]
    header += ["indep. Bernoulli"] if has_base else []
    rows = []
    for n_train, group in table.groupby("n_train", sort=False):
        cells: list[str] = [str(int(n_train))]
        by_method = {r["method"]: r for r in group.to_dict("records")}
        for m in methods:
            r = by_method[m]
            cells.append(
                mark_below(r, stat_cell(r, "nelbo", digits)) if r["status"] == "measured" else r["note"]
            )
            cells.append(
                _paper(r["paper_nelbo"])
                or (f"– ({r['paper_note'].split(': ', 1)[-1]})" if r["paper_note"] else "")
            )
        if has_base:
            cells.append(format_number(group["baseline_nelbo"].iloc[0], digits))
        rows.append(cells)
    src = paper_numbers()["table4"]["source"]
    dataset = table["dataset"].iloc[0] if len(table) else ""
    return (
        f"# Table 4: generative modelling on {dataset} (paper {src['item']}, Section {src['section']})\n\n"
        "Held-out NELBO in nats per data point (lower is better), generative parameters learned on N_train points.\n"
        + CI_NOTE
        + (BELOW_NOTE if has_base else "")
        + "\n"
        + markdown_table(header, rows)
        + nll_markdown(full, digits)
        + reference_markdown(full, digits)
    )


def fig5_table(runs: pd.DataFrame, baselines: Mapping[str, Mapping[str, Any]] | None = None) -> pd.DataFrame:
    """Fig. 5 data: held-out NELBO per (dataset, N_train, method); the paper gives no numbers.

    With ``baselines``: a ``status`` column ("measured"), ``baseline_nelbo``/``below_baseline``
    and the reference rows (``status = baseline``) of every dataset.
    """
    runs = with_nll(runs)
    summary = summarise(runs, ["dataset", "n_train", "method"], ["nelbo", "nll"])
    summary = add_nll_columns(summary, runs, ["dataset", "n_train", "method"])
    summary.insert(0, "artifact", "fig5")
    summary.insert(4, "method_label", summary["method"].map(method_label))
    order = summary.assign(_r=summary["method"].map(method_rank)).sort_values(["dataset", "n_train", "_r"])
    return with_baselines(order.drop(columns="_r").reset_index(drop=True), baselines or {}, "fig5", runs=runs)


def fig5_markdown(table: pd.DataFrame, digits: int = 2) -> str:
    full, table = table, learning_rows(table)
    has_base = "baseline_nelbo" in table.columns
    methods = sorted(set(table["method"]), key=method_rank)
    header = (
        ["dataset", "N_train"]
        + [method_label(m) for m in methods]
        + (["indep. Bernoulli"] if has_base else [])
    )
    rows = []
    for (dataset, n_train), group in table.groupby(["dataset", "n_train"], sort=True):
        by_method = {r["method"]: r for r in group.to_dict("records")}
        cells = [
            mark_below(by_method[m], stat_cell(by_method[m], "nelbo", digits)) if m in by_method else ""
            for m in methods
        ]
        base = [format_number(group["baseline_nelbo"].iloc[0], digits)] if has_base else []
        rows.append([dataset, int(n_train)] + cells + base)
    note = paper_numbers()["fig5"]["note"].strip()
    return (
        "# Fig. 5 data: held-out NELBO on SYN-RANDOM vs N_train\n\n"
        f"Paper: {note}\n\n"
        + CI_NOTE
        + (BELOW_NOTE if has_base else "")
        + "\n"
        + markdown_table(header, rows)
        + nll_markdown(full, digits)
        + reference_markdown(full, digits)
    )


def collect_curves(
    run_dirs: Sequence[str | Path], columns: Sequence[str] = ("ll_ub", "elbo")
) -> pd.DataFrame:
    """Per-round curve rows ``dataset, method, n_train, seed, round, <columns>, deterministic`` from
    ``curve.csv`` files.

    ``round`` is curve.csv's ``epoch`` column (for UB-CDI: the fixed-point round, 0 = initial psi);
    ``deterministic``: the run is one setting, not a sample (:func:`~noisyor_bench.reporting.collect.is_deterministic`:
    SVI/LB-CDI/UB-CDI in inference mode), so the claims judge it exactly.
    """
    runs = collect_runs(run_dirs)
    frames = []
    for r in runs.to_dict("records"):
        path = verified_run_file(Path(r["run_dir"]) / "curve.csv")
        try:
            curve = pd.read_csv(path)
        except FileNotFoundError:
            raise DataError(f"{path}: curve.csv not found") from None
        except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as err:
            raise DataError(f"{path}: not a readable CSV ({err})") from None
        need = ["epoch", *columns]
        absent = [c for c in need if c not in curve.columns]
        if absent:
            raise DataError(f"{path}: column(s) {absent} missing (has {list(curve.columns)})")
        if curve.empty:
            raise DataError(f"{path}: no rows")
        part = curve[need].rename(columns={"epoch": "round"}).astype({"round": int})
        for k in ("dataset", "method", "n_train", "seed"):
            part.insert(0, k, r[k])
        part["deterministic"] = is_deterministic(pd.DataFrame([r]))
        frames.append(part)
    out = pd.concat(frames, ignore_index=True)
    out.insert(0, "artifact", "fig3b")
    return (
        out[["artifact", "dataset", "method", "n_train", "seed", "round", *columns, "deterministic"]]
        .sort_values(["dataset", "method", "seed", "round"])
        .reset_index(drop=True)
    )


def fig3b_markdown(curves: pd.DataFrame, digits: int = 3) -> str:
    rows = []
    order = generators_first(curves["dataset"].dropna(), paper_numbers()["fig3a"].get("dataset", ""))
    for (_, dataset, method, seed), g in curves.assign(_o=curves["dataset"].map(order.index)).groupby(
        ["_o", "dataset", "method", "seed"], sort=True
    ):
        g = g.sort_values("round")
        first, last = g.iloc[0], g.iloc[-1]
        rows.append(
            [
                dataset,
                method_label(method),
                int(seed),
                int(last["round"]),
                f"{first['ll_ub']:.{digits}f}",
                f"{last['ll_ub']:.{digits}f}",
                f"{first['elbo']:.{digits}f}",
                f"{last['elbo']:.{digits}f}",
                f"{g['elbo'].min():.{digits}f} (round {int(g.loc[g['elbo'].idxmin(), 'round'])})",
            ]
        )
    header = [
        "dataset",
        "method",
        "seed",
        "last round",
        "LL-UB first",
        "LL-UB last",
        "ELBO first",
        "ELBO last",
        "ELBO min",
    ]
    return (
        "# Fig. 3b data: UB-CDI learning curve (paper Section 4.2)\n\n"
        "Per seed: mean held-out LL-UB (log-likelihood upper bound) and ELBO, in nats per data point, "
        "at the first round (initial psi) and the last fixed-point round.\n\n" + markdown_table(header, rows)
    )
