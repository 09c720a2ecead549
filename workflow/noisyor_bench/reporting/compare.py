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

Claims are compared by verdict (same / different per claim id, ``inconclusive (budget)`` told apart
from ``inconclusive``): this run's own verdicts (``claims_run.csv``) against the reference's claims
re-judged from its tables by today's code -- read from the evidence step's
``claims_sources.csv`` when given (the workflow: each reference judged once per run), else
judged here.

**The run as a reproduction check** (:func:`reproduction_line`): a reference cell is *shared* with
this run when both made it with the same settings and at least one common seed. The tables show a
cell's key (dataset, method, N_train, ...) and its seeds (``seeds``, ``<m>_values`` as
``seed:value``, or one row per seed), not its budget, search draws or evaluation settings: those
are the grid's. So a cell is shared when both result sets ran the same grid (ours: the results
directory's record; the reference's: the ``grid=`` of its README command), or when its table is
grid-independent (:data:`GRID_INDEPENDENT_TABLES`). A shared cell is compared over the common
seeds only, and *reproduced* when every metric agrees (95% intervals; exactly where deterministic).
Where both tables carry a cell's ``settings`` fingerprint (the runs' data, model size, budget,
selected hyperparameters and evaluation: :func:`noisyor_bench.reporting.collect.run_settings`),
the fingerprints decide instead of the grids: a quick run shares with an extended-grid reference
exactly the cells both made the same way. The test rows that score the learned models' held-out
``-log p(x)`` are no part of the fingerprint (an evaluation choice, not a training setting): a
row-scored metric (:data:`ROW_SCORED_METRICS`) is compared only where both cells scored the same
rows (``nll_rows_digest``, else ``nll_rows``), else it reads ``not compared: different NLL rows``
while the cell's training metrics are still compared.
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
from noisyor_bench.reporting.claims import verdict_label
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
NOT_COMPARED = "not compared"

ROW_SCORED_METRICS = frozenset({"nll"})
"""Metrics scored on a chosen set of test rows (the learned models' held-out ``-log p(x)``,
``nll_rows`` / ``nll_rows_digest``): compared only where both cells scored the same rows. The
rows are left out of the settings fingerprint (:data:`noisyor_bench.reporting.collect.NLL_ROWS_PLACEHOLDER`),
so two cells differing only in them still compare their training metrics."""
REPRODUCED, NOT_REPRODUCED = "reproduced", "not reproduced"

GRID_INDEPENDENT_TABLES = frozenset({"datasets"})
"""Tables whose cells do not depend on the grid's settings (the datasets are grid-independent:
config ``datasets``): shared between any two grids."""
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
    status: str  # agree | differ | missing | not compared (a row-scored metric on other rows)
    reference_set: str = ""  # the reference folder's name (several references: compare_many)
    reproduction: str = (
        ""  # reproduced | not reproduced (over the common seeds) | not shared / not compared: why
    )


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
        if "settings" in group.columns:
            values = set(group["settings"].dropna().astype(str)) - {""}
            row["settings"] = values.pop() if len(values) == 1 else ""
        for metric in metrics:
            values = pd.to_numeric(group[metric], errors="coerce").dropna().tolist()
            mean, _, n, ci = mean_ci(values)
            row.update({f"{metric}_mean": mean, f"{metric}_ci95": ci, f"{metric}_n": n})
        rows.append(row)
    return pd.DataFrame(rows)


