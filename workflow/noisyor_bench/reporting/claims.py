"""Claims checked against aggregated tables: the verdict vocabulary, records and statistics.

A paper module (e.g. :mod:`noisyor_bench.reporting.acp.synthetic_claims`) writes one function
per claim: it reads the tables (by artifact, :func:`noisyor_bench.reporting.tables.read_tables`)
and returns a :class:`Claim` with a verdict in {reproduced, not reproduced, inconclusive,
not tested} and named qualifiers beside it.  The rules shared by every paper live here:

The verdict is the statistics of the claim *as the paper states it*, from 95% confidence
intervals over seeds, never from point estimates alone:

* "A is lower than B": the CI of ``A - B`` -- from per-seed paired differences (one-sample t)
  when both sides have the same seeds and share the experimental cell, else Welch's
  unequal-variance t -- is *reproduced* if it lies entirely below 0, *not reproduced* if it
  lies entirely above 0, *inconclusive* otherwise (:func:`difference_ci`,
  :func:`verdict_below`).  With a single seed on either side there is no CI: inconclusive (n=1).
* A t CI with fewer than 2 degrees of freedom decides nothing (:data:`MIN_DF`): a paired t on
  2 seeds, a one-sample t of 2 seeds against a constant (df 1) or a Welch t whose
  Welch-Satterthwaite df is below 2 gives *inconclusive*, never reproduced / not reproduced,
  with the ``low_power`` qualifier naming the df ("1 degree of freedom: n >= 3 seeds needed").
  The t quantile at df 1 is 12.7 and the sd rests on a single contrast: such verdicts flip
  between fresh runs of the same grid.  :class:`Interval` carries the df of its t quantile.
* Every decisive verdict records its **margin** (:attr:`Claim.margin`): how far the deciding
  CI lies from the decision boundary, in the claim's units ("0.12 nats"); for a claim of
  several parts, the smallest over the parts that gave the verdict; two constants: the
  absolute difference to the boundary (:meth:`Evidence.margin_of`).
* The claims CSV is a function of the tables alone: rows in the claim functions' fixed order,
  no timestamps, texts from sorted or insertion-ordered collections (never a set's order),
  floats formatted by Python (the same digits on every machine).
* Wall-clock times are not a function of the tables' statistics alone: they differ between
  runs of one commit. A speed claim keeps them -- the times, their ratios with CIs and
  spreads, the timed parts' margins, the hardware -- in :attr:`Claim.timing`, and its
  ``numbers`` say only the outcome as judged (:mod:`noisyor_bench.reporting.timing_claims`).
* Claims made of several comparisons are reproduced only if all parts are, not reproduced if
  any part is, not tested if no part was, inconclusive otherwise (:func:`combine`).
* A claim whose condition the grid never ran is **not tested** (:func:`no_data_claim`: numbers
  ``"not tested: <what>"``), never inconclusive.
* Deterministic cells (the non-amortized methods optimised on the held-out set in inference
  mode: the same posterior for every seed; ``deterministic`` in the tables) are a constant,
  not a sample: the other side's CI is compared against that constant (one-sample t of its
  values minus the constant), never a Welch test on identical values; two constants are judged
  exactly, by the sign of their difference (:class:`Side`, :func:`compare`).

**Qualifiers** are strings beside the verdict ("" = none) that never change it:
``protocol_deviation`` (how the grid differs from the paper's protocol), ``unconverged`` (runs
behind the claim that had not converged), ``weak_learning`` (learned models not better than the
independent-Bernoulli baseline: held-out -log p(x) paired per test row, CI over rows and seeds,
:func:`_weak`), ``bound_gap`` (a learned model's NELBO - NLL larger than the
claim's effect; never on inference-mode rows, where both sides score one true model:
:func:`note_mode`) and ``low_power`` (the CI cannot resolve the claim's margin at this n:
:func:`low_power` says the n that would, counted on the sampled side against a constant).  A claim function decorated with :func:`qualified` collects the table rows it reads
(:func:`table_side`, :func:`note_evidence`) and fills ``evidence`` and, unless the function set
them itself, the ``unconverged`` / ``weak_learning`` qualifiers from those rows.  Tables without
the convergence / baseline columns count as converged / not above the baseline.
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

from noisyor_bench.experiments import papers
from noisyor_bench.infra.errors import DataError
from noisyor_bench.infra.integrity import verify_recorded_file
from noisyor_bench.infra.io import write_text_atomic
from noisyor_bench.reporting.qualifier_names import QUALIFIERS
from noisyor_bench.reporting.statistics import CI_LEVEL, normal_quantile, t_quantile
from noisyor_bench.reporting.tables import cell_flag, is_missing, markdown_table, parse_values

REPRODUCED = "reproduced"
NOT_REPRODUCED = "not reproduced"
INCONCLUSIVE = "inconclusive"
NOT_TESTED = "not tested"
STATISTICAL_VERDICTS = (REPRODUCED, NOT_REPRODUCED, INCONCLUSIVE)
"""What confidence intervals can say; a claim whose condition was not run is :data:`NOT_TESTED`."""
VERDICTS = (*STATISTICAL_VERDICTS, NOT_TESTED)
DECISIVE = (REPRODUCED, NOT_REPRODUCED)
"""Verdicts that decide the claim: each records its :attr:`Claim.margin`."""
NO_DATA = NOT_TESTED
"""Prefix of the numbers of a claim the grid lacks the condition of (``"not tested: <what>"``)."""
LEGACY_VERDICTS = {"budget-limited"}
"""Verdicts of claims CSVs written before qualifiers were named: read back as their ``statistical_verdict``."""
QUALIFIER_RULE = (
    "; qualifiers beside the verdict (unconverged runs, learned models not better than the "
    "independent-Bernoulli baseline, protocol deviations) never change it"
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
    evidence: str = (
        ""  # descriptive: runs converged, cells above the independent baseline among the rows read
    )
    protocol_deviation: str = ""  # how the grid differs from the paper (search draws, seeds, N_train, data)
    unconverged: str = ""  # runs behind the claim that had not converged (judged in nats against the claim)
    weak_learning: str = ""  # learned models not better than the independent-Bernoulli baseline
    bound_gap: str = ""  # NELBO - NLL of the compared methods, where larger than the claim's effect
    low_power: str = ""  # the CI cannot resolve the claim's margin at this n; the n that would
    paper: str = ""  # a registered paper id; empty: read from the claim id's prefix (paper_of)
    margin: str = ""  # a decisive verdict: how far its CI lies from the decision boundary ("0.12 nats")
    budget: str = ""  # why a verdict the statistics would decide reads "inconclusive (budget)": the
    # deciding runs stopped before the compared quantity's plateau (the curve still moving by more
    # than the effect), with the reduced-budget statistic
    generators: str = ""  # the same claim judged on each generator of the paper's synthetic data the
    # grid ran ("syn-pattern: reproduced (margin 0.20 nats); syn-pattern-leak2: not reproduced ...")
    generator_sensitive: str = ""  # a qualifier: the verdict differs on a generator variant
    timing: str = ""  # wall-clock measurements behind a speed claim (machine- and load-dependent,
    # differ between runs of one commit): kept out of ``numbers`` so that numbers are deterministic

    def __post_init__(self) -> None:
        if not self.paper:
            object.__setattr__(self, "paper", paper_of(self.claim_id))
        if self.paper not in papers.ids():
            raise ValueError(f"claim {self.claim_id}: paper {self.paper!r} not in {list(papers.ids())}")
        if self.verdict not in VERDICTS:
            raise ValueError(f"claim {self.claim_id}: verdict {self.verdict!r} not in {VERDICTS}")
        for name in QUALIFIERS:
            if not isinstance(getattr(self, name), str):
                raise ValueError(f"claim {self.claim_id}: qualifier {name} must be a string ('' = none)")

    def qualifiers(self) -> dict[str, str]:
        """The qualifiers that are set, by name (in :data:`QUALIFIERS` order)."""
        return {name: getattr(self, name) for name in QUALIFIERS if getattr(self, name)}

    def tags(self) -> str:
        """The qualifiers as tags for people: ``"[unconverged: 2 of 10 runs] [low power: n>=12]"``."""
        return " ".join(f"[{name.replace('_', ' ')}: {text}]" for name, text in self.qualifiers().items())


BUDGET_LABEL = "inconclusive (budget)"


def verdict_label(claim: Claim | Mapping[str, Any]) -> str:
    """The verdict as shown to people: :data:`BUDGET_LABEL` where the claim's ``budget`` says
    its deciding runs stopped before their plateau, else the verdict (a claims CSV row also works)."""
    if isinstance(claim, Claim):
        budget, verdict = claim.budget, claim.verdict
    else:
        budget, verdict = claim.get("budget"), claim.get("verdict")
    return BUDGET_LABEL if isinstance(budget, str) and budget.strip() else str(verdict)


CLAIM_COLUMNS = [f.name for f in fields(Claim)]
REQUIRED_CLAIM_COLUMNS = CLAIM_COLUMNS[:6]  # claims CSVs from before the evidence / qualifier columns


def verdict_counts_text(claims: Sequence[Claim], zeros: bool = False) -> str:
    """``"12 reproduced, 3 not reproduced, 1 not tested"`` in :data:`VERDICTS` order (with ``zeros``:
    every verdict, also those no claim got), then how many claims carry a qualifier."""
    counts = {v: sum(c.verdict == v for c in claims) for v in VERDICTS}
    text = ", ".join(f"{n} {v}" for v, n in counts.items() if n or zeros)
    qualified_n = sum(bool(c.qualifiers()) for c in claims)
    return text + (f" ({qualified_n} with qualifiers)" if qualified_n else "")


CALIBRATION_TITLE = (
    "Calibration (checks of our own metric and pipeline, not claims of the paper; not counted)"
)
"""The heading of a paper's calibration rows (:attr:`noisyor_bench.experiments.papers.Paper.calibration_prefixes`)."""


