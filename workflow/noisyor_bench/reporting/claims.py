"""Claims checked against aggregated tables: the verdict vocabulary, records and statistics.

A paper module (e.g. :mod:`noisyor_bench.reporting.acp.synthetic_claims`) writes one function
per claim: it reads the tables (by artifact, :func:`noisyor_bench.reporting.tables.read_tables`)
and returns a :class:`Claim` with a verdict in {reproduced, not reproduced, inconclusive,
budget-limited}.  The rules shared by every paper live here:

Verdicts come from 95% confidence intervals over seeds, never from point estimates alone:

* "A is lower than B": the CI of ``A - B`` -- from per-seed paired differences (one-sample t)
  when both sides have the same seeds and share the experimental cell, else Welch's
  unequal-variance t -- is *reproduced* if it lies entirely below 0, *not reproduced* if it
  lies entirely above 0, *inconclusive* otherwise (:func:`difference_ci`,
  :func:`verdict_below`).  With a single seed on either side there is no CI: inconclusive (n=1).
* Claims made of several comparisons are reproduced only if all parts are, not reproduced if
  any part is, inconclusive otherwise (:func:`combine`).
* A claim whose data are not in the grid's tables is inconclusive with "no data".
* Deterministic cells (the non-amortized methods optimised on the held-out set in inference
  mode: the same posterior for every seed; ``deterministic`` in the tables) are a constant,
  not a sample: the other side's CI is compared against that constant (one-sample t of its
  values minus the constant), never a Welch test on identical values; two constants differ
  exactly (:class:`Side`, :func:`compare`).
* **budget-limited** (issue 12, contract 3): a claim function decorated with
  :func:`budget_aware` collects the table rows it reads (:func:`table_side`,
  :func:`note_evidence`); when they include runs that did not converge
  (``n_converged < n_runs``) or learning-mode cells whose NELBO is worse than the
  independent-Bernoulli baseline (``below_baseline``) the claim gets this verdict instead of
  the statistical one, which is kept in ``statistical_verdict``; the counts are in ``numbers``
  and ``evidence``.  Tables without these columns count as converged / not below the baseline.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from noisyor_bench.experiments import papers
from noisyor_bench.infra.errors import DataError
from noisyor_bench.infra.io import write_text_atomic
from noisyor_bench.infra.provenance import verify_recorded_file
from noisyor_bench.reporting.statistics import CI_LEVEL
from noisyor_bench.reporting.tables import cell_flag, is_missing, markdown_table, parse_values

REPRODUCED = "reproduced"
NOT_REPRODUCED = "not reproduced"
INCONCLUSIVE = "inconclusive"
BUDGET_LIMITED = "budget-limited"
STATISTICAL_VERDICTS = (REPRODUCED, NOT_REPRODUCED, INCONCLUSIVE)
VERDICTS = (*STATISTICAL_VERDICTS, BUDGET_LIMITED)
NO_DATA = "no data"
BUDGET_RULE = (
    "; budget-limited instead when the rows behind it include unconverged runs or cells below the "
    "independent-Bernoulli baseline (the statistical verdict is kept in statistical_verdict)"
)


def paper_titles() -> dict[str, str]:
    """paper id -> section title of the claims table, in registry order (the order of the table);
    a study of ours beyond the papers says so in its title."""
    return {
        p.id: f"{'Beyond the papers: ' if p.beyond_the_papers else ''}{p.name}: {p.title}"
        for p in papers.papers()
    }


def paper_of(claim_id: str) -> str:
    """The paper of a claim id, by its registered prefix (:func:`noisyor_bench.experiments.papers.paper_of_claim`);
    an id with no registered prefix is an error, never filed under a paper by default."""
    return papers.paper_of_claim(claim_id)


@dataclass(frozen=True)
class Claim:
    """One checked claim: what the paper says and where, our verdict, the numbers, the rule."""

    claim_id: str
    statement: str
    location: str
    verdict: str
    numbers: str
    rule: str
    statistical_verdict: str = ""  # the verdict of the statistics alone (differs when budget-limited)
    evidence: str = ""  # runs converged and cells below the independent baseline among the rows read
    paper: str = ""  # a registered paper id; empty: read from the claim id's prefix (paper_of)

    def __post_init__(self) -> None:
        if not self.paper:
            object.__setattr__(self, "paper", paper_of(self.claim_id))
        if self.paper not in papers.ids():
            raise ValueError(f"claim {self.claim_id}: paper {self.paper!r} not in {list(papers.ids())}")
        if self.verdict not in VERDICTS:
            raise ValueError(f"claim {self.claim_id}: verdict {self.verdict!r} not in {VERDICTS}")
        if self.statistical_verdict not in ("", *STATISTICAL_VERDICTS):
            raise ValueError(
                f"claim {self.claim_id}: statistical verdict {self.statistical_verdict!r} "
                f"not in {STATISTICAL_VERDICTS}"
            )


CLAIM_COLUMNS = [f.name for f in fields(Claim)]
REQUIRED_CLAIM_COLUMNS = CLAIM_COLUMNS[:6]  # claims CSVs from before statistical_verdict / evidence


def write_claims(
    claims: Sequence[Claim],
    path: str | Path,
    md_path: str | Path | None = None,
    title: str = "Claims of the paper and verdicts",
) -> None:
    """claims.csv (one row per claim, columns :data:`CLAIM_COLUMNS`) and optionally a Markdown view."""
    ids = [c.claim_id for c in claims]
    dupes = sorted({i for i in ids if ids.count(i) > 1})
    if dupes:
        raise DataError(f"duplicate claim id(s) {dupes}")
    frame = pd.DataFrame([asdict(c) for c in claims], columns=CLAIM_COLUMNS)
    write_text_atomic(path, frame.to_csv(index=False, lineterminator="\n"))
    if md_path is not None:
        beyond = {p.id for p in papers.papers() if p.beyond_the_papers}
        of_papers = [c for c in claims if c.paper not in beyond]
        counts = {v: sum(c.verdict == v for c in of_papers) for v in VERDICTS}
        summary = ", ".join(f"{n} {v}" for v, n in counts.items())
        if len(of_papers) < len(claims):
            summary += f"; and {len(claims) - len(of_papers)} claims of our studies beyond the papers"
        sections = []
        for paper, paper_title in paper_titles().items():
            mine = [c for c in claims if c.paper == paper]
            if not mine:
                continue
            mine_counts = ", ".join(f"{n} {v}" for v in VERDICTS if (n := sum(c.verdict == v for c in mine)))
            rows = [
                [
                    c.claim_id,
                    c.verdict,
                    c.statistical_verdict,
                    c.evidence,
                    c.statement,
                    c.location,
                    c.numbers,
                    c.rule,
                ]
                for c in mine
            ]
            sections.append(
                f"## {paper_title}\n\n{len(mine)} claims: {mine_counts}.\n\n"
                + markdown_table(
                    [
                        "id",
                        "verdict",
                        "statistical verdict",
                        "evidence",
                        "paper's statement",
                        "where",
                        "numbers",
                        "rule",
                    ],
                    rows,
                )
            )
        text = (
            f"# {title}\n\n{len(of_papers)} claims: {summary}.\n\n"
            "budget-limited: the evidence includes runs stopped by their epoch limit while still improving, "
            "or cells worse than their reference baseline (noisy-OR learning: the independent-Bernoulli model); "
            "'statistical verdict' is "
            "what the confidence intervals alone say.\n\n" + "\n\n".join(sections)
        )
        write_text_atomic(md_path, text)


def read_claims(path: str | Path) -> list[Claim]:
    """Claims from a CSV written by :func:`write_claims` (e.g. to merge stages)."""
    path = Path(path)
    verify_recorded_file(path)  # a verdict edited by hand is refused, not merged
    try:
        frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    except FileNotFoundError:
        raise DataError(f"{path}: claims file not found") from None
    missing = [c for c in REQUIRED_CLAIM_COLUMNS if c not in frame.columns]
    if missing:
        raise DataError(f"{path}: claims CSV lacks column(s) {missing}")
    try:
        return [
            Claim(**{c: r[c] for c in CLAIM_COLUMNS if c in frame.columns}) for r in frame.to_dict("records")
        ]
    except ValueError as err:
        raise DataError(f"{path}: {err}") from None


@dataclass(frozen=True)
class Interval:
    """Estimate of a difference with its two-sided CI; ``low``/``high`` NaN when undefined."""

    estimate: float
    low: float
    high: float
    kind: str  # "paired" | "welch" | "n=1" | "none"
    n: str  # e.g. "5" (paired) or "5 vs 4"

    def text(self, digits: int = 2) -> str:
        if math.isnan(self.estimate):
            return "no data"
        if math.isnan(self.low):
            return f"{self.estimate:+.{digits}f} (no CI: n={self.n})"
        return f"{self.estimate:+.{digits}f} [{self.low:+.{digits}f}, {self.high:+.{digits}f}] ({self.kind}, n={self.n})"


def _welch(groups: Sequence[tuple[float, np.ndarray]], level: float) -> tuple[float, float, float]:
    """Estimate, CI of ``sum_g c_g * mean_g`` for independent groups (Welch-Satterthwaite df)."""
    est = float(sum(c * g.mean() for c, g in groups))
    terms = [c * c * g.var(ddof=1) / g.size for c, g in groups]
    se2 = float(sum(terms))
    if se2 == 0.0:
        return est, est, est
    df = se2**2 / sum(t * t / (g.size - 1) for t, (_, g) in zip(terms, groups))
    h = float(stats.t.ppf(0.5 + level / 2.0, df) * math.sqrt(se2))
    return est, est - h, est + h


def contrast_ci(groups: Sequence[tuple[float, Mapping[int, float]]], level: float = CI_LEVEL) -> Interval:
    """CI of a linear contrast ``sum_g c_g * mean_g`` of independent groups of per-seed values (Welch)."""
    arrays = [(c, np.asarray(list(v.values()), dtype=np.float64)) for c, v in groups]
    n = " vs ".join(str(a.size) for _, a in arrays)
    if any(a.size == 0 for _, a in arrays):
        return Interval(float("nan"), float("nan"), float("nan"), "none", n)
    if any(a.size < 2 for _, a in arrays):
        est = float(sum(c * a.mean() for c, a in arrays))
        return Interval(est, float("nan"), float("nan"), "n=1", n)
    est, lo, hi = _welch(arrays, level)
    return Interval(est, lo, hi, "welch", n)


def difference_ci(
    a: Mapping[int, float], b: Mapping[int, float], paired: bool | None = None, level: float = CI_LEVEL
) -> Interval:
    """CI of ``mean(a) - mean(b)`` from per-seed values ``{seed: value}``.

    ``paired=None``: paired iff both sides have the same seeds (one-sample t on the per-seed
    differences); ``paired=True`` pairs the common seeds; ``paired=False``: Welch.
    """
    if not a or not b:
        return Interval(float("nan"), float("nan"), float("nan"), "none", f"{len(a)} vs {len(b)}")
    if paired is None:
        paired = set(a) == set(b)
    if not paired:
        return contrast_ci([(1.0, a), (-1.0, b)], level)
    common = sorted(set(a) & set(b))
    d = np.asarray([a[s] - b[s] for s in common], dtype=np.float64)
    if d.size == 0:
        return Interval(float("nan"), float("nan"), float("nan"), "none", "0 paired")
    est = float(d.mean())
    if d.size < 2:
        return Interval(est, float("nan"), float("nan"), "n=1", "1")
    h = float(stats.t.ppf(0.5 + level / 2.0, d.size - 1) * d.std(ddof=1) / math.sqrt(d.size))
    return Interval(est, est - h, est + h, "paired", str(d.size))


def verdict_below(iv: Interval, bound: float = 0.0) -> str:
    """Claim "difference < bound": reproduced if the CI is entirely below, not if entirely above."""
    if math.isnan(iv.low) or math.isnan(iv.high):
        return INCONCLUSIVE
    if iv.high < bound:
        return REPRODUCED
    if iv.low > bound:
        return NOT_REPRODUCED
    return INCONCLUSIVE


def verdict_above(iv: Interval, bound: float = 0.0) -> str:
    """Claim "difference > bound": reproduced if the CI is entirely above, not if entirely below."""
    if math.isnan(iv.low) or math.isnan(iv.high):
        return INCONCLUSIVE
    if iv.low > bound:
        return REPRODUCED
    if iv.high < bound:
        return NOT_REPRODUCED
    return INCONCLUSIVE


def combine(verdicts: Iterable[str]) -> str:
    """All reproduced -> reproduced; any not reproduced -> not reproduced; else inconclusive."""
    vs = list(verdicts)
    if not vs:
        return INCONCLUSIVE
    if any(v == NOT_REPRODUCED for v in vs):
        return NOT_REPRODUCED
    return REPRODUCED if all(v == REPRODUCED for v in vs) else INCONCLUSIVE


RULE_LESS = (
    "reproduced if the 95% CI of the difference lies entirely on the claimed side of 0, not reproduced "
    "if entirely on the other side, else inconclusive (also when a side has one seed: no CI); "
    "CI from paired per-seed differences when both sides have the same seeds, else Welch; a deterministic "
    "side (held-out-optimised SVI/LB-CDI/UB-CDI) is a constant: one-sample t of the other side against it"
    + BUDGET_RULE
)


@dataclass
class Evidence:
    """What the table rows a claim read say about their runs: convergence and the baseline."""

    rows: dict[tuple[Any, ...], tuple[int, int, bool | None]] = field(default_factory=dict)

    def note(self, table: pd.DataFrame, n_values: int = 1) -> None:
        """Record ``table``'s rows (one per cell or per run); a row read twice counts once.
        ``n_values``: runs per row when the table has neither ``n_runs`` nor ``n_seeds``."""
        for label, r in table.iterrows():
            run = r.get("run_dir") if "run_dir" in table.columns else None
            key = (str(r.get("artifact", "")), run if isinstance(run, str) else label)
            n_runs = _count(r.get("n_runs"), _count(r.get("n_seeds"), n_values))
            n_conv = _count(r.get("n_converged"), n_runs)
            below = None if is_missing(r.get("below_baseline")) else cell_flag(r.get("below_baseline"))
            self.rows[key] = (n_runs, min(n_conv, n_runs), below)

    def merge(self, other: Evidence) -> None:
        self.rows.update(other.rows)

    @property
    def runs(self) -> int:
        return sum(n for n, _, _ in self.rows.values())

    @property
    def converged(self) -> int:
        return sum(c for _, c, _ in self.rows.values())

    @property
    def cells_with_baseline(self) -> int:
        return sum(b is not None for _, _, b in self.rows.values())

    @property
    def below_baseline(self) -> int:
        return sum(bool(b) for _, _, b in self.rows.values())

    @property
    def limited(self) -> bool:
        return self.converged < self.runs or self.below_baseline > 0

    def text(self) -> str:
        """``"8/10 runs converged; 1/4 cells below the independent baseline"`` ("" without rows)."""
        if not self.rows:
            return ""
        base = (
            f"{self.below_baseline}/{self.cells_with_baseline} cells below the independent baseline"
            if self.cells_with_baseline
            else "no baseline in the tables"
        )
        return f"{self.converged}/{self.runs} runs converged; {base}"

    def limits(self) -> str:
        """``"3 of 10 runs unconverged; 1 cell below the independent baseline"``."""
        parts = []
        if self.converged < self.runs:
            parts.append(f"{self.runs - self.converged} of {self.runs} runs unconverged")
        if self.below_baseline:
            cells = "cell" if self.below_baseline == 1 else "cells"
            parts.append(f"{self.below_baseline} {cells} below the independent baseline")
        return "; ".join(parts)


_COLLECTING: ContextVar[Evidence | None] = ContextVar("claim_evidence", default=None)
"""The evidence of the claim being checked (set by :func:`budget_aware` for the duration of
one claim function; ``None`` outside), so the table readers can note the rows they return."""


def note_evidence(rows: pd.DataFrame, n_values: int = 1) -> None:
    """Tell the claim being checked (if any) which table rows it rests on (``n_values``: runs
    per row when the table does not say)."""
    evidence = _COLLECTING.get()
    if evidence is not None and rows is not None and not rows.empty:
        evidence.note(rows, n_values)


def _count(value: Any, default: int) -> int:
    return default if is_missing(value) else int(value)


def with_evidence(claim: Claim, evidence: Evidence) -> Claim:
    """``claim`` with its evidence recorded; budget-limited (contract 3) when the evidence
    includes unconverged runs or cells below the independent baseline."""
    statistical = claim.statistical_verdict or claim.verdict
    if claim.numbers.startswith(NO_DATA):  # rows read before a missing part decide nothing
        return replace(claim, statistical_verdict=statistical, evidence="")
    if not evidence.limited or statistical not in STATISTICAL_VERDICTS:
        return replace(claim, statistical_verdict=statistical, evidence=evidence.text())
    numbers = f"{claim.numbers}; budget-limited: {evidence.limits()} (statistical verdict: {statistical})"
    return replace(
        claim,
        verdict=BUDGET_LIMITED,
        statistical_verdict=statistical,
        numbers=numbers,
        evidence=evidence.text(),
    )


def budget_aware(check: Callable[..., Claim]) -> Callable[..., Claim]:
    """Decorator of a claim function: collect the rows it reads, then :func:`with_evidence`."""

    @functools.wraps(check)
    def wrapper(*args: Any, **kwargs: Any) -> Claim:
        evidence = Evidence()
        token = _COLLECTING.set(evidence)
        try:
            claim = check(*args, **kwargs)
        finally:
            _COLLECTING.reset(token)
        outer = _COLLECTING.get()
        if outer is not None:  # a claim made of other claims rests on their rows too
            outer.merge(evidence)
        return with_evidence(claim, evidence)

    return wrapper


@dataclass(frozen=True)
class Side:
    """One side of a comparison: per-seed values, or a deterministic setting (a constant)."""

    values: dict[int, float]
    deterministic: bool = False

    @property
    def constant(self) -> float:
        return float(np.mean(list(self.values.values())))

    def __bool__(self) -> bool:
        return bool(self.values)


def _against_constant(values: Mapping[int, float], constant: float, level: float) -> Interval:
    """CI of ``mean(values) - constant``: the one-sample t interval of the values, shifted."""
    d = np.asarray(list(values.values()), dtype=np.float64) - constant
    est = float(d.mean())
    if d.size < 2:
        return Interval(est, float("nan"), float("nan"), "n=1", "1 vs constant")
    h = float(stats.t.ppf(0.5 + level / 2.0, d.size - 1) * d.std(ddof=1) / math.sqrt(d.size))
    return Interval(est, est - h, est + h, "vs constant", f"{d.size} vs 1")


def compare(a: Side, b: Side, paired: bool | None = None, level: float = CI_LEVEL) -> Interval:
    """CI of ``mean(a) - mean(b)``; a deterministic side is a constant (module docstring)."""
    if not a or not b:
        return Interval(
            float("nan"), float("nan"), float("nan"), "none", f"{len(a.values)} vs {len(b.values)}"
        )
    if a.deterministic and b.deterministic:
        est = a.constant - b.constant
        return Interval(est, est, est, "constants", "1 vs 1")
    if b.deterministic:
        return _against_constant(a.values, b.constant, level)
    if a.deterministic:
        iv = _against_constant(b.values, a.constant, level)
        return Interval(-iv.estimate, -iv.high, -iv.low, iv.kind, "1 vs " + iv.n.split(" vs ")[0])
    return difference_ci(a.values, b.values, paired, level)


def verdict_within(iv: Interval, margin: float) -> str:
    """Claim "|difference| is small" (equivalence): reproduced if the CI lies inside
    (-margin, margin), not reproduced if entirely outside [-margin, margin], else inconclusive."""
    if math.isnan(iv.low) or math.isnan(iv.high):
        return INCONCLUSIVE
    if -margin < iv.low and iv.high < margin:
        return REPRODUCED
    if iv.low > margin or iv.high < -margin:
        return NOT_REPRODUCED
    return INCONCLUSIVE


def table_side(table: pd.DataFrame | None, metric: str, **where: Any) -> Side:
    """Per-seed values of ``metric`` in the (single) measured row matching ``where`` (empty if
    absent / not run), marked deterministic when the row is; the row counts as evidence."""
    if table is None or table.empty:
        return Side({})
    mask = np.ones(len(table), dtype=bool)
    for k, v in where.items():
        if k not in table.columns:
            return Side({})
        mask &= (table[k] == v).to_numpy()
    rows = table[mask]
    if "status" in rows.columns:
        rows = rows[rows["status"].fillna("measured") == "measured"]
    if len(rows) > 1:
        raise DataError(f"{table['artifact'].iloc[0]} table: several rows match {where}")
    if rows.empty or f"{metric}_values" not in rows.columns:
        return Side({})
    values = parse_values(rows[f"{metric}_values"].iloc[0])
    if values:
        note_evidence(rows, len(values))
    fixed = (
        "deterministic" in rows.columns
        and not is_missing(rows["deterministic"].iloc[0])
        and cell_flag(rows["deterministic"].iloc[0])
    )
    return Side(values, fixed)


def table_values(table: pd.DataFrame | None, metric: str, **where: Any) -> dict[int, float]:
    """Per-seed values of ``metric`` in the (single) row matching ``where``; {} if absent/not run."""
    return table_side(table, metric, **where).values


def format_side(v: Mapping[int, float] | Side, digits: int = 2) -> str:
    """``"<mean over seeds> (n=<seeds>)"`` for a claim's numbers; ``"n/a"`` without values."""
    if isinstance(v, Side):
        if v.deterministic and v:
            return f"{v.constant:.{digits}f} (deterministic)"
        v = v.values
    return "n/a" if not v else f"{np.mean(list(v.values())):.{digits}f} (n={len(v)})"


def no_data_claim(claim_id: str, statement: str, location: str, rule: str, what: str) -> Claim:
    return Claim(claim_id, statement, location, INCONCLUSIVE, f"{NO_DATA}: {what}", rule)
