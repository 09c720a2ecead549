"""Pattern recovery score: Hungarian matching of learned to true weight columns (paper Fig. 4)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from noisyor_bench.evaluation.recovery import (
    DEFAULT_THRESHOLD,
    activation_probabilities,
    cosine_similarity_matrix,
    match_patterns,
)

RATE = -math.log(1 - 0.8)  # the paper's pattern weight: p(x_i=1 | z_k=1) = 0.8


def disjoint_patterns(k: int = 6, size: int = 6, d: int = 64) -> np.ndarray:
    """k binary patterns of equal size on disjoint pixels, as rates (D, k)."""
    theta = np.zeros((d, k))
    for j in range(k):
        theta[j * size : (j + 1) * size, j] = RATE
    return theta


def test_activation_probabilities_closed_form():
    theta = np.array([[0.0, 1e-12], [RATE, 5.0]])
    expected = np.array([[0.0, 1e-12], [0.8, 1 - math.exp(-5.0)]])
    np.testing.assert_allclose(activation_probabilities(theta), expected, rtol=1e-12, atol=0)


def test_cosine_matrix_matches_loop():
    rng = np.random.default_rng(0)
    a, b = rng.random((7, 3)), rng.random((7, 4))
    b[:, 2] = 0.0  # zero column: similarity 0 by definition
    sim = cosine_similarity_matrix(a, b)
    for i in range(3):
        for j in range(4):
            nb = math.sqrt(sum(x * x for x in b[:, j]))
            ref = 0.0 if nb == 0 else sum(a[:, i] * b[:, j]) / (math.sqrt(sum(a[:, i] ** 2)) * nb)
            assert sim[i, j] == pytest.approx(ref, abs=1e-12)


def test_planted_permutation_recovered_exactly():
    rng = np.random.default_rng(1)
    true = disjoint_patterns()
    perm = rng.permutation(true.shape[1])  # learned column c holds true pattern perm[c]
    learned = true[:, perm] * 0.7  # weaker weights: cosine is scale invariant
    rec = match_patterns(true, learned)
    inverse = np.argsort(perm)
    np.testing.assert_array_equal(rec.assignment, inverse)
    np.testing.assert_allclose(rec.matched, 1.0, atol=1e-12)
    assert rec.n_recovered == rec.n_true == 6
    # drawing order: learned columns in the true order reproduce the true patterns
    np.testing.assert_allclose(learned[:, rec.order()] / 0.7, true, atol=1e-12)


def test_noise_tolerated_but_garbage_not():
    rng = np.random.default_rng(2)
    true = disjoint_patterns()
    learned = true + rng.uniform(0, 0.05, true.shape)  # faint background noise
    assert match_patterns(true, learned).n_recovered == 6
    learned[:, 3] = rng.uniform(0, 0.3, 64)  # one column is unstructured noise
    rec = match_patterns(true, learned)
    assert rec.n_recovered == 5
    assert not rec.recovered[3]


def test_merged_patterns_never_both_recovered():
    true = disjoint_patterns()
    learned = true.copy()
    learned[:, 0] = np.maximum(true[:, 0], true[:, 1])  # patterns 0 and 1 merged in one column
    learned[:, 1] = 0.0
    learned[50:64, 1] = 0.3  # the freed column learned something else
    rec = match_patterns(true, learned)
    # merge of two equal disjoint patterns has cosine 1/sqrt(2) < 0.8 with each: neither counts
    assert rec.similarity[0, 0] == pytest.approx(1 / math.sqrt(2), abs=1e-12)
    assert not rec.recovered[0] and not rec.recovered[1]
    assert rec.n_recovered == 4
    # even with a lax threshold the one-to-one matching lets at most one of them count
    lax = match_patterns(true, learned, threshold=0.5)
    assert int(lax.recovered[0]) + int(lax.recovered[1]) == 1


def test_threshold_above_merge_similarity():
    assert DEFAULT_THRESHOLD > 1 / math.sqrt(2)


def test_hungarian_maximises_total_similarity_brute_force():
    rng = np.random.default_rng(3)
    for _ in range(5):
        true, learned = rng.random((10, 5)), rng.random((10, 5))
        rec = match_patterns(true, learned)
        sim = cosine_similarity_matrix(activation_probabilities(true), activation_probabilities(learned))
        best = max(sum(sim[i, p[i]] for i in range(5)) for p in itertools.permutations(range(5)))
        assert rec.matched.sum() == pytest.approx(best, abs=1e-12)
        assert len(set(rec.assignment)) == 5


def test_more_and_fewer_learned_columns():
    true = disjoint_patterns(k=4, size=4, d=32)
    extra = np.concatenate([true[:, ::-1], np.full((32, 2), 0.01)], axis=1)
    rec = match_patterns(true, extra)
    np.testing.assert_array_equal(rec.assignment, [3, 2, 1, 0])
    assert rec.n_recovered == 4
    assert list(rec.order()) == [3, 2, 1, 0, 4, 5]
    fewer = match_patterns(true, true[:, :2])
    assert fewer.n_recovered == 2
    assert list(fewer.assignment[2:]) == [-1, -1]
    assert fewer.mean_similarity == pytest.approx(0.5)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"theta_learned": np.zeros((5, 2))},
        {"threshold": 0.0},
        {"threshold": 1.5},
        {"theta_learned": np.full((4, 2), np.nan)},
    ],
)
def test_invalid_inputs(kwargs):
    args = {"theta_true": np.ones((4, 2)), "theta_learned": np.ones((4, 2)), "threshold": 0.8, **kwargs}
    with pytest.raises(ValueError):
        match_patterns(**args)
