"""SYN-RANDOM parameters (paper Section 4.1, Table 3) against independent computations.

Expected sparsity is checked against brute-force enumeration of z and against plain-numpy
ancestral sampling; the Table 3 reading is checked against the paper's Sparsity column.
"""

from __future__ import annotations

import itertools
import math
from functools import cache, lru_cache

import numpy as np
import pytest
import yaml
from conftest import REPO

from noisyor_bench.data.synthetic.synrandom import (
    LEAK_FLOOR,
    SPEC_KEYS,
    expected_sparsity,
    params_rng,
    random_parameters,
)
from noisyor_bench.infra.errors import ConfigError
from noisyor_bench.reporting.acp.paper import paper_sparsity

CONFIG = REPO / "config" / "config.yaml"
ROWS = [f"syn-random-{i}" for i in range(1, 8)]
SMALL = {"D": 20, "K": 30, "alpha_theta": 1, "beta_theta": 5, "alpha_mu": 1, "beta_mu": 10, "s": 0.9}


@lru_cache(maxsize=1)
def _datasets() -> dict:
    return yaml.safe_load(CONFIG.read_text())["datasets"]


def _spec(name: str) -> dict:
    return dict(_datasets()[name])


# ---------------------------------------------------------------- shape, support, determinism
def test_shapes_dtypes_and_support() -> None:
    theta, theta0, mu = random_parameters(_spec("syn-random-1"), params_rng(1))
    assert theta.shape == (50, 100) and theta0.shape == (50,) and mu.shape == (100,)
    assert theta.dtype == theta0.dtype == mu.dtype == np.float64
    assert (theta >= 0).all() and np.isfinite(theta).all()
    # Reading: the Beta draw is the rate itself, so no rate exceeds 1.
    assert theta.max() <= 1.0
    # Reading: no Beta leak, a constant floor that keeps log p(x) finite.
    np.testing.assert_array_equal(theta0, np.full(50, LEAK_FLOOR))
    assert LEAK_FLOOR > 0
    assert ((mu > 0) & (mu < 1)).all()


def test_deterministic_given_seed_and_seed_sensitive() -> None:
    spec = _spec("syn-random-2")
    a = random_parameters(spec, params_rng(7))
    b = random_parameters(spec, params_rng(7))
    c = random_parameters(spec, params_rng(8))
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)
    assert not np.array_equal(a[0], c[0]) and not np.array_equal(a[2], c[2])


def test_params_rng_is_entropy_seed_0_and_not_the_split_stream() -> None:
    expected = np.random.default_rng(np.random.SeedSequence([20200111, 0])).random(5)
    np.testing.assert_array_equal(params_rng(20200111).random(5), expected)
    # The dataset builder samples splits from SeedSequence([seed, 1]): a different stream.
    splits = np.random.default_rng(np.random.SeedSequence([20200111, 1])).random(5)
    assert not np.array_equal(params_rng(20200111).random(5), splits)


@pytest.mark.parametrize("seed", [-1, 1.5, True, "3"])
def test_params_rng_rejects_bad_seeds(seed: object) -> None:
    with pytest.raises(ConfigError, match="seed"):
        params_rng(seed)  # type: ignore[arg-type]


# ---------------------------------------------------------------- sparsification and repair
def test_no_orphans_where_removal_creates_many() -> None:
    # P(latent orphan before repair) = 0.9**20 ~ 12%, P(observed orphan) = 0.9**30 ~ 4%.
    saw_repair_needed = False
    for seed in range(40):
        rng = params_rng(seed)
        theta, _, _ = random_parameters(SMALL, rng)
        assert (theta > 0).any(axis=0).all(), f"seed {seed}: latent without an edge"
        assert (theta > 0).any(axis=1).all(), f"seed {seed}: observed without an edge"
        # Independent replay of the first two draws: was a repair actually needed?
        replay = params_rng(seed)
        replay.beta(1, 5, size=(20, 30))
        keep = replay.random((20, 30)) >= 0.9
        saw_repair_needed |= (~keep.any(axis=0)).any() or (~keep.any(axis=1)).any()
        # Repair only adds edges: every kept edge is still there.
        assert (theta[keep] > 0).all()
    assert saw_repair_needed


def test_s_zero_keeps_every_edge_with_beta_weights() -> None:
    spec = dict(SMALL, D=200, K=200, s=0.0, alpha_theta=2, beta_theta=5)
    theta, _, _ = random_parameters(spec, params_rng(3))
    assert (theta > 0).all()
    # Beta(2, 5): mean 2/7, variance 10/392; 40k draws => standard error ~8e-4.
    se = math.sqrt(10 / 392 / theta.size)
    assert abs(theta.mean() - 2 / 7) < 5 * se


def test_s_near_one_leaves_only_repair_edges() -> None:
    """Nothing survives removal, so theta is exactly the repair: one edge per latent, then one
    per observed variable that no latent edge reached (replayed from the documented draw order)."""
    spec = dict(SMALL, s=1 - 1e-12)
    theta, _, _ = random_parameters(spec, params_rng(4))
    d, k = theta.shape
    replay = params_rng(4)
    replay.beta(1, 5, size=(d, k))
    assert (replay.random((d, k)) < spec["s"]).all()
    replay.beta(1, 10, size=k)
    rows_hit = replay.integers(0, d, size=k)
    missed = d - np.unique(rows_hit).size
    assert missed > 0  # K=30 edges over D=20 rows: the observed pass has work to do
    assert int((theta > 0).sum()) == k + missed
    assert (theta[rows_hit, np.arange(k)] > 0).all()
    assert (theta > 0).any(axis=0).all() and (theta > 0).any(axis=1).all()


