"""Wall-clock timings that a loaded machine does not flip: a robust centre with its spread.

A time measured once moves with whatever else the machine runs (the same APE
speed-up came out 41x, 457x, 43x and 90x).  Two ways to a repeatable timing, both wall clock
(the papers compare wall times), neither re-running anything expensive:

* **repeated** (:func:`time_repeated`): a cheap computation (the APE forward pass:
  milliseconds) is run at least :data:`MIN_REPEATS` times; the centre is the median, the
  spread min..max of the repetitions.  One slow repetition moves neither the median nor
  the verdict built on the spread's far end by more than that repetition.
* **per-step** (:func:`per_step_timing`): a long loop (a VI optimisation, a Gibbs chain, an
  aviPAM fit: seconds to hours) made of steps of equal work is timed step by step (or chunk by
  chunk) once; the measured total is re-based on the median time per step (centre) and on
  its interquartile range (spread; min..max with fewer than :data:`MIN_REPEATS` chunks).  A
  load spike inflates a few steps, not the median step.

A :class:`Timing` keeps the once-measured total (``measured``) beside the centre and the spread;
:func:`single` is a timing without a spread (a run that records no steps, e.g. NUTS).
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, TypeVar

MIN_REPEATS = 5  # the fewest repetitions of a repeated timing (median of >= 5)
T = TypeVar("T")


@dataclass(frozen=True)
class Timing:
    """A timed quantity in seconds: robust ``median``, spread ``low``..``high``, the raw total."""

    median: float
    low: float
    high: float
    measured: float  # the total measured once (repeated: the median too)
    n: int  # repetitions (repeated) or timed steps / chunks (per-step); 1 for single
    kind: str  # "repeated" | "per-step" | "single" | "sum"

    def __add__(self, other: Timing) -> Timing:
        """Two timed parts run one after the other (e.g. the APE pass + warm-started VI)."""
        return Timing(
            self.median + other.median,
            self.low + other.low,
            self.high + other.high,
            self.measured + other.measured,
            min(self.n, other.n),
            "sum",
        )

    def rebase(self, seconds: float) -> Timing:
        """The timing of the first ``seconds`` (measured) of the same run: the same per-step
        correction, e.g. the time VI needed to reach a quality read off its curve."""
        if not math.isfinite(seconds) or not self.measured > 0:
            return single(seconds)
        f = seconds / self.measured
        return Timing(self.median * f, self.low * f, self.high * f, seconds, self.n, self.kind)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def columns(self, prefix: str, scale: float = 1.0) -> dict[str, float]:
        """``<prefix>_median``, ``<prefix>_low``, ``<prefix>_high`` (times ``scale``, e.g. 1/60)."""
        return {
            f"{prefix}_median": self.median * scale,
            f"{prefix}_low": self.low * scale,
            f"{prefix}_high": self.high * scale,
        }


def single(seconds: float) -> Timing:
    """A time measured once, no spread known (low = high = median = it)."""
    s = float(seconds)
    return Timing(s, s, s, s, 1, "single")


def from_dict(record: Mapping[str, Any] | None, fallback: float) -> Timing:
    """The :class:`Timing` a run recorded (``Timing.as_dict``), else :func:`single` of ``fallback``
    (runs written before timings had a spread)."""
    if not record:
        return single(fallback)
    return Timing(**{k: record[k] for k in Timing.__dataclass_fields__})


def time_repeated(
    fn: Callable[[], T], repeats: int = MIN_REPEATS, clock: Callable[[], float] = time.perf_counter
) -> tuple[T, Timing]:
    """Run ``fn`` max(``repeats``, :data:`MIN_REPEATS`) times; (its last result, the median and
    min..max wall time of one call).  ``clock`` is injectable for tests."""
    out, (timing,) = time_repeated_clocks(fn, repeats, (clock,))
    return out, timing


def time_repeated_clocks(
    fn: Callable[[], T],
    repeats: int = MIN_REPEATS,
    clocks: Sequence[Callable[[], float]] = (time.perf_counter, time.process_time),
) -> tuple[T, tuple[Timing, ...]]:
    """:func:`time_repeated` on several clocks at once (default: wall, then the process's CPU
    time), every call read on each: (the last result, one repeated :class:`Timing` per clock)."""
    times: list[list[float]] = [[] for _ in clocks]
    out: T
    for _ in range(max(int(repeats), MIN_REPEATS)):
        ticks = [clock() for clock in clocks]
        out = fn()
        for spent, clock, tick in zip(times, clocks, ticks):
            spent.append(clock() - tick)
    timings = []
    for spent in times:
        med = float(statistics.median(spent))
        timings.append(Timing(med, float(min(spent)), float(max(spent)), med, len(spent), "repeated"))
    return out, tuple(timings)


def _quantile(values: Sequence[float], q: float) -> float:
    """Linear-interpolated quantile (NumPy's default), without NumPy in infra."""
    v = sorted(values)
    pos = q * (len(v) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (pos - lo)


def per_step_timing(durations: Sequence[float], units: Sequence[float], measured: float) -> Timing:
    """Re-base a loop's ``measured`` total on its per-step times: chunk ``i`` took
    ``durations[i]`` seconds for ``units[i]`` steps of equal work.  Centre: measured x median
    rate / mean rate; spread: the rates' interquartile range (min..max below
    :data:`MIN_REPEATS` chunks).  No usable chunk: :func:`single`."""
    pairs = [(d, u) for d, u in zip(durations, units) if u > 0 and math.isfinite(d) and d >= 0]
    total_d, total_u = sum(d for d, _ in pairs), sum(u for _, u in pairs)
    if not pairs or not total_d > 0 or not math.isfinite(measured):
        return single(measured)
    rates = [d / u for d, u in pairs]
    mean_rate = total_d / total_u
    if len(rates) >= MIN_REPEATS:
        lo, hi = _quantile(rates, 0.25), _quantile(rates, 0.75)
    else:
        lo, hi = min(rates), max(rates)
    scale = measured / mean_rate
    return Timing(
        _quantile(rates, 0.5) * scale, lo * scale, hi * scale, float(measured), len(rates), "per-step"
    )


def epoch_cpu_timing(history: Sequence[Any]) -> Timing | None:
    """:func:`per_step_timing` of a training curve's per-epoch CPU seconds (records with a
    ``cpu_seconds``, :class:`~noisyor_bench.inference.fitting.EpochRecord`), their sum as the
    measured total; ``None`` when an epoch lacks it (a fit resumed from a checkpoint written
    before CPU time was recorded) or there is no epoch."""
    cpu = [getattr(r, "cpu_seconds", None) for r in history]
    if not cpu or any(c is None for c in cpu):
        return None
    return per_step_timing(cpu, [1.0] * len(cpu), float(sum(cpu)))


def cumulative_timing(steps: Sequence[float], seconds: Sequence[float], measured: float) -> Timing:
    """:func:`per_step_timing` of a curve of cumulative ``seconds`` at cumulative ``steps``
    (a VI curve, a Gibbs trace), from 0 steps at 0 s."""
    pts = [(0.0, 0.0)] + [(float(s), float(t)) for s, t in zip(steps, seconds) if math.isfinite(float(t))]
    pts.sort()
    durations = [b[1] - a[1] for a, b in zip(pts, pts[1:])]
    units = [b[0] - a[0] for a, b in zip(pts, pts[1:])]
    return per_step_timing(durations, units, measured)