def compare_tables(
    name: str, ours: pd.DataFrame, reference: pd.DataFrame, unshared: str | None = None
) -> list[CellComparison]:
    """Every metric (``<m>_mean`` with ``<m>_ci95``) of every cell of one table in both sets; with
    ``unshared`` None (same settings) each present cell also gets its reproduction over the seeds
    both sides ran, else ``not shared: <unshared>``."""
    common = _common_seed_rows(ours, reference)
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
            other_rows = _other_rows(our_row, ref_row) if metric in ROW_SCORED_METRICS else None
            if other_rows is not None and status != MISSING:
                status = NOT_COMPARED  # values on other rows: neither agree nor differ
            why_not = _row_unshared(our_row, ref_row, unshared) if our_row is not None else unshared
            if status == MISSING:
                reproduction = ""
            elif why_not is not None:
                reproduction = f"not shared: {why_not}"
            elif other_rows is not None:
                reproduction = f"{NOT_COMPARED}: {other_rows}"
            else:
                reproduction = _reproduction(name, key, metric, our_row, ref_row, common, status)
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
                    reproduction=reproduction,
                )
            )
    return out


def _settings(row: pd.Series) -> str:
    value = row.get("settings")
    return value.strip() if isinstance(value, str) else ""


def _row_unshared(our_row: pd.Series, ref_row: pd.Series, unshared: str | None) -> str | None:
    """None when a cell was made the same way in both sets: equal settings fingerprints where
    both rows have one, else the table's grid rule (``unshared``)."""
    mine, theirs = _settings(our_row), _settings(ref_row)
    if mine and theirs:
        return (
            None if mine == theirs else f"settings {mine} vs {theirs} (budget, search or evaluation differ)"
        )
    return unshared


def _rows_count(row: pd.Series) -> str:
    n = _num(row.get("nll_rows"))
    return "?" if math.isnan(n) else str(int(n))


def _other_rows(our_row: pd.Series | None, ref_row: pd.Series) -> str | None:
    """Why a row-scored metric (:data:`ROW_SCORED_METRICS`) is not compared: "different NLL rows
    (999 vs 100)" when the cells' rows fingerprints (``nll_rows_digest``) differ, or, where one
    table lacks them, their row counts (``nll_rows``); None when the rows are equal or unknown."""
    if our_row is None:
        return None
    digests = [r.get("nll_rows_digest") for r in (our_row, ref_row)]
    counts = [_rows_count(r) for r in (our_row, ref_row)]
    if all(isinstance(d, str) and d.strip() for d in digests):
        differ = digests[0].strip() != digests[1].strip()
    else:
        differ = "?" not in counts and counts[0] != counts[1]
    return f"different NLL rows ({counts[0]} vs {counts[1]})" if differ else None


def _seed_values(row: pd.Series | None, metric: str) -> dict[str, float] | None:
    """``<m>_values`` of a summarised row (``seed:value;...``) as seed -> value; None without it."""
    if row is None:
        return None
    text = row.get(f"{metric}_values")
    if not isinstance(text, str) or ":" not in text:
        return None
    out = {}
    for item in text.split(";"):
        seed, _, value = item.partition(":")
        out[seed.strip()] = _num(value)
    return out


def _common_seed_rows(
    ours: pd.DataFrame, reference: pd.DataFrame
) -> tuple[pd.DataFrame, pd.DataFrame] | None:
    """Tables with one row per seed: both restricted to the seeds both ran, then summarised."""
    if "seed" not in ours.columns or "seed" not in reference.columns:
        return None
    seeds = set(ours["seed"].astype(str)) & set(reference["seed"].astype(str))
    return (
        summarise_seeds(ours[ours["seed"].astype(str).isin(seeds)]),
        summarise_seeds(reference[reference["seed"].astype(str).isin(seeds)]),
    )


