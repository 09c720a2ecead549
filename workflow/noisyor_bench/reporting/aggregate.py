"""Aggregate run directories into the paper's synthetic-data tables (Sections 4.2-4.4).

Every table puts our measurement, ``mean +- 95% CI over seeds``, beside the paper's number
(from ``paper_numbers.yaml``, the only place paper numbers are written down).  The CI is the
Student-t interval of the mean, ``t_{0.975, n-1} * s / sqrt(n)`` with the sample standard
deviation ``s`` (ddof=1); a single seed has no CI (shown as ``n=1``).

Machine-readable CSVs keep, per cell and metric, ``<m>_mean, <m>_std, <m>_n, <m>_ci95`` and
``<m>_values`` (the per-seed values as ``seed:value;seed:value``), so :mod:`.claims` can form
paired per-seed differences from the written tables alone.  Every table has an ``artifact``
column naming what it is (``fig3a``, ``table4``, ``fig5``, ``recovery``, ``fig3b``).

Convergence (issue 12): every summary row carries ``n_runs`` (runs in the cell) and
``n_converged`` (runs whose ``metrics.json`` does not say ``converged: false``; ``null`` --
no training budget to converge, e.g. SVI/LB-CDI/UB-CDI optimised on the held-out set -- and
runs written before the key existed count as converged), so a verdict can say when it rests
on runs stopped by their budget.  Deterministic cells -- SVI, LB-CDI and UB-CDI in inference
mode, whose posterior does not depend on the seed -- are one setting, not a sample: their
row is marked ``deterministic`` and shows one value (the mean of the seeds' evaluations,
``<m>_n = 1``, no CI) instead of a zero-width interval.
"""

from __future__ import annotations

import copy
import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import yaml
from scipy import stats

from noisyor_bench.infra.errors import DataError, UserError
from noisyor_bench.infra.io import read_json, write_text_atomic

# ------------------------------------------------------------------------------ constants
METHOD_ORDER: tuple[str, ...] = ("avi", "acp", "acp-sg", "svi", "lb-cdi", "ub-cdi")
METHOD_LABELS: dict[str, str] = {
    "avi": "AVI",
    "acp": "ACP",
    "acp-sg": "ACP-SG",
    "svi": "SVI",
    "lb-cdi": "LB-CDI",
    "ub-cdi": "UB-CDI",
}
TABLE4_METHODS: tuple[str, ...] = ("avi", "svi", "lb-cdi", "acp")  # the paper's column order

REQUIRED_KEYS: tuple[str, ...] = ("experiment", "dataset", "method", "n_train", "seed")
IDENTITY_KEYS: tuple[str, ...] = (*REQUIRED_KEYS, "mode", "n_test", "device", "threads")
METRIC_KEYS: tuple[str, ...] = (
    "nelbo",
    "f1",
    "em",
    "exact_nll",
    "exact_elbo",
    "exact_nelbo",
    "exact_gap",
    "iw_nll",
    "train_seconds",
    "eval_seconds",
    "epochs",
)
RUN_KEYS: tuple[str, ...] = ("experiment", "dataset", "method", "n_train", "seed")
FIG3A_METRICS: tuple[str, ...] = ("nelbo", "f1", "em", "exact_nll", "exact_gap")
CI_LEVEL = 0.95
DEFAULT_MISSING_REASON = "not run in this profile"
DETERMINISTIC_IN_INFERENCE: tuple[str, ...] = ("svi", "lb-cdi", "ub-cdi")
"""Methods whose inference-mode posterior is a deterministic optimisation on the held-out rows
with the true model (no seed enters it; ``runs.NON_AMORTIZED``): one value per setting."""


# ------------------------------------------------------------------------------ paper numbers
@lru_cache(maxsize=1)
def _paper_numbers_cached() -> dict[str, Any]:
    text = (
        resources.files("noisyor_bench.reporting.acp")
        .joinpath("paper_numbers.yaml")
        .read_text(encoding="utf-8")
    )
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


