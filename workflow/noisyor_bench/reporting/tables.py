"""Generic result tables: summaries over seeds, cell formatting, writing and reading CSVs.

Every table puts our measurement, ``mean +- 95% CI over seeds`` (:mod:`.statistics`), in its
cells.  Machine-readable CSVs keep, per cell and metric, ``<m>_mean, <m>_std, <m>_n, <m>_ci95``
and ``<m>_values`` (the per-seed values as ``seed:value;seed:value``), so
:mod:`noisyor_bench.reporting.claims` can form paired per-seed differences from the written
tables alone.  Every table has an ``artifact`` column naming what it is.

Deterministic cells (:func:`noisyor_bench.reporting.collect.is_deterministic`) show one value
(the mean of the seeds' evaluations, ``<m>_n = 1``, no CI) instead of a zero-width interval;
cells where some runs did not converge are marked ``[c/n conv.]``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from noisyor_bench.infra.errors import DataError
from noisyor_bench.infra.integrity import verify_recorded_file
from noisyor_bench.infra.io import write_text_atomic
from noisyor_bench.reporting.collect import cell_settings, convergence_counts, is_deterministic
from noisyor_bench.reporting.statistics import CI_LEVEL, mean_ci


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


WINDOW_COLUMNS = ("max_last_window_nats", "max_projected_nats")
"""Per-cell convergence in nats (:func:`noisyor_bench.reporting.collect.convergence_counts`)."""


def summarise(
    df: pd.DataFrame, by: Sequence[str], metrics: Sequence[str], level: float = CI_LEVEL
) -> pd.DataFrame:
    """Mean, std, n, CI half-width and per-seed values of ``metrics`` per group of ``by``.

    Columns: ``by``, ``n_seeds``, ``seeds``, ``n_runs``, ``n_converged``, ``max_last_window_nats``
    and ``max_projected_nats`` (the largest last-window improvement of the group's runs, and how
    far it could move in a doubled budget, nats per data point: :data:`WINDOW_COLUMNS`), ``deterministic``,
    ``settings`` (the runs' one settings fingerprint, :func:`~noisyor_bench.reporting.collect.cell_settings`),
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
        row["settings"] = cell_settings(group)
        for m in metrics:
            ok = group[m].notna()
            vals = group.loc[ok, m].astype(float).to_numpy()
            mean, std, n, ci = mean_ci(vals, level)
            if fixed and n > 0:
                std, n, ci = float("nan"), 1, float("nan")
            row.update({f"{m}_mean": mean, f"{m}_std": std, f"{m}_n": n, f"{m}_ci95": ci})
            row[f"{m}_values"] = format_values(group.loc[ok, "seed"], vals)
        rows.append(row)
    columns = [
        *by,
        "n_seeds",
        "seeds",
        "n_runs",
        "n_converged",
        *WINDOW_COLUMNS,
        "deterministic",
        "settings",
    ] + [f"{m}_{s}" for m in metrics for s in ("mean", "std", "n", "ci95", "values")]
    return pd.DataFrame(rows, columns=columns)


def stat_cell(row: Mapping[str, Any], metric: str, digits: int) -> str:
    """``mean ± CI`` (``(deterministic)`` for one setting), flagged when some runs did not converge."""
    mean = row.get(f"{metric}_mean", float("nan"))
    if cell_flag(row.get("deterministic")) and not is_missing(mean):
        text = f"{float(mean):.{digits}f} (deterministic)"
    else:
        text = format_ci(mean, row.get(f"{metric}_ci95", float("nan")), row.get(f"{metric}_n", 0), digits)
    return text + convergence_mark(row) if text else text


def convergence_mark(row: Mapping[str, Any]) -> str:
    """`` [1/2 conv.]`` when fewer runs converged than ran (the table notes explain it), else ``""``."""
    n, c = row.get("n_runs"), row.get("n_converged")
    if is_missing(n) or is_missing(c) or int(c) >= int(n):
        return ""
    return f" [{int(c)}/{int(n)} conv.]"


def is_missing(v: Any) -> bool:
    """An empty cell: None, or NaN (how pandas reads an empty CSV field)."""
    return v is None or (isinstance(v, float) and math.isnan(v))


def cell_flag(v: Any) -> bool:
    """A boolean cell (True/False, or 'True'/'False' read back from a CSV); NaN/None = False."""
    if is_missing(v):
        return False
    if isinstance(v, str):
        return v.strip().lower() == "true"
    return bool(v)


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


def format_number(value: Any, digits: int = 2) -> str:
    try:
        v = float(value)
    except (TypeError, ValueError):
        return ""
    return "" if math.isnan(v) else f"{v:.{digits}f}"


def read_table(path: str | Path) -> pd.DataFrame:
    """A table CSV written here (any artifact), with its ``artifact`` column checked; refused
    when edited since it was made (its sha256 against its ``.prov.json``)."""
    path = Path(path)
    verify_recorded_file(path)
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
