"""The correlated topic model's prior (Blei & Lafferty 2006): a learned full-covariance Gaussian
on the softmax-basis topic logits, ``h ~ N(mu, L L^T)``, ``theta = softmax(h)``.

aviPAM learns ``mu`` and the Cholesky factor ``L`` as point estimates (variational EM, like the
topic matrix).  ``L``'s diagonal is ``exp`` of a free parameter so it stays positive; both start
at the Laplace approximation of a symmetric Dirichlet(alpha), i.e. CTM starts where LDA's prior
is and learns the correlations.
"""

from __future__ import annotations

import torch
from torch import nn

from noisyor_bench.models.topics.dirichlet_laplace import laplace_dirichlet_prior
from noisyor_bench.models.topics.gaussian import kl_diag_to_full, kl_diag_to_full_marginals


class CtmPrior(nn.Module):
    """``N(mean, scale_tril scale_tril^T)`` over ``n_topics`` logits, both learned."""

    def __init__(self, n_topics: int, alpha: float = 1.0, dtype: torch.dtype = torch.float32) -> None:
        super().__init__()
        mean, variance = laplace_dirichlet_prior(alpha, n_topics, dtype=torch.float64)
        self.mean = nn.Parameter(mean.to(dtype))
        self.log_diag = nn.Parameter((0.5 * torch.log(variance)).to(dtype))
        self.off_diag = nn.Parameter(torch.zeros(n_topics, n_topics, dtype=dtype))
        self.n_topics = int(n_topics)

    def scale_tril(self) -> torch.Tensor:
        """The Cholesky factor ``L`` (lower triangular, positive diagonal)."""
        strict = torch.tril(self.off_diag, diagonal=-1)
        return strict + torch.diag(torch.exp(self.log_diag))

    def covariance(self) -> torch.Tensor:
        """``L L^T`` (K x K)."""
        factor = self.scale_tril()
        return factor @ factor.T

    def kl(self, q_mean: torch.Tensor, q_logvar: torch.Tensor) -> torch.Tensor:
        """``(B,)`` KL of the diagonal posterior against this prior."""
        return kl_diag_to_full(q_mean, q_logvar, self.mean, self.scale_tril())

    def kl_marginals(self, q_mean: torch.Tensor, q_logvar: torch.Tensor) -> torch.Tensor:
        """``(B, K)`` per-dimension KL against the prior's marginals (a diagnostic only)."""
        return kl_diag_to_full_marginals(q_mean, q_logvar, self.mean, self.scale_tril())


__all__ = ["CtmPrior"]
