"""The plateau predicate (inference.convergence.plateau_reached), the one home of the convergence
rule: hand-computed cases, assess() agreeing with it, and the fits that stop on it (Trainer's
stop_on_plateau, Gibbs and online-LDA stop_on_rule) reading the run's own window and tolerance."""

from __future__ import annotations

import math

import numpy as np
import pytest

from noisyor_bench.inference.convergence import (
    BEST_AT_LIMIT,
    PLATEAU,
    STILL_IMPROVING,
    TOO_FEW_EVALUATIONS,
    assess,
    plateau_reached,
)
from noisyor_bench.inference.fitting import EpochRecord, FitBudget
from noisyor_bench.inference.topics import gibbs, lda_meanfield

NAN, INF = math.nan, math.inf

# (values in order, window W, rel_tol, plateau?, the hand computation). Values are powers of two
# (or their small multiples) where a case sits exactly at the tolerance, so the arithmetic is exact.
CASES = [
    ([], 1, 1e-3, False, "no values"),
    ([10.0], 1, 1e-3, False, "1 value < W + 1 = 2"),
    ([10.0, 9.0, 8.0, 7.0, 6.0], 5, 1e-3, False, "5 values < W + 1 = 6: no verdict even when flat-looking"),
    ([5.0, 5.0, 5.0, 5.0, 5.0], 5, 1e-3, False, "5 equal values, W = 5: still no verdict"),
    ([5.0] * 6, 5, 1e-3, True, "6 equal values: before 5, within 5, rel 0 < 1e-3"),
    ([10.0, 9.995], 1, 1e-3, True, "rel 0.005 / 10 = 5e-4 < 1e-3"),
    ([12.0, 10.0, 9.7, 9.5], 2, 1e-3, False, "before min(12, 10) = 10, within 9.5: rel 0.05"),
    ([12.0, 10.0, 9.7, 9.5], 2, 0.06, True, "rel 0.05 < 0.06"),
    ([16.0, 15.0], 1, 0.0625, False, "rel 1/16 = 0.0625 exactly: not < tol (strict)"),
    ([16.0, 15.0], 1, 0.0625000001, True, "rel 1/16 just below tol"),
    ([9.0, 10.0, 11.0], 2, 1e-3, True, "window worse: before 9, within 10, rel -1/9 < tol"),
    ([9.0, 10.0], 1, 0.0, True, "rel -1/9 < 0 even with tol 0"),
    ([5.0, 4.0, 3.0, 3.0, 3.0, 2.999], 3, 1e-3, True, "before 3, within 2.999: rel 3.3e-4"),
    ([5.0, 4.0, 3.5, 3.4, 3.3, 3.2], 3, 1e-3, False, "before 3.5, within 3.2: rel 0.3/3.5 = 0.086"),
    # negative monitored values (e.g. a NELBO below zero): the denominator is |best before|
    ([-8.0, -9.0], 1, 0.125, False, "before -8, within -9: rel 1/8 = 0.125 exactly: not < 0.125"),
    ([-8.0, -9.0], 1, 0.25, True, "rel 0.125 < 0.25"),
    ([-8.0, -7.0], 1, 1e-3, True, "window worse: rel (-8 + 7) / 8 = -0.125"),
    ([-4.0, -4.0, -4.001], 2, 1e-3, True, "before -4, within -4.001: rel 2.5e-4"),
    # perplexity-sized positives and their logs (the online-LDA monitor)
    ([2048.0, 2047.0], 1, 1e-3, True, "rel 1/2048 = 4.9e-4"),
    ([2048.0, 2040.0], 1, 1e-3, False, "rel 8/2048 = 3.9e-3"),
    ([math.log(2048.0), math.log(2047.0)], 1, 1e-3, True, "log: rel ln(2048/2047)/ln 2048 = 6.4e-5"),
    # a best-before of exactly 0: no change is a plateau, any improvement (rel +inf) is not
    ([0.0, 0.0], 1, 1e-3, True, "before 0, within 0: rel 0"),
    ([0.0, -1.0], 1, 1e-3, False, "before 0, within -1: rel +inf"),
    ([1.0, 0.0], 1, 1e-3, False, "before 1, within 0: rel 1"),
    # non-finite values (and None) are left out before counting, as assess() leaves them out
    ([10.0, NAN, 9.995], 1, 1e-3, True, "NaN dropped: [10, 9.995], rel 5e-4"),
    ([10.0, INF], 1, 1e-3, False, "inf dropped: [10] has 1 < 2 values"),
    ([INF, 10.0, 9.995], 2, 1e-3, False, "inf dropped: 2 values < W + 1 = 3"),
    ([-INF, 5.0, 4.999], 1, 1e-3, True, "-inf dropped: [5, 4.999], rel 2e-4"),
    ([NAN, NAN, 12.0, 10.0, NAN, 9.7, 9.5], 2, 1e-3, False, "NaNs dropped: the 0.05 case"),
    ([None, 10.0, 9.995], 1, 1e-3, True, "None dropped"),
    ([NAN, NAN, NAN], 1, 1e-3, False, "nothing finite: no verdict"),
]


@pytest.mark.parametrize(("values", "window", "rel_tol", "expected", "why"), CASES, ids=[c[4] for c in CASES])
def test_plateau_reached_by_hand(values: list, window: int, rel_tol: float, expected: bool, why: str) -> None:
    assert plateau_reached(values, window, rel_tol) is expected, why


def test_window_below_one_is_an_error() -> None:
    with pytest.raises(ValueError, match="window"):
        plateau_reached([1.0, 2.0], 0, 1e-3)