def n_of_m_text(claims: Sequence[Claim]) -> str:
    """``"14 of 41 claims reproduced, 5 not reproduced, 8 inconclusive, 14 not tested"``: every
    verdict of :data:`VERDICTS`, zeros included (the answer's words, reporting.answer), then how
    many claims carry a qualifier."""
    counts = {v: sum(c.verdict == v for c in claims) for v in VERDICTS}
    noun = "claim" if len(claims) == 1 else "claims"
    rest = "".join(f", {n} {v}" for v, n in counts.items() if v != REPRODUCED)
    qualified_n = sum(bool(c.qualifiers()) for c in claims)
    rest += f" ({qualified_n} with qualifiers)" if qualified_n else ""
    return f"{counts[REPRODUCED]} of {len(claims)} {noun} {REPRODUCED}{rest}"


def calibration_text(checks: Sequence[Claim], lead: str = "") -> str:
    """``"calibration: 1 of 1 within tolerance"`` ('' without calibration rows), after ``lead``."""
    if not checks:
        return ""
    within = sum(c.verdict == REPRODUCED for c in checks)
    outside = sum(c.verdict == NOT_REPRODUCED for c in checks)
    other = len(checks) - within - outside
    text = f"calibration: {within} of {len(checks)} within tolerance"
    text += f", {outside} outside tolerance" if outside else ""
    text += f", {other} undecided" if other else ""
    return f"{lead}{text} (not counted)"


def write_claims(
    claims: Sequence[Claim],
    path: str | Path,
    md_path: str | Path | None = None,
    title: str = "Claims of the paper and verdicts",
) -> None:
    """claims.csv (one row per claim, columns :data:`CLAIM_COLUMNS`) and optionally a Markdown view:
    the verdict counts overall and per paper, then per paper one row per claim, its qualifiers as tags."""
    ids = [c.claim_id for c in claims]
    dupes = sorted({i for i in ids if ids.count(i) > 1})
    if dupes:
        raise DataError(f"duplicate claim id(s) {dupes}")
    frame = pd.DataFrame([asdict(c) for c in claims], columns=CLAIM_COLUMNS)
    write_text_atomic(path, frame.to_csv(index=False, lineterminator="\n"))
    if md_path is None:
        return
    beyond = {p.id for p in papers.papers() if p.beyond_the_papers}
    calibration = [c for c in claims if papers.is_calibration_claim(c.claim_id)]
    of_papers = [c for c in claims if c.paper not in beyond and c not in calibration]
    summary = n_of_m_text(of_papers)
    studies = [c for c in claims if c.paper in beyond and c not in calibration]
    summary += f"; and {len(studies)} claims of our studies beyond the papers" if studies else ""
    rows_ = "row" if len(calibration) == 1 else "rows"
    summary += f"; and {len(calibration)} calibration {rows_} (not counted)" if calibration else ""
    names = {p.id: p.name for p in papers.papers()}
    per_paper, sections = [], []
    for paper, paper_title in paper_titles().items():
        mine = [c for c in claims if c.paper == paper and c not in calibration]
        checks = [c for c in claims if c.paper == paper and c in calibration]
        if not mine and not checks:
            continue
        per_paper.append(f"- {names[paper]}: {n_of_m_text(mine)}{calibration_text(checks, '; ')}")
        rows = [
            [
                c.claim_id,
                _verdict_cell(c),
                _budget_tag(c),
                c.statement,
                c.location,
                numbers_cell(c),
                c.evidence,
                c.rule,
            ]
            for c in [*mine, *checks]
        ]
        rows, calibration_rows = rows[: len(mine)], rows[len(mine) :]
        header = ["id", "verdict", "qualifiers", "paper's statement", "where", "numbers", "evidence", "rule"]
        sections.append(
            f"## {paper_title}\n\n{n_of_m_text(mine)}.\n\n"
            + markdown_table(header, rows)
            + (
                f"\n\n### {CALIBRATION_TITLE}\n\n{calibration_text(checks)}.\n\n"
                + markdown_table(header, calibration_rows)
                if checks
                else ""
            )
        )
    text = (
        f"# {title}\n\nThe papers: {summary}.\n\n"
        + "\n".join(per_paper)
        + "\n\nThe verdict is what the 95% confidence intervals say about the claim as the paper states it "
        "(not tested: the grid lacks the paper's condition); beside a decisive verdict its margin, how far "
        "the deciding CI lies from the decision boundary. Qualifiers beside it never change it: "
        "[protocol deviation] how the grid differs from the paper's protocol, [unconverged] runs that "
        "had not converged, [weak learning] learned models not better than the independent-Bernoulli "
        "baseline, [bound gap] NELBO - NLL larger than the claim's effect, [low power] the n that "
        "would resolve the claim's margin, [generator sensitive] the verdict differs on a generator "
        "variant of the paper's synthetic data (each generator's verdict: 'per generator' in the "
        "numbers).\n\n" + "\n\n".join(sections)
    )
    write_text_atomic(md_path, text)


def numbers_cell(claim: Claim | Mapping[str, Any]) -> str:
    """A claim's numbers for people, its ``timing`` (if any) after them: ``"<numbers>; timing: <timing>"``
    (a claims CSV row also works; Markdown and HTML views only, never a CSV)."""
    if isinstance(claim, Claim):
        numbers, timing, generators = claim.numbers, claim.timing, claim.generators
    else:
        numbers, timing, generators = claim.get("numbers"), claim.get("timing"), claim.get("generators")
    numbers = "" if not isinstance(numbers, str) else numbers
    timing = timing.strip() if isinstance(timing, str) else ""
    generators = generators.strip() if isinstance(generators, str) else ""
    numbers += f"; per generator: {generators}" if generators else ""
    return f"{numbers}; timing: {timing}" if timing else numbers


