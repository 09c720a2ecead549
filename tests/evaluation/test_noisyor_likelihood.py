"""The held-out -log p(x) estimator against 2^K enumeration.

Enumeration (:func:`noisyor_bench.models.noisyor.exact.exact_posterior`) is the independent
reference: it sums the joint over every latent state and never absorbs the negatives, never
forms inclusion-exclusion terms and never samples.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from noisyor_bench.evaluation.noisyor_likelihood import (
    AISSchedule,
    LikelihoodConfig,
    absorb_negatives,
    cover_dp_rows,
    estimate_log_px,
    quickscore_rows,
    score,
    scored_rows,
)
from noisyor_bench.infra.errors import ConfigError
from noisyor_bench.models.noisyor.exact import exact_posterior
from noisyor_bench.models.noisyor.model import NoisyOR


def random_model(k: int, d: int, seed: int, density: float = 0.5) -> NoisyOR:
    rng = np.random.default_rng(seed)
    theta = rng.gamma(1.0, 0.8, (d, k)) * (rng.random((d, k)) < density)
    return NoisyOR.from_numpy(theta, rng.uniform(0.01, 0.2, d), rng.uniform(0.05, 0.5, k))


def sample_x(model: NoisyOR, n: int, seed: int) -> torch.Tensor:
    return model.sample(n, torch.Generator().manual_seed(seed))[1]


# Up to enumerate_k the whole model is enumerated: tests of the other paths switch that off.
NO_WHOLE_ENUMERATION = LikelihoodConfig(enumerate_k=0)


@pytest.mark.parametrize("k,d,seed", [(3, 12, 0), (7, 16, 1), (10, 18, 2), (12, 16, 3)])
def test_exact_paths_agree_with_enumeration(k: int, d: int, seed: int) -> None:
    model = random_model(k, d, seed)
    x = sample_x(model, 40, seed + 100)
    truth = exact_posterior(model, x).log_px.numpy()
    result = estimate_log_px(model, x, NO_WHOLE_ENUMERATION)
    assert set(result.path) <= {"quickscore", "cover-dp", "enumeration"}
    np.testing.assert_allclose(result.log_px, truth, rtol=0, atol=1e-6)
    assert np.all(result.mc_se == 0)


def test_quickscore_and_cover_dp_per_row_against_enumeration() -> None:
    """Each exact formula alone, row by row; Quickscore only where its cancellation guard passes
    (and it must pass on most rows of a random model, or the guard would make it useless)."""
    model = random_model(12, 14, 7)
    x = sample_x(model, 60, 8)
    truth = exact_posterior(model, x).log_px.numpy()
    log_neg, logit_q = absorb_negatives(model, x)
    q = torch.sigmoid(logit_q).numpy()
    th, th0 = model.theta.numpy(), model.theta0.numpy()
    passed = 0
    for r in range(x.shape[0]):
        pos = np.flatnonzero(x[r].numpy() > 0)
        qs, ok = quickscore_rows(th[pos][None], th0[pos][None], q[r : r + 1], cancel_tol=1e-8)
        dp = cover_dp_rows(th[pos][None], th0[pos][None], q[r : r + 1])
        assert abs(float(log_neg[r]) + dp[0] - truth[r]) <= 1e-9
        if ok[0]:
            passed += 1
            assert abs(float(log_neg[r]) + qs[0] - truth[r]) <= 1e-6
    assert passed >= 40


def test_negatives_absorbed_in_closed_form() -> None:
    """log p(x_N = 0) equals the enumerated marginal of the negative observations alone."""
    model = random_model(9, 15, 11)
    x = sample_x(model, 10, 12)
    log_neg, _ = absorb_negatives(model, x)
    for r in range(x.shape[0]):
        neg = np.flatnonzero(x[r].numpy() == 0)
        sub = NoisyOR(model.theta[neg], model.theta0[neg], model.mu)
        ref = exact_posterior(sub, torch.zeros((1, neg.size), dtype=torch.float64)).log_px
        assert abs(float(log_neg[r]) - float(ref[0])) <= 1e-10


def test_forced_exact_path_refuses_rows_it_cannot_do() -> None:
    model = random_model(12, 30, 3, density=0.9)
    x = torch.ones((1, 30), dtype=torch.float64)  # 30 positives: 2^30 subsets
    with pytest.raises(ConfigError, match="quickscore over 30 positives"):
        estimate_log_px(model, x, NO_WHOLE_ENUMERATION, force="quickscore")
    with pytest.raises(ConfigError, match="unknown likelihood path"):
        estimate_log_px(model, x, force="magic")


def test_ais_agrees_with_enumeration_within_its_ci() -> None:
    model = random_model(10, 16, 21)
    x = sample_x(model, 30, 22)
    truth = exact_posterior(model, x).log_px.numpy()
    config = LikelihoodConfig(ais=AISSchedule(steps=100, chains=16, check_rows=4))
    result = estimate_log_px(model, x, config, seed=5, force="ais")
    assert set(result.path) == {"ais"}
    summary = result.summary()
    err = float(np.mean(result.log_px - truth))
    assert summary["nll_test_mc_se"] > 0
    assert abs(err) <= 3 * summary["nll_test_mc_se"], (err, summary["nll_test_mc_se"])
    # per row too: at most a few rows outside 3 standard errors
    z = np.abs(result.log_px - truth) / result.mc_se
    assert np.mean(z > 3) <= 0.1
    assert summary["nll_ais_converged"] is True
    assert abs(summary["nll_ais_check_delta"]) <= config.ais.check_tol


def test_ais_agrees_with_exact_path_beyond_enumeration() -> None:
    """K = 40 (2^40 states: no enumeration), few positives per row: Quickscore / the forward pass run."""
    model = random_model(40, 24, 31, density=0.15)
    x = sample_x(model, 40, 32)
    x = x[x.sum(1) <= 10][:20]
    exact = estimate_log_px(model, x, LikelihoodConfig())
    assert "ais" not in set(exact.path)
    ais = estimate_log_px(
        model, x, LikelihoodConfig(ais=AISSchedule(steps=60, chains=16, check_rows=0)), seed=3, force="ais"
    )
    err = float(np.mean(ais.log_px - exact.log_px))
    mc = math.sqrt(float((ais.mc_se**2).sum())) / x.shape[0]
    assert abs(err) <= 3 * mc, (err, mc)


def test_ais_is_deterministic_in_its_seed() -> None:
    model = random_model(8, 12, 41)
    x = sample_x(model, 5, 42)
    config = LikelihoodConfig(ais=AISSchedule(steps=10, chains=4, check_rows=2))
    a = estimate_log_px(model, x, config, seed=9, force="ais")
    b = estimate_log_px(model, x, config, seed=9, force="ais")
    c = estimate_log_px(model, x, config, seed=10, force="ais")
    np.testing.assert_array_equal(a.log_px, b.log_px)
    assert not np.array_equal(a.log_px, c.log_px)


def test_scored_rows_all_or_one_fixed_subset() -> None:
    x = (np.random.default_rng(0).random((500, 40)) < 0.5).astype(float)  # ~20 positives: AIS cost
    cheap = LikelihoodConfig(max_rows=100, row_budget=1e18)
    rows, label = scored_rows(x, 100, cheap)
    assert rows.size == 500 and label == "all test rows"
    dear = LikelihoodConfig(max_rows=100, row_budget=1e3)
    rows, label = scored_rows(x, 100, dear)
    again, _ = scored_rows(x, 50, dear)  # same rows whatever the model: identical for every method
    assert rows.size == 100 and np.all(np.diff(rows) > 0) and "100 of 500" in label
    np.testing.assert_array_equal(rows, again)


def test_exact_only_rows_are_the_rows_an_exact_path_scores() -> None:
    rng = np.random.default_rng(1)
    x = (rng.random((300, 30)) < rng.uniform(0.05, 0.6, (300, 1))).astype(float)
    config = LikelihoodConfig(use_ais=False, enumerate_k=0, max_rows=1000, exact_elements=2**12)
    rows, label = scored_rows(x, 10, config)
    p = x.sum(1)
    # the forward pass fits 4 * 2^12 numbers: 2^p * p * K <= 16384 at K = 10 <=> p <= 7 (8: 20480)
    np.testing.assert_array_equal(rows, np.flatnonzero(p <= 7))
    assert label == f"all {rows.size} exactly computable of 300 test rows (<= 7 positives)"
    model = random_model(10, 30, 2, density=0.3)
    result = estimate_log_px(model, x[rows], LikelihoodConfig(enumerate_k=0, exact_elements=2**12))
    assert "ais" not in set(result.path)
    every, why = scored_rows(x, 10, LikelihoodConfig(use_ais=False, max_rows=5))  # K <= enumerate_k
    assert every.size == 300 and why == "all test rows"
    none, why = scored_rows(
        x, 10, LikelihoodConfig(use_ais=False, enumerate_k=0, min_rows=rows.size + 1, exact_elements=2**12)
    )
    assert none.size == 0 and "not scored" in why
    _, record = score(
        model, x, LikelihoodConfig(use_ais=False, enumerate_k=0, min_rows=rows.size + 1, exact_elements=2**12)
    )
    assert record["nll_test"] is None and record["nll_rows"] == 0


def test_score_record_and_config_mapping() -> None:
    model = random_model(6, 10, 51)
    x = sample_x(model, 20, 52).numpy()
    _, record = score(model, x)
    truth = exact_posterior(model, torch.as_tensor(x)).log_px.numpy()
    assert record["nll_rows"] == 20 and record["nll_estimator"] == "exact"
    assert record["nll_test"] == pytest.approx(float(-truth.mean()), abs=1e-9)
    assert record["nll_test_se"] == pytest.approx(float(truth.std(ddof=1) / math.sqrt(20)), rel=1e-9)
    cfg = LikelihoodConfig.from_mapping({"max_rows": 50, "ais": {"steps": 7}})
    assert cfg.max_rows == 50 and cfg.ais.steps == 7 and cfg.ais.chains == AISSchedule().chains
    with pytest.raises(ConfigError, match="unknown likelihood setting"):
        LikelihoodConfig.from_mapping({"rows": 5})
    with pytest.raises(ConfigError, match="AIS needs"):
        AISSchedule(chains=1)
