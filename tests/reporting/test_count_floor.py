"""The resolution floor of agreement-count CIs: hand-worked rounding variances (step^2 / 12 per
value) and scipy's t quantiles, never the floor's own output."""

from __future__ import annotations

import math

import pandas as pd
import pytest
from scipy import stats

from noisyor_bench.reporting.ape_noisyor.claims import acp_ranks_as_ape
from noisyor_bench.reporting.ape_noisyor.table import agreement_pairs
from noisyor_bench.reporting.claims import (
    INCONCLUSIVE,
    NOT_REPRODUCED,
    REPRODUCED,
    Side,
    compare,
    verdict_above,
)
from noisyor_bench.reporting.count_floor import floored

STEP = 1 / 270  # 6 problems x 45 candidate pairs


def _t(df: float) -> float:
    return float(stats.t.ppf(0.975, df))


@pytest.mark.parametrize(
    ("a", "b", "expected_se", "df"),
    [
        # paired, 3 seeds all -6/270: the sd of a difference of two rounded counts, STEP / sqrt(6)
        (
            {0: 0.5, 1: 0.6, 2: 0.7},
            {0: 0.5 + 6 * STEP, 1: 0.6 + 6 * STEP, 2: 0.7 + 6 * STEP},
            STEP / math.sqrt(6) / math.sqrt(3),
            2,
        ),
        # against a constant, 4 seeds: one rounded count, STEP / sqrt(12)
        ({s: 0.4 for s in range(4)}, "constant", STEP / math.sqrt(12) / 2, 3),
        # Welch, 3 vs 4 seeds without spread: STEP^2/12 per side, df = smaller side - 1
        ({0: 0.4, 1: 0.4, 2: 0.4}, {3: 0.3, 4: 0.3, 5: 0.3, 6: 0.3}, STEP * math.sqrt(1 / 36 + 1 / 48), 2),
    ],
)
def test_zero_spread_is_widened_to_the_rounding_sd(a, b, expected_se, df):
    side_b = Side({0: 0.45}, deterministic=True) if b == "constant" else Side(b)
    raw = compare(Side(a), side_b)
    assert raw.high - raw.low == pytest.approx(0.0, abs=1e-12)  # the zero-width CI being fixed
    iv, note = floored(raw, STEP)
    assert iv.se == pytest.approx(expected_se)
    assert iv.high - iv.estimate == pytest.approx(_t(df) * expected_se)
    assert iv.estimate - iv.low == pytest.approx(_t(df) * expected_se)
    assert "resolution" in note


def test_two_seeds_of_equal_counts_decide_nothing():
    """Both seeds -6/270 (2 paired seeds): a CI of non-zero width, and inconclusive either way."""
    acp, ape = Side({0: 0.70, 1: 0.75}), Side({0: 0.70 + 6 * STEP, 1: 0.75 + 6 * STEP})
    iv, _ = floored(compare(acp, ape), STEP)
    assert iv.high - iv.low == pytest.approx(2 * _t(1) * STEP / math.sqrt(6) / math.sqrt(2))
    assert verdict_above(iv, -0.05) == INCONCLUSIVE
    assert verdict_above(iv, -0.001) == INCONCLUSIVE


def test_spread_above_the_floor_leaves_the_ci_alone():
    a, b = Side({0: 0.70, 1: 0.80, 2: 0.75}), Side({0: 0.72, 1: 0.71, 2: 0.79})
    raw = compare(a, b)
    iv, note = floored(raw, STEP)
    assert (iv, note) == (raw, "")


@pytest.mark.parametrize("step", [None, math.nan, 0.0])
def test_zero_width_of_unknown_resolution_is_no_ci(step):
    raw = compare(Side({0: 0.5, 1: 0.6, 2: 0.7}), Side({0: 0.4, 1: 0.5, 2: 0.6}))
    iv, note = floored(raw, step)
    assert math.isnan(iv.low) and math.isnan(iv.high) and "unknown resolution" in note
    assert verdict_above(iv) == INCONCLUSIVE


def test_agreement_pairs_counts_problems_times_candidate_pairs():
    assert agreement_pairs((6, 10, 50)) == 6 * 45
    assert agreement_pairs((3, 4, 7)) == 3 * 6


def _table(acp: list[float], ape: list[float], pairs: int | None) -> pd.DataFrame:
    """A noisy-OR table of the two agreement rows, seeds 0..n-1, with its lattice's pair count."""
    rows = []
    for method, values in (("acp", acp), ("avi-model-aware", ape)):
        row = {
            "artifact": "ape-noisyor",
            "dataset": "fam",
            "method": method,
            "n_seeds": len(values),
            "n_runs": len(values),
            "n_converged": len(values),
            "deterministic": False,
            "agreement_exact_values": ";".join(f"{s}:{v!r}" for s, v in enumerate(values)),
        }
        if pairs is not None:
            row["agreement_pairs"] = pairs
        rows.append(row)
    return pd.DataFrame(rows)


@pytest.mark.parametrize(
    ("acp", "ape", "pairs", "verdict"),
    [
        # -6/270 in each of 2 seeds: inconclusive (the case a zero-width CI once decided)
        ([0.70, 0.75], [0.70 + 6 * STEP, 0.75 + 6 * STEP], 270, INCONCLUSIVE),
        # -6/270 in each of 3 seeds: floored CI lies above -0.05, non-inferior
        ([0.70, 0.75, 0.72], [0.70 + 6 * STEP, 0.75 + 6 * STEP, 0.72 + 6 * STEP], 270, REPRODUCED),
        # -20/270 in each of 3 seeds: below -0.05 beyond the floor
        ([0.70, 0.75, 0.72], [0.70 + 20 * STEP, 0.75 + 20 * STEP, 0.72 + 20 * STEP], 270, NOT_REPRODUCED),
        # resolution unknown (a table from before agreement_pairs): a zero-width CI decides nothing
        ([0.70, 0.75, 0.72], [0.70 + 20 * STEP, 0.75 + 20 * STEP, 0.72 + 20 * STEP], None, INCONCLUSIVE),
    ],
)
def test_noisyor_agreement_claim_uses_the_floor(acp, ape, pairs, verdict):
    claim = acp_ranks_as_ape(_table(acp, ape, pairs))
    assert claim.verdict == verdict
