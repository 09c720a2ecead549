"""A CI of agreement counts that never claims more certainty than a count can carry.

Agreement is a count: each seed's value lies on a lattice of step ``h`` (one pair of test models
for APE's Table 1; 1/(problems x pairs) for the mean fraction of APE on noisy-OR).  Seeds that
all give the same count (both seeds -6/270) have a sample sd of 0 and a t CI of zero width, a
certainty the discrete value does not have: it locates the underlying rate only to within its
step.  Read as a continuous quantity rounded to the lattice, each value carries at least the
rounding variance h^2/12 (Sheppard's correction), so the sd behind the CI is floored at that of
a difference of two such values, h/sqrt(6) (h/sqrt(12) for one side against a constant;
h^2/12 per side under Welch), and the CI widened to it.  The degrees-of-freedom rule of
:mod:`noisyor_bench.reporting.claims` still applies (2 paired seeds decide nothing); a CI of
zero width whose step is unknown is no CI at all.

This floor is preferred to "a zero-width CI is inconclusive": five seeds that agree exactly are
evidence, and the floor keeps their verdict while the interval stays honest about resolution.
"""

from __future__ import annotations

import math
from dataclasses import replace

from noisyor_bench.reporting.claims import Interval
from noisyor_bench.reporting.statistics import CI_LEVEL, t_quantile

FLOOR_RULE = (
    "agreement counts are discrete: the sd behind their CI is at least the rounding sd of their "
    "lattice step h (h/sqrt(6) for a paired difference, h/sqrt(12) per side), so equal counts in "
    "every seed never give a zero-width CI"
)


def _sizes(iv: Interval) -> list[int]:
    return [int(x) for x in iv.n.replace("vs", " ").split() if x.isdigit()]


def floor_se(iv: Interval, step: float) -> float:
    """The smallest standard error a CI of counts on a lattice of ``step`` may have (NaN for an
    interval without a t behind it: no data, one seed, two constants)."""
    sizes = _sizes(iv)
    rounding = step * step / 12.0  # variance of one value rounded to the lattice
    if iv.kind == "paired" and sizes:
        return math.sqrt(2.0 * rounding / sizes[0])
    if iv.kind == "vs constant" and sizes:
        return math.sqrt(rounding / sizes[0])
    if iv.kind == "welch" and len(sizes) == 2:
        return math.sqrt(rounding / sizes[0] + rounding / sizes[1])
    return math.nan


def floored(iv: Interval, step: float | None, level: float = CI_LEVEL) -> tuple[Interval, str]:
    """``iv`` widened to the counts' resolution floor (module docstring) and a note for the claim's
    numbers ("" when the floor did not bind).  ``step``: the lattice step on the values' scale;
    None, NaN or not positive: unknown, and a zero-width CI then becomes no CI (inconclusive)."""
    if iv.kind not in ("paired", "vs constant", "welch") or math.isnan(iv.low):
        return iv, ""
    if step is None or not math.isfinite(step) or step <= 0:
        if not math.isclose(iv.low, iv.high, rel_tol=1e-9, abs_tol=1e-12):  # float noise is no spread
            return iv, ""
        return (
            replace(iv, low=math.nan, high=math.nan),
            "zero-width CI from equal counts of unknown resolution: no CI",
        )
    floor = floor_se(iv, step)
    if math.isnan(floor) or iv.se >= floor:
        return iv, ""
    half = float(t_quantile(0.5 + level / 2.0, iv.df) * floor)
    widened = replace(iv, low=iv.estimate - half, high=iv.estimate + half, se=floor)
    return widened, f"CI widened to the counts' resolution (lattice step {step:.3g})"


__all__ = ["FLOOR_RULE", "floor_se", "floored"]
