"""Online mean-field LDA driven pass by pass (one partial_fit per pass) against scikit-learn's
own ``fit``, and the perplexity checks on a fixed subset of training documents."""

from __future__ import annotations

import math

import numpy as np
import pytest
from sklearn.decomposition import LatentDirichletAllocation

from noisyor_bench.inference.topics.lda_meanfield import eval_subset, fit_lda_meanfield


def _corpus(seed: int = 0, docs: int = 150, vocab: int = 30) -> np.ndarray:
    rng = np.random.default_rng(seed)
    topics = rng.dirichlet(np.full(vocab, 0.1), size=3)
    theta = rng.dirichlet(np.full(3, 0.3), size=docs)
    return np.stack([rng.multinomial(30, t @ topics) for t in theta])


def test_pass_by_pass_equals_scikit_learns_fit() -> None:
    counts = _corpus()
    driven = fit_lda_meanfield(
        counts,
        3,
        "online",
        seed=4,
        max_iter=4,
        batch_size=32,
        evaluate_every=1,
        eval_docs=60,
        compute_perplexity=False,
    )
    # scikit-learn itself, no checks (the checks draw no random numbers)
    reference = LatentDirichletAllocation(
        n_components=3, learning_method="online", max_iter=4, batch_size=32, random_state=4, n_jobs=1
    ).fit(counts.astype(float))
    np.testing.assert_allclose(driven.topic_word_lambda, reference.components_, rtol=1e-10, atol=1e-12)
    assert driven.n_batch_iter == reference.n_batch_iter_  # learning-rate schedule continued across calls
    assert driven.n_iter == 4 and driven.stop_reason == "max_epochs"
    # one perplexity value per pass, on the 60-document subset, scaled to the whole corpus
    assert [p for p, _ in driven.perplexity_trace] == [1, 2, 3, 4]
    assert driven.eval_docs == 60
    last = driven.perplexity_trace[-1][1]
    full = reference.perplexity(counts.astype(float))
    assert math.isfinite(last) and last == pytest.approx(full, rel=0.15)


def test_subset_is_fixed_and_stop_on_rule_stops_before_the_cap() -> None:
    a, b = eval_subset(1000, 100), eval_subset(1000, 100)
    np.testing.assert_array_equal(a, b)
    assert len(set(a.tolist())) == 100 and np.all(np.diff(a) > 0)
    np.testing.assert_array_equal(eval_subset(50, 100), np.arange(50))
    counts = _corpus(1, docs=200)
    fit = fit_lda_meanfield(
        counts,
        3,
        "online",
        seed=0,
        max_iter=200,
        batch_size=50,
        evaluate_every=1,
        eval_docs=80,
        stop_on_rule=True,
        compute_perplexity=False,
    )
    assert fit.stop_reason == "plateau" and 6 <= fit.n_iter < 200
    logs = [math.log(v) for _, v in fit.perplexity_trace]
    before, within = min(logs[:-5]), min(logs[-5:])
    assert (before - within) / abs(before) < 1e-3  # the rule, by hand, at the stop
    earlier = logs[:-1]
    assert len(earlier) < 6 or (min(earlier[:-5]) - min(earlier[-5:])) / abs(min(earlier[:-5])) >= 1e-3