def _verdict_cell(claim: Claim) -> str:
    """The verdict as shown (:func:`verdict_label`), its margin beside a decisive one:
    ``"reproduced (margin 0.12 nats)"``."""
    label = verdict_label(claim)
    return f"{label} (margin {claim.margin})" if claim.margin and label in DECISIVE else label


def _budget_tag(claim: Claim) -> str:
    """The claim's qualifier tags, its budget reason first."""
    return " ".join(t for t in (f"[budget: {claim.budget}]" if claim.budget else "", claim.tags()) if t)


def current_verdict(verdict: Any, statistical_verdict: Any = "", numbers: Any = "") -> Any:
    """A verdict of a claims CSV written before qualifiers were named, in today's vocabulary: budget-limited becomes
    its statistical verdict, an inconclusive "no data" claim is not tested; others unchanged."""
    if verdict in LEGACY_VERDICTS and statistical_verdict in STATISTICAL_VERDICTS:
        return statistical_verdict
    if verdict == INCONCLUSIVE and str(numbers).startswith("no data"):
        return NOT_TESTED
    return verdict


def _legacy_row(row: dict[str, str]) -> dict[str, str]:
    """A row of a claims CSV in today's vocabulary (:func:`current_verdict`)."""
    verdict = current_verdict(row.get("verdict"), row.get("statistical_verdict", ""), row.get("numbers", ""))
    return {**row, "verdict": verdict}


def read_claims(path: str | Path) -> list[Claim]:
    """Claims from a CSV written by :func:`write_claims` (e.g. to merge stages); an older CSV's
    ``statistical_verdict`` column is ignored once its verdict is translated (:func:`_legacy_row`)."""
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
            Claim(**{c: r[c] for c in CLAIM_COLUMNS if c in frame.columns})
            for r in map(_legacy_row, frame.to_dict("records"))
        ]
    except ValueError as err:
        raise DataError(f"{path}: {err}") from None


@dataclass(frozen=True)
class Interval:
    """Estimate of a difference with its two-sided CI; ``low``/``high`` NaN when undefined."""

    estimate: float
    low: float
    high: float
    kind: str  # "paired" | "welch" | "vs constant" | "constants" | "n=1" | "none"
    n: str  # e.g. "5" (paired) or "5 vs 4"
    se: float = float("nan")  # standard error of the estimate (NaN: none), for :func:`low_power`
    df: float = float("nan")  # degrees of freedom of the t quantile behind the CI
    # the table rows behind the two sides of ``estimate = plus - minus`` (:attr:`Side.rows`), for
    # the direction of the budget rule (:meth:`Evidence.budget`); () where the sides came from no table
    plus: tuple[tuple[Any, int], ...] = field(default=(), compare=False)
    minus: tuple[tuple[Any, int], ...] = field(default=(), compare=False)

    def text(self, digits: int = 2) -> str:
        if math.isnan(self.estimate):
            return "no data"
        if math.isnan(self.low):
            return f"{self.estimate:+.{digits}f} (no CI: n={self.n})"
        if self.kind == "constants":
            return f"{self.estimate:+.{digits}f} (exact: two deterministic settings)"
        return f"{self.estimate:+.{digits}f} [{self.low:+.{digits}f}, {self.high:+.{digits}f}] ({self.kind}, n={self.n})"


def _welch(
    groups: Sequence[tuple[float, np.ndarray]], level: float
) -> tuple[float, float, float, float, float]:
    """Estimate, CI, SE and df of ``sum_g c_g * mean_g`` for independent groups (Welch-Satterthwaite df)."""
    est = float(sum(c * g.mean() for c, g in groups))
    terms = [c * c * g.var(ddof=1) / g.size for c, g in groups]
    se2 = float(sum(terms))
    if se2 == 0.0:  # no spread on any side: the smallest df Welch-Satterthwaite can give
        return est, est, est, 0.0, float(min(g.size for _, g in groups) - 1)
    df = se2**2 / sum(t * t / (g.size - 1) for t, (_, g) in zip(terms, groups))
    h = float(t_quantile(0.5 + level / 2.0, df) * math.sqrt(se2))
    return est, est - h, est + h, math.sqrt(se2), float(df)


def contrast_ci(groups: Sequence[tuple[float, Mapping[int, float]]], level: float = CI_LEVEL) -> Interval:
    """CI of a linear contrast ``sum_g c_g * mean_g`` of independent groups of per-seed values (Welch)."""
    arrays = [(c, np.asarray(list(v.values()), dtype=np.float64)) for c, v in groups]
    n = " vs ".join(str(a.size) for _, a in arrays)
    if any(a.size == 0 for _, a in arrays):
        return Interval(float("nan"), float("nan"), float("nan"), "none", n)
    if any(a.size < 2 for _, a in arrays):
        est = float(sum(c * a.mean() for c, a in arrays))
        return Interval(est, float("nan"), float("nan"), "n=1", n)
    est, lo, hi, se, df = _welch(arrays, level)
    return Interval(est, lo, hi, "welch", n, se, df)


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
    se = float(d.std(ddof=1) / math.sqrt(d.size))
    h = float(t_quantile(0.5 + level / 2.0, d.size - 1) * se)
    return Interval(est, est - h, est + h, "paired", str(d.size), se, float(d.size - 1))


MIN_DF = 2.0
"""Fewest degrees of freedom of a t CI that decides a claim: with 1 (a paired t or a t against a
constant on 2 seeds, a Welch t whose Welch-Satterthwaite df is below 2) the t quantile is 12.7 and
the sd rests on one contrast, so the verdict flips between fresh runs of the same grid."""


def too_few_df(iv: Interval) -> bool:
    """Whether ``iv`` is a t CI with fewer than :data:`MIN_DF` degrees of freedom (decides nothing)."""
    return iv.df < MIN_DF  # NaN (no t behind the CI: constants, no CI) compares False


def _df_text(df: float) -> str:
    return "1 degree" if df == 1.0 else f"{df:.2g} degrees"


def sampled_n(iv: Interval) -> int | None:
    """The seeds in hand that a larger n would add to: a paired t's pairs, the sampled side of a
    t against a constant (the constant is one setting, never more seeds), a Welch t's smaller
    side; ``None`` when ``iv.n`` names no count."""
    sizes = [int(x) for x in iv.n.replace("vs", " ").split() if x.isdigit()]
    if not sizes:
        return None
    return max(sizes) if iv.kind == "vs constant" else min(sizes)


_SEEDS_NEEDED = {"welch": "seeds per side", "vs constant": "seeds on the sampled side"}
"""What the n of :func:`df_note` / :func:`_straddle_power` counts, by the CI's kind (else: seeds)."""


def df_note(iv: Interval) -> str:
    """The ``low_power`` text of a CI with too few degrees of freedom ("" otherwise):
    ``"1 degree of freedom: n >= 3 seeds needed (paired t, n=2)"``; against a constant the n
    counts the sampled side's seeds (df = n - 1), in a Welch t each side's."""
    if not too_few_df(iv):
        return ""
    names = {"paired": "paired t", "welch": "Welch t", "vs constant": "t against a constant"}
    kind = names.get(iv.kind, iv.kind)
    seeds = _SEEDS_NEEDED.get(iv.kind, "seeds")
    return f"{_df_text(iv.df)} of freedom: n >= 3 {seeds} needed ({kind}, n={iv.n})"


