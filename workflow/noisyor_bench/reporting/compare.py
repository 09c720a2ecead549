"""Compare two result sets cell by cell: a user's run against a published reference.

Every result table keeps, per cell and metric, ``<m>_mean``, ``<m>_ci95`` (the half-width of the
95% CI over seeds) and ``<m>_n`` (:mod:`noisyor_bench.reporting.tables`).  Two cells with the same
key (the table's identifying columns: artifact, dataset, N_train, method, ...) *agree* when the
95% interval of their difference contains 0.  The two runs are independent, so that interval's
half-width is ``sqrt(ci_a^2 + ci_b^2)`` (the normal approximation of Welch's interval from the
half-widths alone; the per-seed values of two different runs are not paired).

* A cell with one seed (or a deterministic cell: ``<m>_n = 1``) has no interval of its own and
  contributes 0 to the half-width: two deterministic cells agree only if equal to within
  :data:`EXACT_RTOL`; one deterministic cell agrees with a sampled one when it lies in the
  other's interval.
* A cell present on one side only is reported as ``missing`` (grids differ), never as agreement.
* Tables with one row per seed (recovery, classification, Table 5, t-SNE) are first summarised
  over seeds the way every other table is (:func:`summarise_seeds`).

Claims are compared by verdict (``claims.csv``: same / different verdict per claim id).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import pandas as pd

from noisyor_bench.infra.errors import DataError
from noisyor_bench.infra.integrity import verify_recorded_file
from noisyor_bench.infra.io import write_text_atomic
from noisyor_bench.reporting.statistics import mean_ci
from noisyor_bench.reporting.tables import format_ci, markdown_table

KEY_COLUMNS = (
    "artifact",
    "experiment",
    "dataset",
    "corpus",
    "n_train",
    "method",
    "K",
    "n_latent",
    "model",
    "variant",
    "size",
    "features",
)
"""Columns that identify a cell when a table has them (in this order)."""

EXACT_RTOL = 1e-6
"""Relative tolerance under which two single values (no interval on either side) are equal."""

PER_SEED_METRICS = (
    "recovered",
    "mean_similarity",
    "nelbo",
    "em",
    "mean_pmi",
    "mean_pmi_best",
    "knn_acc_2d",
    "knn_acc_q",
    "silhouette_2d",
)
"""Metric columns of tables with one row per seed (recovery, classification, Table 5, t-SNE):
summarised here over seeds as ``<m>_mean, <m>_ci95, <m>_n`` before the comparison."""

AGREE, DISAGREE, MISSING = "agree", "differ", "missing"
_METRIC = re.compile(r"^(?P<metric>.+)_mean$")
# Tables that are not per-cell results (claims are compared separately; the runtime tables are
# the machine's, and the comparison is this module's own output).
SKIPPED_TABLES = frozenset(
    {"claims", "claims_synthetic", "claims_text", "runtime", "runtime_jobs", "comparison"}
)


@dataclass(frozen=True)
class CellComparison:
    """One metric of one cell in both result sets."""

    table: str
    key: str
    metric: str
    ours: str
    reference: str
    difference: float
    half_width: float
    status: str  # agree | differ | missing
    reference_set: str = ""  # the reference folder's name (several references: compare_many)


def _num(value: object) -> float:
    try:
        out = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return math.nan
    return out


def _half(ci: float, n: float) -> float:
    """The CI half-width a cell contributes (0 for one seed / deterministic cells)."""
    if math.isnan(n) or n < 2 or math.isnan(ci):
        return 0.0
    return ci


def compare_cell(
    mean_a: float, ci_a: float, n_a: float, mean_b: float, ci_b: float, n_b: float
) -> tuple[float, float, str]:
    """(difference, half-width of its 95% interval, status) of one metric of one cell."""
    if math.isnan(mean_a) or math.isnan(mean_b):
        return math.nan, math.nan, MISSING
    diff = mean_a - mean_b
    half = math.hypot(_half(ci_a, n_a), _half(ci_b, n_b))
    if half == 0.0:
        scale = max(abs(mean_a), abs(mean_b), 1.0)
        return diff, 0.0, AGREE if abs(diff) <= EXACT_RTOL * scale else DISAGREE
    return diff, half, AGREE if abs(diff) <= half else DISAGREE


def _key_columns(frame: pd.DataFrame) -> list[str]:
    return [c for c in KEY_COLUMNS if c in frame.columns]


def _key_text(row: pd.Series, columns: Sequence[str]) -> str:
    return ", ".join(f"{c}={row[c]}" for c in columns)


def summarise_seeds(frame: pd.DataFrame) -> pd.DataFrame:
    """A table with one row per seed (a ``seed`` column, no ``<m>_mean``) as one row per cell with
    ``<m>_mean, <m>_ci95, <m>_n`` of :data:`PER_SEED_METRICS`; other tables unchanged."""
    if "seed" not in frame.columns or any(_METRIC.match(c) for c in frame.columns):
        return frame
    keys = _key_columns(frame)
    metrics = [m for m in PER_SEED_METRICS if m in frame.columns]
    if not keys or not metrics:
        return frame
    per_seed = frame.drop_duplicates(subset=[*keys, "seed"])  # e.g. Table 5: one row per topic
    rows = []
    for key, group in per_seed.groupby(keys, sort=False, dropna=False):
        row = dict(zip(keys, key if isinstance(key, tuple) else (key,)))
        for metric in metrics:
            values = pd.to_numeric(group[metric], errors="coerce").dropna().tolist()
            mean, _, n, ci = mean_ci(values)
            row.update({f"{metric}_mean": mean, f"{metric}_ci95": ci, f"{metric}_n": n})
        rows.append(row)
    return pd.DataFrame(rows)


def compare_tables(name: str, ours: pd.DataFrame, reference: pd.DataFrame) -> list[CellComparison]:
    """Every metric (``<m>_mean`` with ``<m>_ci95``) of every cell of one table in both sets."""
    ours, reference = summarise_seeds(ours), summarise_seeds(reference)
    keys = _key_columns(reference)
    if not keys or _key_columns(ours) != keys:
        return []
    metrics = [
        m.group("metric")
        for c in reference.columns
        if (m := _METRIC.match(c)) and f"{m.group('metric')}_ci95" in reference.columns
    ]
    ours_by_key = {_key_text(r, keys): r for _, r in ours.iterrows()}
    out = []
    for _, ref_row in reference.iterrows():
        key = _key_text(ref_row, keys)
        our_row = ours_by_key.get(key)
        for metric in metrics:
            rb = [_num(ref_row.get(f"{metric}_{s}")) for s in ("mean", "ci95", "n")]
            if math.isnan(rb[0]):
                continue  # the reference has no value for this cell (e.g. "not run")
            ra = (
                [_num(our_row.get(f"{metric}_{s}")) for s in ("mean", "ci95", "n")]
                if our_row is not None
                else [math.nan] * 3
            )
            diff, half, status = compare_cell(*ra, *rb)
            out.append(
                CellComparison(
                    table=name,
                    key=key,
                    metric=metric,
                    ours=format_ci(ra[0], ra[1], 0 if math.isnan(ra[2]) else int(ra[2])),
                    reference=format_ci(rb[0], rb[1], 0 if math.isnan(rb[2]) else int(rb[2])),
                    difference=diff,
                    half_width=half,
                    status=status,
                )
            )
    return out


def _read(path: Path) -> pd.DataFrame:
    verify_recorded_file(path)
    try:
        return pd.read_csv(path)
    except (OSError, ValueError, pd.errors.ParserError) as err:
        raise DataError(f"{path}: cannot read the table ({err})") from None


def _table_csvs(tables_dir: Path) -> dict[str, Path]:
    return {p.stem: p for p in sorted(tables_dir.glob("*.csv")) if p.stem not in SKIPPED_TABLES}


def compare_many(
    ours_dir: str | Path, reference_dirs_: Sequence[str | Path]
) -> tuple[list[CellComparison], pd.DataFrame]:
    """:func:`compare_results` against each reference in turn; every cell and claim row names its
    reference (``reference_set``: the folder's name)."""
    cells: list[CellComparison] = []
    claims: list[pd.DataFrame] = []
    for ref in reference_dirs_:
        name = Path(ref).name
        these, verdicts = compare_results(ours_dir, ref)
        cells += [replace(c, reference_set=name) for c in these]
        claims.append(verdicts.assign(reference_set=name))
    frame = pd.concat(claims, ignore_index=True) if claims else pd.DataFrame()
    return cells, frame


def compare_results(
    ours_dir: str | Path, reference_dir: str | Path
) -> tuple[list[CellComparison], pd.DataFrame]:
    """All cells of every table in ``<reference>/tables`` against ``<ours>/tables``, and the claims."""
    ours_tables, ref_tables = Path(ours_dir) / "tables", Path(reference_dir) / "tables"
    for path in (ours_tables, ref_tables):
        if not path.is_dir():
            raise DataError(f"{path}: no tables directory (expected a results directory with tables/)")
    ours = _table_csvs(ours_tables)
    cells: list[CellComparison] = []
    for name, ref_path in _table_csvs(ref_tables).items():
        reference = _read(ref_path)
        if name not in ours:
            cells += [c for c in compare_tables(name, reference.iloc[0:0], reference) if c.status == MISSING]
            continue
        cells += compare_tables(name, _read(ours[name]), reference)
    return cells, compare_claims(ours_tables / "claims.csv", ref_tables / "claims.csv")


def compare_claims(ours: Path, reference: Path) -> pd.DataFrame:
    """claim_id, our verdict, the reference's, whether they are the same (missing: absent on one side)."""
    columns = ["claim_id", "ours", "reference", "status"]
    if not reference.exists():
        return pd.DataFrame(columns=columns)
    for path in (reference, ours):
        if path.exists():
            verify_recorded_file(path)
    ref = pd.read_csv(reference, dtype=str, keep_default_na=False)
    mine = (
        pd.read_csv(ours, dtype=str, keep_default_na=False)
        if ours.exists()
        else pd.DataFrame(columns=["claim_id", "verdict"])
    )
    verdicts = dict(zip(mine["claim_id"], mine["verdict"]))
    rows = []
    for claim_id, verdict in zip(ref["claim_id"], ref["verdict"]):
        our = verdicts.get(claim_id)
        status = MISSING if our is None else ("same" if our == verdict else "different")
        rows.append([claim_id, our or "", verdict, status])
    return pd.DataFrame(rows, columns=columns)


def _summary(cells: Sequence[CellComparison], claims: pd.DataFrame) -> str:
    """One line: cells agreeing / differing / missing here, and claims with the same verdict."""
    counts = {s: sum(c.status == s for c in cells) for s in (AGREE, DISAGREE, MISSING)}
    claim_counts = claims["status"].value_counts().to_dict() if len(claims) else {}
    return (
        f"{counts[AGREE]} cells agree with the reference within their 95% intervals, {counts[DISAGREE]} differ, "
        f"{counts[MISSING]} missing here; claims: {claim_counts.get('same', 0)} same verdict, "
        f"{claim_counts.get('different', 0)} different, {claim_counts.get('missing', 0)} missing"
    )


def write_comparison(
    cells: Sequence[CellComparison],
    claims: pd.DataFrame,
    out_csv: str | Path,
    out_md: str | Path,
    reference: str,
) -> str:
    """comparison.csv (one row per cell and metric) and a Markdown report; returns the summary line
    (with several references, :func:`compare_many`: one line per reference set)."""
    frame = pd.DataFrame(
        [c.__dict__ for c in cells], columns=[f for f in CellComparison.__dataclass_fields__]
    )
    write_text_atomic(out_csv, frame.to_csv(index=False, lineterminator="\n"))
    sets = list(dict.fromkeys(c.reference_set for c in cells if c.reference_set))
    if "reference_set" in claims.columns:
        sets += [s for s in dict.fromkeys(claims["reference_set"]) if s not in sets]
    if sets:
        lines = [
            f"{name}: "
            + _summary([c for c in cells if c.reference_set == name], claims[claims["reference_set"] == name])
            for name in sets
        ]
        summary = "\n".join(lines)
        summary_md = "\n".join(f"- {line}" for line in lines)
    else:
        summary = summary_md = _summary(cells, claims)
    differ = [c for c in cells if c.status == DISAGREE]
    head = ["table", "cell", "metric", "ours", "reference", "difference", "± (95%)"]
    text = [
        f"# Comparison with the reference {reference}\n",
        f"{summary_md}.\n",
        "A cell agrees when the 95% interval of the difference, half-width sqrt(ci_ours^2 + ci_ref^2), "
        f"contains 0; cells with one seed on both sides must be equal to {EXACT_RTOL:g} (relative). "
        "Reference cells absent here (another grid's N_train, seeds or methods) are 'missing here'.\n",
        "## Cells that differ\n",
        markdown_table(
            (["reference set"] if sets else []) + head,
            [
                ([c.reference_set] if sets else [])
                + [
                    c.table,
                    c.key,
                    c.metric,
                    c.ours,
                    c.reference,
                    f"{c.difference:.3g}",
                    f"{c.half_width:.3g}",
                ]
                for c in differ
            ],
        )
        if differ
        else "None.\n",
        "\n## Claims\n",
        markdown_table(list(claims.columns), claims.values.tolist())
        if len(claims)
        else "No reference claims.\n",
    ]
    write_text_atomic(out_md, "\n".join(text) + "\n")
    return summary