def wilson_interval(successes: int, n: int, level: float = CI_LEVEL) -> tuple[float, float]:
    """Wilson score interval of a binomial proportion ``successes / n`` at confidence ``level``.

    ``(p + z²/2n ± z·sqrt(p(1-p)/n + z²/4n²)) / (1 + z²/n)`` with ``z`` the normal quantile
    ``Φ⁻¹((1+level)/2)``: unlike the Wald interval it stays inside [0, 1] and does not collapse
    to a point at 0 or n successes, so 10/10 seeds gives (0.72, 1), not (1, 1).  ``(nan, nan)``
    for ``n = 0``.
    """
    if isinstance(successes, bool) or isinstance(n, bool) or int(successes) != successes or int(n) != n:
        raise ValueError(f"successes and n must be integers; got {successes!r}, {n!r}")
    k, n = int(successes), int(n)
    if n < 0 or not 0 <= k <= max(n, 0):
        raise ValueError(f"need 0 <= successes <= n; got successes={k}, n={n}")
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must lie in (0, 1); got {level}")
    if n == 0:
        return float("nan"), float("nan")
    z = float(stats.norm.ppf(0.5 + level / 2.0))
    p, z2 = k / n, z * z
    denom = 1.0 + z2 / n
    center = (p + z2 / (2 * n)) / denom
    half = z * math.sqrt(p * (1.0 - p) / n + z2 / (4 * n * n)) / denom
    # at k = 0 or k = n one end is exactly 0 or 1 (floating point may miss it by an ulp)
    low = 0.0 if k == 0 else max(0.0, center - half)
    high = 1.0 if k == n else min(1.0, center + half)
    return low, high


def format_ci(mean: float, ci: float, n: int, digits: int = 2) -> str:
    """``"14.02 ± 0.11"``; ``"14.02 (n=1)"`` for a single seed; ``""`` without data."""
    if (
        n is None
        or (isinstance(n, float) and math.isnan(n))
        or int(n) == 0
        or mean is None
        or math.isnan(mean)
    ):
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


def _read_json_record(path: Path, missing: str) -> Any:
    """A JSON file's content; DataError naming the file when it is missing (``missing`` says
    what to do) or not valid JSON."""
    try:
        return read_json(path)
    except FileNotFoundError:
        raise DataError(f"{path}: {missing}") from None
    except (OSError, json.JSONDecodeError) as err:
        raise DataError(f"{path}: not valid JSON ({err})") from None


