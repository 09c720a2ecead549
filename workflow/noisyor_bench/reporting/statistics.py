"""Statistics over seeds: the Student-t interval of a mean, the Wilson interval of a rate and the
exact McNemar test of paired successes; the mean of paired per-row differences over test rows
and seeds (:func:`row_seed_mean`).

The CI of a mean is ``t_{0.975, n-1} * s / sqrt(n)`` with the sample standard deviation ``s``
(ddof=1); a single seed has no CI.  Differences between methods (paired or Welch) are in
:mod:`noisyor_bench.reporting.claims`. The quantiles come from ``scipy.special``
(:func:`t_quantile`, :func:`normal_quantile`: the functions ``scipy.stats``' ``t.ppf`` and
``norm.ppf`` evaluate, bit for bit), and ``scipy.stats`` is imported only by the exact McNemar
test: importing it costs about 0.5 CPU-s more than ``scipy.special`` in every claims job.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

CI_LEVEL = 0.95


def t_quantile(q: float, df: float) -> float:
    """The ``q``-quantile of Student's t with ``df`` degrees of freedom (``scipy.stats.t.ppf``,
    through the special function it calls; NaN for ``df`` <= 0 or NaN, the normal's at inf)."""
    from scipy.special import stdtrit

    return float(stdtrit(df, q))


def normal_quantile(q: float) -> float:
    """The ``q``-quantile of the standard normal (``scipy.stats.norm.ppf``'s special function)."""
    from scipy.special import ndtri

    return float(ndtri(q))


def t_halfwidth(std: float, n: int, level: float = CI_LEVEL) -> float:
    """Half-width of the Student-t CI of a mean: ``t_{(1+level)/2, n-1} * std / sqrt(n)``; NaN if n < 2."""
    if n < 2 or not np.isfinite(std):
        return float("nan")
    return float(t_quantile(0.5 + level / 2.0, n - 1) * std / math.sqrt(n))


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
    z = normal_quantile(0.5 + level / 2.0)
    p, z2 = k / n, z * z
    denom = 1.0 + z2 / n
    center = (p + z2 / (2 * n)) / denom
    half = z * math.sqrt(p * (1.0 - p) / n + z2 / (4 * n * n)) / denom
    # at k = 0 or k = n one end is exactly 0 or 1 (floating point may miss it by an ulp)
    low = 0.0 if k == 0 else max(0.0, center - half)
    high = 1.0 if k == n else min(1.0, center + half)
    return low, high


def mcnemar_exact(a_only: int, b_only: int) -> float:
    """Two-sided exact McNemar p-value of a paired binary comparison: the discordant pairs
    (``a_only``: A succeeded where B failed, ``b_only``: the reverse) as a binomial test of
    ``a_only`` out of ``a_only + b_only`` against 1/2.

    Why exact: with 5-10 paired seeds the discordant counts are small and the chi-square
    approximation is meaningless.  The p-value is ``min(1, 2 * P(X <= min(a_only, b_only)))``
    for ``X ~ Bin(a_only + b_only, 1/2)`` (the distribution is symmetric, so this equals the
    two-sided binomial test); 1 when there is no discordant pair (nothing to tell A and B apart).
    """
    from scipy import stats

    for name, value in (("a_only", a_only), ("b_only", b_only)):
        if isinstance(value, bool) or int(value) != value or value < 0:
            raise ValueError(
                f"{name} must be a non-negative integer count of discordant pairs; got {value!r}"
            )
    a, b = int(a_only), int(b_only)
    if a + b == 0:
        return 1.0
    return float(min(1.0, 2.0 * stats.binom.cdf(min(a, b), a + b, 0.5)))


@dataclass(frozen=True)
class RowSeedMean:
    """The mean of a (seeds x rows) matrix of paired per-row differences and its standard error
    over rows and seeds (:func:`row_seed_mean`): ``df`` is the Welch-Satterthwaite degrees of
    freedom of the t quantile, ``rows`` / ``seeds`` the matrix's shape."""

    mean: float
    se: float
    df: float
    rows: int
    seeds: int

    def interval(self, level: float = CI_LEVEL) -> tuple[float, float]:
        """``mean -+ t_{(1+level)/2, df} * se``; ``(mean, mean)`` without a standard error."""
        if not (math.isfinite(self.se) and math.isfinite(self.df) and self.df > 0):
            return self.mean, self.mean
        half = t_quantile(0.5 + level / 2.0, self.df) * self.se
        return self.mean - half, self.mean + half


def row_seed_mean(diffs: np.ndarray) -> RowSeedMean:
    """Mean and standard error of paired per-row differences ``diffs`` (S seeds x R rows):
    ``d[s, r]`` = the seed-s model's quantity on test row r minus the reference's on the same row.

    The unit: a test row is one draw from the data distribution and a seed one draw of a training
    run, and a claim about a cell is about both populations. Pairing per row removes what the
    two sides share on a row (how hard the row is: the between-row spread of the NLL, tens of times
    the difference, which a comparison of two separate means would keep). Averaging the seeds
    within a row first makes the rows the independent units (the seeds of one row share that row,
    so their S values are not S independent rows): the row term ``s^2(mean over seeds of d[:, r]) /
    R`` carries the rows' sampling error -- a fixed subset of the test rows, or the test split
    itself as a sample of the distribution. A seed's offset common to every row cancels from that
    spread, so the seed term ``s^2(mean over rows of d[s, :]) / S`` adds the run-to-run variation
    of the all-row mean. ``se^2`` is their sum; it counts the seed-by-row interaction once in each
    term, so it is conservative by ``var(interaction) / (R S)``, negligible at R = 1,000. ``df``:
    Welch-Satterthwaite of the two terms. One seed: the row term only (df R - 1); one row: the
    seed term only; one of each: NaN (no interval).
    """
    d = np.asarray(diffs, dtype=np.float64)
    if d.ndim != 2 or d.size == 0:
        raise ValueError(f"diffs must be a non-empty (seeds, rows) matrix, got shape {d.shape}")
    s, r = d.shape
    mean = float(d.mean())
    if not np.isfinite(d).all():
        return RowSeedMean(mean, float("nan"), float("nan"), r, s)
    terms = []
    if r > 1:
        terms.append((float(d.mean(axis=0).var(ddof=1)) / r, r - 1))
    if s > 1:
        terms.append((float(d.mean(axis=1).var(ddof=1)) / s, s - 1))
    if not terms:
        return RowSeedMean(mean, float("nan"), float("nan"), r, s)
    var = sum(v for v, _ in terms)
    denom = sum(v * v / n for v, n in terms)
    df = var * var / denom if denom > 0 else float(sum(n for _, n in terms))
    return RowSeedMean(mean, math.sqrt(var), float(df), r, s)
