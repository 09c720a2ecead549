"""Claims on a ratio of wall times, judged on an interval that includes the timings' spread.

Every timed quantity in the tables carries a robust centre and a spread beside its
historical column (:mod:`noisyor_bench.infra.timing`): ``<m>_median``, ``<m>_low`` and
``<m>_high`` (per-seed values).  A speed claim ("A is 100x faster than B") is then decided in
two steps:

1. the 95% CI over seeds of the mean log ratio, computed from the per-seed medians (the
   shared rules of :mod:`noisyor_bench.reporting.claims`);
2. the **spread interval** of the same mean log ratio, every time at the end of its spread
   that is worst for the verdict: [mean log(num low) - mean log(den high), mean log(num high)
   - mean log(den low)].  The CI's verdict stands only when the spread interval lies on the
   same side of the threshold; otherwise the claim is inconclusive with the note
   :data:`SPREAD_NOTE`.

Tables written before the spread existed (no ``<m>_median`` column) fall back to ``<m>`` with
no spread, i.e. to the CI alone.

Times differ between runs of one commit (machine, load), so a speed claim keeps every figure
measured in time in :attr:`~noisyor_bench.reporting.claims.Claim.timing`, never in its
``numbers`` (which must be the same in every run of one commit, ``tables/claims.csv``): the
times, their ratios with CI and spread, the spread note, and the timed part's margin and
low-power text (:func:`judge_speed` judges the timed CI apart from the claim's evidence, so
neither reaches the claim's ``margin`` / ``low_power`` columns). ``numbers`` say the timed
part's outcome as judged (:meth:`SpeedPart.outcome`: "judged above 100x", "judged below 100x",
"not decided", with the seeds behind it), so they change only when the verdict does. A decisive
claim that only timed parts decide has the margin :data:`TIMING_MARGIN`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from noisyor_bench.reporting.claims import (
    _COLLECTING,
    DECISIVE,
    INCONCLUSIVE,
    NOT_REPRODUCED,
    REPRODUCED,
    Evidence,
    Interval,
    Side,
    low_power,
    margin_text,
    table_side,
    verdict_above,
)

TIMING_TOLERANCE = 1.5
"""A timed verdict needs its CI and spread to clear the threshold by this factor. The CI of one
claim moves between two runs of one commit on one machine (load, caches, clock), so an edge
nearer the threshold than its run-to-run movement flips the verdict from one run to the next:
benchmarks/results/timing_reproducibility.md measures that movement on two quick runs: the
edges of the claim nearest its threshold (aviPAM's speed-up, on the CPU clock) moved by less than
this factor; the edges that moved more belong to ratios orders of magnitude from theirs."""
TOLERANCE_NOTE = f"within x{TIMING_TOLERANCE:g} of the threshold (timing tolerance)"
SPREAD_NOTE = "timing spread crosses the threshold"
SPREAD_RULE = (
    "times: per-seed medians of repeated timings (encoders: >= 5 forward passes) or per-step times "
    "(VI, Gibbs, aviPAM), CI over seeds of their log ratio; decided only when the spread interval (mean over "
    "seeds of the log ratio, each time at its min/max or interquartile end) lies on the same side too, else "
    f"inconclusive ('{SPREAD_NOTE}'), and only when CI and spread clear the threshold by a factor "
    f"{TIMING_TOLERANCE:g} (times move between runs of one commit), else inconclusive ('{TOLERANCE_NOTE}'); "
    "the times, their ratios and the timed parts' margins are in the claim's timing (they differ between "
    "runs), its numbers say how the timed part was judged"
)
FIGURES = "figures in timing"
"""Where the numbers of a speed claim point for its times."""
TIMING_MARGIN = "in timing"
"""The ``margin`` of a decisive claim that only its timed parts decide: their distance to the
threshold is measured time, so it is in the claim's ``timing``."""


@dataclass(frozen=True)
class TimedSide:
    """Per-seed robust centre and spread of one timed quantity."""

    median: Side
    low: Side
    high: Side

    def __bool__(self) -> bool:
        return bool(self.median)

    def map(self, f: Callable[[float], float]) -> TimedSide:
        """The same transform of every part (e.g. seconds per combination, minutes scaled)."""
        return TimedSide(*(_map(s, f) for s in (self.median, self.low, self.high)))


def _map(side: Side, f: Callable[[float], float]) -> Side:
    return Side({s: f(v) for s, v in side.values.items()}, side.deterministic)


def timed_side(table: pd.DataFrame | None, metric: str, **where: object) -> TimedSide:
    """``metric``'s per-seed median and spread in the row ``where``; without the spread
    columns, ``metric`` itself with no spread."""
    median = table_side(table, f"{metric}_median", **where)
    if not median:
        plain = table_side(table, metric, **where)
        return TimedSide(plain, plain, plain)
    low = table_side(table, f"{metric}_low", **where) or median
    high = table_side(table, f"{metric}_high", **where) or median
    return TimedSide(median, low, high)


def clocked_side(
    table: pd.DataFrame | None, wall: str, cpu: str, **where: object
) -> tuple[TimedSide, set[int]]:
    """The per-seed times a speed claim compares, and the seeds measured on the CPU clock: per
    seed, the process's CPU time (``cpu``'s median and spread) where the run recorded it on one
    thread (the table's per-seed ``threads``, or its row's) -- the wall time on an idle core,
    which another job on the machine does not move -- else its wall time (``wall``: runs from
    before CPU time was recorded, e.g. a reference's first seeds; runs on several threads)."""
    wall_t = timed_side(table, wall, **where)
    if not wall_t or table is None:
        return wall_t, set()
    threads = table_side(table, "threads", **where).values or {
        s: _row_value(table, "threads", where) for s in wall_t.median.values
    }
    parts = {part: table_side(table, f"{cpu}_{part}", **where).values for part in ("median", "low", "high")}
    seeds = {
        s
        for s in wall_t.median.values
        if threads.get(s) == 1
        and all(math.isfinite(parts[p].get(s, math.nan)) and parts[p][s] > 0 for p in parts)
    }

    def pick(side: Side, part: str) -> Side:
        return Side(
            {s: parts[part][s] if s in seeds else v for s, v in side.values.items()},
            side.deterministic,
            side.rows,
        )

    return TimedSide(pick(wall_t.median, "median"), pick(wall_t.low, "low"), pick(wall_t.high, "high")), seeds


def _row_value(table: pd.DataFrame, column: str, where: dict[str, object]) -> float:
    """``column`` of the first row matching ``where`` (NaN when absent)."""
    if column not in table.columns or any(k not in table.columns for k in where):
        return math.nan
    mask = np.ones(len(table), dtype=bool)
    for k, v in where.items():
        mask &= (table[k] == v).to_numpy()
    rows = table[mask]
    value = rows[column].iloc[0] if len(rows) else math.nan
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def clock_label(sides: dict[str, tuple[set[int], set[int]]]) -> tuple[str, str]:
    """(how the numbers name the compared time, how the timing names the per-step times) from
    each side's (CPU-clock seeds, all seeds): "CPU time" where every seed of both sides is on
    the CPU clock, "time" (wall) where none is, else which seeds are on which clock."""
    if all(cpu == every for cpu, every in sides.values()):
        return "CPU time", "CPU times, one thread"
    if not any(cpu for cpu, _ in sides.values()):
        return "time", "wall times"
    where = ", ".join(f"{name} seeds {sorted(cpu)}" for name, (cpu, _) in sides.items() if cpu)
    return f"time (CPU where recorded: {where}; else wall)", f"times: CPU where recorded ({where}), else wall"


def _mean_log(side: Side, log: Callable[[float], float]) -> float:
    vals = [log(v) for v in side.values.values() if v > 0 and math.isfinite(v)]
    return float(np.mean(vals)) if vals else float("nan")


def log_ratio_spread(
    num: TimedSide, den: TimedSide, log: Callable[[float], float] = math.log10
) -> tuple[float, float]:
    """Spread interval of mean log(num) - mean log(den): (num low vs den high, num high vs den low)."""
    return (
        _mean_log(num.low, log) - _mean_log(den.high, log),
        _mean_log(num.high, log) - _mean_log(den.low, log),
    )


def spread_verdict(verdict: str, spread: tuple[float, float], bound: float) -> tuple[str, str]:
    """(verdict, note) of a claim "log ratio > ``bound``" whose CI gave ``verdict``: kept only
    when the spread interval is on the same side of ``bound``, else inconclusive + :data:`SPREAD_NOTE`."""
    low, high = spread
    if verdict == REPRODUCED and not low > bound:
        return INCONCLUSIVE, SPREAD_NOTE
    if verdict == NOT_REPRODUCED and not high < bound:
        return INCONCLUSIVE, SPREAD_NOTE
    return verdict, ""


def spread_text(spread: tuple[float, float], digits: int = 2, base: float = 10.0) -> str:
    """``"spread [1.62, 2.66] = 42x..457x"`` for a claim's numbers."""
    low, high = spread
    if math.isnan(low) or math.isnan(high):
        return "spread n/a"
    return f"spread [{low:+.{digits}f}, {high:+.{digits}f}] = {base**low:.3g}x..{base**high:.3g}x"


@dataclass(frozen=True)
class SpeedPart:
    """A timed comparison "log ratio > bound" as judged (:func:`judge_speed`): the verdict of its
    CI and spread, and what rests on the times (the note, margin and low-power text)."""

    verdict: str
    note: str  # SPREAD_NOTE where the spread undid the CI's verdict, else ""
    interval: Interval
    spread: tuple[float, float]
    margin: str  # a decisive part: its CI's distance to the bound (in ``scale`` units), else ""
    low_power: str  # an undecided part: what would resolve its CI, else ""

    def outcome(self, ratio: str, threshold: str, seeds: bool = True) -> str:
        """The part as judged, for a claim's ``numbers`` -- the same in every run that gives the
        same verdict: ``"speed: time VI / time APE judged above 100x (CI and timing spread above
        it; figures in timing; paired, n=3)"``; with ``seeds`` the seeds behind the CI as the
        statistics print them (what :func:`noisyor_bench.reporting.evidence.claim_n` ranks by)."""
        if self.verdict == REPRODUCED:
            judged, why = f"judged above {threshold}", "CI and timing spread above it"
        elif self.verdict == NOT_REPRODUCED:
            judged, why = f"judged below {threshold}", "CI and timing spread below it"
        else:
            judged, why = f"not decided against {threshold}", ""
        inside = "; ".join(t for t in (why, FIGURES, seeds_text(self.interval) if seeds else "") if t)
        return f"speed: {ratio} {judged} ({inside})"

    def tail(self) -> str:
        """What follows the part's figures in ``timing``: the spread note, margin, low power."""
        return (
            (f" -- {self.note}" if self.note else "")
            + (f"; margin {self.margin}" if self.margin else "")
            + (f"; low power: {self.low_power}" if self.low_power else "")
        )


def seeds_text(iv: Interval) -> str:
    """The seeds behind a CI as :meth:`Interval.text` prints them, without its figures:
    ``"paired, n=3"``, ``"welch, n=3 vs 2"``, ``"no CI: n=1"``; "" without an estimate."""
    if math.isnan(iv.estimate):
        return ""
    if math.isnan(iv.low):
        return f"no CI: n={iv.n}"
    if iv.kind == "constants":
        return "exact: two deterministic settings"
    return f"{iv.kind}, n={iv.n}"


def tolerance_verdict(
    verdict: str, iv: Interval, spread: tuple[float, float], bound: float, tol: float
) -> tuple[str, str]:
    """(verdict, note) of a decisive timed ``verdict`` kept only when its CI and spread clear
    ``bound`` by ``tol`` (log units) on the decided side, else inconclusive + :data:`TOLERANCE_NOTE`."""
    # two constants have no CI: their difference itself is the edge
    low, high = (iv.estimate, iv.estimate) if math.isnan(iv.low) else (iv.low, iv.high)
    if verdict == REPRODUCED and not (low > bound + tol and spread[0] > bound + tol):
        return INCONCLUSIVE, TOLERANCE_NOTE
    if verdict == NOT_REPRODUCED and not (high < bound - tol and spread[1] < bound - tol):
        return INCONCLUSIVE, TOLERANCE_NOTE
    return verdict, ""


def judge_speed(iv: Interval, spread: tuple[float, float], bound: float, scale: str = "log10") -> SpeedPart:
    """A timed CI judged against ``bound`` ("log ratio > bound", :func:`verdict_above`), its
    spread (:func:`spread_verdict`) and the timing tolerance (:func:`tolerance_verdict`) --
    apart from the claim's evidence: its distance to the bound and what would resolve it are
    measured time, so they go to :attr:`SpeedPart.margin` / :attr:`SpeedPart.low_power` (the
    claim's ``timing``), not to the claim's ``margin`` and ``low_power`` columns. ``scale``
    names the log of the ratio ("log10" or "ln": the margin's unit)."""
    apart = Evidence()
    token = _COLLECTING.set(apart)
    try:
        ci_verdict = verdict_above(iv, bound)
    finally:
        _COLLECTING.reset(token)
    verdict, note = spread_verdict(ci_verdict, spread, bound)
    if not note:
        tol = math.log(TIMING_TOLERANCE) / (math.log(10.0) if scale == "log10" else 1.0)
        verdict, note = tolerance_verdict(verdict, iv, spread, bound, tol)
    margin = margin_text(apart.margin_of(verdict)) if verdict in DECISIVE else ""
    return SpeedPart(
        verdict,
        note,
        iv,
        spread,
        f"{margin} ({scale})" if margin else "",
        low_power(iv, bound, unit="") if verdict == INCONCLUSIVE else "",
    )


def timed_margin(verdict: str, timed: list[str], untimed: list[str]) -> str:
    """The ``margin`` a speed claim sets itself: :data:`TIMING_MARGIN` when its decisive
    ``verdict`` comes from timed parts alone (``timed``: their verdicts; ``untimed``: the
    others'), else "" (the claim's evidence gives the untimed parts' margin)."""
    if verdict in DECISIVE and verdict in timed and verdict not in untimed:
        return TIMING_MARGIN
    return ""
