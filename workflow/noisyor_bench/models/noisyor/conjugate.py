"""The conjugate duality of the positive noisy-OR likelihood: the base of both Jaakkola-Jordan bounds.

The only non-linear factor of the noisy-OR likelihood is ``p(x_i = 1 | z) = exp(f(a_i))`` with

    f(a) = log(1 - exp(-a)),    a_i = theta_i0 + sum_k theta_ik z_k          (eqs. 5-7)

``f`` is increasing and concave on ``a > 0``; the two classical bounds exploit this.

The upper bound is :mod:`noisyor_bench.models.noisyor.jj_upper`, the lower bound
:mod:`noisyor_bench.models.noisyor.jj_lower`; docs/bounds.md repeats the derivations with every
intermediate step.
"""

from __future__ import annotations

import torch

from noisyor_bench.models.noisyor.model import log1mexp


def f_pos(a: torch.Tensor) -> torch.Tensor:
    """``f(a) = log(1 - exp(-a))``: log-probability of a positive observation at rate ``a`` (eq. 7)."""
    return log1mexp(a)


def f_prime(a: torch.Tensor) -> torch.Tensor:
    """``f'(a) = 1/(e^a - 1)``: the conjugate point ``t`` at which the UB touches ``f`` at ``a``."""
    return 1.0 / torch.expm1(a)


def conj_g(t: torch.Tensor) -> torch.Tensor:
    """``g(t) = -t log t + (t+1) log(t+1)`` for ``t >= 0`` (eq. 8), ``g(0) = 0``.

    Evaluated as ``(1+t) log1p(t) - t log t`` below 1 and ``log1p(t) + t log1p(1/t)`` above,
    so neither the tiny-``t`` nor the huge-``t`` end loses digits to cancellation.
    """
    small = t <= 1.0
    ts = torch.where(small, t, torch.ones_like(t))
    tl = torch.where(small, torch.ones_like(t), t)
    g_small = (1.0 + ts) * torch.log1p(ts) - torch.xlogy(ts, ts)
    g_large = torch.log1p(tl) + tl * torch.log1p(1.0 / tl)
    return torch.where(small, g_small, g_large)


def conj_g_prime(t: torch.Tensor) -> torch.Tensor:
    """``g'(t) = log((t+1)/t)`` (``+inf`` at 0); decreasing, since ``g`` is concave."""
    small = t <= 1.0
    ts = torch.where(small, t, torch.ones_like(t))
    tl = torch.where(small, torch.ones_like(t), t)
    return torch.where(small, torch.log1p(ts) - torch.log(ts), torch.log1p(1.0 / tl))


__all__ = ["conj_g", "conj_g_prime", "f_pos", "f_prime"]
