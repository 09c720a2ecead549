"""Aggregate run directories into the paper's synthetic-data tables (Sections 4.2-4.4).

Every table puts our measurement, ``mean +- 95% CI over seeds``, beside the paper's number
(from ``paper_numbers.yaml``, the only place paper numbers are written down).  The CI is the
Student-t interval of the mean, ``t_{0.975, n-1} * s / sqrt(n)`` with the sample standard
deviation ``s`` (ddof=1); a single seed has no CI (shown as ``n=1``).

Machine-readable CSVs keep, per cell and metric, ``<m>_mean, <m>_std, <m>_n, <m>_ci95`` and
``<m>_values`` (the per-seed values as ``seed:value;seed:value``), so :mod:`.claims` can form
paired per-seed differences from the written tables alone.  Every table has an ``artifact``
column naming what it is (``fig3a``, ``table4``, ``fig5``, ``recovery``, ``fig3b``).
"""

from __future__ import annotations

import copy
import json
import math
import re
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import numpy as np
import pandas as pd
import yaml
from scipy import stats

from .errors import DataError, UserError
from .io import load_npz, read_json, write_text_atomic

# ------------------------------------------------------------------------------ constants
METHOD_ORDER: tuple[str, ...] = ("avi", "acp", "acp-sg", "svi", "lb-cdi", "ub-cdi")
METHOD_LABELS: dict[str, str] = {
    "avi": "AVI", "acp": "ACP", "acp-sg": "ACP-SG", "svi": "SVI", "lb-cdi": "LB-CDI", "ub-cdi": "UB-CDI",
}
TABLE4_METHODS: tuple[str, ...] = ("avi", "svi", "lb-cdi", "acp")  # the paper's column order

REQUIRED_KEYS: tuple[str, ...] = ("experiment", "dataset", "method", "n_train", "seed")
IDENTITY_KEYS: tuple[str, ...] = (*REQUIRED_KEYS, "mode", "n_test", "device", "threads")
METRIC_KEYS: tuple[str, ...] = (
    "nelbo", "f1", "em", "exact_nll", "exact_elbo", "exact_nelbo", "exact_gap", "iw_nll",
    "train_seconds", "eval_seconds", "epochs",
)
RUN_KEYS: tuple[str, ...] = ("experiment", "dataset", "method", "n_train", "seed")
FIG3A_METRICS: tuple[str, ...] = ("nelbo", "f1", "em", "exact_nll", "exact_gap")
CI_LEVEL = 0.95
DEFAULT_MISSING_REASON = "not run in this profile"


# ------------------------------------------------------------------------------ paper numbers
@lru_cache(maxsize=1)
def _paper_numbers_cached() -> dict[str, Any]:
    text = resources.files("noisyor_bench").joinpath("paper_numbers.yaml").read_text(encoding="utf-8")
    return yaml.safe_load(text)


def paper_numbers() -> dict[str, Any]:
    """The paper's reported numbers (package data ``paper_numbers.yaml``); a fresh copy."""
    return copy.deepcopy(_paper_numbers_cached())


def method_label(method: str) -> str:
    """The paper's display name of a method (``lb-cdi`` -> ``LB-CDI``)."""
    return METHOD_LABELS.get(method, method.upper())


def method_rank(method: str) -> int:
    """Position in the paper's method order; unknown methods sort last."""
    return METHOD_ORDER.index(method) if method in METHOD_ORDER else len(METHOD_ORDER)


# ------------------------------------------------------------------------------ statistics
def t_halfwidth(std: float, n: int, level: float = CI_LEVEL) -> float:
    """Half-width of the Student-t CI of a mean: ``t_{(1+level)/2, n-1} * std / sqrt(n)``; NaN if n < 2."""
    if n < 2 or not np.isfinite(std):
        return float("nan")
    return float(stats.t.ppf(0.5 + level / 2.0, n - 1) * std / math.sqrt(n))


