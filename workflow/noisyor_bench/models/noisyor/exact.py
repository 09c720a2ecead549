"""Exact inference in a noisy-OR network by enumerating all 2^K latent states.

This is the ground truth the benchmark measures its bounds against: the exact marginal
likelihood ``log p(x)``, the exact posterior marginals ``p(z_k = 1 | x)`` and the exact ELBO
of a factorised ``q``.  States are processed in chunks, so memory stays bounded (about
``chunk_states * batch * D`` numbers) while time grows as ``2^K``; above
:data:`MAX_EXACT_K` latent variables enumeration is refused with a clear error.

The positive-observation term is the only part that needs the per-state rates; the negative
term and the prior are linear in ``z`` and enter through one matrix product per chunk.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import torch

from noisyor_bench.infra.constants import MAX_EXACT_K  # noqa: E402  (re-exported)
from noisyor_bench.infra.errors import ConfigError
from noisyor_bench.models.noisyor.model import NoisyOR, log1mexp


def check_enumerable(k: int, max_k: int = MAX_EXACT_K) -> None:
    if k > max_k:
        raise ConfigError(
            f"exact enumeration needs 2^K latent states; K={k} exceeds the limit K <= {max_k} "
            f"(2^{k} = {2**k:,} states). Use the importance-weighted bound instead."
        )


def latent_states(k: int, start: int, stop: int, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    """Binary codes of the integers ``start .. stop-1`` as a (stop-start, K) 0/1 tensor."""
    idx = torch.arange(start, stop, device=device, dtype=torch.int64)
    bits = (idx.unsqueeze(-1) >> torch.arange(k, device=device, dtype=torch.int64)) & 1
    return bits.to(dtype)


def _chunks(k: int, chunk_states: int) -> Iterator[tuple[int, int]]:
    total = 2**k
    for start in range(0, total, chunk_states):
        yield start, min(start + chunk_states, total)


def _log_joint_chunk(model: NoisyOR, x: torch.Tensor, states: torch.Tensor) -> torch.Tensor:
    """``log p(x_n, z_s)`` for every data point n and state s: shape (N, S)."""
    a = model.theta0 + states @ model.theta.T  # (S, D)
    pos = log1mexp(a)  # (S, D); -inf where a_si = 0 (x_i = 1 impossible in state s)
    # Positive term: sum over i with x_i = 1 of log(1 - exp(-a_si)).  A matrix product would
    # form 0 * (-inf) = NaN for x_i = 0, so impossible entries are counted separately.
    impossible = torch.isinf(pos)
    ll_pos = x @ torch.where(impossible, torch.zeros_like(pos), pos).T  # (N, S)
    if impossible.any():
        hits = x @ impossible.to(x.dtype).T
        ll_pos = torch.where(hits > 0, torch.full_like(ll_pos, -torch.inf), ll_pos)
    ll_neg = -((1 - x) @ a.T)  # (N, S)
    return ll_pos + ll_neg + model.log_prior(states).unsqueeze(0)


@torch.no_grad()
def log_joint_table(
    model: NoisyOR, x: torch.Tensor, max_k: int = MAX_EXACT_K
) -> tuple[torch.Tensor, torch.Tensor]:
    """Every latent state (2^K, K) and ``log p(x_n, z_s)`` for each row and state (N, 2^K), float64.

    One table serves every quantity of a small model (posterior, its mode, the ELBO of any
    factorised ``q`` and its gradient) without re-enumerating; memory is ``N * 2^K`` numbers."""
    check_enumerable(model.K, max_k)
    model = model.to(dtype=torch.float64)
    x = x.to(torch.float64)
    states = latent_states(model.K, 0, 2**model.K, torch.float64, x.device)
    return states, _log_joint_chunk(model, x, states)


@dataclass
class ExactPosterior:
    """Exact quantities for a batch of observations: ``log p(x)`` (N,) and marginals (N, K)."""

    log_px: torch.Tensor
    marginals: torch.Tensor


def _default_chunk(n: int, d: int, budget: int = 2**24) -> int:
    """States per chunk so that the (S, D) rates and (N, S) joints stay near ``budget`` numbers."""
    return max(1, min(2**20, budget // max(1, n + d)))


@torch.no_grad()
def exact_posterior(
    model: NoisyOR, x: torch.Tensor, chunk_states: int | None = None, max_k: int = MAX_EXACT_K
) -> ExactPosterior:
    """Exact ``log p(x)`` and ``p(z_k = 1 | x)`` by streaming log-sum-exp over all states."""
    check_enumerable(model.K, max_k)
    model = model.to(dtype=torch.float64)
    x = x.to(torch.float64)
    n = x.shape[0]
    chunk = chunk_states or _default_chunk(n, model.D)
    run_max = torch.full((n,), -torch.inf, dtype=torch.float64, device=x.device)
    run_sum = torch.zeros(n, dtype=torch.float64, device=x.device)
    run_z = torch.zeros((n, model.K), dtype=torch.float64, device=x.device)
    for start, stop in _chunks(model.K, chunk):
        states = latent_states(model.K, start, stop, torch.float64, x.device)
        lj = _log_joint_chunk(model, x, states)
        new_max = torch.maximum(run_max, lj.max(dim=1).values)
        safe_max = torch.where(torch.isfinite(new_max), new_max, torch.zeros_like(new_max))
        scale = torch.exp(run_max - safe_max)
        w = torch.exp(lj - safe_max.unsqueeze(1))  # (N, S)
        run_sum = run_sum * scale + w.sum(1)
        run_z = run_z * scale.unsqueeze(1) + w @ states
        run_max = new_max
    safe_max = torch.where(torch.isfinite(run_max), run_max, torch.zeros_like(run_max))
    log_px = torch.log(run_sum) + safe_max
    return ExactPosterior(log_px=log_px, marginals=run_z / run_sum.unsqueeze(1))


def exact_log_marginal(model: NoisyOR, x: torch.Tensor, chunk_states: int | None = None) -> torch.Tensor:
    """Exact ``log p(x)`` per data point, shape (N,)."""
    return exact_posterior(model, x, chunk_states).log_px


@torch.no_grad()
def exact_elbo(
    model: NoisyOR,
    x: torch.Tensor,
    q: torch.Tensor,
    chunk_states: int | None = None,
    max_k: int = MAX_EXACT_K,
) -> torch.Tensor:
    """Exact ELBO ``E_q[log p(x, z)] + H(q)`` of a factorised Bernoulli ``q`` (N, K), shape (N,).

    Computed by summing ``q(z) log p(x, z)`` over all states, independently of any estimator
    used in training; the entropy of a factorised Bernoulli is closed form.
    """
    check_enumerable(model.K, max_k)
    model = model.to(dtype=torch.float64)
    x = x.to(torch.float64)
    q = q.to(torch.float64)
    n = x.shape[0]
    chunk = chunk_states or _default_chunk(n, model.D)
    log_q1 = torch.log(q)
    log_q0 = torch.log1p(-q)
    expected = torch.zeros(n, dtype=torch.float64, device=x.device)
    for start, stop in _chunks(model.K, chunk):
        states = latent_states(model.K, start, stop, torch.float64, x.device)
        lj = _log_joint_chunk(model, x, states)  # (N, S)
        # log q(z_s) for each n; 0 * log 0 terms are handled by masking zero-probability states.
        log_qs = torch.where(states.bool().unsqueeze(0), log_q1.unsqueeze(1), log_q0.unsqueeze(1)).sum(-1)
        qs = torch.exp(log_qs)
        contrib = torch.where(qs > 0, qs * lj, torch.zeros_like(lj))
        expected += contrib.sum(1)
    entropy = -(torch.xlogy(q, q) + torch.xlogy(1 - q, 1 - q)).sum(-1)
    return expected + entropy
