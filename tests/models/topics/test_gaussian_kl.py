"""Closed-form Gaussian KLs and the CTM prior against torch.distributions."""

from __future__ import annotations

import numpy as np
import torch
from torch.distributions import MultivariateNormal, Normal, kl_divergence

from noisyor_bench.models.topics.ctm import CtmPrior
from noisyor_bench.models.topics.gaussian import kl_diag_per_dim, kl_diag_to_full


def test_kl_diag_per_dim_matches_torch_distributions():
    g = torch.Generator().manual_seed(0)
    qm, qlv = (
        torch.randn(4, 5, generator=g, dtype=torch.float64),
        torch.randn(4, 5, generator=g, dtype=torch.float64),
    )
    pm, pv = (
        torch.randn(5, generator=g, dtype=torch.float64),
        torch.rand(5, generator=g, dtype=torch.float64) + 0.1,
    )
    expected = kl_divergence(Normal(qm, torch.exp(0.5 * qlv)), Normal(pm, pv.sqrt()))
    np.testing.assert_allclose(kl_diag_per_dim(qm, qlv, pm, pv).numpy(), expected.numpy(), rtol=1e-12)


def test_kl_diag_to_full_matches_torch_distributions():
    g = torch.Generator().manual_seed(1)
    k = 4
    qm, qlv = (
        torch.randn(3, k, generator=g, dtype=torch.float64),
        torch.randn(3, k, generator=g, dtype=torch.float64),
    )
    a = torch.randn(k, k, generator=g, dtype=torch.float64)
    cov = a @ a.T + 0.5 * torch.eye(k, dtype=torch.float64)
    pm = torch.randn(k, generator=g, dtype=torch.float64)
    scale_tril = torch.linalg.cholesky(cov)
    q = MultivariateNormal(qm, scale_tril=torch.diag_embed(torch.exp(0.5 * qlv)))
    expected = kl_divergence(q, MultivariateNormal(pm, covariance_matrix=cov))
    np.testing.assert_allclose(kl_diag_to_full(qm, qlv, pm, scale_tril).numpy(), expected.numpy(), rtol=1e-10)


def test_ctm_prior_starts_at_the_laplace_prior_and_its_kl_is_the_full_kl():
    prior = CtmPrior(5, alpha=1.0, dtype=torch.float64)
    cov = prior.covariance().detach()
    # Laplace of Dir(1) in K = 5: mean 0, variance (1 - 2/K) + 1/K = 0.8, no correlations
    np.testing.assert_allclose(torch.diagonal(cov).numpy(), 0.8, rtol=1e-12)
    np.testing.assert_allclose((cov - torch.diag(torch.diagonal(cov))).numpy(), 0.0)
    with torch.no_grad():
        prior.off_diag.normal_(generator=torch.Generator().manual_seed(2))
    qm, qlv = torch.zeros(2, 5, dtype=torch.float64), torch.zeros(2, 5, dtype=torch.float64)
    expected = kl_divergence(
        MultivariateNormal(qm, covariance_matrix=torch.eye(5, dtype=torch.float64)),
        MultivariateNormal(prior.mean.detach(), covariance_matrix=prior.covariance().detach()),
    )
    np.testing.assert_allclose(prior.kl(qm, qlv).detach().numpy(), expected.numpy(), rtol=1e-10)
