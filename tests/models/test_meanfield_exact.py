"""The exact mean-field optimum, the truncated optimiser and the joint posterior against brute force.

Everything is recomputed here independently: ``log p(x, z)`` from the noisy-OR's definition by
a loop over all 2^K states, the ELBO of a factorised q by an explicit sum, its optimum by
scipy's L-BFGS from many starts, Adam by hand with the analytic gradient."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from noisyor_bruteforce import (
    brute_elbo,
    brute_elbo_grad,
    brute_log_joint,
    sample_rows,
    scipy_best_elbo,
    small_model,
)
from scipy.special import expit, logsumexp

from noisyor_bench.infra.errors import DataError
from noisyor_bench.models.noisyor import joint_posterior, meanfield_exact
from noisyor_bench.models.noisyor.exact import log_joint_table
from noisyor_bench.models.noisyor.model import NoisyOR


def table(theta, theta0, mu, x):
    model = NoisyOR.from_numpy(theta, theta0, mu)
    return log_joint_table(model, torch.as_tensor(x))


def test_log_joint_table_matches_the_definition():
    theta, theta0, mu = small_model(0)
    x, _ = sample_rows(theta, theta0, mu, 6, 0)
    states, lj = table(theta, theta0, mu, x)
    b_states, b_lj = brute_log_joint(theta, theta0, mu, x)
    # the table's state s has bit k = z_k; itertools order has z_0 as the most significant bit
    order = [int("".join(str(int(v)) for v in z[::-1]), 2) for z in b_states]
    np.testing.assert_allclose(states.numpy()[order], b_states)
    np.testing.assert_allclose(lj.numpy()[:, order], b_lj, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("seed", [1, 2])
def test_coordinate_ascent_reaches_the_mean_field_optimum_found_by_scipy(seed):
    theta, theta0, mu = small_model(seed)
    x, _ = sample_rows(theta, theta0, mu, 5, seed)
    states, lj = table(theta, theta0, mu, x)
    b_states, b_lj = brute_log_joint(theta, theta0, mu, x)
    gen = torch.Generator().manual_seed(seed)
    starts = [torch.logit(torch.as_tensor(mu)).expand(5, mu.size).clone()]
    starts += [torch.randn((5, mu.size), generator=gen, dtype=torch.float64) * 3 for _ in range(5)]
    best, logits = meanfield_exact.best_of(states, lj, starts)
    for n in range(5):
        reference = scipy_best_elbo(b_states, b_lj[n], mu.size)
        assert float(best[n]) == pytest.approx(reference, abs=1e-7)
        # the returned q is the one whose ELBO is reported, and it is below log p(x)
        assert brute_elbo(b_states, b_lj[n], expit(logits[n].numpy())) == pytest.approx(
            float(best[n]), abs=1e-9
        )
        assert float(best[n]) <= logsumexp(b_lj[n]) + 1e-12


def test_conditional_expectations_are_the_sums_over_the_other_latents():
    theta, theta0, mu = small_model(4, k=5)
    x, _ = sample_rows(theta, theta0, mu, 3, 4)
    states, lj = table(theta, theta0, mu, x)
    q = torch.rand((3, 5), generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    s = states.numpy()
    for k in range(5):
        got = meanfield_exact.conditional_expectations(lj, q, k).numpy()
        for n in range(3):
            others = np.prod(np.where(s == 1, q[n].numpy(), 1 - q[n].numpy())[:, np.arange(5) != k], axis=1)
            for v in (0, 1):
                pick = s[:, k] == v
                assert got[n, v] == pytest.approx(float(others[pick] @ lj.numpy()[n, pick]), abs=1e-10)


def test_truncated_adam_is_adam_on_the_exact_elbo():
    theta, theta0, mu = small_model(5, k=3, d=5)
    x, _ = sample_rows(theta, theta0, mu, 4, 5)
    states, lj = table(theta, theta0, mu, x)
    b_states, b_lj = brute_log_joint(theta, theta0, mu, x)
    start = np.tile(np.log(mu / (1 - mu)), (4, 1))
    got = meanfield_exact.truncated_adam(states, lj, torch.as_tensor(start), [0, 1, 6], lr=0.3)

    def grad(v):
        return np.stack([brute_elbo_grad(b_states, b_lj[n], v[n]) for n in range(v.shape[0])])

    v, m, s = start.copy(), np.zeros_like(start), np.zeros_like(start)
    by_hand = {0: v.copy()}
    for t in range(1, 7):  # Adam (Kingma & Ba) minimising -ELBO, default betas and eps
        g = -grad(v)
        m = 0.9 * m + 0.1 * g
        s = 0.999 * s + 0.001 * g * g
        v = v - 0.3 * (m / (1 - 0.9**t)) / (np.sqrt(s / (1 - 0.999**t)) + 1e-8)
        by_hand[t] = v.copy()
    for t in (0, 1, 6):
        np.testing.assert_allclose(got[t].numpy(), by_hand[t], rtol=1e-9, atol=1e-9)


def test_the_mean_field_needs_every_state_possible():
    theta, theta0, mu = small_model(6, k=3, d=4)
    theta0[:] = 0.0
    theta[0, :] = 0.0  # pixel 0 can never be on
    x = np.zeros((1, 4))
    x[0, 0] = 1.0
    states, lj = table(theta, theta0, mu, x)
    with pytest.raises(DataError, match="zero leak"):
        meanfield_exact.coordinate_ascent(states, lj, torch.zeros((1, 3), dtype=torch.float64))


def test_joint_posterior_mode_probability_and_draws():
    theta, theta0, mu = small_model(8, k=4, d=6)
    x, z = sample_rows(theta, theta0, mu, 5, 8)
    states, lj = table(theta, theta0, mu, x)
    b_states, b_lj = brute_log_joint(theta, theta0, mu, x)
    post = np.exp(b_lj - logsumexp(b_lj, axis=1, keepdims=True))
    np.testing.assert_array_equal(joint_posterior.mode(states, lj).numpy(), b_states[post.argmax(1)])
    truth_rows = [int(np.flatnonzero((b_states == zn).all(1))[0]) for zn in z]
    np.testing.assert_allclose(
        joint_posterior.probability_of(lj, torch.as_tensor(z)).numpy(),
        post[np.arange(5), truth_rows],
        rtol=1e-12,
    )
    n = 20000
    drawn = joint_posterior.draws(states, lj, n, torch.Generator().manual_seed(0)).numpy()  # (n, N, K)
    for row in range(5):
        for s, zs in enumerate(b_states):
            freq = (drawn[:, row, :] == zs).all(-1).mean()
            sd = np.sqrt(post[row, s] * (1 - post[row, s]) / n)
            assert abs(freq - post[row, s]) <= 5 * sd + 1e-12
