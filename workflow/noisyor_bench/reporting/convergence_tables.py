"""Convergence tables: did each run of an experiment converge, and how many did?

``tables/convergence_<experiment>.csv|md``: one row per run, from its ``metrics.json``
(``converged`` and the ``convergence`` object written by :mod:`noisyor_bench.experiments.acp.runs`, rule in
:mod:`noisyor_bench.inference.convergence`), with a summary line of counts.  ``tables/convergence.csv|md``:
converged / total per experiment and method, and the learning-mode share overall.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import pandas as pd

from noisyor_bench.infra.errors import DataError
from noisyor_bench.reporting.collect import last_window_nats, run_converged
from noisyor_bench.reporting.methods import method_label, method_rank
from noisyor_bench.reporting.tables import markdown_table

ARTIFACT = "convergence"
SUMMARY_ARTIFACT = "convergence-summary"
COLUMNS = (
    "artifact",
    "experiment",
    "dataset",
    "method",
    "mode",
    "n_train",
    "seed",
    "converged",
    "rule",
    "stop_reason",
    "epochs",
    "best_epoch",
    "max_epochs",
    "window",
    "rel_tol",
    "evaluations",
    "best_before_window",
    "best_within_window",
    "relative_improvement",
    "last_window_nats",
    "best_at_limit",
    "run_dir",
)
SUMMARY_COLUMNS = (
    "artifact",
    "experiment",
    "method",
    "mode",
    "n_runs",
    "n_converged",
    "n_unconverged",
    "n_not_applicable",
    "share_converged",
)
# convergence object keys copied into the table (metrics.json "convergence": {...})
_FROM_OBJECT = (
    "rule",
    "window",
    "rel_tol",
    "evaluations",
    "best_before_window",
    "best_within_window",
    "relative_improvement",
    "max_epochs",
)


def convergence_table(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per run (:func:`~noisyor_bench.reporting.collect.collect_runs` frame) of one experiment.

    ``converged`` is ``True``/``False``, or empty where it does not apply (no fit of its own);
    runs written before convergence was recorded have an empty ``rule`` as well."""
    if runs.empty:
        raise DataError("convergence table: no runs")
    experiments = sorted(set(runs["experiment"]))
    if len(experiments) != 1:
        raise DataError(f"convergence table: runs of one experiment expected, found {experiments}")
    rows = []
    for r in runs.to_dict("records"):
        row = {
            "artifact": ARTIFACT,
            **{
                k: r.get(k)
                for k in (
                    "experiment",
                    "dataset",
                    "method",
                    "mode",
                    "n_train",
                    "seed",
                    "stop_reason",
                    "epochs",
                    "best_epoch",
                )
            },
        }
        row["converged"] = run_converged(r)  # judged in nats, also for runs from before
        for key in _FROM_OBJECT:
            row[key] = r.get(f"convergence_{key}")
        row["last_window_nats"] = last_window_nats(r)
        row["best_at_limit"] = r.get("convergence_best_at_limit")
        if row["converged"] != _bool_or_none(r.get("converged")):  # a run recorded under the relative rule
            at_limit = r.get("convergence_stop_reason") == "max_epochs" and r.get(
                "convergence_best_epoch"
            ) == r.get("convergence_epochs")
            row["rule"] = (
                "plateau" if row["converged"] else "best-at-limit" if at_limit else "still-improving"
            )
        row["epochs"] = None if _missing(row["epochs"]) else int(row["epochs"])
        row["run_dir"] = r["run_dir"]
        rows.append(row)
    frame = pd.DataFrame(rows, columns=list(COLUMNS))
    frame = frame.assign(_m=frame["method"].map(method_rank))
    frame = frame.sort_values(["dataset", "_m", "n_train", "seed"]).drop(columns="_m")
    return frame.reset_index(drop=True)


def _missing(v: Any) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v))


def _bool_or_none(v: Any) -> bool | None:
    if _missing(v):
        return None
    if isinstance(v, str):
        return {"true": True, "false": False}.get(v.strip().lower())
    return bool(v)


def counts(table: pd.DataFrame) -> dict[str, int]:
    """Runs, converged, not converged and not applicable (``converged`` empty) of a table."""
    conv = [_bool_or_none(v) for v in table["converged"]]
    return {
        "n_runs": len(conv),
        "n_converged": sum(v is True for v in conv),
        "n_unconverged": sum(v is False for v in conv),
        "n_not_applicable": sum(v is None for v in conv),
    }


def _share(c: dict[str, int]) -> float:
    judged = c["n_converged"] + c["n_unconverged"]
    return c["n_converged"] / judged if judged else float("nan")


def summary_line(table: pd.DataFrame) -> str:
    """``"12 runs: 9 converged, 3 not converged (3 still improving), 0 not applicable; ..."``."""
    c = counts(table)
    rules = table.loc[table["converged"].map(_bool_or_none).eq(False), "rule"].value_counts()
    why = ", ".join(f"{int(n)} {str(rule).replace('-', ' ')}" for rule, n in rules.items())
    text = (
        f"{c['n_runs']} runs: {c['n_converged']} converged, {c['n_unconverged']} not converged"
        + (f" ({why})" if why else "")
        + f", {c['n_not_applicable']} not applicable"
    )
    learning = table[table["mode"] == "learning"]
    if len(learning):
        lc = counts(learning)
        text += f"; learning mode: {lc['n_converged']}/{lc['n_runs']} converged ({_pct(_share(lc))})"
    return text


def _pct(x: float) -> str:
    return "n/a" if math.isnan(x) else f"{100 * x:.0f}%"