@pytest.mark.parametrize(("values", "window", "rel_tol", "expected", "why"), CASES, ids=[c[4] for c in CASES])
def test_assess_at_the_epoch_limit_says_plateau_exactly_when_the_predicate_holds(
    values: list, window: int, rel_tol: float, expected: bool, why: str
) -> None:
    """A training-NELBO curve that ran to its limit: assess() converged iff the predicate holds
    and the best evaluation is not the last one (a run stopped at max_epochs with its
    best evaluation last is never converged, rule best-at-limit, whatever the window says).
    NaN stands in for None: EpochRecord's train_nelbo is a float.  The best epoch is read off
    the curve (None) and given as the trainer records it (the first epoch of the strict minimum)."""
    if not values:
        return  # an empty curve is "no fit", not a plateau question
    records = [EpochRecord(i + 1, NAN if v is None else v, None, 0.0) for i, v in enumerate(values)]
    budget = FitBudget(max_epochs=len(values), convergence_window=window, convergence_rel_tol=rel_tol)
    finite = [(i + 1, v) for i, v in enumerate(values) if v is not None and math.isfinite(v)]
    # by hand: the last finite value is strictly below every earlier one (or the only one)
    best_last = bool(finite) and (len(finite) == 1 or finite[-1][1] < min(v for _, v in finite[:-1]))
    first_best = min(finite, key=lambda ev: ev[1])[0] if finite else None  # min() keeps the first tie
    rule = (
        TOO_FEW_EVALUATIONS
        if len(finite) <= window
        else BEST_AT_LIMIT
        if best_last
        else PLATEAU
        if expected
        else STILL_IMPROVING
    )
    for best_epoch in (None, first_best):
        verdict = assess(records, "max_epochs", best_epoch, budget)
        assert verdict.converged is (expected and not best_last), why
        assert verdict.rule == rule, why
        assert verdict.best_at_limit is best_last, why
        # the same curve stopped by early stopping is converged: the limit rule is the limit's only
        assert assess(records, "patience", best_epoch, budget).converged is True, why


def test_gibbs_rule_reads_the_budget_it_is_given() -> None:
    """A trace whose last 2 points improve by 0.2% on the best before: W = 2 with 0.1% says not
    yet, W = 2 with 1% says plateau, W = 5 (too few points) says no verdict."""
    lls = [-10.0, -9.0, -8.0, -8.0, -7.984]  # minus: NELBO-like values 10, 9, 8, 8, 7.984
    trace = tuple((5 * (i + 1), ll, float(i)) for i, ll in enumerate(lls))
    assert not gibbs.rule_holds(trace, FitBudget(convergence_window=2, convergence_rel_tol=1e-3))
    assert gibbs.rule_holds(trace, FitBudget(convergence_window=2, convergence_rel_tol=1e-2))
    assert not gibbs.rule_holds(trace, FitBudget(convergence_window=5, convergence_rel_tol=1.0))


def test_online_lda_rule_reads_log_perplexity_and_the_budget() -> None:
    """Perplexities 1000, 990, 989: logs 6.9078, 6.8977, 6.8967. W = 1: before ln 990, within
    ln 989, rel = ln(990/989) / ln 990 = 1.47e-4; W = 2: before ln 1000, rel = ln(1000/989)/ln 1000
    = 1.60e-3.  A non-positive perplexity is left out."""
    trace = [(1, 1000.0), (2, 990.0), (3, 0.0), (4, 989.0)]
    assert lda_meanfield._rule_holds(trace, FitBudget(convergence_window=1, convergence_rel_tol=2e-4))
    assert not lda_meanfield._rule_holds(trace, FitBudget(convergence_window=1, convergence_rel_tol=1e-4))
    assert not lda_meanfield._rule_holds(trace, FitBudget(convergence_window=2, convergence_rel_tol=1.5e-3))
    assert lda_meanfield._rule_holds(trace, FitBudget(convergence_window=2, convergence_rel_tol=1.7e-3))
    logs = [r.train_nelbo for r in lda_meanfield.perplexity_records(trace)]
    assert logs[:2] == [math.log(1000.0), math.log(990.0)] and math.isnan(logs[2])


def test_gibbs_chain_stops_where_the_rule_holds_with_the_runs_window() -> None:
    """A real tomotopy chain with window 2 (not FitBudget's 5): it stops at the first trace point
    where the W = 2 rule, computed by hand, holds."""
    rng = np.random.default_rng(0)
    topics = np.zeros((2, 20))
    topics[0, :10], topics[1, 10:] = 0.1, 0.1
    counts = np.stack([rng.multinomial(40, rng.dirichlet([0.2, 0.2]) @ topics) for _ in range(120)])
    budget = FitBudget(max_epochs=400, convergence_window=2, convergence_rel_tol=1e-3)
    fit = gibbs.fit_lda_gibbs(
        counts, 2, 0.1, 0.01, iterations=400, seed=3, trace_interval=5, stop_on_rule=True, budget=budget
    )
    values = [-ll for _, ll, _ in fit.trace]

    def by_hand(v: list[float]) -> bool:
        return len(v) >= 3 and (min(v[:-2]) - min(v[-2:])) / abs(min(v[:-2])) < 1e-3

    assert fit.stop_reason == "plateau" and fit.sweeps < 400
    default = gibbs.fit_lda_gibbs(
        counts, 2, 0.1, 0.01, iterations=400, seed=3, trace_interval=5, stop_on_rule=True
    )
    assert fit.sweeps < default.sweeps  # FitBudget's W = 5 needs more trace points: the window was read
    assert by_hand(values) and not any(by_hand(values[:n]) for n in range(1, len(values)))
