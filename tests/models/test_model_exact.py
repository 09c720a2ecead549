"""The noisy-OR model and exact enumeration against independent computations.

References: numpy float64 brute force over all 2^K states, mpmath at 50 digits, and the
analytic K=1 posterior by Bayes' rule.
"""

from __future__ import annotations

import itertools

import mpmath
import numpy as np
import pytest
import torch

from noisyor_bench.infra.errors import ConfigError
from noisyor_bench.models.noisyor.exact import MAX_EXACT_K, exact_elbo, exact_log_marginal, exact_posterior
from noisyor_bench.models.noisyor.model import NoisyOR, bernoulli_kl, log1mexp


def random_model(rng: np.random.Generator, d: int, k: int) -> NoisyOR:
    theta = rng.gamma(0.7, 1.0, (d, k)) * (rng.random((d, k)) < 0.6)
    theta0 = rng.uniform(0.01, 0.3, d)
    mu = rng.uniform(0.05, 0.6, k)
    return NoisyOR.from_numpy(theta, theta0, mu)


def brute_force(model: NoisyOR, x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """log p(x), p(z_k=1|x) and the joint table p(x, z) by explicit loops in numpy."""
    theta, theta0, mu = (t.numpy() for t in (model.theta, model.theta0, model.mu))
    states = np.array(list(itertools.product([0, 1], repeat=model.K)), dtype=float)
    log_px, marg = [], []
    for row in x:
        joint = np.empty(len(states))
        for s, z in enumerate(states):
            p_off = np.exp(-(theta0 + theta @ z))
            lik = np.prod(np.where(row > 0, 1.0 - p_off, p_off))
            prior = np.prod(np.where(z > 0, mu, 1.0 - mu))
            joint[s] = lik * prior
        log_px.append(np.log(joint.sum()))
        marg.append(joint @ states / joint.sum())
    return np.array(log_px), np.array(marg), states


def test_log1mexp_matches_high_precision():
    a = torch.tensor([1e-300, 1e-20, 1e-8, 1e-3, 0.5, np.log(2), 0.7, 5.0, 40.0, 700.0], dtype=torch.float64)
    got = log1mexp(a).numpy()
    mpmath.mp.dps = 700  # enough digits that 1 - exp(-a) is exact for every a above
    want = np.array([float(mpmath.log(1 - mpmath.exp(-mpmath.mpf(float(v))))) for v in a])
    np.testing.assert_allclose(got, want, rtol=1e-13)
    assert log1mexp(torch.zeros(1, dtype=torch.float64)).item() == -np.inf


def test_log1mexp_gradients_finite_everywhere():
    a = torch.tensor([1e-6, 0.1, np.log(2), 3.0, 50.0], dtype=torch.float64, requires_grad=True)
    log1mexp(a).sum().backward()
    # d/da log(1 - e^-a) = 1 / (e^a - 1)
    want = 1.0 / np.expm1(a.detach().numpy())
    np.testing.assert_allclose(a.grad.numpy(), want, rtol=1e-10)


def test_log_px_given_z_matches_bruteforce_and_is_stable():
    rng = np.random.default_rng(0)
    model = random_model(rng, d=7, k=3)
    x = torch.tensor(rng.random((5, 7)) < 0.4, dtype=torch.float64)
    z = torch.tensor(rng.random((5, 3)) < 0.5, dtype=torch.float64)
    theta, theta0 = model.theta.numpy(), model.theta0.numpy()
    for n in range(5):
        a = theta0 + theta @ z[n].numpy()
        want = np.sum(np.where(x[n].numpy() > 0, np.log(1 - np.exp(-a)), -a))
        assert model.log_px_given_z(x[n], z[n]).item() == pytest.approx(want, rel=1e-12)
    # Very large rates: p(x_i=1|z) -> 1 without overflow; tiny rates: finite log for x_i=1.
    big = NoisyOR.from_numpy(np.full((2, 1), 800.0), np.array([1e-12, 1e-12]), np.array([0.5]))
    val = big.log_px_given_z(torch.tensor([[1.0, 1.0]]), torch.tensor([[1.0]])).item()
    assert val == pytest.approx(0.0, abs=1e-300)
    tiny = big.log_px_given_z(torch.tensor([[1.0, 0.0]]), torch.tensor([[0.0]])).item()
    assert tiny == pytest.approx(np.log(1e-12) - 1e-12, rel=1e-9)


@pytest.mark.parametrize("chunk", [None, 1, 3, 5])
def test_exact_posterior_matches_bruteforce(chunk):
    rng = np.random.default_rng(1)
    model = random_model(rng, d=9, k=4)
    _, x = model.sample(6, torch.Generator().manual_seed(3))
    log_px, marg, _ = brute_force(model, x.numpy())
    got = exact_posterior(model, x, chunk_states=chunk)
    np.testing.assert_allclose(got.log_px.numpy(), log_px, rtol=1e-12)
    np.testing.assert_allclose(got.marginals.numpy(), marg, atol=1e-12)


def test_exact_k1_closed_form():
    """K=1: p(z=1|x) by Bayes' rule written out by hand."""
    theta = np.array([[1.2], [0.3], [2.0]])
    theta0 = np.array([0.1, 0.05, 0.2])
    mu = np.array([0.3])
    model = NoisyOR.from_numpy(theta, theta0, mu)
    x = np.array([[1, 0, 1], [0, 0, 0], [1, 1, 1]], dtype=float)
    for row, got_lp, got_m in zip(
        x,
        exact_log_marginal(model, torch.tensor(x)).numpy(),
        exact_posterior(model, torch.tensor(x)).marginals.numpy(),
    ):
        on1 = 1 - np.exp(-(theta0 + theta[:, 0]))
        on0 = 1 - np.exp(-theta0)
        l1 = np.prod(np.where(row > 0, on1, 1 - on1)) * mu[0]
        l0 = np.prod(np.where(row > 0, on0, 1 - on0)) * (1 - mu[0])
        assert got_lp == pytest.approx(np.log(l0 + l1), rel=1e-13)
        assert got_m[0] == pytest.approx(l1 / (l0 + l1), rel=1e-12)


def test_exact_handles_impossible_observations():
    """No leak and no active cause: x_i=1 has probability 0 for that state, not NaN."""
    model = NoisyOR.from_numpy(np.array([[1.0, 0.0], [0.0, 1.0]]), np.zeros(2), np.array([0.5, 0.5]))
    x = torch.tensor([[1.0, 0.0]])
    got = exact_posterior(model, x)
    # Only states with z_1 = 1 explain x_1 = 1.
    p11 = 0.25 * (1 - np.exp(-1)) * np.exp(-1)  # z=(1,1): x_2 off with prob e^-1
    p10 = 0.25 * (1 - np.exp(-1))  # z=(1,0)
    assert got.log_px.item() == pytest.approx(np.log(p11 + p10), rel=1e-12)
    assert got.marginals[0, 0].item() == pytest.approx(1.0)
    assert torch.isfinite(got.marginals).all()


def test_exact_elbo_matches_bruteforce_and_bounds_log_px():
    rng = np.random.default_rng(2)
    model = random_model(rng, d=8, k=4)
    _, x = model.sample(5, torch.Generator().manual_seed(0))
    q = torch.tensor(rng.uniform(0.01, 0.99, (5, 4)))
    log_px, marg, states = brute_force(model, x.numpy())
    theta, theta0, mu = (t.numpy() for t in (model.theta, model.theta0, model.mu))
    want = []
    for n in range(5):
        total = 0.0
        for z in states:
            qz = np.prod(np.where(z > 0, q[n].numpy(), 1 - q[n].numpy()))
            p_off = np.exp(-(theta0 + theta @ z))
            lj = np.sum(np.log(np.where(x[n].numpy() > 0, 1 - p_off, p_off))) + np.sum(
                np.log(np.where(z > 0, mu, 1 - mu))
            )
            total += qz * (lj - np.log(qz))
        want.append(total)
    got = exact_elbo(model, x, q).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-11)
    assert np.all(got <= log_px + 1e-12)
    # The ELBO is tight only at the exact posterior; a factorised q at the exact marginals is
    # still a lower bound, and a deterministic q in {0,1} gives a finite value.
    assert np.all(exact_elbo(model, x, torch.tensor(marg)).numpy() <= log_px + 1e-12)
    hard = torch.tensor((marg > 0.5).astype(float))
    assert torch.isfinite(exact_elbo(model, x, hard)).all()


