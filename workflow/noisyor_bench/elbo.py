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
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from .model import NoisyOR, bernoulli_kl, log1mexp


def sample_binary_concrete(
    logits: torch.Tensor, temperature: float, n_samples: int, generator: torch.Generator | None = None
) -> torch.Tensor:
    """Relaxed Bernoulli samples ``sigmoid((logits + logistic noise) / tau)``: (L, *logits.shape).

    Logistic noise ``log u - log(1-u)`` is the difference of two Gumbels, so this is the
    two-class Gumbel-softmax.  ``u`` is kept inside (0, 1) to avoid infinite noise.
    """
    shape = (n_samples, *logits.shape)
    tiny = torch.finfo(logits.dtype).tiny
    u = torch.rand(shape, generator=generator, dtype=logits.dtype, device=logits.device)
    u = u.clamp(tiny, 1.0 - torch.finfo(logits.dtype).eps)
    noise = torch.log(u) - torch.log1p(-u)
    return torch.sigmoid((logits + noise) / temperature)


def sample_bernoulli(
    probs: torch.Tensor, n_samples: int, generator: torch.Generator | None = None
) -> torch.Tensor:
    """Exact Bernoulli draws: (L, *probs.shape) of 0/1 in ``probs.dtype``."""
    u = torch.rand((n_samples, *probs.shape), generator=generator, dtype=probs.dtype, device=probs.device)
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


def elbo(
    model: NoisyOR,
    x: torch.Tensor,
    logits: torch.Tensor,
    n_samples: int,
    temperature: float | None,
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """Per-datapoint ELBO (eq. 16), shape (N,).

    ``logits``: (N, K) logits of ``q``.  ``temperature=None`` uses exact Bernoulli draws (the
    evaluation protocol: no relaxation at test time); otherwise binary-concrete samples.
    """
    q = torch.sigmoid(logits)
    if temperature is None:
        z = sample_bernoulli(q.detach() if not q.requires_grad else q, n_samples, generator)
    else:
        z = sample_binary_concrete(logits, temperature, n_samples, generator)
    return positive_term(model, x, z) + negative_term(model, x, q) - bernoulli_kl_from_logits(logits, model.mu)


def bernoulli_kl_from_logits(logits: torch.Tensor, mu: torch.Tensor) -> torch.Tensor:
    """``KL(Bern(sigmoid(logits)) || Bern(mu))`` summed over K, stable for saturated logits.

    With ``log q = -softplus(-l)`` and ``log(1-q) = -softplus(l)`` no ``log 0`` is formed.
    """
    q = torch.sigmoid(logits)
    log_q1 = -F.softplus(-logits)
    log_q0 = -F.softplus(logits)
    return (q * (log_q1 - torch.log(mu)) + (1 - q) * (log_q0 - torch.log1p(-mu))).sum(-1)


__all__ = [
    "bernoulli_kl",
    "bernoulli_kl_from_logits",
    "elbo",
    "negative_term",
    "positive_term",
    "sample_bernoulli",
    "sample_binary_concrete",
]
