"""Claim verdicts from CIs over seeds, on hand-made tables (no runs needed)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from noisyor_bench import claims as C
from noisyor_bench.claims import INCONCLUSIVE, NOT_REPRODUCED, REPRODUCED, Claim, Interval
from noisyor_bench.errors import DataError


# ------------------------------------------------------------------------------ builders
def vals(values: dict[int, float]) -> str:
    return ";".join(f"{s}:{v!r}" for s, v in values.items())


def seeds(*xs: float) -> dict[int, float]:
    return dict(enumerate(xs))


def fig3a(cells: dict[tuple[int, str], dict[int, float]]) -> pd.DataFrame:
    rows = [{"artifact": "fig3a", "dataset": "syn-pattern", "n_train": n, "method": m, "status": "measured",
             "nelbo_values": vals(v)} for (n, m), v in cells.items()]
    return pd.DataFrame(rows)


def table4(cells: dict[tuple[int, str], dict[int, float] | None]) -> pd.DataFrame:
    rows = [{"artifact": "table4", "dataset": "syn-random-7", "n_train": n, "method": m,
             "status": "measured" if v else "not run", "nelbo_values": vals(v) if v else np.nan}
            for (n, m), v in cells.items()]
    return pd.DataFrame(rows)


def fig5(cells: dict[tuple[str, int, str], dict[int, float]]) -> pd.DataFrame:
    rows = [{"artifact": "fig5", "dataset": d, "n_train": n, "method": m, "nelbo_values": vals(v)}
            for (d, n, m), v in cells.items()]
    return pd.DataFrame(rows)


def recovery(cells: dict[tuple[str, str, int], list[int]], n_true: int = 8) -> pd.DataFrame:
    rows = [{"artifact": "recovery", "dataset": d, "method": m, "n_train": n, "seed": s, "recovered": r, "n_true": n_true}
            for (d, m, n), counts in cells.items() for s, r in enumerate(counts)]
    return pd.DataFrame(rows)


def curves(per_seed: dict[int, tuple[list[float], list[float]]]) -> pd.DataFrame:
    rows = [{"artifact": "fig3b", "dataset": "syn-pattern", "method": "ub-cdi", "n_train": 0, "seed": s, "round": r,
             "ll_ub": llub[r], "elbo": elbo[r]}
            for s, (llub, elbo) in per_seed.items() for r in range(len(llub))]
    return pd.DataFrame(rows)


# ------------------------------------------------------------------------------ statistics
def test_paired_ci_matches_scipy_ttest_rel():
    a, b = seeds(22.0, 22.4, 21.9, 22.3), seeds(37.0, 36.1, 38.2, 37.5)
    iv = C.difference_ci(a, b)
    ref = stats.ttest_rel(list(a.values()), list(b.values())).confidence_interval(0.95)
    assert iv.kind == "paired"
    assert (iv.low, iv.high) == pytest.approx((ref.low, ref.high), abs=1e-10)
    assert iv.estimate == pytest.approx(np.mean(list(a.values())) - np.mean(list(b.values())))


def test_welch_ci_matches_scipy_ttest_ind():
    a, b = seeds(1.0, 2.5, 1.7), {7: 4.0, 8: 3.1, 9: 5.2, 10: 4.4}
    iv = C.difference_ci(a, b)  # different seeds: unpaired
    ref = stats.ttest_ind(list(a.values()), list(b.values()), equal_var=False).confidence_interval(0.95)
    assert iv.kind == "welch"
    assert (iv.low, iv.high) == pytest.approx((ref.low, ref.high), abs=1e-10)
    forced = C.difference_ci(seeds(1.0, 2.0, 3.5), seeds(2.0, 2.2, 2.1), paired=False)
    assert forced.kind == "welch"


def test_four_group_contrast_by_hand():
    g = [seeds(1.0, 2.0, 4.0), seeds(0.5, 0.7), seeds(3.0, 3.3, 2.9, 3.1), seeds(1.0, 1.4, 1.2)]
    c = [1.0, -1.0, -1.0, 1.0]
    iv = C.contrast_ci(list(zip(c, g)))
    means = [np.mean(list(x.values())) for x in g]
    v = [np.var(list(x.values()), ddof=1) / len(x) for x in g]
    se2 = sum(v)
    df = se2**2 / sum(vi**2 / (len(x) - 1) for vi, x in zip(v, g))
    h = stats.t.ppf(0.975, df) * math.sqrt(se2)
    est = sum(ci * m for ci, m in zip(c, means))
    assert (iv.estimate, iv.low, iv.high) == pytest.approx((est, est - h, est + h), abs=1e-12)


def test_single_seed_has_no_ci():
    iv = C.difference_ci(seeds(1.0), seeds(2.0))
    assert iv.kind == "n=1" and math.isnan(iv.low)
    assert C.verdict_below(iv) == INCONCLUSIVE
    assert "no CI" in iv.text()


def test_verdict_rules():
    assert C.verdict_below(Interval(-2, -3, -1, "paired", "3")) == REPRODUCED
    assert C.verdict_below(Interval(2, 1, 3, "paired", "3")) == NOT_REPRODUCED
    assert C.verdict_below(Interval(0.5, -1, 2, "paired", "3")) == INCONCLUSIVE
    assert C.verdict_above(Interval(2, 1, 3, "paired", "3")) == REPRODUCED
    assert C.verdict_above(Interval(-2, -3, -1, "paired", "3")) == NOT_REPRODUCED
    assert C.verdict_below(Interval(0.1, 0.05, 0.15, "paired", "3"), bound=0.2) == REPRODUCED
    assert C.combine([REPRODUCED, REPRODUCED]) == REPRODUCED
    assert C.combine([REPRODUCED, INCONCLUSIVE]) == INCONCLUSIVE
    assert C.combine([INCONCLUSIVE, NOT_REPRODUCED]) == NOT_REPRODUCED
    assert C.combine([]) == INCONCLUSIVE


# ------------------------------------------------------------------------------ claim 1
GOOD, BAD = seeds(22.0, 22.2, 22.1), seeds(37.0, 37.5, 37.2)
NOISY_A, NOISY_B = seeds(22.0, 25.0, 19.0), seeds(23.0, 21.0, 24.0)


@pytest.mark.parametrize("acp,avi,expected", [
    (GOOD, BAD, REPRODUCED),
    (BAD, GOOD, NOT_REPRODUCED),
    (NOISY_A, NOISY_B, INCONCLUSIVE),
    (seeds(22.0), seeds(37.0), INCONCLUSIVE),
])
def test_claim_acp_beats_avi(acp, avi, expected):
    tables = {"fig3a": fig3a({(20, "acp"): acp, (20, "avi"): avi})}
    claim = C.claim_acp_beats_avi(tables, 20)
    assert claim.verdict == expected
    assert claim.claim_id == "fig3a-acp-beats-avi-n20"
    assert "37.2" in claim.numbers  # the paper's AVI number is quoted


def test_claim_no_data():
    claim = C.claim_acp_beats_avi({"fig3a": fig3a({(20, "acp"): GOOD})}, 100)
    assert claim.verdict == INCONCLUSIVE and claim.numbers.startswith("no data")
    assert C.claim_acp_beats_avi({}, 20).numbers.startswith("no data")


# ------------------------------------------------------------------------------ claim 2
@pytest.mark.parametrize("avi,acp,expected", [
    (seeds(14.0, 14.1, 14.05), seeds(14.4, 14.5, 14.45), REPRODUCED),  # AVI better
    (seeds(14.4, 14.52, 14.45), seeds(14.4, 14.5, 14.45), REPRODUCED),  # equal within margin
    (seeds(15.0, 15.1, 15.05), seeds(14.4, 14.5, 14.45), NOT_REPRODUCED),  # AVI worse by 0.6 > 0.2
    (seeds(14.0, 15.4, 14.5), seeds(14.4, 14.5, 14.45), INCONCLUSIVE),
])
def test_claim_avi_as_good_at_1000(avi, acp, expected):
    tables = {"fig3a": fig3a({(1000, "avi"): avi, (1000, "acp"): acp})}
    assert C.claim_avi_as_good_at_1000(tables).verdict == expected


# ------------------------------------------------------------------------------ claim 3
DOWN = [-13.0, -14.0, -14.5, -14.6]  # LL-UB tightening: an upper bound that decreases
UP = [-15.0, -14.0, -13.5, -13.4]


@pytest.mark.parametrize("per_seed,expected", [
    ({0: (DOWN, UP[::-1]), 1: ([x - 0.1 for x in DOWN], [x - 0.3 for x in UP[::-1]]),
      2: ([x + 0.2 for x in DOWN], [x + 0.2 for x in UP[::-1]])}, REPRODUCED),
    ({0: (UP, UP[::-1]), 1: ([x - 0.1 for x in UP], UP[::-1]), 2: ([x + 0.1 for x in UP], UP[::-1])}, NOT_REPRODUCED),
    ({0: (DOWN, UP[::-1])}, INCONCLUSIVE),  # one seed
])
def test_claim_ubcdi_curve(per_seed, expected):
    claim = C.claim_ubcdi_curve({"fig3b": curves(per_seed)})
    assert claim.verdict == expected


def test_claim_ubcdi_uses_last_round_of_each_seed():
    # seed 1 stops after 2 rounds; its last value must be compared, not a missing row
    per_seed = {0: (DOWN, [-40.0, -80.0, -88.0, -87.0]), 1: (DOWN[:2], [-40.5, -85.0]),
                2: (DOWN, [-39.0, -80.0, -86.0, -86.5])}
    claim = C.claim_ubcdi_curve({"fig3b": curves(per_seed)})
    assert claim.verdict == REPRODUCED
    assert "last -86.167" in claim.numbers  # mean of -87.0, -85.0, -86.5


# ------------------------------------------------------------------------------ claim 4
def test_claim_nonamortized_worse():
    amort = {(1000, "avi"): seeds(14.0, 14.1, 14.2), (1000, "acp"): seeds(14.3, 14.4, 14.5)}
    worse = C.claim_nonamortized_worse({"fig3a": fig3a({**amort, (0, "lb-cdi"): seeds(22.0, 22.4, 22.2)})}, "lb-cdi")
    assert worse.verdict == REPRODUCED and "welch" in worse.numbers
    better = C.claim_nonamortized_worse({"fig3a": fig3a({**amort, (0, "svi"): seeds(10.0, 10.4, 10.2)})}, "svi")
    assert better.verdict == NOT_REPRODUCED
    mixed = C.claim_nonamortized_worse({"fig3a": fig3a({**amort, (0, "svi"): seeds(14.25, 14.1, 14.5)})}, "svi")
    assert mixed.verdict == INCONCLUSIVE
    assert C.claim_nonamortized_worse({"fig3a": fig3a(amort)}, "svi").numbers.startswith("no data")


# ------------------------------------------------------------------------------ claim 5
@pytest.mark.parametrize("acp,avi,expected", [
    ([8, 8, 7], [6, 7, 8], REPRODUCED),  # majority rule in both methods
    ([8, 7, 7], [6, 6, 6], NOT_REPRODUCED),  # ACP misses in the majority of seeds
    ([8, 8, 8], [8, 8, 6], NOT_REPRODUCED),  # AVI recovers all in the majority
    ([8, 7], [6, 6], INCONCLUSIVE),  # tie
    ([8], [6], INCONCLUSIVE),  # n=1
])
def test_claim_recovery_n200(acp, avi, expected):
    tables = {"recovery": recovery({("syn-pattern", "acp", 200): acp, ("syn-pattern", "avi", 200): avi})}
    assert C.claim_recovery_n200(tables).verdict == expected


def test_claim_recovery_other_dataset_is_no_data():
    tables = {"recovery": recovery({("multi-mnist", "acp", 200): [8, 8], ("multi-mnist", "avi", 200): [6, 6]})}
    assert C.claim_recovery_n200(tables).numbers.startswith("no data")


def test_claim_recovery_mnist_counts():
    tables = {"recovery": recovery({("multi-mnist", "acp", 8000): [8, 9, 8], ("multi-mnist", "avi", 8000): [6, 7, 5]},
                                   n_true=10)}
    assert C.claim_recovery_mnist(tables).verdict == REPRODUCED
    tables = {"recovery": recovery({("multi-mnist", "acp", 8000): [6, 7, 5], ("multi-mnist", "avi", 8000): [8, 9, 8]},
                                   n_true=10)}
    assert C.claim_recovery_mnist(tables).verdict == NOT_REPRODUCED


def test_claim_recovery_mnist_smaller_cell_is_labelled():
    """The quick profile runs MULTI-MNIST at N_train = 2,000 (8,000 cannot converge in its budget):
    the claim is checked there and says so; with 8,000 present, 8,000 is used."""
    small = {("multi-mnist", "acp", 2000): [8, 9, 8], ("multi-mnist", "avi", 2000): [6, 7, 5],
             ("multi-mnist", "acp", 500): [1, 1, 1], ("multi-mnist", "avi", 500): [5, 5, 5]}
    claim = C.claim_recovery_mnist({"recovery": recovery(small, n_true=10)})
    assert claim.verdict == REPRODUCED and "N_train = 2000, not the paper's 8000" in claim.numbers
    assert claim.claim_id == "suppfig2-acp-recovers-more-than-avi-n8000"
    both = {**small, ("multi-mnist", "acp", 8000): [6, 7, 5], ("multi-mnist", "avi", 8000): [8, 9, 8]}
    claim = C.claim_recovery_mnist({"recovery": recovery(both, n_true=10)})
    assert claim.verdict == NOT_REPRODUCED and "not the paper's" not in claim.numbers


# ------------------------------------------------------------------------------ claim 6
def test_claim_acp_lowest_table4():
    base = {(1000, "acp"): seeds(157.0, 157.2, 157.1), (1000, "avi"): seeds(159.0, 159.3, 159.1),
            (1000, "svi"): seeds(158.0, 158.1, 158.3), (40000, "lb-cdi"): None}
    claim = C.claim_acp_lowest_table4({"table4": table4(base)})
    assert claim.verdict == REPRODUCED
    assert "not run here: 40000, 20000, 10000, 5000" in claim.numbers
    worse = {**base, (5000, "acp"): seeds(152.0, 152.1, 152.2), (5000, "svi"): seeds(150.0, 150.2, 150.1)}
    assert C.claim_acp_lowest_table4({"table4": table4(worse)}).verdict == NOT_REPRODUCED
    tied = {**base, (1000, "svi"): seeds(157.5, 156.8, 157.3)}
    assert C.claim_acp_lowest_table4({"table4": table4(tied)}).verdict == INCONCLUSIVE
    assert C.claim_acp_lowest_table4({"table4": table4({(1000, "avi"): seeds(1.0, 2.0)})}).numbers.startswith("no data")


# ------------------------------------------------------------------------------ claim 7
def _fig5_cells(adv_small: float, adv_large: float, seeds_avi=(0, 1, 2), seeds_acp=(0, 1, 2)):
    noise = [0.0, 0.1, -0.1]
    cells = {}
    for n, adv in ((100, adv_small), (1000, (adv_small + adv_large) / 2), (10000, adv_large)):
        cells[("syn-random-1", n, "acp")] = {s: 50.0 + e for s, e in zip(seeds_acp, noise)}
        cells[("syn-random-1", n, "avi")] = {s: 50.0 + adv + 2 * e for s, e in zip(seeds_avi, noise[::-1])}
    return cells


@pytest.mark.parametrize("small,large,expected", [
    (5.0, 0.5, REPRODUCED),
    (0.5, 5.0, NOT_REPRODUCED),
    (1.0, 0.95, INCONCLUSIVE),
])
def test_claim_advantage_grows(small, large, expected):
    claim = C.claim_advantage_grows({"fig5": fig5(_fig5_cells(small, large))}, "syn-random-1")
    assert claim.verdict == expected
    unpaired = C.claim_advantage_grows({"fig5": fig5(_fig5_cells(small, large, seeds_avi=(5, 6, 7)))}, "syn-random-1")
    assert unpaired.verdict == expected and "welch" in unpaired.numbers


def test_claim_advantage_no_data_and_single_n():
    assert C.claim_advantage_grows({}, "syn-random-2").numbers.startswith("no data")
    one_n = {k: v for k, v in _fig5_cells(5.0, 0.5).items() if k[1] == 100}
    assert C.claim_advantage_grows({"fig5": fig5(one_n)}, "syn-random-1").numbers.startswith("no data")


def test_synthetic_claims_without_tables_all_no_data():
    out = C.synthetic_claims({})
    assert len(out) == 11 + 6
    assert all(c.verdict == INCONCLUSIVE and c.numbers.startswith("no data") for c in out)
    assert len({c.claim_id for c in out}) == len(out)


# ------------------------------------------------------------------------------ records
def test_write_read_claims_roundtrip(tmp_path):
    items = [Claim("a-1", "ACP | beats AVI", "Fig. 3a", REPRODUCED, "x = 1, y", "rule"),
             Claim("b-2", "s", "Table 4", INCONCLUSIVE, "no data: table4", "r")]
    C.write_claims(items, tmp_path / "claims.csv", tmp_path / "claims.md")
    assert C.read_claims(tmp_path / "claims.csv") == items
    md = (tmp_path / "claims.md").read_text()
    assert "1 reproduced, 0 not reproduced, 1 inconclusive" in md and "ACP \\| beats" in md
    with pytest.raises(DataError, match="duplicate"):
        C.write_claims(items + items[:1], tmp_path / "dup.csv")


def test_claim_rejects_unknown_verdict():
    with pytest.raises(ValueError, match="verdict"):
        Claim("x", "s", "l", "maybe", "n", "r")
