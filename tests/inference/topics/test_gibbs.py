"""tomotopy collapsed Gibbs LDA through fit_lda_gibbs: reproducible, recovers separable topics."""

import numpy as np
import pytest

from noisyor_bench.inference.topics.gibbs import fit_lda_gibbs
from noisyor_bench.infra.errors import DataError


def _two_topic_corpus(seed: int = 0) -> np.ndarray:
    """40 documents, each drawn from one of two disjoint 4-word topics; words 8, 9 never occur."""
    rng = np.random.default_rng(seed)
    counts = np.zeros((40, 10), dtype=int)
    for doc in range(40):
        first = 0 if doc % 2 else 4
        np.add.at(counts[doc], rng.integers(first, first + 4, size=30), 1)
    return counts


def test_same_seed_same_chain_other_seed_other_chain():
    # a structureless corpus: chains from different seeds end in different states
    counts = np.random.default_rng(3).poisson(1.0, size=(30, 12))
    a = fit_lda_gibbs(counts, 2, alpha=0.1, eta=0.01, iterations=20, seed=5)
    b = fit_lda_gibbs(counts, 2, alpha=0.1, eta=0.01, iterations=20, seed=5)
    c = fit_lda_gibbs(counts, 2, alpha=0.1, eta=0.01, iterations=20, seed=6)
    assert np.array_equal(a.topic_word, b.topic_word)
    assert np.array_equal(a.doc_topic, b.doc_topic)
    assert not np.array_equal(a.doc_topic, c.doc_topic)


def test_recovers_disjoint_topics_over_the_whole_vocabulary():
    counts = _two_topic_corpus()
    fit = fit_lda_gibbs(counts, 2, alpha=0.1, eta=0.01, iterations=100, seed=1)
    assert fit.topic_word.shape == (2, 10)
    np.testing.assert_allclose(fit.topic_word.sum(axis=1), 1.0)
    # each topic puts > 95% of its mass on one of the two word blocks
    block_mass = np.stack([fit.topic_word[:, :4].sum(axis=1), fit.topic_word[:, 4:8].sum(axis=1)], axis=1)
    assert sorted(block_mass.max(axis=1).round(2).tolist()) == pytest.approx([1.0, 1.0], abs=0.05)
    assert block_mass.argmax(axis=1).tolist() in ([0, 1], [1, 0])
    # unused words get the smoothed mass eta / (n_k + V eta) of the collapsed posterior mean
    n_k = counts.sum() / 2
    assert fit.topic_word[:, 8:].max() < 2 * 0.01 / (n_k * 0.5)
    # documents are assigned to their own block's topic
    topic_of_block0 = int(block_mass[:, 0].argmax())
    assert (fit.doc_topic[1::2, topic_of_block0] > 0.9).all()


def test_non_integer_counts_are_rejected():
    with pytest.raises(DataError, match="non-negative integers"):
        fit_lda_gibbs(np.array([[0.5, 1.0]]), 2, alpha=0.1, eta=0.01, iterations=5, seed=0)
