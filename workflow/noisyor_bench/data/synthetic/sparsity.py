"""Expected sparsity of a noisy-OR dataset (paper Section 4.1, Tables 2-3).

The paper's Sparsity is the percentage of zeros in the sampled x.  Its expectation under the
generating parameters is exact and cheap, so dataset designs (patterns, thresholds, leaks)
are checked against Table 2/3 without sampling noise.  One implementation for every family.
"""

from __future__ import annotations

import numpy as np


def expected_sparsity(theta: np.ndarray, theta0: np.ndarray, mu: np.ndarray) -> float:
    """Exact expected fraction of zeros in x (the paper's Sparsity / 100): the mean over i of
    :func:`pixel_off_probabilities`."""
    return float(pixel_off_probabilities(theta, theta0, mu).mean())


def pixel_off_probabilities(theta: np.ndarray, theta0: np.ndarray, mu: np.ndarray) -> np.ndarray:
    """Exact marginal ``p(x_i = 0)`` of every pixel, shape (D,).

    ``p(x_i = 0) = E_z[exp(-theta_i0 - sum_k theta_ik z_k)]`` (eq. 5) factorises over the
    independent ``z_k``: ``exp(-theta_i0) prod_k (1 - mu_k + mu_k exp(-theta_ik))``.  Summed in
    log space (``log1p(mu_k expm1(-theta_ik))``) so K in the hundreds loses no precision.
    """
    theta = np.asarray(theta, dtype=np.float64)
    theta0 = np.asarray(theta0, dtype=np.float64)
    mu = np.asarray(mu, dtype=np.float64)
    if theta.ndim != 2 or theta0.shape != (theta.shape[0],) or mu.shape != (theta.shape[1],):
        raise ValueError(
            f"shapes theta {theta.shape}, theta0 {theta0.shape}, mu {mu.shape} do not fit (D,K),(D,),(K,)"
        )
    log_p0 = -theta0 + np.log1p(mu * np.expm1(-theta)).sum(axis=1)
    return np.exp(log_p0)


def independent_entropy(theta: np.ndarray, theta0: np.ndarray, mu: np.ndarray) -> float:
    """``sum_i H(p(x_i))`` in nats: the expected ``-log p(x)`` of the best independent-Bernoulli
    model of the data (what learning nothing costs), from the exact pixel marginals.  It sets
    the scale every NELBO of a dataset sits on, and moves with its sparsity."""
    from scipy.special import entr

    p0 = np.clip(pixel_off_probabilities(theta, theta0, mu), 0.0, 1.0)
    return float((entr(p0) + entr(1.0 - p0)).sum())
