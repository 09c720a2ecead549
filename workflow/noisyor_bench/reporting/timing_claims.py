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
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from noisyor_bench.reporting.claims import INCONCLUSIVE, NOT_REPRODUCED, REPRODUCED, Side, table_side

SPREAD_NOTE = "timing spread crosses the threshold"
SPREAD_RULE = (
    "times: per-seed medians of repeated timings (encoders: >= 5 forward passes) or per-step times "
    "(VI, Gibbs, aviPAM), CI over seeds of their log ratio; decided only when the spread interval (mean over "
    "seeds of the log ratio, each time at its min/max or interquartile end) lies on the same side too, else "
    f"inconclusive ('{SPREAD_NOTE}')"
)


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