def _reproduction(
    table: str,
    key: str,
    metric: str,
    our_row: pd.Series,
    ref_row: pd.Series,
    common: tuple[pd.DataFrame, pd.DataFrame] | None,
    status: str,
) -> str:
    """Whether a shared cell's metric reproduces, over the seeds both sides ran: per-seed values
    (``<m>_values``) or rows (per-seed tables) restricted to the common seeds; a cell without
    either is compared as it stands when both name the same ``seeds``."""
    mine, theirs = _seed_values(our_row, metric), _seed_values(ref_row, metric)
    if mine is not None and theirs is not None:
        seeds = sorted(set(mine) & set(theirs))
        if not seeds:
            return "not shared: no common seed"
        a, b = mean_ci([mine[s] for s in seeds]), mean_ci([theirs[s] for s in seeds])
        _, _, verdict = compare_cell(a[0], a[3], a[2], b[0], b[3], b[2])
        return REPRODUCED if verdict == AGREE else NOT_REPRODUCED
    if common is not None:
        keys = _key_columns(common[1])
        rows = [{_key_text(r, keys): r for _, r in frame.iterrows()}.get(key) for frame in common]
        if rows[0] is None or rows[1] is None:
            return "not shared: no common seed"
        stats = [[_num(r.get(f"{metric}_{s}")) for s in ("mean", "ci95", "n")] for r in rows]
        _, _, verdict = compare_cell(*stats[0], *stats[1])
        return REPRODUCED if verdict == AGREE else NOT_REPRODUCED
    seeds = [str(r.get("seeds", "")) for r in (our_row, ref_row)]
    if seeds[0] != seeds[1] or seeds[0] in ("", "nan"):
        return "not shared: its seeds are not in the table"
    return REPRODUCED if status == AGREE else NOT_REPRODUCED


def _read(path: Path) -> pd.DataFrame:
    verify_recorded_file(path)
    try:
        return pd.read_csv(path)
    except (OSError, ValueError, pd.errors.ParserError) as err:
        raise DataError(f"{path}: cannot read the table ({err})") from None


def _table_csvs(tables_dir: Path) -> dict[str, Path]:
    return {p.stem: p for p in sorted(tables_dir.glob("*.csv")) if p.stem not in SKIPPED_TABLES}


def compare_many(
    ours_dir: str | Path, reference_dirs_: Sequence[str | Path], sources: str | Path | None = None
) -> tuple[list[CellComparison], pd.DataFrame]:
    """:func:`compare_results` against each reference in turn; every cell and claim row names its
    reference (``reference_set``: the folder's name). ``sources``: the evidence step's
    ``claims_sources.csv``, whose rows of each reference are its re-judged verdicts."""
    judged = read_sources(sources) if sources is not None else None
    cells: list[CellComparison] = []
    claims: list[pd.DataFrame] = []
    for ref in reference_dirs_:
        name = Path(ref).name
        these, verdicts = compare_results(ours_dir, ref, judged)
        cells += [replace(c, reference_set=name) for c in these]
        claims.append(verdicts.assign(reference_set=name))
    frame = pd.concat(claims, ignore_index=True) if claims else pd.DataFrame()
    return cells, frame


def read_sources(path: str | Path) -> pd.DataFrame:
    """The evidence step's ``claims_sources.csv`` (claim_id, source, verdict, ...); DataError
    naming the file when it is missing or lacks those columns."""
    path = Path(path)
    if not path.is_file():
        raise DataError(f"{path}: no claims sources table (the claims-evidence step writes it)")
    verify_recorded_file(path)
    frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    missing = {"claim_id", "source", "verdict"} - set(frame.columns)
    if missing:
        raise DataError(f"{path}: not a claims sources table (no column(s) {sorted(missing)})")
    return frame


