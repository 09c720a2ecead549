"""The Laplace approximation of Dirichlet(alpha) in the softmax basis, against a numerical one.

Independent computation: the Dirichlet density of pi = softmax(h) pulled back to h (with its
Jacobian, prod_k pi_k, as MacKay's basis takes it) is proportional to prod_k pi_k^alpha_k; restricted to sum(h) = 0 its mode
and Hessian are found numerically (Newton on the unconstrained K-1 coordinates, Hessian by
finite differences), and the covariance's diagonal is compared with the closed form.
"""

import numpy as np
import pytest
import torch

from noisyor_bench.infra.errors import ConfigError
from noisyor_bench.models.topics.dirichlet_laplace import laplace_dirichlet_prior


def _log_density(h: np.ndarray, alpha: np.ndarray) -> float:
    log_pi = h - np.logaddexp.reduce(h)
    return float(alpha @ log_pi)


def _numerical_laplace(alpha: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    k = len(alpha)
    basis = np.eye(k)[:, : k - 1] - 1.0 / k  # columns span {h : sum h = 0}
    basis, _ = np.linalg.qr(basis)
    y = np.zeros(k - 1)
    step = 1e-4

    def f(v: np.ndarray) -> float:
        return _log_density(basis @ v, alpha)

    def hessian(v: np.ndarray) -> np.ndarray:
        n = len(v)
        out = np.zeros((n, n))
        eye = np.eye(n) * step
        for i in range(n):
            for j in range(n):
                out[i, j] = (
                    f(v + eye[i] + eye[j])
                    - f(v + eye[i] - eye[j])
                    - f(v - eye[i] + eye[j])
                    + f(v - eye[i] - eye[j])
                ) / (4 * step**2)
        return out

    def gradient(v: np.ndarray) -> np.ndarray:
        eye = np.eye(len(v)) * step
        return np.array([(f(v + e) - f(v - e)) / (2 * step) for e in eye])

    for _ in range(50):
        y = y - np.linalg.solve(hessian(y), gradient(y))
    cov = basis @ np.linalg.inv(-hessian(y)) @ basis.T
    return basis @ y, np.diag(cov)


@pytest.mark.parametrize("alpha", [[1.0, 2.0, 3.0, 0.5], [0.7] * 5, [2.0, 2.0, 5.0]])
def test_matches_numerical_laplace_approximation(alpha):
    mean, variance = laplace_dirichlet_prior(torch.tensor(alpha), len(alpha))
    num_mean, num_var = _numerical_laplace(np.array(alpha))
    np.testing.assert_allclose(mean.numpy(), num_mean, atol=1e-5)
    # the closed form is exactly the diagonal of the approximation's covariance in the sum-zero
    # plane (MacKay 1998: P diag(1/alpha) P with P the centring projector)
    np.testing.assert_allclose(variance.numpy(), num_var, rtol=1e-5)


def test_symmetric_alpha_closed_form():
    mean, variance = laplace_dirichlet_prior(0.01, 20)
    assert torch.equal(mean, torch.zeros(20, dtype=torch.float64))
    torch.testing.assert_close(
        variance, torch.full((20,), (1 / 0.01) * (1 - 2 / 20) + 20 / 0.01 / 400, dtype=torch.float64)
    )


def test_bad_alpha_is_named():
    with pytest.raises(ConfigError, match="positive"):
        laplace_dirichlet_prior(torch.tensor([1.0, -1.0]), 2)
    with pytest.raises(ConfigError, match="shape"):
        laplace_dirichlet_prior(torch.tensor([1.0, 1.0]), 3)