def _undecided(iv: Interval) -> str | None:
    """The verdict of an interval that decides nothing: not tested without data, inconclusive
    without a CI (n=1) or with a t CI of fewer than :data:`MIN_DF` degrees of freedom."""
    if iv.kind == "none" or math.isnan(iv.estimate):
        return NOT_TESTED
    if math.isnan(iv.low) or math.isnan(iv.high) or too_few_df(iv):
        return INCONCLUSIVE
    return None


def verdict_below(iv: Interval, bound: float = 0.0) -> str:
    """Claim "difference < bound": reproduced if the CI is entirely below, not if entirely above;
    two constants (deterministic sides) are judged by the sign alone, never inconclusive."""
    return _note_decision(iv, (bound,), _below(iv, bound))


def _below(iv: Interval, bound: float) -> str:
    if (undecided := _undecided(iv)) is not None:
        return undecided
    if iv.kind == "constants":
        return REPRODUCED if iv.estimate < bound else NOT_REPRODUCED
    if iv.high < bound:
        return REPRODUCED
    if iv.low > bound:
        return NOT_REPRODUCED
    return INCONCLUSIVE


def verdict_above(iv: Interval, bound: float = 0.0) -> str:
    """Claim "difference > bound": reproduced if the CI is entirely above, not if entirely below
    (two constants: by the sign alone)."""
    return _note_decision(iv, (bound,), _above(iv, bound))


def _above(iv: Interval, bound: float) -> str:
    if (undecided := _undecided(iv)) is not None:
        return undecided
    if iv.kind == "constants":
        return REPRODUCED if iv.estimate > bound else NOT_REPRODUCED
    if iv.low > bound:
        return REPRODUCED
    if iv.high < bound:
        return NOT_REPRODUCED
    return INCONCLUSIVE


def combine(verdicts: Iterable[str]) -> str:
    """All reproduced -> reproduced; any not reproduced -> not reproduced; none tested (or no
    parts) -> not tested; else (some part undecided or not tested) inconclusive."""
    vs = list(verdicts)
    if all(v == NOT_TESTED for v in vs):
        return NOT_TESTED
    if any(v == NOT_REPRODUCED for v in vs):
        return NOT_REPRODUCED
    return REPRODUCED if all(v == REPRODUCED for v in vs) else INCONCLUSIVE


DF_RULE = (
    "a t CI with fewer than 2 degrees of freedom (2 paired seeds, 2 seeds against a constant, a Welch "
    "df below 2) decides nothing: inconclusive, low power names the df"
)
"""The degrees-of-freedom rule (:data:`MIN_DF`) as stated in the rule texts of the claims."""
RULE_LESS = (
    "reproduced if the 95% CI of the difference lies entirely on the claimed side of 0, not reproduced "
    "if entirely on the other side, else inconclusive (also when a side has one seed: no CI); "
    "CI from paired per-seed differences when both sides have the same seeds, else Welch; a deterministic "
    "side (held-out-optimised SVI/LB-CDI/UB-CDI) is a constant: one-sample t of the other side against it, "
    "two constants by the sign of their difference; " + DF_RULE + QUALIFIER_RULE
)


@dataclass(frozen=True)
class RowEvidence:
    """One table row a claim read: its runs, how many converged, whether the cell's NELBO is above
    the independent-Bernoulli baseline (``None``: the table has no baseline), and who it is."""

    n_runs: int
    n_converged: int
    above_baseline: bool | None
    label: str = ""  # e.g. "avi N_train=30 syn-random-1" (from the row's method / n_train / dataset)
    last_window_nats: float = float("nan")  # max last-window improvement of the row's runs, nats/point
    projected_nats: float = float("nan")  # max move of the row's runs in a doubled budget, nats/point
    weak: str = ""  # why the cell's model is not better than the independent baseline ("" = it is)
    weak_by_bound: bool = False  # judged on the NELBO (a bound) because the table has no NLL
    # NELBO - NLL of the cell on the rows the NLL scored (mean over seeds), nats/point; NaN where the
    # table lacks the NELBO on those rows (the all-row NELBO minus a subset's NLL is not a gap)
    bound_gap: float = float("nan")
    cell: tuple[str, str, str, int | None] = ("", "", "", None)  # (artifact, dataset, method, n_train)
    n_seeds: int = 0  # seeds of the row (its n_seeds, else its values)
    mode: str = ""  # "inference" (the true model fixed) or "learning"; "" = unknown (learned)


WEAK_LEARNING_TOL = 0.01
"""nats per data point: a learned model is *weak* when its held-out NLL is not below the
independent-Bernoulli baseline's (same rows, paired per row) by more than this, at 95% over rows
and seeds (:func:`_weak`)."""


INFERENCE_MODE = "inference"
LEARNING_MODE = "learning"
MODES = (INFERENCE_MODE, LEARNING_MODE)
"""How a row's model came about: inference scores a fixed true model (only the posterior is
fitted), learning a model fitted to the training rows (its NELBO a bound on its own NLL)."""


def _text(value: Any) -> str:
    return "" if is_missing(value) else str(value)


def _float(value: Any) -> float:
    try:
        out = float(value)
    except (TypeError, ValueError):
        return float("nan")
    return out


def _weak(r: Mapping[str, Any], label: str) -> tuple[str, bool]:
    """(why the row's model is weak, whether judged on the bound) -- ("", False) when it is not.

    The rule, in order of the evidence the table holds:

    1. **Paired per row** (``nll_diff``, ``nll_diff_se``, ``nll_diff_df``: tables from runs that
       record their per-row ``-log p(x)``, :func:`noisyor_bench.reporting.acp.baselines.paired_nll_difference`):
       the learned model's ``-log p(x)`` minus the independent baseline's on each scored row,
       averaged over the seeds within the row and then over the rows. Weak when the 95% upper end
       of that mean is >= -WEAK_LEARNING_TOL. The CI is over rows *and* seeds
       (:func:`noisyor_bench.reporting.statistics.row_seed_mean`): the question is whether the
       cell's models beat independent pixels on data from the generating distribution, of which
       the scored rows are a sample (a fixed subset of the test split, or the split itself), and
       the seeds a sample of training runs. The per-row difference varies across rows by 0.2-0.5
       nats, so on 100 rows its standard error (0.014-0.025 nats) exceeds the tolerance: a CI over
       seeds alone on a fixed subset hides it, and can put the sign wrong. The text names the rows
       (``nll_diff_rows_label``: every exactly computable row where the runs score them all, or
       the sampled subset).
    2. **Old tables** (``nll`` with per-seed ``nll_values`` and ``baseline_nll`` on the same rows,
       no per-row values): the 95% upper end of NLL - baseline over the seeds (Student t; with
       one seed, the difference itself), the rows' sampling error not counted -- labelled so, with
       the number of rows it rests on (``nll_rows``).
    3. Without an NLL, the table's NELBO flag (``below_baseline``: mean NELBO >
       ``baseline_nelbo``), marked as judged on the bound.

    Where the table carries the paper's number (``paper_nelbo``), whether the paper is above the
    baseline too."""
    diff = _float(r.get("nll_diff"))
    nll, base = _float(r.get("nll")), _float(r.get("baseline_nll"))
    if not math.isnan(diff):
        text = _weak_paired(r, label, diff)
        if not text:
            return "", False
        bound = False
    elif not (math.isnan(nll) or math.isnan(base)):
        upper = _upper_over_seeds(r.get("nll_values"), nll) - base
        if upper < -WEAK_LEARNING_TOL:
            return "", False
        rows = _float(r.get("nll_rows"))
        rows_text = "rows not recorded" if math.isnan(rows) else f"the same {int(rows)} rows"
        text, bound = (
            f"{label}: NLL {nll:.3f} vs independent {base:.3f} ({rows_text}; 95% upper end of the "
            f"difference over seeds {upper:+.3f}; a table without per-row values: CI over seeds only, "
            "the rows' sampling error not counted)",
            False,
        )
    elif not is_missing(r.get("below_baseline")) and cell_flag(r.get("below_baseline")):
        nelbo, indep = _float(r.get("nelbo_mean")), _float(r.get("baseline_nelbo"))
        numbers = "" if math.isnan(nelbo) or math.isnan(indep) else f" {nelbo:.2f} vs independent {indep:.2f}"
        text = f"{label}: NELBO{numbers or ' above the independent baseline'}"
        bound = True
    else:
        return "", False
    paper, indep = _float(r.get("paper_nelbo")), _float(r.get("baseline_nelbo"))
    if not (math.isnan(paper) or math.isnan(indep)):
        side = "above it too" if paper > indep else "below it"
        text += f"; the paper's {paper:g} is {side}"
    return text, bound


