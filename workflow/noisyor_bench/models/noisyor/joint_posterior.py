"""The exact joint posterior ``p(z | x)`` of a small noisy-OR, from its enumerated log joint.

Why: the best any inference can do at recovering ``z`` is set by the joint posterior, not its
marginals -- its mode is the decision with the highest expected exact match, and draws from
it are the paper's F1/EM protocol (``z_hat`` drawn from the posterior) with exact inference.
Works on the table of :func:`noisyor_bench.models.noisyor.exact.log_joint_table`.
"""

from __future__ import annotations

import torch

from noisyor_bench.infra.errors import DataError


def state_index(z: torch.Tensor) -> torch.Tensor:
    """Row index in the state table of each binary vector ``z`` (N, K): bit k of the index is z_k."""
    k = z.shape[-1]
    return (z.to(torch.int64) << torch.arange(k, dtype=torch.int64)).sum(-1)


def posterior_table(log_joint: torch.Tensor) -> torch.Tensor:
    """``p(z_s | x_n)`` for every row and state, (N, S)."""
    return torch.softmax(log_joint, dim=-1)


def mode(states: torch.Tensor, log_joint: torch.Tensor) -> torch.Tensor:
    """The posterior mode ``argmax_z p(z | x)`` of each row, (N, K) 0/1."""
    return states[log_joint.argmax(dim=-1)]


def probability_of(log_joint: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
    """``p(z_n | x_n)`` of one given state per row (e.g. the true one), (N,)."""
    if z.shape[0] != log_joint.shape[0] or 2 ** z.shape[1] != log_joint.shape[1]:
        raise DataError(
            f"z has shape {tuple(z.shape)}; the table has {log_joint.shape[0]} rows and "
            f"{log_joint.shape[1]} states (2^K)"
        )
    return posterior_table(log_joint).gather(1, state_index(z).unsqueeze(1)).squeeze(1)


def draws(states: torch.Tensor, log_joint: torch.Tensor, n: int, generator: torch.Generator) -> torch.Tensor:
    """``n`` exact draws ``z ~ p(z | x)`` per row, (n, N, K) 0/1."""
    if n < 1:
        raise ValueError(f"the number of draws must be >= 1, got {n}")
    picks = torch.multinomial(posterior_table(log_joint), n, replacement=True, generator=generator)
    return states[picks.T]