def test_exact_refuses_large_k_with_clear_error():
    model = NoisyOR.from_numpy(np.ones((3, MAX_EXACT_K + 1)), np.ones(3), np.full(MAX_EXACT_K + 1, 0.1))
    with pytest.raises(ConfigError, match=r"K=21 exceeds the limit K <= 20"):
        exact_posterior(model, torch.zeros(1, 3))


def test_exact_k20_runs_in_bounded_memory():
    """K = 20 (2^20 states) streams through chunks; checked against K=20 with one live cause."""
    k = 20
    theta = np.zeros((4, k))
    theta[0, 0] = 2.0
    model = NoisyOR.from_numpy(theta, np.full(4, 0.1), np.full(k, 0.05))
    x = torch.tensor([[1.0, 0.0, 0.0, 0.0]])
    got = exact_posterior(model, x, chunk_states=2**16)
    # Only z_1 matters: a 1-latent model with the same rates gives the same answers.
    small = NoisyOR.from_numpy(theta[:, :1], np.full(4, 0.1), np.full(1, 0.05))
    ref = exact_posterior(small, x)
    assert got.log_px.item() == pytest.approx(ref.log_px.item(), rel=1e-10)
    assert got.marginals[0, 0].item() == pytest.approx(ref.marginals[0, 0].item(), rel=1e-9)
    np.testing.assert_allclose(got.marginals[0, 1:].numpy(), 0.05, rtol=1e-9)


def test_ancestral_sampling_frequencies_match_exact_probabilities():
    rng = np.random.default_rng(4)
    model = random_model(rng, d=3, k=2)
    z, x = model.sample(200_000, torch.Generator().manual_seed(5))
    np.testing.assert_allclose(z.mean(0).numpy(), model.mu.numpy(), atol=4 * 0.5 / np.sqrt(200_000))
    # Frequencies of each observed pattern vs exp(exact log p(x)).
    patterns = torch.tensor(list(itertools.product([0.0, 1.0], repeat=3)))
    probs = torch.exp(exact_log_marginal(model, patterns)).numpy()
    assert probs.sum() == pytest.approx(1.0, rel=1e-12)
    codes = (x @ torch.tensor([4.0, 2.0, 1.0], dtype=x.dtype)).long()
    freq = torch.bincount(codes, minlength=8).double().numpy() / len(x)
    se = np.sqrt(probs * (1 - probs) / len(x))
    assert np.all(np.abs(freq - probs) < 5 * se + 1e-12)


def test_bernoulli_kl_closed_form():
    q = torch.tensor([[0.0, 0.3, 1.0]], dtype=torch.float64)
    mu = torch.tensor([0.2, 0.5, 0.9], dtype=torch.float64)
    want = np.log(1 / 0.8) + (0.3 * np.log(0.3 / 0.5) + 0.7 * np.log(0.7 / 0.5)) + np.log(1 / 0.9)
    assert bernoulli_kl(q, mu).item() == pytest.approx(want, rel=1e-12)