def _weak_paired(r: Mapping[str, Any], label: str, diff: float) -> str:
    """Rule 1 of :func:`_weak`: "" when the 95% upper end of the paired per-row difference is
    below -WEAK_LEARNING_TOL, else ``"acp N_train=1000 syn-random-1: +0.006 nats worse than
    independent (<rows>; paired per row, 5 seeds; 95% CI [+0.001, +0.011])"``."""
    from noisyor_bench.reporting.statistics import RowSeedMean

    se, df = _float(r.get("nll_diff_se")), _float(r.get("nll_diff_df"))
    low, high = RowSeedMean(diff, se, df, 0, 0).interval(CI_LEVEL)
    if high < -WEAK_LEARNING_TOL:
        return ""
    n_rows = _float(r.get("nll_diff_rows"))
    rows = _text(r.get("nll_diff_rows_label")) or (
        f"{int(n_rows)} rows" if not math.isnan(n_rows) else "rows not recorded"
    )
    seeds = len(parse_values(r.get("nll_diff_values")))
    if diff >= 0:
        side = f"{diff:+.3f} nats worse than independent"
    else:
        side = f"{diff:+.3f} nats vs independent, better but not by {WEAK_LEARNING_TOL:g} at 95%"
    ci = "no CI" if low == high else f"95% CI [{low:+.3f}, {high:+.3f}]"
    who = f"{seeds} seed{'s' if seeds != 1 else ''}" if seeds else "seeds not recorded"
    return f"{label}: {side} ({rows}; paired per row, {who}; {ci})"


def _upper_over_seeds(values: Any, mean: float) -> float:
    """95% upper end of the mean of the per-seed ``values`` (Student t); ``mean`` itself with
    fewer than two seeds (no interval)."""
    seeds = np.asarray(list(parse_values(values).values()), dtype=np.float64)
    if seeds.size < 2:
        return mean
    half = t_quantile(0.5 + CI_LEVEL / 2.0, seeds.size - 1) * seeds.std(ddof=1) / math.sqrt(seeds.size)
    return float(seeds.mean() + half)


NATS_METRICS = frozenset({"nelbo", "nll", "exact_nll", "exact_nelbo", "iw_nll", "val_nelbo"})
PER_WORD_METRICS = frozenset({"elbo_per_word", "ll_is", "ll_paper", "gap_paper", "gap_is"})
"""Likelihood-type metrics in nats per word (APE): the budget rule weighs them against the
encoders' training curves in the same units (``reporting.ape.table1.encoder_windows``)."""


def _timing_metric(name: str) -> bool:
    """A wall-clock metric (``time_s``, ``train_minutes`` and their spreads): no training budget moves it."""
    return name.startswith(("time_s", "train_minutes"))


"""Metrics in nats per data point: a claim reading only these is judged against the runs'
projected improvement (the ``unconverged`` qualifier, :meth:`Evidence.unconverged`)."""


def row_key(label: Any, r: Mapping[str, Any], columns: Iterable[str]) -> tuple[str, Any]:
    """The key of a table row in :attr:`Evidence.rows`: (artifact, run folder or row label)."""
    run = r.get("run_dir") if "run_dir" in columns else None
    return (str(r.get("artifact", "")), run if isinstance(run, str) else label)


IMPROVES = {**{m: -1 for m in NATS_METRICS}, **{m: 1 for m in PER_WORD_METRICS}}
"""The sign of a likelihood metric's change as its runs train longer: a NELBO / NLL falls (-1),
APE's per-word likelihoods and their gaps to VI rise (+1). The budget rule's direction."""


def _name_movers(rows: Iterable[RowEvidence]) -> str:
    """The cells a doubled budget could move, largest move first: ``"avi N_train=30 by 0.31, acp
    N_train=30 by 0.2 and 2 more"`` (three named); "" for none."""
    ranked = sorted(rows, key=lambda r: -r.projected_nats)
    who = ", ".join(f"{r.label or 'a cell'} by {r.projected_nats:.2g}" for r in ranked[:3])
    return who + (f" and {len(ranked) - 3} more" if len(ranked) > 3 else "")


def _row_label(r: Mapping[str, Any]) -> str:
    parts = []
    for key, fmt in (("method", "{}"), ("n_train", "N_train={}"), ("dataset", "{}")):
        value = r.get(key)
        if not is_missing(value):
            parts.append(fmt.format(int(value) if key == "n_train" else value))
    return " ".join(parts)


