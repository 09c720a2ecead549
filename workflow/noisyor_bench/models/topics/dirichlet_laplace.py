"""The Laplace approximation of a Dirichlet prior in the softmax basis (MacKay 1998).

APE (its eqs. 4-6, appendix A) and aviPAM (after AVITM, Srivastava & Sutton 2017) both replace a
Dirichlet(alpha) prior on topic proportions pi = softmax(h) by a Gaussian on h whose mean and
diagonal variance are those of the Laplace approximation in the softmax basis:

    mean_k     = log alpha_k - (1/K) sum_j log alpha_j
    variance_k = (1/alpha_k) (1 - 2/K) + (1/K^2) sum_j 1/alpha_j

Both papers use only this diagonal; one home for it keeps them on the same prior.
"""

from __future__ import annotations

import torch

from noisyor_bench.infra.errors import ConfigError


def laplace_dirichlet_prior(
    alpha: float | torch.Tensor, n_topics: int, dtype: torch.dtype = torch.float64
) -> tuple[torch.Tensor, torch.Tensor]:
    """(mean, variance) of the Gaussian on h (length ``n_topics``) approximating Dir(alpha).

    ``alpha`` is a scalar (symmetric Dirichlet) or a tensor of ``n_topics`` positive values.
    """
    if n_topics < 2:
        raise ConfigError(f"a Dirichlet prior needs at least 2 topics, got n_topics={n_topics}")
    a = torch.as_tensor(alpha, dtype=dtype)
    if a.ndim == 0:
        a = a.expand(n_topics).clone()
    if a.shape != (n_topics,):
        raise ConfigError(f"alpha has shape {tuple(a.shape)}, expected a scalar or ({n_topics},)")
    if not bool(torch.all(a > 0)):
        raise ConfigError(f"Dirichlet alpha must be positive, got {a.tolist()}")
    log_a = torch.log(a)
    mean = log_a - log_a.mean()
    variance = (1.0 / a) * (1.0 - 2.0 / n_topics) + (1.0 / a).sum() / n_topics**2
    return mean, variance