def compare_results(
    ours_dir: str | Path, reference_dir: str | Path, sources: pd.DataFrame | None = None
) -> tuple[list[CellComparison], pd.DataFrame]:
    """All cells of every table in ``<reference>/tables`` against ``<ours>/tables``, and the claims:
    the reference's verdicts from ``sources`` (its rows ``reference/<folder>``) when they hold
    any, else re-judged here by today's claim code."""
    ours_tables, ref_tables = Path(ours_dir) / "tables", Path(reference_dir) / "tables"
    for path in (ours_tables, ref_tables):
        if not path.is_dir():
            raise DataError(f"{path}: no tables directory (expected a results directory with tables/)")
    ours = _table_csvs(ours_tables)
    grids = results_grid(ours_dir), reference_grid(reference_dir)
    cells: list[CellComparison] = []
    for name, ref_path in _table_csvs(ref_tables).items():
        reference = _read(ref_path)
        if name not in ours:
            cells += [c for c in compare_tables(name, reference.iloc[0:0], reference) if c.status == MISSING]
            continue
        cells += compare_tables(name, _read(ours[name]), reference, _unshared(name, *grids))
    run_claims = ours_tables / "claims_run.csv"  # this run's own verdicts (claims.csv: the headline)
    judged = None
    if sources is not None:
        rows = sources[sources["source"] == f"reference/{Path(reference_dir).name}"]
        judged = rows[["claim_id", "verdict"]].reset_index(drop=True) if len(rows) else None
    if judged is None:
        judged = rejudged_claims(ref_tables)
    # a folder holding no registered paper's claim tables cannot be re-judged: its stored verdicts
    return cells, compare_claims(
        run_claims if run_claims.exists() else ours_tables / "claims.csv",
        judged if len(judged) else ref_tables / "claims.csv",
    )


def rejudged_claims(tables_dir: Path) -> pd.DataFrame:
    """claim_id and verdict of every paper's claims judged by today's claim code from the tables
    in ``tables_dir`` (:func:`noisyor_bench.experiments.papers.judge`), never the verdicts a
    reference stored: those were judged by the code of its day."""
    from noisyor_bench.experiments import papers

    rows = [(c.claim_id, verdict_label(c)) for p in papers.papers() for c in papers.judge(p, tables_dir)]
    return pd.DataFrame(rows, columns=["claim_id", "verdict"])


def results_grid(results_dir: str | Path) -> str | None:
    """The grid a results directory was made with (its record, :mod:`noisyor_bench.infra.resultsdir`),
    else the ``grid=`` of its README command (a published reference), else None."""
    from noisyor_bench.infra.resultsdir import read_identity

    try:
        record = read_identity(results_dir)
    except DataError:
        record = None
    return record["grid"] if record else reference_grid(results_dir)


def reference_grid(reference_dir: str | Path) -> str | None:
    """The grid of a published reference: ``grid=<name>`` in its README's command, else None."""
    try:
        text = (Path(reference_dir) / "README.md").read_text(encoding="utf-8")
    except OSError:
        return None
    found = re.search(r"\bgrid=([A-Za-z0-9_.-]+)", text)
    return found.group(1) if found else None


def _unshared(table: str, ours: str | None, reference: str | None) -> str | None:
    """None when a table's cells share their settings in both result sets, else why not."""
    if table in GRID_INDEPENDENT_TABLES or (ours is not None and ours == reference):
        return None
    return (
        f"grid {ours or 'unknown'} vs {reference or 'unknown'}: the budget, search and evaluation "
        "settings are the grid's, not in the tables"
    )


def compare_claims(ours: Path, reference: Path | pd.DataFrame) -> pd.DataFrame:
    """claim_id, our verdict, the reference's, whether they are the same (missing: absent on one
    side). ``reference``: a claims CSV, or the reference's claims re-judged (:func:`rejudged_claims`)."""
    columns = ["claim_id", "ours", "reference", "status"]
    if isinstance(reference, pd.DataFrame):
        ref = reference
    elif not reference.exists():
        return pd.DataFrame(columns=columns)
    else:
        verify_recorded_file(reference)
        ref = pd.read_csv(reference, dtype=str, keep_default_na=False)
    if ours.exists():
        verify_recorded_file(ours)
    mine = (
        pd.read_csv(ours, dtype=str, keep_default_na=False)
        if ours.exists()
        else pd.DataFrame(columns=["claim_id", "verdict"])
    )
    verdicts = {r["claim_id"]: verdict_label(r) for r in mine.to_dict("records")}
    rows = []
    for claim_id, verdict in zip(ref["claim_id"], [verdict_label(r) for r in ref.to_dict("records")]):
        our = verdicts.get(claim_id)
        status = MISSING if our is None else ("same" if our == verdict else "different")
        rows.append([claim_id, our or "", verdict, status])
    return pd.DataFrame(rows, columns=columns)


