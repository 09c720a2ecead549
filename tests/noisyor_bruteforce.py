"""Brute-force noisy-OR quantities for tests, from the model's definition (no package code):
``log p(x, z)`` by a loop over all 2^K states, the ELBO of a factorised q by an explicit sum and
its gradient, the mean-field optimum by scipy's L-BFGS from many starts."""

from __future__ import annotations

import itertools

import numpy as np
from scipy.optimize import minimize
from scipy.special import entr, expit


def small_model(seed: int, k: int = 4, d: int = 7) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    theta = rng.gamma(1.0, 1.5, size=(d, k))
    theta0 = rng.uniform(0.02, 0.3, size=d)
    mu = rng.uniform(0.1, 0.5, size=k)
    return theta, theta0, mu


def sample_rows(theta, theta0, mu, n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed + 100)
    z = (rng.random((n, mu.size)) < mu).astype(np.float64)
    x = (rng.random((n, theta.shape[0])) < 1 - np.exp(-(theta0 + z @ theta.T))).astype(np.float64)
    return x, z


def brute_log_joint(theta, theta0, mu, x) -> tuple[np.ndarray, np.ndarray]:
    """All states (S, K) in itertools order and log p(x_n, z_s) (N, S), from the definition."""
    states = np.array(list(itertools.product([0.0, 1.0], repeat=mu.size)))
    out = np.zeros((x.shape[0], states.shape[0]))
    for s, z in enumerate(states):
        rate = theta0 + theta @ z
        log_prior = np.sum(z * np.log(mu) + (1 - z) * np.log(1 - mu))
        for n, row in enumerate(x):
            on = np.log(-np.expm1(-rate))
            out[n, s] = log_prior + np.sum(np.where(row == 1, on, -rate))
    return states, out


def brute_elbo(states, lj_row, q) -> float:
    qs = np.prod(np.where(states == 1, q, 1 - q), axis=1)
    ent = np.sum(entr(q) + entr(1 - q))
    return float(qs @ lj_row + ent)


def brute_elbo_grad(states, lj_row, v) -> np.ndarray:
    """d ELBO / d logit_k = q_k (1 - q_k) (E[log p | z_k = 1] - E[log p | z_k = 0] - logit_k)."""
    q = expit(v)
    g = np.zeros_like(v)
    for k in range(v.size):
        others = np.prod(np.where(states == 1, q, 1 - q)[:, np.arange(v.size) != k], axis=1)
        on, off = states[:, k] == 1, states[:, k] == 0
        g[k] = q[k] * (1 - q[k]) * (others[on] @ lj_row[on] - others[off] @ lj_row[off] - v[k])
    return g


def scipy_best_elbo(states, lj_row, k: int, starts: int = 10) -> float:
    rng = np.random.default_rng(7)
    best = -np.inf
    for _ in range(starts):
        res = minimize(
            lambda v: -brute_elbo(states, lj_row, expit(v)),
            rng.normal(0.0, 3.0, size=k),
            jac=lambda v: -brute_elbo_grad(states, lj_row, v),
            method="L-BFGS-B",
            options={"gtol": 1e-12, "ftol": 1e-15, "maxiter": 2000},
        )
        best = max(best, -res.fun)
    return best