def mean_ci(values: Sequence[float], level: float = CI_LEVEL) -> tuple[float, float, int, float]:
    """``(mean, std (ddof=1), n, CI half-width)`` of finite-or-infinite values; NaN where undefined."""
    arr = np.asarray(values, dtype=np.float64)
    n = int(arr.size)
    if n == 0:
        return float("nan"), float("nan"), 0, float("nan")
    mean = float(arr.mean())
    std = float(arr.std(ddof=1)) if n > 1 else float("nan")
    return mean, std, n, t_halfwidth(std, n, level)


def format_ci(mean: float, ci: float, n: int, digits: int = 2) -> str:
    """``"14.02 ± 0.11"``; ``"14.02 (n=1)"`` for a single seed; ``""`` without data."""
    if n is None or (isinstance(n, float) and math.isnan(n)) or int(n) == 0 or mean is None or math.isnan(mean):
        return ""
    if int(n) < 2 or math.isnan(ci):
        return f"{mean:.{digits}f} (n={int(n)})"
    return f"{mean:.{digits}f} ± {ci:.{digits}f}"


def format_values(seeds: Iterable[int], values: Iterable[float]) -> str:
    """Per-seed values as ``seed:value;...`` with round-trip float precision."""
    return ";".join(f"{int(s)}:{float(v)!r}" for s, v in zip(seeds, values))


def parse_values(text: Any) -> dict[int, float]:
    """Inverse of :func:`format_values`; empty for NaN / empty cells."""
    if text is None or (isinstance(text, float) and math.isnan(text)) or str(text).strip() == "":
        return {}
    out: dict[int, float] = {}
    for item in str(text).split(";"):
        seed, _, value = item.partition(":")
        try:
            out[int(seed)] = float(value)
        except ValueError:
            raise DataError(f"malformed per-seed values {text!r}: expected 'seed:value;...'") from None
    return out


# ------------------------------------------------------------------------------ collecting runs
def metrics_path(path: str | Path) -> Path:
    """``metrics.json`` of a run: the path itself, or ``<run dir>/metrics.json``."""
    p = Path(path)
    return p / "metrics.json" if p.is_dir() else p


_NUMBER = (int, float)


def read_metrics(path: str | Path) -> dict[str, Any]:
    """One run's ``metrics.json`` as a flat dict, validated; errors name the file."""
    path = metrics_path(path)
    try:
        data = read_json(path)
    except FileNotFoundError:
        raise DataError(f"{path}: metrics.json not found (did the run finish?)") from None
    except (OSError, json.JSONDecodeError) as err:
        raise DataError(f"{path}: not valid JSON ({err})") from None
    if not isinstance(data, dict):
        raise DataError(f"{path}: expected a JSON object, found {type(data).__name__}")
    missing = [k for k in REQUIRED_KEYS if data.get(k) is None]
    if missing:
        raise DataError(f"{path}: missing required key(s) {missing}")
    for key in ("n_train", "seed"):
        if isinstance(data[key], bool) or not isinstance(data[key], int) or data[key] < 0:
            raise DataError(f"{path}: key {key!r} must be a non-negative integer, found {data[key]!r}")
    for key in ("experiment", "dataset", "method"):
        if not isinstance(data[key], str):
            raise DataError(f"{path}: key {key!r} must be a string, found {data[key]!r}")
    row: dict[str, Any] = {}
    for key, value in data.items():
        if key == "hparams":
            row["hparams"] = json.dumps(value, sort_keys=True)
        elif key in METRIC_KEYS:
            if value is not None and (isinstance(value, bool) or not isinstance(value, _NUMBER)):
                raise DataError(f"{path}: metric {key!r} must be a number or null, found {value!r}")
            row[key] = float("nan") if value is None else float(value)
        elif value is None or isinstance(value, (str, bool, *_NUMBER)):
            row[key] = value  # identity keys and any extra scalar metric (f1_map, mc_gap, ...)
    for key in METRIC_KEYS:
        row.setdefault(key, float("nan"))
    _check_layout(path, row)
    row["run_dir"] = str(path.parent)
    return row


