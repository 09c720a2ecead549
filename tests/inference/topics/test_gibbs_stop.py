"""Collapsed Gibbs chains trained in chunks and stopped by the project's convergence rule
(inference.topics.gibbs.train_timed): real tomotopy runs on a small corpus."""

from __future__ import annotations

import numpy as np
import pytest

from noisyor_bench.inference.convergence import relative_improvement
from noisyor_bench.inference.topics.gibbs import fit_lda_gibbs, trace_records
from noisyor_bench.inference.topics.pam_gibbs import fit_pam_gibbs


def _corpus(seed: int = 0, docs: int = 120) -> np.ndarray:
    """Two well separated topics over 20 words: the chain settles within tens of sweeps."""
    rng = np.random.default_rng(seed)
    topics = np.zeros((2, 20))
    topics[0, :10] = 0.1
    topics[1, 10:] = 0.1
    counts = np.zeros((docs, 20), dtype=np.int64)
    for d in range(docs):
        theta = rng.dirichlet([0.2, 0.2])
        counts[d] = rng.multinomial(40, theta @ topics)
    return counts


def _rule_by_hand(trace: tuple, window: int = 5, tol: float = 1e-3) -> bool:
    values = [-ll for _, ll, _ in trace]
    best_before, best_within = min(values[:-window]), min(values[-window:])
    return (best_before - best_within) / abs(best_before) < tol


@pytest.mark.parametrize("sampler", ["lda", "pam"])
def test_stop_on_rule_stops_before_the_cap_where_the_rule_first_holds(sampler: str) -> None:
    counts = _corpus()

    def run(stop: bool):
        if sampler == "lda":
            return fit_lda_gibbs(
                counts, 2, 0.1, 0.01, iterations=400, seed=3, trace_interval=5, stop_on_rule=stop
            )
        return fit_pam_gibbs(counts, 2, 4, iterations=400, seed=3, trace_interval=5, stop_on_rule=stop)

    fit = run(True)
    assert fit.stop_reason == "plateau"
    assert fit.sweeps < 400 and fit.sweeps % 5 == 0
    assert [it for it, _, _ in fit.trace] == list(range(5, fit.sweeps + 1, 5))
    # the rule (recomputed by hand) holds at the stop and at no earlier trace point
    assert _rule_by_hand(fit.trace)
    assert not any(_rule_by_hand(fit.trace[:n]) for n in range(6, len(fit.trace)))
    rel = relative_improvement([r.train_nelbo for r in trace_records(fit.trace)], 5)[2]
    assert rel is not None and rel < 1e-3
    # the same seed gives the same chain and the same stop
    again = run(True)
    assert again.sweeps == fit.sweeps
    assert [ll for _, ll, _ in again.trace] == [ll for _, ll, _ in fit.trace]
    # with the rule off the chain runs exactly `iterations`
    full = run(False)
    assert full.sweeps == 400 and full.stop_reason == "max_epochs" and full.trace[-1][0] == 400
    # ... and its first sweeps are the stopped chain's (same chain, only longer)
    assert [ll for _, ll, _ in full.trace[: len(fit.trace)]] == [ll for _, ll, _ in fit.trace]


def test_chunked_chain_reaches_the_state_of_one_train_call() -> None:
    """tomotopy continues a chain across train() calls: global_step, burn_in and optim_interval
    count over calls, and the per-call random streams are drawn from the model's generator, so
    chunks of 7 reach exactly the state of one 41-sweep call (found with tomotopy 0.14.0)."""
    counts = _corpus(1)
    one = fit_pam_gibbs(counts, 2, 4, iterations=41, seed=2, optimize_interval=10, burn_in=15)
    chunked = fit_pam_gibbs(
        counts, 2, 4, iterations=41, seed=2, optimize_interval=10, burn_in=15, trace_interval=7
    )
    assert [it for it, _, _ in chunked.trace] == [7, 14, 21, 28, 35, 41]
    assert chunked.sweeps == one.sweeps == 41
    assert chunked.log_likelihood_per_word == one.log_likelihood_per_word
    np.testing.assert_array_equal(chunked.subalpha, one.subalpha)
    np.testing.assert_array_equal(chunked.sub_topic_word, one.sub_topic_word)
    # burn_in counts global sweeps: before sweep 15 no re-estimation across chunks either
    early = fit_pam_gibbs(
        counts, 2, 4, iterations=14, seed=2, optimize_interval=10, burn_in=15, trace_interval=7
    )
    np.testing.assert_array_equal(early.subalpha, np.ones((2, 4)))
    assert not np.array_equal(one.subalpha, np.ones((2, 4)))
    lda_one = fit_lda_gibbs(counts, 2, 0.1, 0.01, iterations=33, seed=4, optimize_interval=10)
    lda_chunked = fit_lda_gibbs(
        counts, 2, 0.1, 0.01, iterations=33, seed=4, optimize_interval=10, trace_interval=4
    )
    np.testing.assert_array_equal(lda_chunked.topic_word, lda_one.topic_word)
    np.testing.assert_array_equal(lda_chunked.doc_topic, lda_one.doc_topic)