def _fmt(v: Any, digits: int = 4) -> str:
    if _missing(v):
        return ""
    if isinstance(v, float):
        return f"{v:.{digits}g}"
    return str(v)


RULE_NOTE = (
    "A run converged if it stopped by early stopping (`patience`) or by the method's own criterion "
    "(`converged`), or if it reached `max_epochs` with the validation NELBO on a plateau: the best of its last W "
    "evaluations improved on the best before them by less than 0.01 nats per data point (absolute; "
    "W = `convergence_window`; the relative improvement against `convergence_rel_tol` is still listed). A run "
    "stopped at `max_epochs` with its best evaluation the last one never converged (`best-at-limit`); fewer "
    "than W + 1 evaluations at the limit: not converged. Not applicable (empty): SVI, LB-CDI and UB-CDI optimised on the held-out set in inference mode "
    "(no training budget), unless their own criterion stopped them.\n"
)


def convergence_markdown(table: pd.DataFrame) -> str:
    """The per-run table of one experiment with its summary line."""
    experiment = table["experiment"].iloc[0] if len(table) else ""
    rows = [
        [
            r["dataset"],
            method_label(r["method"], r["experiment"]),
            int(r["n_train"]),
            int(r["seed"]),
            {True: "yes", False: "**no**", None: "n/a"}[_bool_or_none(r["converged"])],
            _fmt(r["rule"]),
            _fmt(r["stop_reason"]),
            _fmt(r["epochs"]),
            _fmt(r["best_epoch"]),
            _fmt(r["max_epochs"]),
            _fmt(r["relative_improvement"], 3),
            _fmt(r["last_window_nats"], 3),
        ]
        for r in table.to_dict("records")
    ]
    header = [
        "dataset",
        "method",
        "N_train",
        "seed",
        "converged",
        "rule",
        "stop reason",
        "epochs",
        "best epoch",
        "max epochs",
        "rel. improvement (last W evals)",
        "improvement (last W evals), nats/point",
    ]
    return (
        f"# Convergence of the runs of {experiment}\n\n**{summary_line(table)}.**\n\n"
        + RULE_NOTE
        + "\n"
        + markdown_table(header, rows)
    )


def summary_table(tables: Sequence[pd.DataFrame]) -> pd.DataFrame:
    """Converged / total per (experiment, method), then one row per experiment (method ``all``)
    and the overall learning-mode row (experiment ``all``, mode ``learning``)."""
    frames = [t for t in tables if not t.empty]
    if not frames:
        raise DataError("convergence summary: no runs in the tables")
    runs = pd.concat(frames, ignore_index=True)
    rows = []
    for (exp, method), g in runs.groupby(["experiment", "method"], sort=True):
        rows.append(_summary_row(exp, method, "/".join(sorted(set(g["mode"].dropna()))), g))
    for exp, g in runs.groupby("experiment", sort=True):
        rows.append(_summary_row(exp, "all", "/".join(sorted(set(g["mode"].dropna()))), g))
    learning = runs[runs["mode"] == "learning"]
    if len(learning):
        rows.append(_summary_row("all", "all", "learning", learning))
    frame = pd.DataFrame(rows, columns=list(SUMMARY_COLUMNS))
    order = frame.assign(
        _e=frame["experiment"].eq("all"), _a=frame["method"].eq("all"), _m=frame["method"].map(method_rank)
    )
    return (
        order.sort_values(["_e", "experiment", "_a", "_m"])
        .drop(columns=["_e", "_a", "_m"])
        .reset_index(drop=True)
    )


def _summary_row(experiment: str, method: str, mode: str, g: pd.DataFrame) -> dict[str, Any]:
    c = counts(g)
    return {
        "artifact": SUMMARY_ARTIFACT,
        "experiment": experiment,
        "method": method,
        "mode": mode,
        **c,
        "share_converged": _share(c),
    }


def summary_markdown(summary: pd.DataFrame) -> str:
    overall = summary[(summary["experiment"] == "all") & (summary["method"] == "all")]
    head = ""
    if len(overall):
        o = overall.iloc[0]
        head = (
            f"**Learning mode overall: {int(o['n_converged'])} of {int(o['n_runs'])} runs converged "
            f"({_pct(float(o['share_converged']))}).**\n\n"
        )
    rows = [
        [
            r["experiment"],
            "all methods" if r["method"] == "all" else method_label(r["method"], r["experiment"]),
            r["mode"],
            f"{int(r['n_converged'])}/{int(r['n_runs'])}",
            int(r["n_unconverged"]),
            int(r["n_not_applicable"]),
            _pct(float(r["share_converged"])),
        ]
        for r in summary.to_dict("records")
    ]
    header = [
        "experiment",
        "method",
        "mode",
        "converged / runs",
        "not converged",
        "not applicable",
        "share converged (of judged runs)",
    ]
    return (
        "# Convergence summary\n\n"
        + head
        + RULE_NOTE
        + "Per experiment: `tables/convergence_<experiment>.md`.\n\n"
        + markdown_table(header, rows)
    )


def read_convergence_tables(paths: Sequence[str]) -> list[pd.DataFrame]:
    """Per-experiment convergence CSVs (their ``artifact`` column checked)."""
    from noisyor_bench.reporting.tables import read_table

    out = []
    for path in paths:
        frame = read_table(path)
        if len(frame) and frame["artifact"].iloc[0] != ARTIFACT:
            raise DataError(f"{path}: not a convergence table (artifact {frame['artifact'].iloc[0]!r})")
        out.append(frame)
    return out