def read_metrics(path: str | Path) -> dict[str, Any]:
    """One run's ``metrics.json`` as a flat dict, validated; errors name the file."""
    path = metrics_path(path)
    data = _read_json_record(path, "metrics.json not found (did the run finish?)")
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
        elif key == "convergence" and isinstance(value, dict):
            # the numbers behind `converged`, as convergence_<key> columns (convergence tables)
            row.update(
                {
                    f"convergence_{k}": v
                    for k, v in value.items()
                    if v is None or isinstance(v, (str, bool, *_NUMBER))
                }
            )
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
        "experiment": parts[-5],
        "dataset": parts[-4],
        "method": parts[-3],
        "n_train": int(m_n.group(1)),
        "seed": int(m_seed.group(1)),
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
def summarise(
    df: pd.DataFrame, by: Sequence[str], metrics: Sequence[str], level: float = CI_LEVEL
) -> pd.DataFrame:
    """Mean, std, n, CI half-width and per-seed values of ``metrics`` per group of ``by``.

    Columns: ``by``, ``n_seeds``, ``seeds``, ``n_runs``, ``n_converged``, ``deterministic``,
    then per metric ``<m>_mean, <m>_std, <m>_n, <m>_ci95, <m>_values``.  NaN metric values
    (null in metrics.json) are left out of that metric's statistics, so ``<m>_n`` may be
    smaller than ``n_seeds``.  A deterministic group (:func:`is_deterministic`) has ``<m>_n``
    = 1 and no std / CI; its ``<m>_values`` still list every seed's evaluation.
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
        row.update(convergence_counts(group))
        fixed = is_deterministic(group)
        row["deterministic"] = fixed
        for m in metrics:
            ok = group[m].notna()
            vals = group.loc[ok, m].astype(float).to_numpy()
            mean, std, n, ci = mean_ci(vals, level)
            if fixed and n > 0:
                std, n, ci = float("nan"), 1, float("nan")
            row.update({f"{m}_mean": mean, f"{m}_std": std, f"{m}_n": n, f"{m}_ci95": ci})
            row[f"{m}_values"] = format_values(group.loc[ok, "seed"], vals)
        rows.append(row)
    columns = [*by, "n_seeds", "seeds", "n_runs", "n_converged", "deterministic"] + [
        f"{m}_{s}" for m in metrics for s in ("mean", "std", "n", "ci95", "values")
    ]
    return pd.DataFrame(rows, columns=columns)


def convergence_counts(runs: pd.DataFrame) -> dict[str, int]:
    """``n_runs`` and ``n_converged`` of a group of runs: a run counts as converged unless its
    ``converged`` is false (null = no fit to converge; no column = runs from before the key)."""
    n = int(len(runs))
    if "converged" not in runs.columns:
        return {"n_runs": n, "n_converged": n}
    unconverged = int(sum(isinstance(v, (bool, np.bool_)) and not v for v in runs["converged"]))
    return {"n_runs": n, "n_converged": n - unconverged}


def is_deterministic(runs: pd.DataFrame) -> bool:
    """Whether every run of a group is an inference-mode SVI/LB-CDI/UB-CDI run (one setting)."""
    if runs.empty or "mode" not in runs.columns:
        return False
    return bool(((runs["mode"] == "inference") & runs["method"].isin(DETERMINISTIC_IN_INFERENCE)).all())


def _cell(row: Mapping[str, Any], metric: str, digits: int) -> str:
    """``mean ± CI`` (``(deterministic)`` for one setting), flagged when some runs did not converge."""
    mean = row.get(f"{metric}_mean", float("nan"))
    if _flag(row.get("deterministic")) and not _missing(mean):
        text = f"{float(mean):.{digits}f} (deterministic)"
    else:
        text = format_ci(mean, row.get(f"{metric}_ci95", float("nan")), row.get(f"{metric}_n", 0), digits)
    return text + convergence_mark(row) if text else text


def convergence_mark(row: Mapping[str, Any]) -> str:
    """`` [1/2 conv.]`` when fewer runs converged than ran (the table notes explain it), else ``""``."""
    n, c = row.get("n_runs"), row.get("n_converged")
    if _missing(n) or _missing(c) or int(c) >= int(n):
        return ""
    return f" [{int(c)}/{int(n)} conv.]"


def _missing(v: Any) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v))


def _flag(v: Any) -> bool:
    """A boolean cell (True/False, or 'True'/'False' read back from a CSV); NaN/None = False."""
    if _missing(v):
        return False
    if isinstance(v, str):
        return v.strip().lower() == "true"
    return bool(v)


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


def write_table(
    frame: pd.DataFrame,
    csv_path: str | Path | None,
    md_text: str | None = None,
    md_path: str | Path | None = None,
) -> None:
    """Write the CSV (machine-readable) and the Markdown (for people), atomically."""
    if csv_path is not None:
        write_text_atomic(csv_path, frame.to_csv(index=False, lineterminator="\n"))
    if md_path is not None and md_text is not None:
        write_text_atomic(md_path, md_text)


CI_NOTE = (
    "Cells: mean ± half-width of the 95% Student-t confidence interval of the mean over seeds "
    "(t_{0.975,n-1}·s/√n); '(n=1)' = a single seed, no interval; '(deterministic)' = SVI/LB-CDI/UB-CDI "
    "optimised on the held-out set, whose posterior does not depend on the seed: one value, no interval; "
    "'[c/n conv.]' = only c of the cell's n runs converged (the others stopped at their epoch limit still "
    "improving; tables/convergence_<experiment>.md).\n"
)


# ------------------------------------------------------------------------------ baselines
BASELINE_STATUS = "baseline"
"""``status`` of reference rows (independent Bernoulli, true model): never "measured", so
:func:`noisyor_bench.reporting.claims._values` and the plots' method lines leave them out."""
BASELINE_LABELS: dict[str, str] = {
    "indep-bernoulli": "independent Bernoulli",
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
    """``results/baselines/<dataset>.json`` files (``noisyor-bench baselines``) by dataset name."""
    out: dict[str, dict[str, Any]] = {}
    for path in paths or []:
        path = Path(path)
        record = _read_json_record(path, "baselines file not found (made by 'noisyor-bench baselines')")
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


def add_baseline_columns(table: pd.DataFrame, baselines: Mapping[str, Mapping[str, Any]]) -> pd.DataFrame:
    """``baseline_nelbo`` and ``below_baseline`` (mean NELBO > baseline) on every learning-mode row.

    Rows without a measurement (``status`` not "measured") or without a baseline get
    ``below_baseline = False``.
    """
    table = table.copy()
    base = [baseline_nelbo(baselines, r["dataset"], int(r["n_train"])) for r in table.to_dict("records")]
    table["baseline_nelbo"] = base
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

    def row(method: str, n_train: int, value: Any, n_scored: Any, note: str) -> dict[str, Any]:
        return {
            "artifact": artifact,
            "dataset": dataset,
            "n_train": int(n_train),
            "method": method,
            "method_label": BASELINE_LABELS[method],
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


def with_baselines(
    table: pd.DataFrame, baselines: Mapping[str, Mapping[str, Any]], artifact: str, learning: bool = True
) -> pd.DataFrame:
    """``table`` with baseline columns (learning mode) and the reference rows of each of its datasets appended."""
    if not baselines:
        return table
    if learning:
        table = add_baseline_columns(table, baselines)
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


def _mark_below(row: Mapping[str, Any], text: str) -> str:
    """A cell's text with the below-baseline mark when its row is flagged."""
    return f"{text} {BELOW_MARK}" if text and bool(row.get("below_baseline", False)) else text


def _num(value: Any, digits: int = 2) -> str:
    try:
        v = float(value)
    except (TypeError, ValueError):
        return ""
    return "" if math.isnan(v) else f"{v:.{digits}f}"


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
            _num(r["nelbo_mean"], digits),
            "" if pd.isna(r.get("n_test_scored")) else int(r["n_test_scored"]),
            r.get("note", ""),
        ]
        for r in ref.to_dict("records")
    ]
    return (
        "\n## Reference: the true model on the test split\n\n"
        "What the generating noisy-OR scores (nats per data point): its exact −log p(x) where 2^K states "
        "can be enumerated, else its importance-weighted bound (an upper bound on −log p(x)); and its NELBO "
        "under converged per-datapoint mean-field inference (LB-CDI's E-step, the posterior of the "
        "inference-mode LB-CDI runs): what mean-field learning could reach with the true parameters, an upper "
        "limit where the Jaakkola–Jordan bound is loose (docs/baselines.md).\n\n"
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
            _mark_below(r, _cell(r, "nelbo", digits)),
            _num(r["baseline_nelbo"], digits),
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


def _learning_rows(table: pd.DataFrame) -> pd.DataFrame:
    """The method rows of a table (reference rows left out)."""
    return table[table["status"] != BASELINE_STATUS] if "status" in table.columns else table


# ------------------------------------------------------------------------------ Fig. 3a
def _fig3a_order(n_train: int, method: str) -> tuple[int, int, int]:
    """Paper order: amortized rows by N_train descending, then the held-out-optimised (N=0) rows."""
    return (1 if int(n_train) == 0 else 0, -int(n_train), method_rank(method))


def fig3a_table(
    runs: pd.DataFrame,
    paper: Mapping[str, Any] | None = None,
    baselines: Mapping[str, Mapping[str, Any]] | None = None,
) -> pd.DataFrame:
    """Fig. 3a (inference on SYN-PATTERN): one row per (N_train, method), paper rows first-class.

    Rows the paper reports but the runs lack keep the paper's numbers with ``status = not run``.
    ``baselines`` (:func:`read_baselines`) adds reference rows (``status = baseline``): the
    independent Bernoulli at each amortized N_train and the true model's exact −log p(x).
    """
    paper = paper_numbers() if paper is None else paper
    dataset = single_value(runs, "dataset", "fig3a")
    if "mode" in runs and set(runs["mode"].dropna()) - {"inference"}:
        raise DataError(
            f"fig3a: expected inference-mode runs, found modes {sorted(set(runs['mode'].dropna()))}"
        )
    summary = summarise(runs, ["n_train", "method"], FIG3A_METRICS)
    measured = {(int(r["n_train"]), r["method"]): r for r in summary.to_dict("records")}
    ref = {(int(r["n_train"]), r["method"]): r for r in paper["fig3a"]["rows"]}
    keys = sorted(set(measured) | set(ref), key=lambda k: _fig3a_order(*k))
    rows = []
    for n_train, method in keys:
        p = ref.get((n_train, method), {})
        m = measured.get((n_train, method))
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
            row.update({k: v for k, v in m.items() if k not in ("n_train", "method")})
        rows.append(row)
    table = _with_stat_columns(pd.DataFrame(rows), FIG3A_METRICS)
    return with_baselines(table, baselines or {}, "fig3a", learning=False)


def _with_stat_columns(frame: pd.DataFrame, metrics: Sequence[str]) -> pd.DataFrame:
    """Make sure every stat column exists (a table of only 'not run' rows still has them)."""
    for col in ["n_seeds", "seeds", "n_runs", "n_converged", "deterministic"] + [
        f"{m}_{s}" for m in metrics for s in ("mean", "std", "n", "ci95", "values")
    ]:
        if col not in frame.columns:
            frame[col] = np.nan
    return frame


def fig3a_markdown(table: pd.DataFrame, digits: int = 2) -> str:
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
                    _num(r["nelbo_mean"], digits),
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
                _cell(r, "nelbo", digits),
                _paper(r["paper_nelbo"]),
                _cell(r, "f1", digits),
                _paper(r["paper_f1"]),
                _cell(r, "em", digits),
                _paper(r["paper_em"]),
                _cell(r, "exact_nll", digits),
                _cell(r, "exact_gap", digits),
                r["seeds"],
            ]
        )
    src = paper_numbers()["fig3a"]["source"]
    dataset = table["dataset"].iloc[0] if len(table) else ""
    return (
        f"# Fig. 3a: inference on {dataset} (paper {src['item']}, Section {src['section']})\n\n"
        "NELBO: held-out negative ELBO, nats per data point (lower is better); F1 (macro) and EM in percent "
        "(higher is better). exact −log p(x): exact held-out negative log-likelihood under the true model; "
        "exact gap = exact NELBO − exact −log p(x) = mean KL(q ‖ p(z|x)) ≥ 0. "
        "N_train '-': optimised directly on the held-out set (SVI, LB-CDI, UB-CDI). Reference rows: "
        "independent Bernoulli fitted on N_train training rows; true model (exact): −log p(x) of the fixed "
        "generative model (every row's model here).\n" + CI_NOTE + "\n" + markdown_table(header, rows)
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
    return with_baselines(_with_stat_columns(pd.DataFrame(rows), ["nelbo"]), baselines or {}, "table4")


def table4_markdown(table: pd.DataFrame, digits: int = 2) -> str:
    full, table = table, _learning_rows(table)
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
                _mark_below(r, _cell(r, "nelbo", digits)) if r["status"] == "measured" else r["note"]
            )
            cells.append(
                _paper(r["paper_nelbo"])
                or (f"– ({r['paper_note'].split(': ', 1)[-1]})" if r["paper_note"] else "")
            )
        if has_base:
            cells.append(_num(group["baseline_nelbo"].iloc[0], digits))
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
        + reference_markdown(full, digits)
    )


