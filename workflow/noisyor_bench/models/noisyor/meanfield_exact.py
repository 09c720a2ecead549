"""The factorised (mean-field) ELBO of a small noisy-OR, exactly, from its enumerated log joint.

Why: to judge a reported NELBO one needs what a factorised ``q`` can reach with the true
parameters -- its per-row optimum, and what a per-datapoint optimiser reaches after ``t``
steps -- without Monte Carlo noise.  Everything here works on the table of
:func:`noisyor_bench.models.noisyor.exact.log_joint_table` (``log p(x_n, z_s)`` for every
row and state), so the expectation under ``q`` is a finite sum, exact for ``K <= 12``.
``q`` is held as logits: ``q_k = sigmoid(logit_k)``.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch.nn.functional import logsigmoid

from noisyor_bench.infra.errors import DataError

WEIGHT_FLOOR = 1e-20
"""Smallest ``q_j`` (and ``1 - q_j``) in the sums: products of up to 11 such weights stay far
above float64's subnormal range (where arithmetic is about 100 times slower), and the
expectation moves by at most ``1e-20`` times ``|log p(x, z)|``."""


def require_possible(log_joint: torch.Tensor) -> None:
    """Every state must have a finite joint (a positive leak): a factorised ``q`` with full
    support otherwise has an ELBO of minus infinity, and there is no optimum to report."""
    if not bool(torch.isfinite(log_joint).all()):
        raise DataError(
            "some latent state cannot produce an observed row (log p(x, z) = -inf: a zero leak); "
            "the exact mean-field optimum needs every state possible"
        )


def log_q_states(states: torch.Tensor, logits: torch.Tensor) -> torch.Tensor:
    """``log q(z_s)`` of a factorised Bernoulli per row and state, (N, S)."""
    return logsigmoid(logits) @ states.T + logsigmoid(-logits) @ (1.0 - states).T


def entropy(logits: torch.Tensor) -> torch.Tensor:
    """Entropy of the factorised Bernoulli per row, (N,)."""
    q = torch.sigmoid(logits)
    return -(q * logsigmoid(logits) + (1.0 - q) * logsigmoid(-logits)).sum(-1)


def elbo(states: torch.Tensor, log_joint: torch.Tensor, logits: torch.Tensor) -> torch.Tensor:
    """Exact ``E_q[log p(x, z)] + H(q)`` per row, (N,); differentiable in ``logits``."""
    weights = torch.exp(log_q_states(states, logits))
    return (weights * log_joint).sum(-1) + entropy(logits)


def conditional_expectations(log_joint: torch.Tensor, q: torch.Tensor, k: int) -> torch.Tensor:
    """``E_{q_-k}[log p(x, z) | z_k = v]`` for v = 0, 1 per row, (N, 2).

    The table's state index has bit j = z_j (:func:`noisyor_bench.models.noisyor.exact.latent_states`);
    the bits other than k are summed out against ``(1 - q_j, q_j)`` one at a time, highest
    first, each a view (N, A, 2, B) with B = 2^(bits below j still present): about ``2 N 2^K``
    products, no exp."""
    n, n_latent = q.shape
    q = q.clamp(WEIGHT_FLOOR, 1.0 - WEIGHT_FLOOR)
    table = log_joint
    for j in reversed(range(n_latent)):
        if j == k:
            continue
        below = 2**j  # going down from the top bit, every bit below j is still present
        weights = torch.stack((1.0 - q[:, j], q[:, j]), dim=-1).reshape(n, 1, 2, 1)
        table = (table.reshape(n, -1, 2, below) * weights).sum(dim=2).reshape(n, -1)
    return table.reshape(n, 2)


@torch.no_grad()
def coordinate_ascent(
    states: torch.Tensor,
    log_joint: torch.Tensor,
    logits: torch.Tensor,
    max_sweeps: int = 200,
    tol: float = 1e-9,
) -> torch.Tensor:
    """Coordinate ascent on the exact ELBO (each update the exact optimum of one ``q_k``):
    ``logit q_k = E_{q_-k}[log p(x, z) | z_k = 1] - E_{q_-k}[log p(x, z) | z_k = 0]``.

    Monotone in the ELBO; stops when no ``q_k`` moves by more than ``tol`` in a sweep."""
    require_possible(log_joint)
    if states.shape[0] != log_joint.shape[1] or logits.shape != (log_joint.shape[0], states.shape[1]):
        raise ValueError(
            f"logits {tuple(logits.shape)} and table {tuple(log_joint.shape)} do not fit the "
            f"{states.shape[0]} states of K={states.shape[1]}"
        )
    logits = logits.to(torch.float64).clone()
    for _ in range(max_sweeps):
        before = torch.sigmoid(logits)
        for k in range(states.shape[1]):
            expected = conditional_expectations(log_joint, torch.sigmoid(logits), k)
            logits[:, k] = expected[:, 1] - expected[:, 0]
        if float((torch.sigmoid(logits) - before).abs().max()) <= tol:
            break
    return logits


@torch.no_grad()
def best_of(
    states: torch.Tensor, log_joint: torch.Tensor, starts: Sequence[torch.Tensor], max_sweeps: int = 200
) -> tuple[torch.Tensor, torch.Tensor]:
    """Coordinate ascent from every start; per row the optimum with the highest ELBO.

    Returns ``(elbo (N,), logits (N, K))``.  The ELBO of a factorised ``q`` is not concave,
    so several starts guard against a poor local optimum."""
    if not starts:
        raise ValueError("best_of needs at least one start")
    best_value, best_logits = None, None
    for start in starts:
        logits = coordinate_ascent(states, log_joint, start, max_sweeps)
        value = elbo(states, log_joint, logits)
        if best_value is None:
            best_value, best_logits = value, logits
            continue
        better = value > best_value
        best_value = torch.where(better, value, best_value)
        best_logits = torch.where(better.unsqueeze(-1), logits, best_logits)
    return best_value, best_logits


def truncated_adam(
    states: torch.Tensor,
    log_joint: torch.Tensor,
    start: torch.Tensor,
    steps: Sequence[int],
    lr: float,
) -> dict[int, torch.Tensor]:
    """Per-datapoint Adam on the exact ELBO from ``start``, the logits after each of ``steps`` steps.

    Adam's moments are per parameter, so one optimiser on the summed ELBO is the same as one
    optimiser per row: a per-datapoint optimiser stopped early, as in a step-capped SVI."""
    if not steps or min(steps) < 0:
        raise ValueError(f"steps must be a non-empty list of integers >= 0, got {list(steps)}")
    require_possible(log_joint)
    wanted = set(int(s) for s in steps)
    logits = start.to(torch.float64).clone().requires_grad_(True)
    opt = torch.optim.Adam([logits], lr=lr)
    out: dict[int, torch.Tensor] = {}
    for t in range(max(wanted) + 1):
        if t in wanted:
            out[t] = logits.detach().clone()
        if t == max(wanted):
            break
        opt.zero_grad()
        (-elbo(states, log_joint, logits).sum()).backward()
        opt.step()
    return out