_LAYOUT = re.compile(r"^n(\d+)$"), re.compile(r"^seed(\d+)$")


def _check_layout(path: Path, row: Mapping[str, Any]) -> None:
    """If the path follows ``<experiment>/<dataset>/<method>/n<N>/seed<s>/``, it must agree with the file."""
    parts = path.parent.parts
    if len(parts) < 5:
        return
    m_n, m_seed = _LAYOUT[0].match(parts[-2]), _LAYOUT[1].match(parts[-1])
    if not (m_n and m_seed):
        return
    expected = {
        "experiment": parts[-5], "dataset": parts[-4], "method": parts[-3],
        "n_train": int(m_n.group(1)), "seed": int(m_seed.group(1)),
    }
    wrong = {k: (v, row[k]) for k, v in expected.items() if row[k] != v}
    if wrong:
        detail = ", ".join(f"{k}: path says {a!r}, file says {b!r}" for k, (a, b) in wrong.items())
        raise DataError(f"{path}: run directory and metrics.json disagree ({detail})")


def collect_runs(paths: Sequence[str | Path]) -> pd.DataFrame:
    """One row per run (identity + metrics + ``run_dir``) from metrics.json files or run dirs."""
    if not paths:
        raise UserError("no runs given (expected metrics.json files or run directories)")
    rows = [read_metrics(p) for p in paths]
    seen: dict[tuple[Any, ...], str] = {}
    for row in rows:
        key = tuple(row[k] for k in RUN_KEYS)
        if key in seen:
            raise DataError(f"duplicate run {dict(zip(RUN_KEYS, key))}: {seen[key]} and {row['run_dir']}")
        seen[key] = row["run_dir"]
    frame = pd.DataFrame(rows)
    first = [c for c in (*IDENTITY_KEYS, *METRIC_KEYS) if c in frame.columns]
    frame = frame[first + [c for c in frame.columns if c not in first]]
    frame["n_train"] = frame["n_train"].astype(int)
    frame["seed"] = frame["seed"].astype(int)
    return frame.sort_values(list(RUN_KEYS), key=_sort_key).reset_index(drop=True)


def _sort_key(col: pd.Series) -> pd.Series:
    return col.map(method_rank) if col.name == "method" else col


def single_value(runs: pd.DataFrame, column: str, what: str) -> Any:
    """The one value of ``column`` shared by all runs (e.g. one dataset per table), else an error."""
    values = sorted(set(runs[column].dropna()), key=str)
    if len(values) != 1:
        raise DataError(f"{what}: runs must share one {column}, found {values}")
    return values[0]


# ------------------------------------------------------------------------------ summarising
def summarise(df: pd.DataFrame, by: Sequence[str], metrics: Sequence[str], level: float = CI_LEVEL) -> pd.DataFrame:
    """Mean, std, n, CI half-width and per-seed values of ``metrics`` per group of ``by``.

    Columns: ``by``, ``n_seeds``, ``seeds``, then per metric ``<m>_mean, <m>_std, <m>_n,
    <m>_ci95, <m>_values``.  NaN metric values (null in metrics.json) are left out of that
    metric's statistics, so ``<m>_n`` may be smaller than ``n_seeds``.
    """
    missing = [c for c in (*by, "seed", *metrics) if c not in df.columns]
    if missing:
        raise DataError(f"cannot summarise: column(s) {missing} not in the runs table")
    rows = []
    for key, group in df.groupby(list(by), sort=False, dropna=False):
        key = key if isinstance(key, tuple) else (key,)
        group = group.sort_values("seed")
        row: dict[str, Any] = dict(zip(by, key))
        row["n_seeds"] = int(len(group))
        row["seeds"] = ";".join(str(int(s)) for s in group["seed"])
        for m in metrics:
            ok = group[m].notna()
            vals = group.loc[ok, m].astype(float).to_numpy()
            mean, std, n, ci = mean_ci(vals, level)
            row.update({f"{m}_mean": mean, f"{m}_std": std, f"{m}_n": n, f"{m}_ci95": ci})
            row[f"{m}_values"] = format_values(group.loc[ok, "seed"], vals)
        rows.append(row)
    columns = [*by, "n_seeds", "seeds"] + [f"{m}_{s}" for m in metrics for s in ("mean", "std", "n", "ci95", "values")]
    return pd.DataFrame(rows, columns=columns)


