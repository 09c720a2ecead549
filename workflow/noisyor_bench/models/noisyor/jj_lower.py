"""The Jaakkola-Jordan (Jensen) *lower* bound of LB-CDI and SVI.

Lower bound (LB-CDI and SVI; Jaakkola & Jordan 1999, Singliar & Hauskrecht 2006).  With
``r_ik >= 0``, ``sum_{k=1}^K r_ik = 1`` and the leak kept inside every term,

    a_i = sum_k r_ik (theta_i0 + theta_ik z_k / r_ik)
    f(a_i) >= sum_k r_ik f(theta_i0 + theta_ik z_k / r_ik)                      (Jensen)
           = f(theta_i0) + sum_k z_k Delta_ik,
    Delta_ik = r_ik [f(theta_i0 + theta_ik / r_ik) - f(theta_i0)] >= 0,

using ``z_k in {0, 1}``.  (Giving the leak its own weight ``r_i0`` instead would put
``f(0) = -inf`` into every term whose ``z_k = 0``, so it is kept inside every term as in
Jaakkola & Jordan and Singliar & Hauskrecht.)  The bound is again linear in ``z``, hence

    E_q[LB_i] = f(theta_i0) + sum_k q_k Delta_ik                                (closed form)
    q*(z_k = 1) = sigmoid(logit mu_k + sum_{i:x_i=1} Delta_ik - sum_{i:x_i=0} theta_ik)
    LL-LB(r) = sum_{i:x_i=1} f(theta_i0) - sum_{i:x_i=0} theta_i0
               + sum_k log(1 - mu_k + mu_k exp(sum_{i:x_i=1} Delta_ik - sum_{i:x_i=0} theta_ik))

where ``q*`` maximises the lower-bounded ELBO for fixed ``r`` exactly (the bound is linear in
``z``, so the mean-field optimum is the normalised bounded joint) and ``LL-LB(r) <= log p(x)``
is its maximum.  For fixed ``q`` the tightest ``r`` maximises the concave
``J_i(r) = sum_k q_k Delta_ik(r_ik)`` on the simplex.  With ``u = theta_ik / r_ik``,
``dDelta/dr = f(theta_i0 + u) - u f'(theta_i0 + u) - f(theta_i0) >= 0`` and the KKT
conditions say ``G_ik = q_k dDelta_ik/dr_ik`` is equal for every ``k`` with ``r_ik > 0``;
Singliar & Hauskrecht's fixed point is ``r_ik <- r_ik G_ik / sum_l r_il G_il``.  Its
displacement has directional derivative ``Var_r(G) / E_r[G] >= 0``, so it is an ascent
direction and :func:`lb_update_r` backtracks along it, making every update monotone.

Only positive observations need ``r``; it is stored for the nonzero entries of ``x`` only
(:class:`PositiveEntries`), never as an ``N x D x K`` tensor.

A positive observation whose leak is zero makes ``f(theta_i0) = -inf``: the Jensen bound is
then ``-inf`` for every ``q`` with some ``q_k < 1``.  The lower-bound functions therefore use
``max(theta_i0, leak_floor)`` in the positive terms (they are exact lower bounds whenever
``theta_i0 >= leak_floor``; below it they bound the model with the leak raised to the
floor).  The negative terms always use the exact ``theta_i0``.

``f`` and its derivative: :mod:`noisyor_bench.models.noisyor.conjugate`; docs/bounds.md repeats
these derivations with every intermediate step.  This module holds the bound and its exact
``q``-step; the LB-CDI/SVI solver that tightens ``r`` (``lb_update_r``, ``lb_round``,
``lb_estep``, ...) is :mod:`noisyor_bench.inference.noisyor.jj_lower_solver`.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

from noisyor_bench.models.noisyor.conjugate import f_pos
from noisyor_bench.models.noisyor.model import NoisyOR, bernoulli_kl

# Division guard for r -> 0 (Delta -> 0 there; the guard keeps gradients finite).
R_TINY = 1e-30
DEFAULT_LEAK_FLOOR = 1e-6


def f_fast(a: torch.Tensor) -> torch.Tensor:
    """``log(-expm1(-a))``: ``f`` in three operations, for the no-gradient ``r`` updates.

    For large ``a`` (``f(a) ~ -e^{-a}`` tiny) the *relative* accuracy degrades, but the
    absolute error stays below about ``1.2e-16``, far below every tolerance the updates use;
    the differentiable objectives use the accurate :func:`f_pos`.
    """
    return torch.log(-torch.expm1(-a))


def lower_bound_f(
    z: torch.Tensor, theta_i: torch.Tensor, theta0_i: torch.Tensor, r_i: torch.Tensor
) -> torch.Tensor:
    """Jensen lower bound ``sum_k r_k f(theta_0 + theta_k z_k / r_k) <= f(a)`` for one observation.

    ``z``: (..., K) binary; ``theta_i``, ``r_i``: (K,) with ``sum r = 1``; ``theta0_i`` scalar.
    Terms with ``r_k = 0`` contribute 0 (their limit) whatever ``z_k`` is.
    """
    safe_r = r_i.clamp_min(R_TINY)
    terms = r_i * f_pos(theta0_i + theta_i * z / safe_r)
    return torch.where(r_i > 0, terms, torch.zeros_like(terms)).sum(-1)


@dataclass
class PositiveEntries:
    """The nonzero entries ``(n, i)`` of a binary ``x``: the only places the lower bound needs ``r``."""

    rows: torch.Tensor  # (P,) data-point index n
    cols: torch.Tensor  # (P,) observation index i

    @classmethod
    def of(cls, x: torch.Tensor) -> PositiveEntries:
        rows, cols = torch.nonzero(x > 0, as_tuple=True)
        return cls(rows=rows, cols=cols)

    @property
    def count(self) -> int:
        return int(self.rows.shape[0])


def lb_leak(model: NoisyOR, pos: PositiveEntries, leak_floor: float) -> torch.Tensor:
    """``max(theta_i0, leak_floor)`` for every positive entry, (P,)."""
    return model.theta0[pos.cols].clamp_min(leak_floor)


def lb_gains(
    theta_rows: torch.Tensor, leak: torch.Tensor, r: torch.Tensor, fast: bool = False
) -> torch.Tensor:
    """``Delta_ik = r_ik [f(theta_i0 + theta_ik / r_ik) - f(theta_i0)]`` per positive entry, (P, K).

    ``Delta`` is what switching ``z_k`` on adds to the Jensen bound; 0 where ``r_ik = 0``.
    ``fast`` evaluates ``f`` with :func:`f_fast` (no-gradient updates only).
    """
    f = f_fast if fast else f_pos
    c = leak.unsqueeze(-1)
    u = theta_rows / r.clamp_min(R_TINY)
    gain = r * (f(c + u) - f(c))
    return torch.where(r > 0, gain, torch.zeros_like(gain))


def lb_objective_r(
    theta_rows: torch.Tensor, leak: torch.Tensor, q_rows: torch.Tensor, r: torch.Tensor, fast: bool = False
) -> torch.Tensor:
    """``E_q[LB_i] = f(theta_i0) + sum_k q_k Delta_ik`` for each positive entry, (P,)."""
    f = f_fast if fast else f_pos
    return f(leak) + (q_rows * lb_gains(theta_rows, leak, r, fast)).sum(-1)


def scatter_rows(values: torch.Tensor, rows: torch.Tensor, n: int) -> torch.Tensor:
    """Sum per-entry values (P, ...) into their data points: (n, ...)."""
    out = torch.zeros((n, *values.shape[1:]), dtype=values.dtype, device=values.device)
    return out.index_add(0, rows, values)


def inactive_sum(values: torch.Tensor, pos: PositiveEntries, n: int) -> torch.Tensor:
    """``sum_{i: x_ni=0} values[i]`` per data point, for values (D,) or (D, K): (n,) or (n, K).

    Equals ``(1 - x) @ values``, computed as column sums minus the positive entries' share:
    O(P * K) rather than O(n * D * K).
    """
    return values.sum(0) - scatter_rows(values[pos.cols], pos.rows, n)


def lb_negative_term(model: NoisyOR, pos: PositiveEntries, q: torch.Tensor) -> torch.Tensor:
    """``-sum_{i: x_i=0} (theta_i0 + theta_i . q)`` per data point (:func:`noisyor_bench.models.noisyor.elbo.negative_term`), (n,)."""
    n = q.shape[0]
    return -(inactive_sum(model.theta0, pos, n) + (q * inactive_sum(model.theta, pos, n)).sum(-1))


def lb_natural_params(
    model: NoisyOR,
    x: torch.Tensor,
    pos: PositiveEntries,
    r: torch.Tensor,
    leak_floor: float = DEFAULT_LEAK_FLOOR,
    gains: torch.Tensor | None = None,
) -> torch.Tensor:
    """``eta_nk = logit mu_k + sum_{i:x_i=1} Delta_ik - sum_{i:x_i=0} theta_ik``, (N, K).

    ``sigmoid(eta)`` is the exact maximiser of the lower-bounded ELBO over factorised ``q`` for
    fixed ``r`` (the LB analogue of eq. 11).  ``gains``: ``Delta`` at ``r`` if already known.
    """
    if gains is None:
        gains = lb_gains(model.theta[pos.cols], lb_leak(model, pos, leak_floor), r)
    return (
        torch.logit(model.mu)
        + scatter_rows(gains, pos.rows, x.shape[0])
        - inactive_sum(model.theta, pos, x.shape[0])
    )


def lb_loglik(
    model: NoisyOR,
    x: torch.Tensor,
    pos: PositiveEntries,
    r: torch.Tensor,
    leak_floor: float = DEFAULT_LEAK_FLOOR,
) -> torch.Tensor:
    """``LL-LB(r) = log sum_z exp(LB joint)`` in closed form, ``<= log p(x)``, (N,)."""
    return lb_q_step(model, x, pos, r, leak_floor)[1]


def lb_elbo(
    model: NoisyOR,
    x: torch.Tensor,
    pos: PositiveEntries,
    q: torch.Tensor,
    r: torch.Tensor,
    leak_floor: float = DEFAULT_LEAK_FLOOR,
    kl: torch.Tensor | None = None,
) -> torch.Tensor:
    """The lower-bounded ELBO ``sum_{x_i=1} E_q[LB_i] + sum_{x_i=0} E_q[-a_i] - KL(q || p)``, (N,).

    Differentiable in the model parameters and in ``q`` (``r`` is treated as a constant; at
    the tightest ``r`` its own gradient vanishes).  Pass ``kl`` to use a KL computed from
    logits (stable when ``q`` saturates).
    """
    leak = lb_leak(model, pos, leak_floor)
    per_entry = lb_objective_r(model.theta[pos.cols], leak, q[pos.rows], r)
    pos_term = scatter_rows(per_entry, pos.rows, x.shape[0])
    if kl is None:
        kl = bernoulli_kl(q, model.mu)
    return pos_term + lb_negative_term(model, pos, q) - kl


@dataclass
class MStepConstants:
    """What :func:`lb_elbo_mstep` needs from a block's fixed ``q`` and ``r`` (gathered once per
    M-step): ``q`` of each positive entry, where ``r > 0``, and a zero.

    Every block's constants are held at once, so they cost one (P, K) tensor and a mask: the
    guarded ``r`` is recomputed at each step (one exact ``clamp``), and the zero broadcasts.
    """

    q_rows: torch.Tensor
    r_positive: torch.Tensor
    zero: torch.Tensor

    @classmethod
    @torch.no_grad()
    def of(cls, pos: PositiveEntries, q: torch.Tensor, r: torch.Tensor) -> MStepConstants:
        return cls(q[pos.rows], r > 0, torch.zeros((), dtype=r.dtype, device=r.device))


def lb_elbo_mstep(
    model: NoisyOR,
    pos: PositiveEntries,
    q: torch.Tensor,
    r: torch.Tensor,
    const: MStepConstants,
    leak_floor: float = DEFAULT_LEAK_FLOOR,
) -> torch.Tensor:
    """:func:`lb_elbo` without its KL term, for ``q`` and ``r`` held fixed (the M-step), (N,).

    The KL does not depend on ``theta`` or ``theta0``, so their gradients are those of
    :func:`lb_elbo`, bit for bit: the same operations in the same order on the
    same values, with the pieces of ``q`` and ``r`` taken from ``const``
    (:meth:`MStepConstants.of`).
    """
    leak = lb_leak(model, pos, leak_floor)
    theta_rows = model.theta[pos.cols]
    f_leak = f_pos(leak)
    c = leak.unsqueeze(-1)
    u = theta_rows / r.clamp_min(R_TINY)
    gain = r * (f_pos(c + u) - f_pos(c))
    gains = torch.where(const.r_positive, gain, const.zero)
    per_entry = f_leak + (const.q_rows * gains).sum(-1)
    pos_term = scatter_rows(per_entry, pos.rows, q.shape[0])
    return pos_term + lb_negative_term(model, pos, q)


def lb_q_step(
    model: NoisyOR,
    x: torch.Tensor,
    pos: PositiveEntries,
    r: torch.Tensor,
    leak_floor: float = DEFAULT_LEAK_FLOOR,
    gains: torch.Tensor | None = None,
    fixed: LBFixed | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Exact ``q``-step for fixed ``r``: ``(q*, LL-LB(r))`` with ``q* = sigmoid(eta)``.

    ``fixed``: :meth:`LBFixed.of` this model and block (no-gradient use: same numbers, fewer passes).
    """
    n = x.shape[0]
    if fixed is None:
        eta = lb_natural_params(model, x, pos, r, leak_floor, gains)
        pos_const = scatter_rows(f_pos(lb_leak(model, pos, leak_floor)), pos.rows, n)
        inactive0 = inactive_sum(model.theta0, pos, n)
    else:
        if gains is None:
            gains = lb_gains(fixed.theta_rows, fixed.leak, r)
        eta = torch.logit(model.mu) + scatter_rows(gains, pos.rows, n) - fixed.inactive_theta
        pos_const, inactive0 = fixed.pos_const, fixed.inactive_theta0
    ll = pos_const - inactive0 + (torch.log1p(-model.mu) + F.softplus(eta)).sum(-1)
    return torch.sigmoid(eta), ll


