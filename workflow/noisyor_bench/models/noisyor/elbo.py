"""The ELBO of a factorised Bernoulli posterior in a noisy-OR network (paper eq. 16).

For ``q(z | x) = prod_k Bern(z_k; q_k)``

    ELBO = sum_{i: x_i=1} E_q[log(1 - exp(-a_i(z)))]          (Monte Carlo)
         - sum_{i: x_i=0} (theta_i0 + sum_k theta_ik q_k)      (closed form: linear in z)
         - KL(q || p(z))                                        (closed form)

(Algorithm 1 of the supplement.)  Only the positive term needs samples.  During training the
samples are binary-concrete relaxations (Jang et al., 2016; Maddison et al., 2017) at a
temperature ``tau`` so gradients flow into ``q``; at evaluation they are exact Bernoulli
draws (``temperature=None``).  AVI and ACP both call :func:`elbo`, so the only thing that
differs between them is the posterior family.

With an :class:`~noisyor_bench.models.noisyor.sparse.ActiveSet` the same quantities are computed from the
active observations only (:func:`negative_term_active`, :func:`noisyor_bench.models.noisyor.sparse.positive_loglik`):
O(L * nnz * K) instead of O(L * N * D * K).  The dense functions are the reference.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from noisyor_bench.models.noisyor.model import NoisyOR, bernoulli_kl, log1mexp
from noisyor_bench.models.noisyor.sparse import ActiveSet, positive_loglik


def sample_binary_concrete(
    logits: torch.Tensor, temperature: float, n_samples: int, generator: torch.Generator | None = None
) -> torch.Tensor:
    """Relaxed Bernoulli samples ``sigmoid((logits + logistic noise) / tau)``: (L, *logits.shape).

    Logistic noise ``log u - log(1-u)`` is the difference of two Gumbels, so this is the
    two-class Gumbel-softmax.  ``u`` is kept inside (0, 1) to avoid infinite noise.
    """
    shape = (n_samples, *logits.shape)
    u = torch.rand(shape, generator=generator, dtype=logits.dtype, device=logits.device)
    return binary_concrete(logits, u, temperature)


def binary_concrete(logits: torch.Tensor, u: torch.Tensor, temperature: float | torch.Tensor) -> torch.Tensor:
    """The relaxed samples of :func:`sample_binary_concrete` from given uniforms ``u`` (L, *logits.shape).

    Split from the drawing so that a batched trainer can draw each run's uniforms from the
    run's own generator and evaluate the samples of all runs in one computation.
    """
    tiny = torch.finfo(logits.dtype).tiny
    u = u.clamp(tiny, 1.0 - torch.finfo(logits.dtype).eps)
    noise = torch.log(u) - torch.log1p(-u)
    return torch.sigmoid((logits + noise) / temperature)


def sample_bernoulli(
    probs: torch.Tensor, n_samples: int, generator: torch.Generator | None = None
) -> torch.Tensor:
    """Exact Bernoulli draws: (L, *probs.shape) of 0/1 in ``probs.dtype``."""
    u = torch.rand((n_samples, *probs.shape), generator=generator, dtype=probs.dtype, device=probs.device)
    return bernoulli_from_uniforms(probs, u)


def bernoulli_from_uniforms(probs: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
    """The draws of :func:`sample_bernoulli` from given uniforms ``u`` (L, *probs.shape)."""
    return (u < probs).to(probs.dtype)


def positive_term(model: NoisyOR, x: torch.Tensor, z_samples: torch.Tensor) -> torch.Tensor:
    """Monte Carlo ``sum_{i: x_i=1} E_q[log(1 - exp(-a_i(z)))]`` from samples (L, N, K): (N,)."""
    a = model.rates(z_samples)  # (L, N, D)
    x = x.to(a.dtype)
    pos = torch.where(x > 0, log1mexp(a), torch.zeros_like(a))
    return pos.sum(-1).mean(0)


def negative_term(model: NoisyOR, x: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """``sum_{i: x_i=0} E_q[-a_i(z)] = -sum_{i: x_i=0} (theta_i0 + theta_i . q)``: (N,).

    Exact because ``a_i`` is linear in ``z`` and ``E_q[z] = q``.
    """
    x = x.to(q.dtype)
    return -((1 - x) * model.rates(q)).sum(-1)


def negative_term_active(model: NoisyOR, active: ActiveSet, q: torch.Tensor) -> torch.Tensor:
    """:func:`negative_term` from the active entries: ``sum_{x_i=0} a_i = sum_i a_i - sum_{x_i=1} a_i``.

    ``sum_i a_i(q) = sum_i theta_i0 + q . (sum_i theta_i)`` needs only column sums, so the
    cost is O(N * K + nnz * K) rather than O(N * D * K).
    """
    all_rates = model.theta0.sum() + q @ model.theta.sum(0)
    active_rates = active.row_sum(model.theta0) + (q * active.row_sum(model.theta)).sum(-1)
    return active_rates - all_rates


def elbo(
    model: NoisyOR,
    x: torch.Tensor,
    logits: torch.Tensor,
    n_samples: int,
    temperature: float | None,
    generator: torch.Generator | None = None,
    active: ActiveSet | None = None,
    uniforms: torch.Tensor | None = None,
) -> torch.Tensor:
    """Per-datapoint ELBO (eq. 16), shape (N,).

    ``logits``: (N, K) logits of ``q``.  ``temperature=None`` uses exact Bernoulli draws (the
    evaluation protocol: no relaxation at test time); otherwise binary-concrete samples.
    ``active``: the active entries of ``x``, for the sparse computation (``x`` is still read
    by the linear terms unless ``active.sparse_linear``); the samples drawn are the same
    either way.  ``uniforms`` (L, N, K): the uniform draws the samples are made from, instead
    of drawing them from ``generator`` (the batched trainer draws them per run); ``temperature``
    may then be a 0-d tensor.
    """
    q = torch.sigmoid(logits)
    if temperature is None:
        probs = q.detach() if not q.requires_grad else q
        z = (
            sample_bernoulli(probs, n_samples, generator)
            if uniforms is None
            else bernoulli_from_uniforms(probs, uniforms)
        )
    elif uniforms is None:
        z = sample_binary_concrete(logits, temperature, n_samples, generator)
    else:
        z = binary_concrete(logits, uniforms, temperature)
    kl = bernoulli_kl_from_logits(logits, model.mu)
    if active is None:
        return positive_term(model, x, z) + negative_term(model, x, q) - kl
    pos = positive_loglik(model.theta, model.theta0, z.to(model.theta.dtype), active).mean(0)
    neg = negative_term_active(model, active, q) if active.sparse_linear else negative_term(model, x, q)
    return pos + neg - kl


def bernoulli_kl_from_logits(logits: torch.Tensor, mu: torch.Tensor) -> torch.Tensor:
    """``KL(Bern(sigmoid(logits)) || Bern(mu))`` summed over K, stable for saturated logits.

    With ``log q = -softplus(-l)`` and ``log(1-q) = -softplus(l)`` no ``log 0`` is formed.
    """
    q = torch.sigmoid(logits)
    log_q1 = -F.softplus(-logits)
    log_q0 = -F.softplus(logits)
    return (q * (log_q1 - torch.log(mu)) + (1 - q) * (log_q0 - torch.log1p(-mu))).sum(-1)


__all__ = [
    "bernoulli_from_uniforms",
    "bernoulli_kl",
    "bernoulli_kl_from_logits",
    "binary_concrete",
    "elbo",
    "negative_term",
    "negative_term_active",
    "positive_term",
    "sample_bernoulli",
    "sample_binary_concrete",
]