def test_edge_density_is_one_minus_s() -> None:
    spec = dict(SMALL, D=300, K=300, s=0.9)
    theta, _, _ = random_parameters(spec, params_rng(5))
    frac = (theta > 0).mean()
    se = math.sqrt(0.1 * 0.9 / theta.size)
    assert abs(frac - 0.1) < 5 * se


def test_mu_is_beta_per_latent() -> None:
    spec = dict(SMALL, K=4000, alpha_mu=2, beta_mu=5)
    _, _, mu = random_parameters(spec, params_rng(6))
    se = math.sqrt(10 / 392 / mu.size)
    assert abs(mu.mean() - 2 / 7) < 5 * se
    assert mu.std() > 0.1  # per-k draws, not one shared value (Beta(2,5) sd = 0.16)


# ---------------------------------------------------------------- spec validation
@pytest.mark.parametrize("key", SPEC_KEYS)
def test_missing_key_names_key_and_dataset(key: str) -> None:
    spec = {k: v for k, v in SMALL.items() if k != key}
    with pytest.raises(ConfigError, match=rf"datasets\.syn-random-9\.{key}: missing"):
        random_parameters(spec, params_rng(0), name="syn-random-9")


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("D", 0),
        ("D", 2.5),
        ("K", True),
        ("K", "10"),
        ("alpha_theta", 0),
        ("beta_theta", -1.0),
        ("alpha_mu", float("inf")),
        ("beta_mu", "x"),
        ("s", 1.0),
        ("s", -0.1),
        ("s", float("nan")),
    ],
)
def test_bad_values_name_key_and_dataset(key: str, value: object) -> None:
    with pytest.raises(ConfigError, match=rf"datasets\.syn-random-9\.{key}"):
        random_parameters(dict(SMALL, **{key: value}), params_rng(0), name="syn-random-9")


def test_dataset_label_falls_back_to_spec_name() -> None:
    with pytest.raises(ConfigError, match=r"datasets\.mine\.s"):
        random_parameters(dict(SMALL, s=2, name="mine"), params_rng(0))


# ---------------------------------------------------------------- expected sparsity
def test_expected_sparsity_matches_enumeration() -> None:
    """Brute force over all 2^K z: mean_i sum_z p(z) exp(-theta_i0 - theta_i . z)."""
    rng = np.random.default_rng(11)
    d, k = 5, 8
    theta = rng.exponential(0.7, size=(d, k)) * (rng.random((d, k)) < 0.6)
    theta0 = rng.exponential(0.2, size=d)
    mu = rng.uniform(0.05, 0.95, size=k)
    total = 0.0
    for bits in itertools.product((0, 1), repeat=k):
        z = np.array(bits, dtype=float)
        pz = np.prod(np.where(z == 1, mu, 1 - mu))
        total += pz * np.exp(-theta0 - theta @ z).mean()
    assert expected_sparsity(theta, theta0, mu) == pytest.approx(total, rel=1e-12)


def test_expected_sparsity_matches_ancestral_sampling() -> None:
    theta, theta0, mu = random_parameters(_spec("syn-random-2"), params_rng(12))
    rng = np.random.default_rng(13)
    n = 20_000
    z = rng.random((n, mu.size)) < mu
    p_on = 1.0 - np.exp(-(theta0 + z.astype(float) @ theta.T))
    x = rng.random(p_on.shape) < p_on
    zero_frac = 1.0 - x.mean(axis=1)  # per data point: i.i.d. across n
    se = zero_frac.std() / math.sqrt(n)
    assert abs(zero_frac.mean() - expected_sparsity(theta, theta0, mu)) < 4 * se


def test_expected_sparsity_edge_cases() -> None:
    d, k = 3, 4
    assert expected_sparsity(np.zeros((d, k)), np.zeros(d), np.full(k, 0.5)) == 1.0
    theta0 = np.array([0.0, 1.0, 2.0])
    assert expected_sparsity(np.ones((d, k)), theta0, np.zeros(k)) == pytest.approx(np.exp(-theta0).mean())


# ---------------------------------------------------------------- Table 3
ROW6_REASON = (
    "Table 3 row 6 (D=K=500, Beta(1,10), mu~Beta(1,10), s=0.95) reports 73.6%; every reading "
    "tried gives 81-83% (dense Beta leak 75.8% but then rows 1-5, 7 miss by 4-18 points). "
    "See docs/syn_random.md."
)


def _paper_rows_except_6() -> list:
    return [
        pytest.param(n, marks=pytest.mark.xfail(strict=True, reason=ROW6_REASON))
        if n == "syn-random-6"
        else n
        for n in ROWS
    ]


@cache
def _draws(name: str) -> np.ndarray:
    """Expected sparsity (%) over independent parameter draws (not the config seed's stream)."""
    spec = _spec(name)
    m = 200 if spec["D"] * spec["K"] <= 10_000 else 12
    return np.array(
        [
            100 * expected_sparsity(*random_parameters(spec, np.random.default_rng([spec["seed"], 7, j])))
            for j in range(m)
        ]
    )


@pytest.mark.parametrize("name", _paper_rows_except_6())
def test_table3_reading_in_expectation(name: str) -> None:
    """The reading: the mean over parameter draws lands within 2 points of the paper."""
    assert abs(_draws(name).mean() - paper_sparsity(name)) <= 2.0


# The config seeds themselves (the draw closest to Table 3 among a fixed range) are checked in
# tests/data/test_seed_selection.py.