def _cell(row: Mapping[str, Any], metric: str, digits: int) -> str:
    return format_ci(row.get(f"{metric}_mean", float("nan")), row.get(f"{metric}_ci95", float("nan")),
                     row.get(f"{metric}_n", 0), digits)


def _paper(value: Any, digits: int = 1) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return f"{float(value):.{digits}f}"


def _n_label(n_train: int) -> str:
    return "-" if int(n_train) == 0 else str(int(n_train))


# ------------------------------------------------------------------------------ Markdown / writing
def markdown_table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A GitHub-flavoured Markdown table (pipes in cells escaped)."""
    def cell(v: Any) -> str:
        return "" if v is None else str(v).replace("|", "\\|")

    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(cell(v) for v in r) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def write_table(frame: pd.DataFrame, csv_path: str | Path | None, md_text: str | None = None,
                md_path: str | Path | None = None) -> None:
    """Write the CSV (machine-readable) and the Markdown (for people), atomically."""
    if csv_path is not None:
        write_text_atomic(csv_path, frame.to_csv(index=False, lineterminator="\n"))
    if md_path is not None and md_text is not None:
        write_text_atomic(md_path, md_text)


CI_NOTE = (
    "Cells: mean ± half-width of the 95% Student-t confidence interval of the mean over seeds "
    "(t_{0.975,n-1}·s/√n); '(n=1)' = a single seed, no interval.\n"
)


# ------------------------------------------------------------------------------ Fig. 3a
def _fig3a_order(n_train: int, method: str) -> tuple[int, int, int]:
    """Paper order: amortized rows by N_train descending, then the held-out-optimised (N=0) rows."""
    return (1 if int(n_train) == 0 else 0, -int(n_train), method_rank(method))


def fig3a_table(runs: pd.DataFrame, paper: Mapping[str, Any] | None = None) -> pd.DataFrame:
    """Fig. 3a (inference on SYN-PATTERN): one row per (N_train, method), paper rows first-class.

    Rows the paper reports but the runs lack keep the paper's numbers with ``status = not run``.
    """
    paper = paper_numbers() if paper is None else paper
    dataset = single_value(runs, "dataset", "fig3a")
    if "mode" in runs and set(runs["mode"].dropna()) - {"inference"}:
        raise DataError(f"fig3a: expected inference-mode runs, found modes {sorted(set(runs['mode'].dropna()))}")
    summary = summarise(runs, ["n_train", "method"], FIG3A_METRICS)
    measured = {(int(r["n_train"]), r["method"]): r for r in summary.to_dict("records")}
    ref = {(int(r["n_train"]), r["method"]): r for r in paper["fig3a"]["rows"]}
    keys = sorted(set(measured) | set(ref), key=lambda k: _fig3a_order(*k))
    rows = []
    for n_train, method in keys:
        p = ref.get((n_train, method), {})
        m = measured.get((n_train, method))
        row: dict[str, Any] = {
            "artifact": "fig3a", "dataset": dataset, "n_train": n_train, "method": method,
            "method_label": method_label(method),
            "paper_nelbo": p.get("nelbo"), "paper_f1": p.get("f1"), "paper_em": p.get("em"),
            "status": "measured" if m is not None else "not run",
        }
        if m is not None:
            row.update({k: v for k, v in m.items() if k not in ("n_train", "method")})
        rows.append(row)
    return _with_stat_columns(pd.DataFrame(rows), FIG3A_METRICS)


def _with_stat_columns(frame: pd.DataFrame, metrics: Sequence[str]) -> pd.DataFrame:
    """Make sure every stat column exists (a table of only 'not run' rows still has them)."""
    for col in ["n_seeds", "seeds"] + [f"{m}_{s}" for m in metrics for s in ("mean", "std", "n", "ci95", "values")]:
        if col not in frame.columns:
            frame[col] = np.nan
    return frame


def fig3a_markdown(table: pd.DataFrame, digits: int = 2) -> str:
    header = ["N_train", "Method", "NELBO", "NELBO (paper)", "F1", "F1 (paper)", "EM", "EM (paper)",
              "exact −log p(x)", "exact gap", "seeds"]
    rows = []
    for r in table.to_dict("records"):
        if r["status"] != "measured":
            rows.append([_n_label(r["n_train"]), r["method_label"], "not run", _paper(r["paper_nelbo"]), "",
                         _paper(r["paper_f1"]), "", _paper(r["paper_em"]), "", "", ""])
            continue
        rows.append([
            _n_label(r["n_train"]), r["method_label"],
            _cell(r, "nelbo", digits), _paper(r["paper_nelbo"]),
            _cell(r, "f1", digits), _paper(r["paper_f1"]),
            _cell(r, "em", digits), _paper(r["paper_em"]),
            _cell(r, "exact_nll", digits), _cell(r, "exact_gap", digits), r["seeds"],
        ])
    src = paper_numbers()["fig3a"]["source"]
    dataset = table["dataset"].iloc[0] if len(table) else ""
    return (
        f"# Fig. 3a: inference on {dataset} (paper {src['item']}, Section {src['section']})\n\n"
        "NELBO: held-out negative ELBO, nats per data point (lower is better); F1 (macro) and EM in percent "
        "(higher is better). exact −log p(x): exact held-out negative log-likelihood under the true model; "
        "exact gap = exact NELBO − exact −log p(x) = mean KL(q ‖ p(z|x)) ≥ 0. "
        "N_train '-': optimised directly on the held-out set (SVI, LB-CDI, UB-CDI).\n"
        + CI_NOTE + "\n" + markdown_table(header, rows)
    )


# ------------------------------------------------------------------------------ Table 4
def parse_missing_reasons(items: Sequence[str] | None) -> dict[str, str]:
    """``["text", "lb-cdi=text"]`` -> ``{"*": text, "lb-cdi": text}`` (a known method name before '=')."""
    out: dict[str, str] = {}
    for item in items or []:
        head, sep, tail = item.partition("=")
        if sep and head.strip() in METHOD_LABELS:
            out[head.strip()] = tail.strip()
        else:
            out["*"] = item
    return out


def table4_table(runs: pd.DataFrame, missing_reasons: Mapping[str, str] | None = None,
                 paper: Mapping[str, Any] | None = None) -> pd.DataFrame:
    """Table 4 (generative modelling, SYN-RANDOM D=500 K=100): long form, one row per (N_train, method).

    Cells the runs lack get ``status = not run`` and ``note`` = the reason for that method
    (``missing_reasons[method]``, else ``missing_reasons["*"]``, else a generic text).
    """
    paper = paper_numbers() if paper is None else paper
    reasons = dict(missing_reasons or {})
    dataset = single_value(runs, "dataset", "table4")
    summary = summarise(runs, ["n_train", "method"], ["nelbo"])
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
                "artifact": "table4", "dataset": dataset, "n_train": n_train, "method": method,
                "method_label": method_label(method), "paper_nelbo": p_value, "paper_note": p_note,
                "status": "measured" if m is not None else "not run",
                "note": "" if m is not None else reasons.get(method, reasons.get("*", DEFAULT_MISSING_REASON)),
            }
            if m is not None:
                row.update({k: v for k, v in m.items() if k not in ("n_train", "method")})
            rows.append(row)
    return _with_stat_columns(pd.DataFrame(rows), ["nelbo"])


def table4_markdown(table: pd.DataFrame, digits: int = 2) -> str:
    methods = list(dict.fromkeys(table["method"]))
    header = ["N_train"] + [h for m in methods for h in (method_label(m), f"{method_label(m)} (paper)")]
    rows = []
    for n_train, group in table.groupby("n_train", sort=False):
        cells: list[str] = [str(int(n_train))]
        by_method = {r["method"]: r for r in group.to_dict("records")}
        for m in methods:
            r = by_method[m]
            cells.append(_cell(r, "nelbo", digits) if r["status"] == "measured" else r["note"])
            cells.append(_paper(r["paper_nelbo"]) or (f"– ({r['paper_note'].split(': ', 1)[-1]})" if r["paper_note"] else ""))
        rows.append(cells)
    src = paper_numbers()["table4"]["source"]
    dataset = table["dataset"].iloc[0] if len(table) else ""
    return (
        f"# Table 4: generative modelling on {dataset} (paper {src['item']}, Section {src['section']})\n\n"
        "Held-out NELBO in nats per data point (lower is better), generative parameters learned on N_train points.\n"
        + CI_NOTE + "\n" + markdown_table(header, rows)
    )


# ------------------------------------------------------------------------------ Fig. 5 data
def fig5_table(runs: pd.DataFrame) -> pd.DataFrame:
    """Fig. 5 data: held-out NELBO per (dataset, N_train, method); the paper gives no numbers."""
    summary = summarise(runs, ["dataset", "n_train", "method"], ["nelbo"])
    summary.insert(0, "artifact", "fig5")
    summary.insert(4, "method_label", summary["method"].map(method_label))
    order = summary.assign(_r=summary["method"].map(method_rank)).sort_values(["dataset", "n_train", "_r"])
    return order.drop(columns="_r").reset_index(drop=True)


def fig5_markdown(table: pd.DataFrame, digits: int = 2) -> str:
    methods = sorted(set(table["method"]), key=method_rank)
    header = ["dataset", "N_train"] + [method_label(m) for m in methods]
    rows = []
    for (dataset, n_train), group in table.groupby(["dataset", "n_train"], sort=True):
        by_method = {r["method"]: r for r in group.to_dict("records")}
        rows.append([dataset, int(n_train)] + [_cell(by_method[m], "nelbo", digits) if m in by_method else "" for m in methods])
    note = paper_numbers()["fig5"]["note"].strip()
    return (
        "# Fig. 5 data: held-out NELBO on SYN-RANDOM vs N_train\n\n"
        f"Paper: {note}\n\n" + CI_NOTE + "\n" + markdown_table(header, rows)
    )


# ------------------------------------------------------------------------------ Fig. 3b data
def collect_curves(run_dirs: Sequence[str | Path], columns: Sequence[str] = ("ll_ub", "elbo")) -> pd.DataFrame:
    """Per-round curve rows ``dataset, method, n_train, seed, round, <columns>`` from ``curve.csv`` files.

    ``round`` is curve.csv's ``epoch`` column (for UB-CDI: the fixed-point round, 0 = initial psi).
    """
    runs = collect_runs(run_dirs)
    frames = []
    for r in runs.to_dict("records"):
        path = Path(r["run_dir"]) / "curve.csv"
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
        frames.append(part)
    out = pd.concat(frames, ignore_index=True)
    out.insert(0, "artifact", "fig3b")
    return out[["artifact", "dataset", "method", "n_train", "seed", "round", *columns]].sort_values(
        ["dataset", "method", "seed", "round"]).reset_index(drop=True)


def fig3b_markdown(curves: pd.DataFrame, digits: int = 3) -> str:
    rows = []
    for (method, seed), g in curves.groupby(["method", "seed"], sort=True):
        g = g.sort_values("round")
        first, last = g.iloc[0], g.iloc[-1]
        rows.append([method_label(method), int(seed), int(last["round"]),
                     f"{first['ll_ub']:.{digits}f}", f"{last['ll_ub']:.{digits}f}",
                     f"{first['elbo']:.{digits}f}", f"{last['elbo']:.{digits}f}",
                     f"{g['elbo'].min():.{digits}f} (round {int(g.loc[g['elbo'].idxmin(), 'round'])})"])
    header = ["method", "seed", "last round", "LL-UB first", "LL-UB last", "ELBO first", "ELBO last", "ELBO min"]
    return (
        "# Fig. 3b data: UB-CDI learning curve (paper Section 4.2)\n\n"
        "Per seed: mean held-out LL-UB (log-likelihood upper bound) and ELBO, in nats per data point, "
        "at the first round (initial psi) and the last fixed-point round.\n\n" + markdown_table(header, rows)
    )


# ------------------------------------------------------------------------------ Fig. 4 / supp. Figs. 1-2
def paper_recovery_rows(dataset: str, paper: Mapping[str, Any] | None = None) -> dict[tuple[str, int], dict[str, Any]]:
    """Paper pattern-recovery statements for ``dataset``: (method, N_train) -> row (with ``source``)."""
    paper = paper_numbers() if paper is None else paper
    out: dict[tuple[str, int], dict[str, Any]] = {}
    for block in ("fig4", "supp_fig1", "supp_fig2"):
        if paper[block]["dataset"] != dataset:
            continue
        for r in paper[block]["rows"]:
            out[(r["method"], int(r["n_train"]))] = {**r, "source": paper[block]["source"]["item"]}
    return out


def load_dataset_truth(path: str | Path) -> tuple[np.ndarray, np.ndarray, tuple[int, int] | None, str]:
    """True ``theta``, ``theta0``, image shape (from the sidecar) and name of a dataset ``.npz``."""
    path = Path(path)
    try:
        arrays = load_npz(path)
    except FileNotFoundError:
        raise DataError(f"{path}: dataset file not found") from None
    except (OSError, ValueError) as err:
        raise DataError(f"{path}: not a readable .npz ({err})") from None
    for key in ("theta", "theta0"):
        if key not in arrays:
            raise DataError(f"{path}: array {key!r} missing")
    sidecar = path.with_suffix(".json")
    meta = read_json(sidecar) if sidecar.exists() else {}
    shape = tuple(meta["image_shape"]) if meta.get("image_shape") else None
    return arrays["theta"], arrays["theta0"], shape, str(meta.get("name", path.stem))


def load_posterior(run_dir: str | Path) -> dict[str, np.ndarray]:
    """``posterior_test.npz`` of a run (``q``, ``theta``, ``theta0``, ``mu``)."""
    path = Path(run_dir) / "posterior_test.npz"
    try:
        arrays = load_npz(path)
    except FileNotFoundError:
        raise DataError(f"{path}: posterior_test.npz not found") from None
    except (OSError, ValueError) as err:
        raise DataError(f"{path}: not a readable .npz ({err})") from None
    if "theta" not in arrays:
        raise DataError(f"{path}: array 'theta' missing")
    return arrays


def recovery_table(runs: pd.DataFrame, theta_true: np.ndarray, threshold: float,
                   paper: Mapping[str, Any] | None = None) -> pd.DataFrame:
    """One row per run: patterns recovered (Hungarian match, :mod:`.recovery`) beside the paper's statement."""
    from .recovery import match_patterns

    dataset = single_value(runs, "dataset", "recovery")
    ref = paper_recovery_rows(dataset, paper)
    rows = []
    for r in runs.to_dict("records"):
        post = load_posterior(r["run_dir"])
        if post["theta"].ndim != 2 or post["theta"].shape[0] != theta_true.shape[0]:
            raise DataError(f"{r['run_dir']}/posterior_test.npz: theta has shape {post['theta'].shape}, "
                            f"expected (D={theta_true.shape[0]}, K)")
        rec = match_patterns(theta_true, post["theta"], threshold)
        p = ref.get((r["method"], int(r["n_train"])), {})
        rows.append({
            "artifact": "recovery", "dataset": dataset, "method": r["method"], "method_label": method_label(r["method"]),
            "n_train": int(r["n_train"]), "seed": int(r["seed"]), "n_true": rec.n_true,
            "n_learned": int(post["theta"].shape[1]), "recovered": rec.n_recovered,
            "mean_similarity": rec.mean_similarity, "min_similarity": float(rec.matched.min()),
            "threshold": threshold,
            "matched_similarities": ";".join(f"{v:.4f}" for v in rec.matched),
            "assignment": ";".join(str(int(v)) for v in rec.assignment),
            "paper_recovered": p.get("recovered"), "paper_statement": p.get("statement", ""),
            "paper_source": p.get("source", ""), "run_dir": r["run_dir"],
        })
    frame = pd.DataFrame(rows)
    order = frame.assign(_r=frame["method"].map(method_rank)).sort_values(["_r", "n_train", "seed"], ascending=[True, False, True])
    return order.drop(columns="_r").reset_index(drop=True)