@dataclass
class Evidence:
    """What the table rows a claim read say about their runs: convergence and the baseline."""

    rows: dict[tuple[Any, ...], RowEvidence] = field(default_factory=dict)
    metrics: set[str] = field(default_factory=set)  # the metrics of the sides read (table_side)
    decisions: list[tuple[Interval, tuple[float, ...]]] = field(default_factory=list)
    """(CI, decision boundaries) of every CI the claim judged (verdict_below / _above / _within)."""
    verdicts: list[tuple[Interval, tuple[float, ...], str]] = field(default_factory=list)
    """The same, each with the verdict it gave (the parts that decide the claim: :meth:`margin_of`)."""
    mode: str = ""
    """The mode of the rows the claim reads where their table has no ``mode`` column
    (:func:`note_mode`): "inference" scores a fixed true model, "learning" a learned one."""

    def note(self, table: pd.DataFrame, n_values: int = 1) -> None:
        """Record ``table``'s rows (one per cell or per run); a row read twice counts once.
        ``n_values``: runs per row when the table has neither ``n_runs`` nor ``n_seeds``."""
        for label, r in table.iterrows():
            key = row_key(label, r, table.columns)
            n_runs = _count(r.get("n_runs"), _count(r.get("n_seeds"), n_values))
            n_conv = _count(r.get("n_converged"), n_runs)
            above = None if is_missing(r.get("below_baseline")) else cell_flag(r.get("below_baseline"))
            name = _row_label(r)
            weak, by_bound = _weak(r, name or "a cell")
            self.rows[key] = RowEvidence(
                n_runs,
                min(n_conv, n_runs),
                above,
                name,
                _float(r.get("max_last_window_nats")),
                _float(r.get("max_projected_nats")),
                weak,
                by_bound,
                _float(r.get("nll_rows_nelbo")) - _float(r.get("nll")),
                (
                    str(r.get("artifact", "")),
                    str(r.get("dataset", "")),
                    str(r.get("method", "")),
                    None if is_missing(r.get("n_train")) else int(r.get("n_train")),
                ),
                _count(r.get("n_seeds"), n_values),
                _text(r.get("mode")) or self.mode,
            )

    def set_mode(self, mode: str) -> None:
        """The mode of the rows read (already, and from now on) whose table has no ``mode`` column."""
        self.mode = mode
        for key, row in self.rows.items():
            if not row.mode:
                self.rows[key] = replace(row, mode=mode)

    def merge(self, other: Evidence) -> None:
        self.rows.update(other.rows)
        self.metrics |= other.metrics
        self.decisions += other.decisions
        self.verdicts += other.verdicts

    def margin(self) -> float:
        """How far the claim's CIs are from flipping, in their units: per CI judged, the distance
        of its nearest edge to a boundary it does not straddle, or of its estimate to one it
        straddles; the smallest over the CIs (NaN without a CI)."""
        out = float("nan")
        for iv, bounds in self.decisions:
            if math.isnan(iv.low) or math.isnan(iv.high):
                continue  # no CI (n=1): nothing to move across
            for b in bounds:
                d = abs(iv.estimate - b) if iv.low <= b <= iv.high else min(abs(iv.low - b), abs(iv.high - b))
                out = d if math.isnan(out) else min(out, d)
        return out

    def unit(self) -> str:
        """ "nats" when every side read is a NELBO / NLL (:data:`NATS_METRICS`), "nats/word" when
        every one is an APE per-word likelihood (:data:`PER_WORD_METRICS`), else ""."""
        if self.metrics and self.metrics <= NATS_METRICS:
            return "nats"
        return "nats/word" if self.metrics and self.metrics <= PER_WORD_METRICS else ""

    def margin_of(self, verdict: str) -> float:
        """How far a decisive ``verdict`` is from the decision boundary, in the claim's units: over
        the parts that gave that verdict (the parts deciding the claim), the smallest distance of a
        part's CI to its nearest boundary (two constants: the absolute difference to the boundary);
        NaN when no part judged by a CI gave it."""
        out = float("nan")
        for iv, bounds, part in self.verdicts:
            if part != verdict or math.isnan(iv.low) or math.isnan(iv.high) or not bounds:
                continue
            d = min(min(abs(iv.low - b), abs(iv.high - b)) for b in bounds)
            out = d if math.isnan(out) else min(out, d)
        return out

    def margin_text(self, verdict: str) -> str:
        """:meth:`margin_of` for people, with its unit: ``"0.12 nats"`` ("" when there is none)."""
        return margin_text(self.margin_of(verdict), self.unit())

    def effect_of(self, verdict: str) -> float:
        """The effect behind a decisive ``verdict``: over the parts that gave it, the smallest
        distance of a part's estimate to its nearest decision boundary (NaN when none)."""
        out = float("nan")
        for iv, bounds, part in self.verdicts:
            if part != verdict or not bounds or math.isnan(iv.estimate):
                continue
            d = min(abs(iv.estimate - b) for b in bounds)
            out = d if math.isnan(out) else min(out, d)
        return out

    def _budget_movers(self, verdict: str, effect: float) -> tuple[list[RowEvidence], list[RowEvidence]]:
        """The cells a doubled budget could move by at least ``effect``, split into (toward, away):
        toward the deciding parts' boundaries (their move could flip the verdict) and away from
        them (a longer budget only strengthens it). A cell moves its side's value in its metric's
        :data:`IMPROVES` direction; a side's move changes ``plus - minus`` by that sign (minus:
        the opposite). Without the sides' rows on every deciding part (a statistic not built by
        :func:`compare` from :func:`table_side`), every such cell counts as toward."""
        movers = {
            key: r for key, r in self.rows.items() if r.projected_nats > 0 and r.projected_nats >= effect
        }
        parts = [
            (iv, bounds)
            for iv, bounds, part in self.verdicts
            if part == verdict and bounds and not math.isnan(iv.estimate)
        ]
        if not parts or any(not (iv.plus or iv.minus) for iv, _ in parts):
            return list(movers.values()), []
        toward: list[RowEvidence] = []
        away: list[RowEvidence] = []
        for key, r in movers.items():
            directions = set()  # the sign of the difference's move, per part the cell is a side of
            crossing = False
            for iv, bounds in parts:
                flips = {1 if b > iv.estimate else -1 for b in bounds if b != iv.estimate}
                for rows, side_sign in ((iv.plus, 1), (iv.minus, -1)):
                    for row, improves in rows:
                        if row == key:
                            move = side_sign * improves
                            directions.add(move)
                            crossing |= move == 0 or move in flips
            if crossing:
                toward.append(r)
            elif directions:
                away.append(r)
        return toward, away

    def _budget_unit(self) -> str:
        likelihoods = {m for m in self.metrics if not _timing_metric(m)}
        if likelihoods and likelihoods <= NATS_METRICS:
            return "nats"
        return "nats/word" if likelihoods and likelihoods <= PER_WORD_METRICS else ""

    def _named_movers(self, verdict: str, toward: bool) -> tuple[str, float, str]:
        """(the cells :meth:`_budget_movers` puts toward / away from the boundary, named by
        :func:`_name_movers`; the effect; the unit) of a decisive ``verdict``; ("", NaN, "") when
        none or the rule does not apply (an undecided verdict, a metric without a training curve)."""
        effect = self.effect_of(verdict)
        unit = self._budget_unit()
        if verdict not in DECISIVE or not unit or math.isnan(effect):
            return "", float("nan"), ""
        moving = self._budget_movers(verdict, effect)[0 if toward else 1]
        return _name_movers(moving), effect, unit

    def budget(self, verdict: str) -> str:
        """The budget rule of a decisive ``verdict`` on NELBOs / NLLs (nats) or APE's per-word
        likelihoods (nats/word, :data:`PER_WORD_METRICS`): the cells read whose runs
        stopped at their epoch limit still improving, by so much that a doubled budget could move
        them (:func:`~noisyor_bench.reporting.collect.projected_nats`) by at least the effect
        (:meth:`effect_of`) towards the decision boundary (:meth:`_budget_movers`) -- the
        comparison is not settled at this budget. The reason, with the statistic at this budget;
        "" when no cell could move that far that way."""
        who, effect, unit = self._named_movers(verdict, toward=True)
        if not who:
            return ""
        margin = margin_text(self.margin_of(verdict), self.unit())
        return (
            f"a doubled budget could move {who} {unit} >= the effect {effect:.2g} {unit}; at this "
            f"budget: {verdict}" + (f" (margin {margin})" if margin else "")
        )

    def budget_away(self, verdict: str) -> str:
        """The cells of a decisive ``verdict`` that a doubled budget could move by at least the
        effect, but only away from the decision boundary (:meth:`_budget_movers`): they do not
        hold the verdict back; this names them beside it ("" when none)."""
        who, _, unit = self._named_movers(verdict, toward=False)
        if not who:
            return ""
        return (
            f"a doubled budget could move {who} {unit}, away from the decision boundary "
            "(a longer budget would widen the effect, not flip it)"
        )

    def low_power(self) -> str:
        """The ``low_power`` qualifier of the CIs judged that straddle a boundary (:func:`low_power`);
        several: each, joined."""
        texts = [low_power(iv, *bounds, unit=self.unit()) for iv, bounds in self.decisions]
        return "; ".join(dict.fromkeys(t for t in texts if t))

    @property
    def runs(self) -> int:
        return sum(r.n_runs for r in self.rows.values())

    @property
    def converged(self) -> int:
        return sum(r.n_converged for r in self.rows.values())

    @property
    def cells_with_baseline(self) -> int:
        return sum(r.above_baseline is not None for r in self.rows.values())

    @property
    def below_baseline(self) -> int:
        """Cells whose NELBO is above (worse than) the independent baseline (the tables' ``below_baseline``)."""
        return sum(bool(r.above_baseline) for r in self.rows.values())

    def text(self) -> str:
        """``"8/10 runs converged; 1/4 cells above the independent baseline (NELBO)"`` ("" without rows)."""
        if not self.rows:
            return ""
        base = (
            f"{self.below_baseline}/{self.cells_with_baseline} cells above the independent baseline (NELBO)"
            if self.cells_with_baseline
            else "no baseline in the tables"
        )
        return f"{self.converged}/{self.runs} runs converged; {base}"

    def unconverged(self) -> str:
        """The ``unconverged`` qualifier (judged in nats against the claim): the runs the
        tables count as unconverged (at the epoch limit improving by >= 0.01 nats per data point
        per window, or with their best evaluation the last one), and -- for a claim on NELBOs /
        NLLs alone -- the cells whose runs' projected improvement in a doubled budget reaches
        the claim's margin (:meth:`margin`): ``"2 of 10 runs (avi N_train=30); doubled budget
        could move avi N_train=1000 by 0.31 nats >= margin 0.12"``."""
        parts = []
        if self.converged < self.runs:
            who = sorted({r.label for r in self.rows.values() if r.n_converged < r.n_runs and r.label})
            parts.append(
                f"{self.runs - self.converged} of {self.runs} runs" + (f" ({', '.join(who)})" if who else "")
            )
        margin = self.margin()
        if self.metrics and self.metrics <= NATS_METRICS and not math.isnan(margin):
            movers = [
                r
                for r in self.rows.values()
                if r.projected_nats > 0 and r.projected_nats >= margin  # NaN compares False
            ]
            if movers:
                parts.append(
                    f"a doubled budget could move {_name_movers(movers)} nats >= the claim's margin {margin:.2g}"
                )
        return "; ".join(parts)

    def weak_learning(self) -> str:
        """The ``weak_learning`` qualifier: per cell read, a learned model not better than the
        independent-Bernoulli baseline (:func:`_weak`: by its NLL paired per row where the table
        has it, by its NLL over seeds in older tables, else by its NELBO, marked "NELBO (bound) only")."""
        weak = sorted({r.weak for r in self.rows.values() if r.weak})
        if not weak:
            return ""
        cells = "cell" if len(weak) == 1 else "cells"
        text = f"{len(weak)} {cells} not better than the independent baseline: " + "; ".join(weak)
        if any(r.weak_by_bound for r in self.rows.values() if r.weak):
            text += " [NELBO (bound) only]"
        return text

    def bound_gap(self) -> str:
        """The ``bound_gap`` qualifier of a claim on NELBOs: where the tables have the NLL, the
        learned-model cells whose NELBO - NLL exceeds the claim's smallest |effect| (the bound's
        slack could decide the comparison). Inference-mode cells never carry it: both sides score
        the same true model, so their likelihood is one number and the NELBO gap between them is
        the compared quantity itself, not slack."""
        effects = [abs(iv.estimate) for iv, _ in self.decisions]
        if not effects or self.metrics != {"nelbo"}:
            return ""
        effect = min(effects)
        gaps = sorted(
            (
                (r.label or "a cell", r.bound_gap)
                for r in self.rows.values()
                if r.mode != INFERENCE_MODE and r.bound_gap > effect
            ),
            key=lambda x: -x[1],
        )
        if not gaps:
            return ""
        return (
            "NELBO − NLL "
            + ", ".join(f"{name} {gap:.2f}" for name, gap in gaps)
            + f" > |effect| {effect:.2f} nats"
        )