def reproduction_counts(cells: Sequence[CellComparison]) -> dict[str, tuple[int, int]]:
    """reference set -> (cells reproduced, cells shared): a cell (table and key) is shared when
    any metric is compared over common seeds, reproduced when every compared metric is."""
    by_cell: dict[tuple[str, str, str], list[str]] = {}
    for c in cells:
        if c.reproduction in (REPRODUCED, NOT_REPRODUCED):
            by_cell.setdefault((c.reference_set, c.table, c.key), []).append(c.reproduction)
    sets = list(dict.fromkeys(c.reference_set for c in cells))
    return {
        name: (
            sum(all(v == REPRODUCED for v in vs) for (s, _, _), vs in by_cell.items() if s == name),
            sum(s == name for (s, _, _) in by_cell),
        )
        for name in sets
    }


def reproduction_line(cells: Sequence[CellComparison]) -> str:
    """ "this run reproduces X of Y shared reference cells (<set>: x of y; ...)"."""
    counts = reproduction_counts(cells)
    done = sum(x for x, _ in counts.values())
    shared = sum(y for _, y in counts.values())
    parts = "; ".join(f"{name or 'reference'}: {x} of {y}" for name, (x, y) in counts.items())
    return f"this run reproduces {done} of {shared} shared reference cells" + (f" ({parts})" if parts else "")


def read_reproduction_line(comparison_csv: str | Path) -> str | None:
    """:func:`reproduction_line` of a written ``comparison.csv`` (None: none, or written before the
    reproduction column)."""
    path = Path(comparison_csv)
    if not path.is_file():
        return None
    frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    if "reproduction" not in frame.columns:
        return None
    fields = CellComparison.__dataclass_fields__
    cells = [
        CellComparison(**{k: (v if k in fields else None) for k, v in row.items() if k in fields})  # type: ignore[arg-type]
        for row in frame.to_dict("records")
    ]
    return reproduction_line(cells)


def _summary(cells: Sequence[CellComparison], claims: pd.DataFrame) -> str:
    """One line: cells agreeing / differing / missing here, and claims with the same verdict."""
    counts = {s: sum(c.status == s for c in cells) for s in (AGREE, DISAGREE, MISSING, NOT_COMPARED)}
    claim_counts = claims["status"].value_counts().to_dict() if len(claims) else {}
    other_rows = f", {counts[NOT_COMPARED]} not compared (other NLL rows)" if counts[NOT_COMPARED] else ""
    return (
        f"{counts[AGREE]} cells agree with the reference within their 95% intervals, {counts[DISAGREE]} differ, "
        f"{counts[MISSING]} missing here{other_rows}; claims: {claim_counts.get('same', 0)} same verdict, "
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
    reproduced = reproduction_line(cells)
    summary = f"{summary}\n{reproduced}"
    text = [
        f"# Comparison with the reference {reference}\n",
        f"{summary_md}.\n",
        f"**The run as a reproduction check**: {reproduced}. A reference cell is shared when both "
        "made it with the same settings -- equal settings fingerprints (data, model size, budget, "
        "selected hyperparameters, evaluation) where both tables carry them, else the same grid or a "
        f"grid-independent table ({', '.join(sorted(GRID_INDEPENDENT_TABLES))}) -- and is compared "
        "over the seeds both ran; it is reproduced when every metric agrees within the 95% interval "
        "(exactly where deterministic). Column reproduction says why a cell is not shared. The "
        "learned models' held-out -log p(x) (nll) is compared only where both cells scored the same "
        "test rows; the rows are not part of the fingerprint, so a cell scored on other rows still "
        "compares its training metrics and reads 'not compared: different NLL rows' on nll.\n",
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