def recovery_markdown(table: pd.DataFrame, digits: int = 3) -> str:
    keyed = []
    for (method, n_train), g in table.groupby(["method", "n_train"], sort=False):
        g = g.sort_values("seed")
        mean, _, n, ci = mean_ci(g["recovered"].to_numpy(float))
        sim_mean, _, sn, sim_ci = mean_ci(g["mean_similarity"].to_numpy(float))
        p = g.iloc[0]
        paper_count = "" if pd.isna(p["paper_recovered"]) else f"{int(p['paper_recovered'])}/{int(p['n_true'])}"
        statement = p["paper_statement"] if isinstance(p["paper_statement"], str) else ""
        keyed.append(((method_rank(method), -int(n_train)), [
            method_label(method), int(n_train),
            ", ".join(str(int(v)) for v in g["recovered"]) + f" (of {int(p['n_true'])})",
            format_ci(mean, ci, n, 2), format_ci(sim_mean, sim_ci, sn, digits), paper_count, statement,
        ]))
    rows = [row for _, row in sorted(keyed, key=lambda kr: kr[0])]
    header = ["Method", "N_train", "recovered per seed", "recovered (mean ± CI)", "mean matched similarity",
              "paper recovered", "paper statement"]
    threshold = float(table["threshold"].iloc[0]) if len(table) else float("nan")
    dataset = table["dataset"].iloc[0] if len(table) else ""
    return (
        f"# Pattern recovery on {dataset} (paper Fig. 4; supplement Figs. 1-2)\n\n"
        "Learned columns are matched one-to-one to the true patterns (Hungarian algorithm) on the cosine "
        "similarity of p_ik = 1 − exp(−θ_ik); a true pattern counts as recovered when its matched similarity "
        f"is ≥ {threshold:g}. Paper counts are read from the text.\n" + CI_NOTE + "\n"
        + markdown_table(header, rows)
    )


# ------------------------------------------------------------------------------ reading tables back
def read_table(path: str | Path) -> pd.DataFrame:
    """A table CSV written here (any artifact), with its ``artifact`` column checked."""
    path = Path(path)
    try:
        frame = pd.read_csv(path, dtype={"seeds": str})
    except FileNotFoundError:
        raise DataError(f"{path}: table not found") from None
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as err:
        raise DataError(f"{path}: not a readable CSV ({err})") from None
    if "artifact" not in frame.columns or frame["artifact"].nunique() > 1:
        raise DataError(f"{path}: expected one 'artifact' column with a single value (fig3a, table4, fig5, recovery, fig3b)")
    return frame


def read_tables(paths: Sequence[str | Path]) -> dict[str, pd.DataFrame]:
    """Tables by artifact; several files of one artifact (e.g. two recovery tables) are concatenated."""
    parts: dict[str, list[pd.DataFrame]] = {}
    for path in paths:
        frame = read_table(path)
        if frame.empty:
            continue
        parts.setdefault(str(frame["artifact"].iloc[0]), []).append(frame)
    return {k: pd.concat(v, ignore_index=True) for k, v in parts.items()}
