"""The Jaakkola-Jordan conjugate *upper* bound and its factorised posterior (eq. 11).

Upper bound (UB-CDI; paper eqs. 7-8, supplement eqs. 1-5).  The concave conjugate of ``f``

    g(t) = min_a (t a - f(a)) = -t log t + (t + 1) log(t + 1),   t >= 0      (eq. 8)

(attained at ``a = log((t+1)/t)``, i.e. ``t = f'(a) = 1/(e^a - 1)``) gives, for every
``psi >= 0``, ``f(a) <= psi a - g(psi)`` with equality iff ``psi = f'(a)``.  The bound is
linear in ``z``, so multiplying it over the positive observations with the exact negative
likelihoods and the prior keeps the joint ``p~(x, z | psi)`` factorised over ``k``:

    log p~(x, z | psi) = -sum_i x_i g(psi_i) + sum_i c_i (theta_i0 + sum_k theta_ik z_k)
                         + log p(z),        c_i = x_i psi_i - (1 - x_i)          (suppl. eq. 3)
    q(z_k = 1 | x, psi) = sigmoid(sum_i c_i theta_ik + logit mu_k)              (eq. 11)
    LL-UB(psi) = log p~(x | psi) = -sum_i x_i g(psi_i) + sum_i c_i theta_i0
                 + sum_k log(1 - mu_k + mu_k exp(sum_i c_i theta_ik))          (suppl. eq. 4)

(The supplement's eq. 4 drops the ``exp`` inside the product; the form above is the correct
one and is tested against enumeration.)  ``LL-UB >= log p(x)`` for every ``psi``.  It is
convex in ``psi`` (log-sum-exp of affine functions plus the convex ``-g``) with gradient
``dLL-UB/dpsi_i = x_i (E_q[a_i] - g'(psi_i))``, ``g'(t) = log((t+1)/t)`` and ``q`` of eq. 11,
so its minimiser -- the tightest bound, the CDI choice of eq. 12 applied to the whole data
vector -- is the fixed point

    psi_i = 1 / (exp(E_q[a_i]) - 1) = f'(E_q[a_i]),    E_q[a_i] = theta_i0 + sum_k theta_ik q_k.

Each component of the fixed-point displacement ``F(psi) - psi`` has the sign opposite to the
gradient, so it is a descent direction; :func:`ub_optimize` steps along it with an Armijo
backtracking line search so that LL-UB decreases monotonically even where the plain
iteration oscillates (it does on dense data: see docs/bounds.md).

``f``, ``g`` and their derivatives: :mod:`noisyor_bench.models.noisyor.conjugate`; docs/bounds.md
repeats these derivations with every intermediate step.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from noisyor_bench.models.noisyor.conjugate import conj_g, conj_g_prime, f_prime
from noisyor_bench.models.noisyor.linesearch import backtrack
from noisyor_bench.models.noisyor.model import NoisyOR

# Smallest rate E_q[a_i] used in the UB fixed point (psi = 1/expm1(E) <= ~1e10).
_MIN_RATE = 1e-10


def upper_bound_f(a: torch.Tensor, psi: torch.Tensor) -> torch.Tensor:
    """``psi a - g(psi) >= f(a)`` (eq. 7): log of ``p~(x_i = 1 | z, psi)``."""
    return psi * a - conj_g(psi)


def ub_coefficients(x: torch.Tensor, psi: torch.Tensor) -> torch.Tensor:
    """``c_i = x_i psi_i - (1 - x_i)``: the coefficient of ``a_i`` in ``log p~(x, z | psi)`` (suppl. eq. 3)."""
    return torch.where(x > 0, psi, -torch.ones_like(psi))


def conjugate_posterior_logits(
    x: torch.Tensor, psi: torch.Tensor, theta: torch.Tensor, prior_logits: torch.Tensor
) -> torch.Tensor:
    """Eq. 11 (suppl. eq. 5), the one implementation: logits of ``q(z_k = 1 | x, psi)``, (N, K),

        sum_{i: x_i=1} psi_i theta_ik - sum_{i: x_i=0} theta_ik + logit(mu_k)  =  c @ theta + logit(mu).

    The conjugate upper bound makes every positive observation contribute linearly (weight
    ``psi_i``) and every negative one exactly (weight -1), so ``q`` factorises.  ``theta`` and
    ``prior_logits`` are passed separately so that ACP can give a detached ``theta``
    (ACP-SG) and its own parameterisation of the prior; UB-CDI uses :func:`ub_posterior_logits`.
    """
    return ub_coefficients(x, psi) @ theta + prior_logits


def ub_posterior_logits(model: NoisyOR, x: torch.Tensor, psi: torch.Tensor) -> torch.Tensor:
    """Logits of ``q(z_k = 1 | x, psi)`` (eq. 11) of ``model``: :func:`conjugate_posterior_logits`, (N, K)."""
    return conjugate_posterior_logits(x, psi, model.theta, torch.logit(model.mu))


def ll_ub(model: NoisyOR, x: torch.Tensor, psi: torch.Tensor) -> torch.Tensor:
    """``LL-UB = log p~(x | psi) = log sum_z p~(x, z | psi)`` in closed form (suppl. eq. 4, corrected), (N,).

    ``sum_k log(1 - mu_k + mu_k e^{s_k}) = sum_k [log(1 - mu_k) + softplus(s_k + logit mu_k)]``.
    """
    c = ub_coefficients(x, psi)
    eta = conjugate_posterior_logits(x, psi, model.theta, torch.logit(model.mu))  # eq. 11's logits
    pos = torch.where(x > 0, -conj_g(psi), torch.zeros_like(psi)).sum(-1)
    return pos + c @ model.theta0 + (torch.log1p(-model.mu) + F.softplus(eta)).sum(-1)


def ll_ub_gradient(model: NoisyOR, x: torch.Tensor, psi: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """``dLL-UB/dpsi_i = x_i (E_q[a_i] - g'(psi_i))`` with ``q`` of eq. 11 at ``psi``, (N, D)."""
    safe = torch.where(x > 0, psi, torch.ones_like(psi))
    return torch.where(x > 0, model.rates(q) - conj_g_prime(safe), torch.zeros_like(psi))


def ub_fixed_point(model: NoisyOR, x: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """The stationarity map ``psi_i = 1 / (exp(E_q[a_i]) - 1)`` for ``x_i = 1`` (0 elsewhere), (N, D)."""
    expected_rate = model.rates(q).clamp_min(_MIN_RATE)
    return torch.where(x > 0, f_prime(expected_rate), torch.zeros_like(expected_rate))


def ub_psi_prior(model: NoisyOR, x: torch.Tensor) -> torch.Tensor:
    """``psi_i = f'(E_{p(z)}[a_i])``: the tangent at the prior-mean rate (one fixed-point step from q = prior)."""
    q = model.mu.expand(x.shape[0], model.K)
    return ub_fixed_point(model, x, q)


def ub_psi_marginal(model: NoisyOR, x: torch.Tensor, iters: int = 100) -> torch.Tensor:
    """Eq. 12 literally: ``psi_i = argmin_psi E_{p(z)}[p~(x_i = 1 | z, psi)]`` for each observation.

    ``h_i(psi) = log E_p[p~] = -g(psi) + psi theta_i0 + sum_k log(1 - mu_k + mu_k e^{psi theta_ik})``
    is convex with ``h_i'(psi) = -g'(psi) + theta_i0 + sum_k theta_ik sigmoid(psi theta_ik + logit mu_k)``
    increasing from ``-inf``; its root is found by bisection in ``log psi`` on
    ``[1e-12, 1e12]`` (100 halvings of a width-55 interval: exact to round-off).  The result depends
    only on ``i``, not on the data point; it is broadcast to ``x``'s positives.
    """
    theta, theta0 = model.theta, model.theta0
    logit_mu = torch.logit(model.mu)
    lo = torch.full_like(theta0, math.log(1e-12))
    hi = torch.full_like(theta0, math.log(1e12))

    def slope(log_psi: torch.Tensor) -> torch.Tensor:
        psi = torch.exp(log_psi)
        return (
            -conj_g_prime(psi)
            + theta0
            + (theta * torch.sigmoid(psi.unsqueeze(-1) * theta + logit_mu)).sum(-1)
        )

    for _ in range(iters):
        mid = 0.5 * (lo + hi)
        up = slope(mid) > 0
        hi = torch.where(up, mid, hi)
        lo = torch.where(up, lo, mid)
    psi = torch.exp(0.5 * (lo + hi))
    return torch.where(x > 0, psi.expand_as(x), torch.zeros_like(x))


@dataclass
class UBRound:
    """State after one fixed-point round: ``psi`` (N, D), ``q`` of eq. 11 (N, K), ``ll_ub`` (N,)."""

    round: int
    psi: torch.Tensor
    q: torch.Tensor
    ll_ub: torch.Tensor
    backtracked: int


def ub_optimize(
    model: NoisyOR,
    x: torch.Tensor,
    psi: torch.Tensor,
    max_rounds: int,
    tol: float = 1e-9,
    max_halvings: int = 40,
    callback: Callable[[UBRound], None] | None = None,
    damped: bool = True,
) -> UBRound:
    """Minimise LL-UB over ``psi`` per data point by the damped fixed point (tightest UB, eq. 12).

    Each round proposes ``F(psi) = f'(E_q[a])`` with ``q`` from eq. 11 and moves each data
    point by the largest step ``2^-j`` along ``F(psi) - psi`` that decreases its LL-UB
    sufficiently (Armijo, :func:`backtrack`; ``j = 0`` is the plain fixed-point
    iteration).  Stops when no data point's LL-UB decreased by more than ``tol`` in a round.
    ``callback`` sees round 0 (the initial ``psi``) and every round after;
    ``UBRound.backtracked`` counts the data points whose plain step was rejected.

    ``damped=False`` runs the plain iteration ``psi <- F(psi)`` for comparison: it is not
    monotone and can settle into a 2-cycle far above the minimum (the map is decreasing in
    ``psi``, and its Jacobian exceeds 1 in modulus when many positives share parents); it
    stops after ``max_rounds`` or when ``psi`` stops changing.
    """
    x = x.to(psi.dtype)
    obj = ll_ub(model, x, psi)
    state = UBRound(0, psi, torch.sigmoid(ub_posterior_logits(model, x, psi)), obj, 0)
    if callback is not None:
        callback(state)
    for t in range(1, max_rounds + 1):
        target = ub_fixed_point(model, x, state.q)

        def objective(idx: torch.Tensor | None, cand: torch.Tensor) -> torch.Tensor:
            return ll_ub(model, x if idx is None else x[idx], cand)

        if damped:
            slope = (ll_ub_gradient(model, x, psi, state.q) * (target - psi)).sum(-1)
            new_psi, new_obj, backtracked = backtrack(
                psi, obj, target, slope, objective, ascent=False, max_halvings=max_halvings
            )
            decrease = obj - new_obj
        else:
            new_psi, new_obj = target, objective(None, target)
            backtracked = int((new_obj > obj + 1e-12 * obj.abs()).sum())
            decrease = (new_psi - psi).abs().amax(-1) if psi.numel() else new_obj - obj
        psi, obj = new_psi, new_obj
        state = UBRound(t, psi, torch.sigmoid(ub_posterior_logits(model, x, psi)), obj, backtracked)
        if callback is not None:
            callback(state)
        if float(decrease.max()) <= tol:
            break
    return state


__all__ = [
    "UBRound",
    "conjugate_posterior_logits",
    "ll_ub",
    "ll_ub_gradient",
    "ub_coefficients",
    "ub_fixed_point",
    "ub_optimize",
    "ub_posterior_logits",
    "ub_psi_marginal",
    "ub_psi_prior",
    "upper_bound_f",
]