# ------------------------------------------------------------------------------ Fig. 5 data
def fig5_table(runs: pd.DataFrame, baselines: Mapping[str, Mapping[str, Any]] | None = None) -> pd.DataFrame:
    """Fig. 5 data: held-out NELBO per (dataset, N_train, method); the paper gives no numbers.

    With ``baselines``: a ``status`` column ("measured"), ``baseline_nelbo``/``below_baseline``
    and the reference rows (``status = baseline``) of every dataset.
    """
    summary = summarise(runs, ["dataset", "n_train", "method"], ["nelbo"])
    summary.insert(0, "artifact", "fig5")
    summary.insert(4, "method_label", summary["method"].map(method_label))
    order = summary.assign(_r=summary["method"].map(method_rank)).sort_values(["dataset", "n_train", "_r"])
    return with_baselines(order.drop(columns="_r").reset_index(drop=True), baselines or {}, "fig5")


def fig5_markdown(table: pd.DataFrame, digits: int = 2) -> str:
    full, table = table, _learning_rows(table)
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
            _mark_below(by_method[m], _cell(by_method[m], "nelbo", digits)) if m in by_method else ""
            for m in methods
        ]
        base = [_num(group["baseline_nelbo"].iloc[0], digits)] if has_base else []
        rows.append([dataset, int(n_train)] + cells + base)
    note = paper_numbers()["fig5"]["note"].strip()
    return (
        "# Fig. 5 data: held-out NELBO on SYN-RANDOM vs N_train\n\n"
        f"Paper: {note}\n\n"
        + CI_NOTE
        + (BELOW_NOTE if has_base else "")
        + "\n"
        + markdown_table(header, rows)
        + reference_markdown(full, digits)
    )


