"""APE's toy bars and training-model pool: bars where the authors put them, the bar-biased prior's
concentrations, documents from the generating topics, per-index reproducible pools."""

from __future__ import annotations

import numpy as np
import pytest

from noisyor_bench.data.synthetic.theta_pool import ThetaPool
from noisyor_bench.data.synthetic.toybars import (
    ToyBarsSpec,
    bar_biased_concentration,
    bar_topics,
    build_toybars,
    draw_documents,
)
from noisyor_bench.infra.errors import ConfigError


def test_bars_are_the_rows_and_columns_of_a_10x10_image():
    bars = bar_topics()
    assert bars.shape == (20, 100)
    np.testing.assert_allclose(bars.sum(1), 1.0)
    images = bars.reshape(20, 10, 10)
    for k in range(10):  # topic k < 10: column k (vertical)
        expected = np.zeros((10, 10))
        expected[:, k] = 0.1
        np.testing.assert_array_equal(images[k], expected)
    for k in range(10, 20):  # topic k >= 10: row k - 10 (horizontal)
        expected = np.zeros((10, 10))
        expected[k - 10, :] = 0.1
        np.testing.assert_array_equal(images[k], expected)
    # every pixel lies on exactly one vertical and one horizontal bar
    np.testing.assert_array_equal((bars > 0).sum(0), np.full(100, 2))


def test_bar_biased_concentration_matches_the_authors_numbers():
    beta = bar_biased_concentration()
    bar = bar_topics() > 0
    # 1000 on the 10 bar words and 1 on the 90 others, normalised (sum 10,090), bar entries x 5
    np.testing.assert_allclose(beta[bar], 5 * 1000 / 10_090)
    np.testing.assert_allclose(beta[~bar], 1 / 10_090)


def test_documents_have_the_requested_lengths_and_only_words_of_their_topics():
    rng = np.random.default_rng(3)
    topics = bar_topics()
    counts, props = draw_documents(topics, 200, 0.01, 50.0, rng)
    assert counts.shape == (200, 100) and counts.dtype == np.int64 and props.shape == (200, 20)
    np.testing.assert_allclose(props.sum(1), 1.0)
    assert abs(counts.sum(1).mean() - 50) < 3  # Poisson(50) lengths
    # a word can only come from a topic with weight: with exact bars, a word off every bar of
    # weight > 1e-12 never appears
    support = (props > 1e-12).astype(float) @ (topics > 0).astype(float) > 0
    assert not np.any(counts[~support])


def test_build_toybars_shapes_and_independent_streams():
    spec = ToyBarsSpec(documents=30, test_models=4, seed=7)
    a = build_toybars(spec)
    assert a["documents"].shape == (30, 100)
    assert a["test_thetas"].shape == (4, 20, 100)
    np.testing.assert_allclose(a["test_thetas"].sum(-1), 1.0)
    # a test model is a noisy bar: ~99% of each topic's mass on one bar, topic order shuffled
    bars = bar_topics() > 0
    mass = np.einsum("mkv,bv->mkb", a["test_thetas"], bars.astype(float))
    assert np.all(mass.max(-1) > 0.95)
    assert not np.array_equal(mass[0].argmax(-1), np.arange(20))
    # more documents leave the test models unchanged (separate random streams)
    b = build_toybars(ToyBarsSpec(documents=60, test_models=4, seed=7))
    np.testing.assert_array_equal(a["test_thetas"], b["test_thetas"])
    np.testing.assert_array_equal(a["true_topics"], b["true_topics"])
    exact = build_toybars(ToyBarsSpec(documents=5, test_models=1, true_topics="bars", seed=7))
    np.testing.assert_array_equal(exact["true_topics"], bar_topics())
    with pytest.raises(ConfigError):
        build_toybars(ToyBarsSpec(true_topics="diagonal"))


def test_theta_pool_is_reproducible_per_index_and_dirichlet_distributed():
    pool = ThetaPool(seed=11, size=400, n_topics=3, vocab_size=5, alpha=0.1)
    np.testing.assert_array_equal(pool.model(17), pool.model(17))
    np.testing.assert_array_equal(pool.draw([17, 3])[0], pool.model(17).astype(np.float32))
    assert not np.array_equal(pool.model(1), pool.model(2))
    everything = pool.materialise(np.float64)
    np.testing.assert_allclose(everything.sum(-1), 1.0)
    # Dir(0.1 x 5): each coordinate has mean 1/5 and variance (1/5)(4/5)/(0.5 + 1)
    values = everything.reshape(-1, 5)
    assert abs(values.mean() - 0.2) < 0.01
    assert abs(values[:, 0].var() - 0.16 / 1.5) < 0.015
    again = ThetaPool.from_arrays({**pool.arrays(), "test_thetas": np.zeros((1, 3, 5))})
    assert again == pool
    with pytest.raises(ConfigError):
        pool.model(400)


@pytest.mark.parametrize("alpha", [0.1, 0.5, 0.05])
def test_theta_pool_vectorised_draw_is_numpys_dirichlet_bit_for_bit(alpha):
    """The pool's recipe (the vectorised drawing keeps it): model m is
    default_rng([seed, m]).dirichlet(alpha, size=K), row-normalised -- written out here with
    numpy's own Dirichlet, per model, as before the vectorisation."""
    pool = ThetaPool(seed=5, size=50, n_topics=4, vocab_size=300, alpha=alpha)
    indices = [7, 0, 49, 7]
    for i, m in enumerate(indices):
        rng = np.random.default_rng([5, m])
        theta = rng.dirichlet(np.full(300, alpha), size=4)
        theta = theta / theta.sum(axis=1, keepdims=True)
        np.testing.assert_array_equal(pool.model(m), theta)
        np.testing.assert_array_equal(pool.draw(indices, np.float64)[i], theta)
        np.testing.assert_array_equal(pool.draw(indices)[i], theta.astype(np.float32))