_COLLECTING: ContextVar[Evidence | None] = ContextVar("claim_evidence", default=None)
"""The evidence of the claim being checked (set by :func:`qualified` for the duration of
one claim function; ``None`` outside), so the table readers can note the rows they return."""


def note_mode(mode: str) -> None:
    """Tell the claim being checked (if any) the mode of the rows it reads whose table has no
    ``mode`` column (:data:`INFERENCE_MODE` or :data:`LEARNING_MODE`)."""
    if mode not in MODES:
        raise ValueError(f"mode {mode!r} not in {MODES}")
    evidence = _COLLECTING.get()
    if evidence is not None:
        evidence.set_mode(mode)


def _note_metric(metric: str) -> None:
    evidence = _COLLECTING.get()
    if evidence is not None:
        evidence.metrics.add(metric)


def _note_decision(iv: Interval, bounds: Sequence[float], verdict: str = "") -> str:
    """Tell the claim being checked (if any) that it judged ``iv`` against ``bounds`` and found
    ``verdict`` (the part's verdict, for the claim's :attr:`Claim.margin`); returns ``verdict``."""
    evidence = _COLLECTING.get()
    if evidence is not None and iv.kind != "none" and not math.isnan(iv.estimate):
        judged = (iv, tuple(float(b) for b in bounds))
        evidence.decisions.append(judged)
        evidence.verdicts.append((*judged, verdict))
    return verdict


def note_evidence(rows: pd.DataFrame, n_values: int = 1) -> None:
    """Tell the claim being checked (if any) which table rows it rests on (``n_values``: runs
    per row when the table does not say)."""
    evidence = _COLLECTING.get()
    if evidence is not None and rows is not None and not rows.empty:
        evidence.note(rows, n_values)


def _count(value: Any, default: int) -> int:
    return default if is_missing(value) else int(value)


def rows_unconverged() -> str:
    """The ``unconverged`` text of the rows the claim being checked has read so far ("" outside
    a claim): for a claim function that adds its own reason (a NUTS chain that barely moved)
    beside the runs' and must not replace theirs."""
    evidence = _COLLECTING.get()
    return evidence.unconverged() if evidence is not None else ""


def join_qualifiers(*texts: str) -> str:
    """One qualifier from several sources, each part once, in order ("; "-separated)."""
    parts: list[str] = []
    for text in texts:
        for part in (p.strip() for p in (text or "").split("; ")):
            if part and part not in parts:
                parts.append(part)
    return "; ".join(parts)


def with_evidence(claim: Claim, evidence: Evidence) -> Claim:
    """``claim`` with its evidence recorded and, where the claim function left them empty, the
    ``unconverged`` / ``weak_learning`` qualifiers from it (and ``low_power`` of an inconclusive
    claim from the CIs it judged), and the ``margin`` of a decisive verdict (:meth:`Evidence.margin_of`;
    "" for any other verdict). Qualifiers never change the verdict; the budget rule does
    (:meth:`Evidence.budget`): a decisive verdict whose cells a doubled budget could move by its
    effect becomes inconclusive, its ``budget`` naming them and the statistic at this budget
    ("inconclusive (budget)", :func:`verdict_label`). A claim function that adds its
    own unconverged text to the rows' joins it with :func:`rows_unconverged`, so the rows' text
    is not lost. A claim not tested rests on no rows (rows read before a missing part decide nothing)."""
    if claim.verdict == NOT_TESTED:
        return replace(claim, evidence="")
    budget = claim.budget or evidence.budget(claim.verdict)
    held = bool(budget) and claim.verdict in DECISIVE  # the budget rule holds a decisive verdict back
    verdict = INCONCLUSIVE if held else claim.verdict
    return replace(
        claim,
        verdict=verdict,
        budget=budget if held else claim.budget,
        evidence=evidence.text(),
        unconverged=join_qualifiers(
            claim.unconverged or evidence.unconverged(), "" if held else evidence.budget_away(claim.verdict)
        ),
        weak_learning=claim.weak_learning or evidence.weak_learning(),
        bound_gap=claim.bound_gap or evidence.bound_gap(),
        low_power=claim.low_power or (evidence.low_power() if claim.verdict == INCONCLUSIVE else ""),
        margin=(claim.margin or evidence.margin_text(claim.verdict)) if verdict in DECISIVE else "",
    )


