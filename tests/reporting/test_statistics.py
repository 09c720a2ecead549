"""Statistics over seeds (noisyor_bench.reporting.statistics): t-intervals of means, Wilson intervals of rates."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from noisyor_bench.reporting.statistics import mean_ci, normal_quantile, t_quantile, wilson_interval
from noisyor_bench.reporting.tables import format_ci


def test_t_halfwidth_by_hand_and_scipy():
    x = np.array([1.0, 2.0, 3.0, 4.0])
    mean, std, n, ci = mean_ci(x)
    # by hand: s = sqrt(5/3), t_{0.975,3} = 3.182446305284263
    assert std == pytest.approx(math.sqrt(5 / 3), abs=1e-12)
    assert ci == pytest.approx(3.182446305284263 * math.sqrt(5 / 3) / 2, abs=1e-9)
    lo, hi = stats.t.interval(0.95, df=3, loc=mean, scale=stats.sem(x))
    assert (mean - ci, mean + ci) == pytest.approx((lo, hi), abs=1e-12)


def test_single_seed_has_no_ci():
    mean, std, n, ci = mean_ci([14.2])
    assert (mean, n) == (14.2, 1) and math.isnan(std) and math.isnan(ci)
    assert format_ci(mean, ci, n) == "14.20 (n=1)"
    assert format_ci(14.0234, 0.111, 5) == "14.02 ± 0.11"
    assert format_ci(float("nan"), float("nan"), 0) == ""


def test_wilson_interval_by_hand_and_scipy():
    # by hand, 7/10: z = 1.959964, z² = 3.841459; centre (0.7 + z²/20)/(1 + z²/10) = 0.892073/1.384146
    # = 0.644494, half-width z·sqrt(0.021 + z²/400)/(1 + z²/10) = 1.959964·0.174939/1.384146 = 0.247716
    assert wilson_interval(7, 10) == pytest.approx((0.396778, 0.892209), abs=3e-6)
    for k, n in [(0, 1), (1, 1), (0, 10), (3, 7), (10, 10), (2, 2), (4, 4), (37, 50)]:
        ci = stats.binomtest(k, n).proportion_ci(confidence_level=0.95, method="wilson")
        assert wilson_interval(k, n) == pytest.approx((ci.low, ci.high), abs=1e-12)
    ci = stats.binomtest(3, 7).proportion_ci(confidence_level=0.8, method="wilson")
    assert wilson_interval(3, 7, level=0.8) == pytest.approx((ci.low, ci.high), abs=1e-12)
    assert wilson_interval(10, 10)[1] == 1.0 and wilson_interval(0, 10)[0] == 0.0
    assert all(math.isnan(v) for v in wilson_interval(0, 0))
    for bad in [(3, 2), (-1, 4), (1.5, 4)]:
        with pytest.raises(ValueError):
            wilson_interval(*bad)


# ---------------------------------------------------------------------------- exact McNemar
@pytest.mark.parametrize(
    ("a_only", "b_only"), [(0, 0), (0, 3), (3, 0), (1, 4), (2, 2), (7, 1), (0, 10), (5, 12)]
)
def test_mcnemar_is_the_two_sided_binomial_test_of_the_discordant_pairs(a_only: int, b_only: int) -> None:
    """A 2x2 table of paired outcomes: only the discordant cells enter; against scipy's binomtest."""
    from scipy.stats import binomtest

    from noisyor_bench.reporting.statistics import mcnemar_exact

    p = mcnemar_exact(a_only, b_only)
    if a_only + b_only == 0:
        assert p == 1.0
    else:
        assert p == pytest.approx(binomtest(a_only, a_only + b_only, 0.5).pvalue, rel=1e-12)


def test_mcnemar_on_a_table_and_by_hand() -> None:
    """Seeds as pairs: AVI recovers all on seeds {1, 2, 3}, ACP on {3}: discordant 2 vs 0, so
    p = 2 * P(Bin(2, 1/2) = 0) = 0.5; 0 vs 5 gives 2 / 32."""
    from noisyor_bench.reporting.statistics import mcnemar_exact

    avi = [False, True, True, True, False]
    acp = [False, False, False, True, False]
    a_only = sum(x and not y for x, y in zip(avi, acp, strict=True))
    b_only = sum(y and not x for x, y in zip(avi, acp, strict=True))
    assert mcnemar_exact(a_only, b_only) == pytest.approx(0.5)
    assert mcnemar_exact(0, 5) == pytest.approx(2 / 32)
    with pytest.raises(ValueError, match="a_only"):
        mcnemar_exact(-1, 2)
    with pytest.raises(ValueError, match="b_only"):
        mcnemar_exact(1, 1.5)


def test_the_quantiles_are_scipy_stats_bit_for_bit():
    """t_quantile and normal_quantile call scipy.special, as scipy.stats' t.ppf and norm.ppf do:
    the same doubles for integer, Welch (fractional) and infinite degrees of freedom."""
    rng = np.random.default_rng(3)
    qs = [0.975, 0.95, 0.995, 0.9, *rng.uniform(0.5, 1.0, 50)]
    dfs = [*range(1, 40), *rng.uniform(0.5, 300.0, 50), math.inf]
    assert all(t_quantile(q, df) == stats.t.ppf(q, df) for q in qs for df in dfs)
    assert all(normal_quantile(q) == stats.norm.ppf(q) for q in qs)
    assert t_quantile(0.975, 3) == pytest.approx(3.182446305284263, abs=1e-12)  # a t table
    assert math.isnan(t_quantile(0.975, 0)) and math.isnan(t_quantile(0.975, math.nan))


def test_claims_intervals_need_no_scipy_stats():
    """A claims job computes its paired and Welch intervals without importing scipy.stats
    (about 0.5 CPU-s more than scipy.special, in every claims job)."""
    import json
    import subprocess
    import sys

    code = (
        "import json, sys\n"
        "from noisyor_bench.reporting.claims import difference_ci\n"
        "a, b = {0: 1.0, 1: 2.0, 2: 4.0}, {0: 0.5, 1: 1.0, 2: 1.5}\n"
        "ivs = [difference_ci(a, b), difference_ci(a, {5: 0.0, 6: 1.0}, paired=False)]\n"
        "print(json.dumps({'ivs': [[i.low, i.high] for i in ivs], 'stats': 'scipy.stats' in sys.modules}))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["stats"] is False
    paired = np.array([0.5, 1.0, 2.5])
    low, high = stats.t.interval(0.95, 2, loc=paired.mean(), scale=stats.sem(paired))
    assert result["ivs"][0] == pytest.approx([low, high], rel=1e-12)
    assert all(math.isfinite(x) for x in result["ivs"][1])
