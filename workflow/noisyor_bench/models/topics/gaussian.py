"""Closed-form KL divergences between the Gaussians of logistic-normal topic models.

aviPAM's variational posterior at every level is a diagonal Gaussian in the softmax basis; the
prior is either the diagonal Laplace approximation of a Dirichlet (:func:`kl_diag_per_dim`, one
term per latent dimension: what the collapse study counts) or, for CTM, a full-covariance
Gaussian (:func:`kl_diag_to_full`, which does not split by dimension).
"""

from __future__ import annotations

import torch


def kl_diag_per_dim(
    q_mean: torch.Tensor, q_logvar: torch.Tensor, p_mean: torch.Tensor, p_var: torch.Tensor
) -> torch.Tensor:
    """``KL(N(q_mean, diag e^q_logvar) || N(p_mean, diag p_var))`` per dimension (same shape as ``q_mean``).

    Per dimension: ``0.5 * (s^2/v + (m - mu)^2/v - 1 + log v - log s^2)`` (AVITM's latent loss,
    before its sum over dimensions)."""
    q_var = torch.exp(q_logvar)
    return 0.5 * (q_var / p_var + (q_mean - p_mean) ** 2 / p_var - 1.0 + torch.log(p_var) - q_logvar)


def kl_diag_to_full(
    q_mean: torch.Tensor, q_logvar: torch.Tensor, p_mean: torch.Tensor, p_scale_tril: torch.Tensor
) -> torch.Tensor:
    """``(B,)`` ``KL(N(q_mean, diag e^q_logvar) || N(p_mean, L L^T))`` with ``L = p_scale_tril``:

    ``0.5 * (tr(S^-1 D) + (mu - m)^T S^-1 (mu - m) - K + log|S| - log|D|)``."""
    k = q_mean.shape[-1]
    eye = torch.eye(k, dtype=p_scale_tril.dtype, device=p_scale_tril.device)
    l_inv = torch.linalg.solve_triangular(p_scale_tril, eye, upper=False)  # L^-1
    # tr(S^-1 D) = ||L^-1 diag(s)||_F^2 = sum_ij (L^-1)_ij^2 s_j^2
    trace = (torch.exp(q_logvar) @ (l_inv**2).sum(0)).reshape(q_mean.shape[:-1])
    diff = (q_mean - p_mean) @ l_inv.T  # rows: L^-1 (m - mu)
    maha = (diff**2).sum(-1)
    log_det_p = 2.0 * torch.log(torch.diagonal(p_scale_tril)).sum()
    log_det_q = q_logvar.sum(-1)
    return 0.5 * (trace + maha - k + log_det_p - log_det_q)


def kl_diag_to_full_marginals(
    q_mean: torch.Tensor, q_logvar: torch.Tensor, p_mean: torch.Tensor, p_scale_tril: torch.Tensor
) -> torch.Tensor:
    """Per-dimension KL of q's marginals against the prior's *marginals* ``N(mu_k, S_kk)``.

    A diagnostic for CTM's collapse count (the full KL does not split by dimension); it is not
    a term of the ELBO."""
    p_var = (p_scale_tril**2).sum(-1)  # diag(L L^T)
    return kl_diag_per_dim(q_mean, q_logvar, p_mean, p_var)


__all__ = ["kl_diag_per_dim", "kl_diag_to_full", "kl_diag_to_full_marginals"]