@dataclass
class LBFixed:
    """What the lower bound needs from a *fixed* model on one block of rows, gathered once.

    While the generative model does not change (the local steps of an SVI minibatch, a
    posterior fit, the E-step rounds of an EM iteration), these depend on nothing that
    moves; the functions taking ``fixed`` compute exactly what they would compute from the
    model, without gathering it again.  No gradients flow into them.
    """

    theta_rows: torch.Tensor  # (P, K) theta of each positive entry's observation
    leak: torch.Tensor  # (P,) max(theta_i0, leak_floor)
    f_leak: torch.Tensor  # (P,) f(leak), accurate
    pos_const: torch.Tensor  # (n,) sum over the row's positive entries of f(leak)
    inactive_theta: torch.Tensor  # (n, K) sum_{x_i=0} theta_i
    inactive_theta0: torch.Tensor  # (n,) sum_{x_i=0} theta_i0

    @classmethod
    @torch.no_grad()
    def of(cls, model: NoisyOR, x: torch.Tensor, pos: PositiveEntries, leak_floor: float) -> LBFixed:
        n = x.shape[0]
        leak = lb_leak(model, pos, leak_floor)
        f_leak = f_pos(leak)
        return cls(
            theta_rows=model.theta[pos.cols],
            leak=leak,
            f_leak=f_leak,
            pos_const=scatter_rows(f_leak, pos.rows, n),
            inactive_theta=inactive_sum(model.theta, pos, n),
            inactive_theta0=inactive_sum(model.theta0, pos, n),
        )


def row_chunks(x: torch.Tensor, width: int, max_numbers: int = 2**18) -> list[slice]:
    """Consecutive row slices of ``x`` holding at most ``max_numbers`` (positive entries x ``width``) each.

    Keeps the (P, K) tensors of the lower bound bounded in memory on large data sets; a single
    row is never split.
    """
    counts = (x > 0).sum(-1).tolist()
    limit = max(1, max_numbers // max(1, width))
    out: list[slice] = []
    start, acc = 0, 0
    for n, c in enumerate(counts):
        if acc + c > limit and n > start:
            out.append(slice(start, n))
            start, acc = n, 0
        acc += c
    if start < len(counts) or not out:
        out.append(slice(start, len(counts)))
    return out


__all__ = [
    "DEFAULT_LEAK_FLOOR",
    "LBFixed",
    "MStepConstants",
    "PositiveEntries",
    "R_TINY",
    "f_fast",
    "inactive_sum",
    "lb_elbo",
    "lb_elbo_mstep",
    "lb_gains",
    "lb_leak",
    "lb_loglik",
    "lb_natural_params",
    "lb_negative_term",
    "lb_objective_r",
    "lb_q_step",
    "lower_bound_f",
    "row_chunks",
    "scatter_rows",
]
