"""The LB-CDI / SVI solver of the Jaakkola-Jordan lower bound: the ``r`` updates (Singliar &
Hauskrecht's fixed point, backtracked so every update is monotone), the alternating ``q``/``r``
rounds and the E-step.

The bound itself, its natural parameters and its exact ``q``-step are model mathematics
(:mod:`noisyor_bench.models.noisyor.jj_lower`, whose docstring derives them); this module is the
optimisation on top of them, used by :mod:`noisyor_bench.inference.noisyor.lbcdi` and
:mod:`noisyor_bench.inference.noisyor.svi`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch

from noisyor_bench.models.noisyor.conjugate import f_pos
from noisyor_bench.models.noisyor.jj_lower import (
    DEFAULT_LEAK_FLOOR,
    R_TINY,
    LBFixed,
    PositiveEntries,
    f_fast,
    lb_objective_r,
    lb_q_step,
    scatter_rows,
)
from noisyor_bench.models.noisyor.linesearch import backtrack
from noisyor_bench.models.noisyor.model import NoisyOR

_LOG2 = math.log(2.0)


@dataclass
class FusedAtR:
    """The ``r``-dependent pieces of the no-gradient ``r`` update at one ``r`` (P, K) each.

    ``u = theta/r``, ``m = 1 - e^{-(c+u)}``, ``excess = f(c+u) - f(c)`` and ``Delta = r *
    excess`` depend on ``theta``, the leak and ``r`` only -- not on ``q``.  While the model
    is fixed (an E-step, a posterior fit), the update that moves ``r`` has already evaluated
    them at its new ``r`` (its line search's full step), so the next update for a changed
    ``q`` starts from them instead of evaluating them again: same numbers, one pass fewer.
    """

    u: torch.Tensor
    m: torch.Tensor
    excess: torch.Tensor
    gain: torch.Tensor

    def deriv(self) -> torch.Tensor:
        """``dDelta/dr = excess - u f'(c + u)``, clamped at 0 (see :func:`_lb_fused`)."""
        return (self.excess - self.u * ((1.0 - self.m) / self.m)).clamp_min(0.0)


@dataclass
class HeldAtR:
    """A :class:`FusedAtR` in the form a block keeps while many blocks wait their turn: only its
    two transcendental pieces.

    ``u`` and ``gain`` are one division and one product of ``r`` away, and IEEE division and
    multiplication round the same way in every kernel, so :meth:`at` gives the numbers the
    update computed, bit for bit; ``expm1`` and ``log`` might not, so ``m`` and ``excess`` stay.
    """

    m: torch.Tensor
    excess: torch.Tensor

    def at(self, theta_rows: torch.Tensor, r: torch.Tensor) -> FusedAtR:
        """The full pieces at ``r`` (the ``r`` they were computed at) for these model rows."""
        return FusedAtR(theta_rows / r.clamp_min(R_TINY), self.m, self.excess, r * self.excess)


#: Above this many bytes of carried pieces (the model rows and the four (P, K) pieces of every
#: block), :class:`BlockCarry` keeps the held form and gathers model rows at each visit: a few
#: percent more time a round for 3 instead of 6 numbers an entry held with ``r`` (the D = K = 500
#: panels' validation and test sets and large training sets; docs/performance.md).
CARRY_FULL_BYTES = 1 << 30


class BlockCarry:
    """What each block of a fixed-model loop over many blocks carries from one visit to the
    next (an E-step's rounds, a per-datapoint fit's steps): the model's rows
    (:class:`LBFixed`) and the pieces of the ``r`` update at the block's ``r``
    (:class:`FusedAtR`) -- the same numbers as evaluating them again, one pass fewer.

    Where carrying them whole would take more than :data:`CARRY_FULL_BYTES`, the model rows
    are gathered again at each visit and the pieces are carried as :class:`HeldAtR`; both
    forms give the same numbers bit for bit.
    """

    def __init__(self, blocks: int, entries: int, width: int, itemsize: int) -> None:
        """``entries``: positive entries of all blocks; ``width``: K; ``itemsize``: bytes a number."""
        self.held = 5 * entries * width * itemsize > CARRY_FULL_BYTES
        self._fixed: list[LBFixed | None] = [None] * blocks
        self._at: list[FusedAtR | HeldAtR | None] = [None] * blocks

    def fixed(self, j: int, build: Callable[[], LBFixed]) -> LBFixed:
        """Block ``j``'s model rows: built once, or at each visit in the held form."""
        kept = self._fixed[j]
        if kept is not None:
            return kept
        fixed = build()
        if not self.held:
            self._fixed[j] = fixed
        return fixed

    def at_r(self, j: int, fixed: LBFixed, r: torch.Tensor | None) -> FusedAtR | None:
        """The pieces at block ``j``'s ``r`` (the ``r`` its last update returned), or ``None``."""
        at = self._at[j]
        if at is None or r is None:
            return None
        return at.at(fixed.theta_rows, r) if isinstance(at, HeldAtR) else at

    def keep(self, j: int, at: FusedAtR | None) -> None:
        """Carry the pieces block ``j``'s update returned to its next visit."""
        self._at[j] = HeldAtR(at.m, at.excess) if self.held and at is not None else at


def _fused_at(theta_rows: torch.Tensor, c: torch.Tensor, f_c: torch.Tensor, r: torch.Tensor) -> FusedAtR:
    """:class:`FusedAtR` at ``r`` (``c``, ``f_c``: leak and ``f(leak)`` as (P, 1))."""
    u = theta_rows / r.clamp_min(R_TINY)
    m = -torch.expm1(-(c + u))
    excess = torch.log(m) - f_c
    return FusedAtR(u, m, excess, r * excess)


def _lb_fused(
    theta_rows: torch.Tensor, c: torch.Tensor, f_c: torch.Tensor, r: torch.Tensor, want_deriv: bool
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """``Delta`` and ``dDelta/dr`` of the no-gradient ``r`` updates from one ``expm1`` pass.

    ``c``, ``f_c``: leak and ``f(leak)`` as (P, 1).  With ``a = c + u``, ``u = theta/r`` and
    ``m = 1 - e^{-a}``: ``f(a) = log m``, ``f'(a) = (1 - m)/m``.  Entries with ``r = 0`` give
    ``u ~ theta * 1e30``, ``m = 1``, hence ``Delta = 0`` and a finite derivative (their limits).
    """
    at = _fused_at(theta_rows, c, f_c, r)
    return at.gain, (at.deriv() if want_deriv else None)


def lb_r_gradient(
    theta_rows: torch.Tensor, leak: torch.Tensor, q_rows: torch.Tensor, r: torch.Tensor
) -> torch.Tensor:
    """``G_ik = q_k dDelta_ik/dr_ik = q_k [f(c + u) - u f'(c + u) - f(c)]``, ``u = theta_ik/r_ik``, (P, K).

    For ``theta_ik > 0`` the bracket rises from 0 (``r -> inf``) to ``-f(c)`` (``r -> 0``, where
    ``f(c+u) -> 0`` and ``u f'(c+u) -> 0``); for ``theta_ik = 0`` it is 0, so unconnected
    parents get no weight.
    """
    c = leak.unsqueeze(-1)
    _, deriv = _lb_fused(theta_rows, c, f_fast(c), r, want_deriv=True)
    assert deriv is not None
    return q_rows * deriv


def lb_init_r(theta_rows: torch.Tensor, q_rows: torch.Tensor) -> torch.Tensor:
    """``r_ik ∝ theta_ik q_k``: the Jensen bound is tight at the mean ``z = q`` (all arguments equal).

    Falls back to ``r ∝ theta_ik`` where every ``theta_ik q_k`` vanishes, and to uniform where
    the observation has no parent at all (then ``J_i`` does not depend on ``r``).
    """
    w = theta_rows * q_rows.clamp_min(1e-12)
    s = w.sum(-1, keepdim=True)
    w = torch.where(s > 0, w, theta_rows)
    s = w.sum(-1, keepdim=True)
    w = torch.where(s > 0, w, torch.ones_like(w))
    return w / w.sum(-1, keepdim=True)


def lb_update_r(
    theta_rows: torch.Tensor,
    leak: torch.Tensor,
    q_rows: torch.Tensor,
    r: torch.Tensor,
    max_halvings: int = 30,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """One monotone Singliar-Hauskrecht step ``r <- r G / sum(r G)`` with backtracking.

    Each positive entry takes the largest step ``2^-j`` towards the fixed-point proposal that
    increases its expected bound sufficiently (Armijo, :func:`backtrack`; ``j = 0`` is the
    plain update).  Returns ``(r, E_q[LB], Delta)`` at the new ``r`` (``Delta`` feeds the
    ``q``-step without recomputation).
    """
    return lb_update_r_warm(theta_rows, leak, q_rows, r, None, max_halvings)[:3]


def lb_update_r_warm(
    theta_rows: torch.Tensor,
    leak: torch.Tensor,
    q_rows: torch.Tensor,
    r: torch.Tensor,
    at_r: FusedAtR | None,
    max_halvings: int = 30,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, FusedAtR]:
    """:func:`lb_update_r` that also takes and returns the :class:`FusedAtR` of its ``r``.

    ``at_r``: the pieces at the incoming ``r`` for this ``theta_rows`` and ``leak`` (from the
    previous update of the same fixed model), or ``None`` to evaluate them.  Returns
    ``(r, E_q[LB], Delta, pieces at the new r)``; the numbers equal :func:`lb_update_r`'s.
    """
    c = leak.unsqueeze(-1)
    f_c = f_fast(c)
    at = at_r if at_r is not None else _fused_at(theta_rows, c, f_c, r)
    gain, deriv = at.gain, at.deriv()
    obj = f_c.squeeze(-1) + (q_rows * gain).sum(-1)
    grad = q_rows * deriv
    w = r * grad
    s = w.sum(-1, keepdim=True)
    proposal = torch.where(s > 0, w / s.clamp_min(torch.finfo(w.dtype).tiny), r)
    full: list[FusedAtR] = []

    def objective(idx: torch.Tensor | None, cand: torch.Tensor) -> torch.Tensor:
        if idx is None:
            at_cand = _fused_at(theta_rows, c, f_c, cand)
            full.append(at_cand)
            return f_c.squeeze(-1) + (q_rows * at_cand.gain).sum(-1)
        g, _ = _lb_fused(theta_rows[idx], c[idx], f_c[idx], cand, want_deriv=False)
        return f_c[idx].squeeze(-1) + (q_rows[idx] * g).sum(-1)

    slope = (grad * (proposal - r)).sum(-1)
    new_r, new_obj, rejected = backtrack(
        r, obj, proposal, slope, objective, ascent=True, max_halvings=max_halvings
    )
    at_new = full[0]
    if rejected:
        moved = (new_r != proposal).any(-1)
        at_moved = _fused_at(theta_rows[moved], c[moved], f_c[moved], new_r[moved])
        for name in ("u", "m", "excess", "gain"):
            getattr(at_new, name)[moved] = getattr(at_moved, name)
    return new_r, new_obj, at_new.gain, at_new


def lb_tighten_r(
    theta_rows: torch.Tensor,
    leak: torch.Tensor,
    q_rows: torch.Tensor,
    r: torch.Tensor,
    iters: int,
    tol: float = 0.0,
) -> torch.Tensor:
    """``iters`` monotone fixed-point steps on ``r`` for fixed ``q`` (stops early below ``tol``)."""
    return lb_tighten_r_warm(theta_rows, leak, q_rows, r, iters, None, tol)[0]


def lb_tighten_r_warm(
    theta_rows: torch.Tensor,
    leak: torch.Tensor,
    q_rows: torch.Tensor,
    r: torch.Tensor,
    iters: int,
    at_r: FusedAtR | None,
    tol: float = 0.0,
) -> tuple[torch.Tensor, FusedAtR | None]:
    """:func:`lb_tighten_r` that takes and returns the :class:`FusedAtR` of its ``r``
    (:func:`lb_update_r_warm`; ``None`` when no update ran)."""
    if iters <= 1:
        if iters == 1:
            r, _, _, at_r = lb_update_r_warm(theta_rows, leak, q_rows, r, at_r)
        return r, at_r
    obj = lb_objective_r(theta_rows, leak, q_rows, r, fast=True)
    for _ in range(iters):
        r, new_obj, _, at_r = lb_update_r_warm(theta_rows, leak, q_rows, r, at_r)
        done = float((new_obj - obj).max()) <= tol if new_obj.numel() else True
        obj = new_obj
        if done:
            break
    return r, at_r


@dataclass
class LBState:
    """E-step state for a batch: ``q`` (N, K), ``r`` (P, K) over ``pos``, ``ll_lb`` (N,)."""

    q: torch.Tensor
    r: torch.Tensor
    ll_lb: torch.Tensor
    rounds: int


def _log1mexp_values(a: torch.Tensor) -> torch.Tensor:
    """:func:`~noisyor_bench.models.noisyor.model.log1mexp`'s values, without its safe-input
    guards (they only keep gradients finite): for no-gradient use, two passes fewer."""
    small = a <= _LOG2
    return torch.where(small, torch.log(-torch.expm1(-a)), torch.log1p(-torch.exp(-a)))


def lb_elbo_fixed(
    fixed: LBFixed,
    pos: PositiveEntries,
    q: torch.Tensor,
    r: torch.Tensor,
    kl: torch.Tensor,
    q_rows: torch.Tensor | None = None,
) -> torch.Tensor:
    """:func:`lb_elbo` of a fixed model (:class:`LBFixed`), differentiable in ``q`` only: (N,).

    The same numbers as ``lb_elbo(model, x, pos, q, r, leak_floor, kl)`` (``kl`` is required;
    ``q_rows``: ``q[pos.rows]`` if already gathered).
    """
    with torch.no_grad():
        c = fixed.leak.unsqueeze(-1)
        u = fixed.theta_rows / r.clamp_min(R_TINY)
        gain = r * (_log1mexp_values(c + u) - f_pos(c))
        gains = torch.where(r > 0, gain, torch.zeros_like(gain))
    if q_rows is None:
        q_rows = q[pos.rows]
    per_entry = fixed.f_leak + (q_rows * gains).sum(-1)
    pos_term = scatter_rows(per_entry, pos.rows, q.shape[0])
    negative = -(fixed.inactive_theta0 + (q * fixed.inactive_theta).sum(-1))
    return pos_term + negative - kl


def lb_round(
    model: NoisyOR,
    x: torch.Tensor,
    pos: PositiveEntries,
    q: torch.Tensor,
    r: torch.Tensor,
    r_iters: int = 1,
    leak_floor: float = DEFAULT_LEAK_FLOOR,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """One E-step round: ``r_iters`` monotone ``r``-steps for the current ``q``, then the exact ``q``-step.

    Returns ``(q, r, LL-LB)``.  If ``q`` is the ``q``-step optimum for the incoming ``r``, the
    returned LL-LB is >= the incoming one (coordinate ascent on the lower-bounded ELBO).
    """
    return lb_round_warm(model, x, pos, q, r, r_iters, leak_floor)[:3]


def lb_round_warm(
    model: NoisyOR,
    x: torch.Tensor,
    pos: PositiveEntries,
    q: torch.Tensor,
    r: torch.Tensor,
    r_iters: int = 1,
    leak_floor: float = DEFAULT_LEAK_FLOOR,
    at_r: FusedAtR | None = None,
    fixed: LBFixed | None = None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, FusedAtR | None]:
    """:func:`lb_round` for a model that stays fixed over several rounds: takes and returns the
    :class:`FusedAtR` of ``r`` and uses ``fixed`` (:meth:`LBFixed.of` this model and block)
    instead of gathering the model's rows again.  Same numbers as :func:`lb_round`."""
    if fixed is None:
        fixed = LBFixed.of(model, x, pos, leak_floor)
    q_rows = q[pos.rows]
    gains = None
    for _ in range(r_iters):
        r, _, gains, at_r = lb_update_r_warm(fixed.theta_rows, fixed.leak, q_rows, r, at_r)
    q, ll = lb_q_step(model, x, pos, r, leak_floor, gains, fixed)
    return q, r, ll, at_r


def lb_start(
    model: NoisyOR,
    x: torch.Tensor,
    pos: PositiveEntries,
    r: torch.Tensor | None = None,
    leak_floor: float = DEFAULT_LEAK_FLOOR,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Initial E-step state ``(q, r, LL-LB)``: ``r ∝ theta mu`` (tight at the prior mean) unless given."""
    if r is None:
        theta_rows = model.theta[pos.cols]
        r = lb_init_r(theta_rows, model.mu.expand_as(theta_rows))
    q, ll = lb_q_step(model, x, pos, r, leak_floor)
    return q, r, ll


def lb_estep(
    model: NoisyOR,
    x: torch.Tensor,
    pos: PositiveEntries,
    r: torch.Tensor | None,
    max_rounds: int,
    r_iters: int = 1,
    tol: float = 1e-9,
    leak_floor: float = DEFAULT_LEAK_FLOOR,
    callback: Callable[[LBState], None] | None = None,
) -> LBState:
    """Variational E-step of LB-CDI: alternate ``r_iters`` monotone ``r``-steps and the exact ``q``-step.

    ``LL-LB`` (the lower-bounded ELBO at the optimal ``q``) never decreases: the ``r``-step
    raises ``E_q[LB]`` for fixed ``q`` and the ``q``-step is an exact maximisation.  ``r=None``
    starts from ``r ∝ theta mu``.  Stops when no data point's LL-LB rose by more than ``tol``
    in a round; ``callback`` sees round 0 and every round.
    """
    q, r, ll = lb_start(model, x, pos, r, leak_floor)
    state = LBState(q=q, r=r, ll_lb=ll, rounds=0)
    if callback is not None:
        callback(state)
    for t in range(1, max_rounds + 1):
        q, r, new_ll = lb_round(model, x, pos, q, r, r_iters, leak_floor)
        gain = new_ll - ll
        ll = new_ll
        state = LBState(q=q, r=r, ll_lb=ll, rounds=t)
        if callback is not None:
            callback(state)
        if not gain.numel() or float(gain.max()) <= tol:
            break
    return state