Protocol = Callable[[Sequence[Any], Mapping[str, Any], Evidence], str]
"""``(claim function's args, kwargs, evidence) -> protocol_deviation`` of a paper module."""


def qualified_with(protocol: Protocol | None) -> Callable[[Callable[..., Claim]], Callable[..., Claim]]:
    """:func:`qualified` whose ``protocol_deviation`` (when the claim function left it empty and
    the claim was tested) is ``protocol(args, kwargs, evidence)``: a paper module's comparison of
    the rows read with the paper's protocol (search draws, seeds, N_train)."""

    def decorate(check: Callable[..., Claim]) -> Callable[..., Claim]:
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
            claim = with_evidence(claim, evidence)
            if protocol is not None and not claim.protocol_deviation and claim.verdict != NOT_TESTED:
                claim = replace(claim, protocol_deviation=protocol(args, kwargs, evidence))
            return claim

        return wrapper

    return decorate


def qualified(check: Callable[..., Claim]) -> Callable[..., Claim]:
    """Decorator of a claim function: collect the rows it reads, then :func:`with_evidence`."""
    return qualified_with(None)(check)


budget_aware = qualified
"""Deprecated alias of :func:`qualified`, kept for one release."""
BUDGET_RULE = QUALIFIER_RULE
"""Deprecated alias of :data:`QUALIFIER_RULE`, kept for one release."""


@dataclass(frozen=True)
class Side:
    """One side of a comparison: per-seed values, or a deterministic setting (a constant)."""

    values: dict[int, float]
    deterministic: bool = False
    # the table row behind the values, as ((Evidence.rows key, IMPROVES sign of its metric),)
    # (:func:`table_side`); () for a side computed otherwise
    rows: tuple[tuple[Any, int], ...] = field(default=(), compare=False)

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
    se = float(d.std(ddof=1) / math.sqrt(d.size))
    h = float(t_quantile(0.5 + level / 2.0, d.size - 1) * se)
    return Interval(est, est - h, est + h, "vs constant", f"{d.size} vs 1", se, float(d.size - 1))


def compare(a: Side, b: Side, paired: bool | None = None, level: float = CI_LEVEL) -> Interval:
    """CI of ``mean(a) - mean(b)``; a deterministic side is a constant (module docstring). The
    interval carries the sides' table rows (:attr:`Interval.plus` / :attr:`Interval.minus`)."""
    return replace(_compare(a, b, paired, level), plus=a.rows, minus=b.rows)


def _compare(a: Side, b: Side, paired: bool | None, level: float) -> Interval:
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
        return Interval(
            -iv.estimate, -iv.high, -iv.low, iv.kind, "1 vs " + iv.n.split(" vs ")[0], iv.se, iv.df
        )
    return difference_ci(a.values, b.values, paired, level)


def verdict_within(iv: Interval, margin: float) -> str:
    """Claim "|difference| is small" (equivalence): reproduced if the CI lies inside
    (-margin, margin), not reproduced if entirely outside [-margin, margin], else inconclusive."""
    return _note_decision(iv, (-margin, margin), _within(iv, margin))


def _within(iv: Interval, margin: float) -> str:
    if (undecided := _undecided(iv)) is not None:
        return undecided
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
        _note_metric(metric)
    fixed = (
        "deterministic" in rows.columns
        and not is_missing(rows["deterministic"].iloc[0])
        and cell_flag(rows["deterministic"].iloc[0])
    )
    key = row_key(rows.index[0], rows.iloc[0], rows.columns)
    return Side(values, fixed, ((key, IMPROVES.get(metric, 0)),))


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


def no_data_claim(
    claim_id: str, statement: str, location: str, rule: str, what: str, **qualifiers: str
) -> Claim:
    """A claim whose condition the grid lacks: not tested, numbers ``"not tested: <what>"``."""
    return Claim(claim_id, statement, location, NOT_TESTED, f"{NO_DATA}: {what}", rule, **qualifiers)


def margin_text(distance: float, unit: str = "") -> str:
    """A margin for people: two significant digits (whole numbers from 10 on), then the unit:
    ``"0.12 nats"``, ``"2.0"``, ``"140 nats"``; "" for NaN. Formatting is Python's own (correctly
    rounded), so the same distance gives the same text on every machine."""
    if math.isnan(distance):
        return ""
    if distance >= 10:
        number = f"{distance:.0f}"
    elif distance >= 1:
        number = f"{distance:.1f}"
    else:  # keeps a trailing zero: 0.040, 0.0
        number = f"{distance:#.2g}"
    return f"{number} {unit}" if unit else number


def low_power(
    iv: Interval, *bounds: float, unit: str = "nats", level: float = CI_LEVEL, n_max: int = 10_000
) -> str:
    """The ``low_power`` qualifier of a claim decided by ``iv`` against its decision boundaries
    (``bounds``; default 0): a t CI with too few degrees of freedom to decide (:func:`df_note`:
    "1 degree of freedom: n >= 3 seeds needed ..."), then, where the CI straddles a boundary, what
    would resolve it (:func:`_straddle_power`); "" when neither."""
    return join_qualifiers(df_note(iv), _straddle_power(iv, *bounds, unit=unit, level=level, n_max=n_max))


def _straddle_power(
    iv: Interval, *bounds: float, unit: str = "nats", level: float = CI_LEVEL, n_max: int = 10_000
) -> str:
    """The ``low_power`` text of a CI ``iv`` judged against ``bounds`` (default 0): "" unless the
    CI straddles one; then the CI's half-width, the
    observed effect's distance to that boundary and the n at which a t CI of the same level,
    with the observed sd, would resolve it (the SE shrinks as sqrt(n_now / n); df n - 1 paired or
    against a constant, 2n - 2 Welch). n counts what :func:`sampled_n` counts in hand (pairs; the
    sampled side against a constant; each side of a Welch t) and is always above n_now.
    With one seed there is no sd: it says so."""
    bounds = bounds or (0.0,)
    if iv.kind == "none" or math.isnan(iv.estimate):
        return ""
    if math.isnan(iv.low) or math.isnan(iv.high):
        return f"n={iv.n}: no CI (the sd is unknown; at least 2 seeds per side needed)"
    straddled = [b for b in bounds if iv.low <= b <= iv.high]
    if not straddled or iv.kind == "constants":
        return ""
    effect = min(abs(iv.estimate - b) for b in straddled)
    half = (iv.high - iv.low) / 2.0
    u = f" {unit}" if unit else ""
    head = f"CI half-width {half:.2g}{u} > |effect| {effect:.2g}"
    n_now = sampled_n(iv)
    if math.isnan(iv.se) or n_now is None or effect == 0.0:
        return head + "; no n resolves it" if effect == 0.0 else head
    seeds = f" {_SEEDS_NEEDED[iv.kind]}" if iv.kind == "vs constant" else ""
    sd_like = iv.se * math.sqrt(n_now)  # the SE at one seed per side
    z = normal_quantile(0.5 + level / 2.0)
    # normal approximation first, then t; never the n of today's CI, which does not resolve it (with
    # unequal Welch sides, e.g. 3 vs 2 seeds, the equal-n projection can undercut today's smaller side)
    n = max(2, n_now + 1, math.ceil((z * sd_like / effect) ** 2))
    while n <= n_max:
        df = 2 * n - 2 if iv.kind == "welch" else n - 1
        if t_quantile(0.5 + level / 2.0, df) * sd_like / math.sqrt(n) < effect:
            return f"{head}; n>={n}{seeds} would resolve it"
        n += 1
    return f"{head}; n>{n_max}{seeds} would be needed"