# ------------------------------------------------------------------------------ Fig. 3b data
def collect_curves(
    run_dirs: Sequence[str | Path], columns: Sequence[str] = ("ll_ub", "elbo")
) -> pd.DataFrame:
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
    return (
        out[["artifact", "dataset", "method", "n_train", "seed", "round", *columns]]
        .sort_values(["dataset", "method", "seed", "round"])
        .reset_index(drop=True)
    )


def fig3b_markdown(curves: pd.DataFrame, digits: int = 3) -> str:
    rows = []
    for (method, seed), g in curves.groupby(["method", "seed"], sort=True):
        g = g.sort_values("round")
        first, last = g.iloc[0], g.iloc[-1]
        rows.append(
            [
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


# ------------------------------------------------------------------------------ Fig. 4 / supp. Figs. 1-2
def paper_recovery_rows(
    dataset: str, paper: Mapping[str, Any] | None = None
) -> dict[tuple[str, int], dict[str, Any]]:
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
    from noisyor_bench.data.loading import read_dataset

    path = Path(path)
    arrays = read_dataset(path, need=("theta", "theta0"))
    sidecar = path.with_suffix(".json")
    meta = read_json(sidecar) if sidecar.exists() else {}
    shape = tuple(meta["image_shape"]) if meta.get("image_shape") else None
    return arrays["theta"], arrays["theta0"], shape, str(meta.get("name", path.stem))


def load_posterior(run_dir: str | Path) -> dict[str, np.ndarray]:
    """``posterior_test.npz`` of a run (``q``, ``theta``, ``theta0``, ``mu``)."""
    from noisyor_bench.experiments.rundir import load_posterior as load_run_posterior

    return load_run_posterior(run_dir, need=("theta",))


def recovery_table(
    runs: pd.DataFrame,
    theta_true: np.ndarray,
    threshold: float,
    paper: Mapping[str, Any] | None = None,
    baselines: Mapping[str, Mapping[str, Any]] | None = None,
) -> pd.DataFrame:
    """One row per run: patterns recovered (Hungarian match, :mod:`.recovery`) beside the paper's statement,
    the run's ``val_nelbo`` and ``all_recovered``, and its cell's success rate over seeds (Wilson
    interval) and selected run (:func:`with_recovery_summary`).

    With ``baselines``: the run's held-out ``nelbo``, the cell's ``baseline_nelbo`` and
    ``below_baseline`` (the cell's mean NELBO over seeds is worse than the baseline).
    """
    from noisyor_bench.evaluation.recovery import match_patterns

    dataset = single_value(runs, "dataset", "recovery")
    ref = paper_recovery_rows(dataset, paper)
    rows = []
    for r in runs.to_dict("records"):
        post = load_posterior(r["run_dir"])
        if post["theta"].ndim != 2 or post["theta"].shape[0] != theta_true.shape[0]:
            raise DataError(
                f"{r['run_dir']}/posterior_test.npz: theta has shape {post['theta'].shape}, "
                f"expected (D={theta_true.shape[0]}, K)"
            )
        rec = match_patterns(theta_true, post["theta"], threshold)
        p = ref.get((r["method"], int(r["n_train"])), {})
        rows.append(
            {
                "artifact": "recovery",
                "dataset": dataset,
                "method": r["method"],
                "method_label": method_label(r["method"]),
                "n_train": int(r["n_train"]),
                "seed": int(r["seed"]),
                "n_true": rec.n_true,
                "n_learned": int(post["theta"].shape[1]),
                "recovered": rec.n_recovered,
                "mean_similarity": rec.mean_similarity,
                "min_similarity": float(rec.matched.min()),
                "threshold": threshold,
                "matched_similarities": ";".join(f"{v:.4f}" for v in rec.matched),
                "assignment": ";".join(str(int(v)) for v in rec.assignment),
                "paper_recovered": p.get("recovered"),
                "paper_statement": p.get("statement", ""),
                "paper_source": p.get("source", ""),
                "run_dir": r["run_dir"],
                **convergence_counts(pd.DataFrame([r])),
                "val_nelbo": _finite_or_nan(r.get("val_nelbo")),
                "all_recovered": rec.n_recovered == rec.n_true,
            }
        )
    frame = pd.DataFrame(rows)
    if baselines:
        frame["nelbo"] = [float(r["nelbo"]) for r in runs.to_dict("records")]
        cell_mean = frame.groupby(["method", "n_train"])["nelbo"].transform("mean")
        frame["baseline_nelbo"] = [baseline_nelbo(baselines, dataset, int(n)) for n in frame["n_train"]]
        frame["below_baseline"] = (cell_mean > frame["baseline_nelbo"]).astype(bool)
    order = frame.assign(_r=frame["method"].map(method_rank)).sort_values(
        ["_r", "n_train", "seed"], ascending=[True, False, True]
    )
    return with_recovery_summary(order.drop(columns="_r").reset_index(drop=True))


def _finite_or_nan(value: Any) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        return float("nan")
    return v if math.isfinite(v) else float("nan")


RECOVERY_GROUP = ("dataset", "method", "n_train")
RECOVERY_SUMMARY_COLUMNS = (
    "n_seeds",
    "n_all_recovered",
    "success_rate",
    "success_ci_low",
    "success_ci_high",
    "mean_recovered",
    "selected_seed",
    "selected_val_nelbo",
    "selected_recovered",
    "selected_all_recovered",
)


def selected_run(group: pd.DataFrame) -> pd.Series | None:
    """The run the protocol picks among a cell's seeds: lowest finite validation NELBO
    (ties: lowest seed); ``None`` when no run has one (e.g. tables written before ``val_nelbo``)."""
    if "val_nelbo" not in group.columns:
        return None
    val = pd.to_numeric(group["val_nelbo"], errors="coerce")
    ok = group[np.isfinite(val.to_numpy(dtype=float))]
    if ok.empty:
        return None
    return ok.assign(_v=pd.to_numeric(ok["val_nelbo"])).sort_values(["_v", "seed"]).iloc[0].drop("_v")


def recovery_summary(table: pd.DataFrame, level: float = CI_LEVEL) -> pd.DataFrame:
    """One row per (dataset, method, N_train) of a recovery table: the success rate over seeds
    (share of seeds recovering every true pattern) with its Wilson interval, the mean recovered
    count, and the run selected on validation NELBO (:func:`selected_run`) with its outcome."""
    rows = []
    for key, g in table.groupby(list(RECOVERY_GROUP), sort=False):
        recovered = g["recovered"].astype(int).to_numpy()
        full = recovered == g["n_true"].astype(int).to_numpy()
        low, high = wilson_interval(int(full.sum()), len(g), level)
        pick = selected_run(g)
        rows.append(
            {
                **dict(zip(RECOVERY_GROUP, key)),
                "n_true": int(g["n_true"].iloc[0]),
                "n_seeds": int(len(g)),
                "n_all_recovered": int(full.sum()),
                "success_rate": float(full.mean()),
                "success_ci_low": low,
                "success_ci_high": high,
                "mean_recovered": float(recovered.mean()),
                "selected_seed": None if pick is None else int(pick["seed"]),
                "selected_val_nelbo": None if pick is None else float(pick["val_nelbo"]),
                "selected_recovered": None if pick is None else int(pick["recovered"]),
                "selected_all_recovered": None
                if pick is None
                else bool(int(pick["recovered"]) == int(pick["n_true"])),
            }
        )
    return pd.DataFrame(rows, columns=[*RECOVERY_GROUP, "n_true", *RECOVERY_SUMMARY_COLUMNS])


def with_recovery_summary(table: pd.DataFrame) -> pd.DataFrame:
    """The per-run recovery table with each cell's summary (:func:`recovery_summary`) on its
    rows, and ``selected`` marking the run chosen on validation NELBO."""
    summary = recovery_summary(table)
    out = table.drop(columns=[c for c in (*RECOVERY_SUMMARY_COLUMNS, "selected") if c in table.columns])
    out = out.merge(summary.drop(columns="n_true"), on=list(RECOVERY_GROUP), how="left", sort=False)
    out["selected"] = out["seed"].astype(float) == pd.to_numeric(out["selected_seed"], errors="coerce")
    return out


def format_success(n_all: int, n: int, low: float, high: float) -> str:
    """``"7/10 (70%; Wilson 95% CI 40–89%)"``."""
    if n == 0:
        return ""
    return f"{n_all}/{n} ({100 * n_all / n:.0f}%; Wilson 95% CI {100 * low:.0f}–{100 * high:.0f}%)"


def format_selected(row: Mapping[str, Any]) -> str:
    """``"seed 4: 8/8 (all)"`` for the run chosen on validation NELBO; ``"n/a"`` without one."""
    seed = row.get("selected_seed")
    if seed is None or (isinstance(seed, float) and math.isnan(seed)):
        return "n/a (no validation NELBO)"
    rec, n_true = int(row["selected_recovered"]), int(row["n_true"])
    return f"seed {int(seed)}: {rec}/{n_true}" + (" (all)" if rec == n_true else "")


def recovery_markdown(table: pd.DataFrame, digits: int = 3) -> str:
    has_base = "baseline_nelbo" in table.columns
    keyed = []
    summary = recovery_summary(table).set_index(["method", "n_train"])
    for (method, n_train), g in table.groupby(["method", "n_train"], sort=False):
        g = g.sort_values("seed")
        mean, _, n, ci = mean_ci(g["recovered"].to_numpy(float))
        sim_mean, _, sn, sim_ci = mean_ci(g["mean_similarity"].to_numpy(float))
        p = g.iloc[0]
        s = summary.loc[(method, n_train)]
        s = s.iloc[0] if isinstance(s, pd.DataFrame) else s
        paper_count = (
            "" if pd.isna(p["paper_recovered"]) else f"{int(p['paper_recovered'])}/{int(p['n_true'])}"
        )
        statement = p["paper_statement"] if isinstance(p["paper_statement"], str) else ""
        conv = f"{int(g['n_converged'].sum())}/{int(g['n_runs'].sum())}" if "n_converged" in g.columns else ""
        extra = []
        if has_base:
            nel_mean, _, nn, nel_ci = mean_ci(g["nelbo"].to_numpy(float))
            extra = [_mark_below(p, format_ci(nel_mean, nel_ci, nn, 2)), _num(p["baseline_nelbo"], 2)]
        keyed.append(
            (
                (method_rank(method), -int(n_train)),
                [
                    method_label(method),
                    int(n_train),
                    ", ".join(str(int(v)) for v in g["recovered"]) + f" (of {int(p['n_true'])})",
                    format_success(
                        int(s["n_all_recovered"]),
                        int(s["n_seeds"]),
                        float(s["success_ci_low"]),
                        float(s["success_ci_high"]),
                    ),
                    format_ci(mean, ci, n, 2),
                    format_selected({**s.to_dict(), "n_true": int(p["n_true"])}),
                    format_ci(sim_mean, sim_ci, sn, digits),
                    *extra,
                    conv,
                    paper_count,
                    statement,
                ],
            )
        )
    rows = [row for _, row in sorted(keyed, key=lambda kr: kr[0])]
    header = [
        "Method",
        "N_train",
        "recovered per seed",
        "seeds recovering all",
        "recovered (mean ± CI)",
        "selected on val. NELBO",
        "mean matched similarity",
        *(["NELBO", "indep. Bernoulli"] if has_base else []),
        "runs converged",
        "paper recovered",
        "paper statement",
    ]
    threshold = float(table["threshold"].iloc[0]) if len(table) else float("nan")
    dataset = table["dataset"].iloc[0] if len(table) else ""
    return (
        f"# Pattern recovery on {dataset} (paper Fig. 4; supplement Figs. 1-2)\n\n"
        "Learned columns are matched one-to-one to the true patterns (Hungarian algorithm) on the cosine "
        "similarity of p_ik = 1 − exp(−θ_ik); a true pattern counts as recovered when its matched similarity "
        f"is ≥ {threshold:g}. Paper counts are read from the text. *Seeds recovering all*: the share of "
        "seeds whose run recovers every true pattern, with its Wilson 95% interval. *Selected on val. NELBO*: "
        "the run the protocol would report, the seed with the lowest validation NELBO (test set untouched), "
        "and its count.\n"
        + CI_NOTE
        + (
            "NELBO: held-out NELBO of the learned model (nats per data point). " + BELOW_NOTE
            if has_base
            else ""
        )
        + "\n"
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
        raise DataError(
            f"{path}: expected one 'artifact' column with a single value (fig3a, table4, fig5, recovery, fig3b)"
        )
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
