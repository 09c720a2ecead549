"""Row-wise Armijo backtracking: the monotone step of both bounds' fixed-point iterations
(:func:`~noisyor_bench.models.noisyor.jj_upper.ub_optimize`, :func:`~noisyor_bench.models.noisyor.jj_lower.lb_update_r`)."""

from __future__ import annotations

from collections.abc import Callable

import torch

# Sufficient-decrease constant of the backtracking line searches (see backtrack).
ARMIJO = 0.25


def backtrack(
    x0: torch.Tensor,
    obj0: torch.Tensor,
    proposal: torch.Tensor,
    slope: torch.Tensor,
    objective: Callable[[torch.Tensor | None, torch.Tensor], torch.Tensor],
    ascent: bool,
    max_halvings: int,
    armijo: float = ARMIJO,
) -> tuple[torch.Tensor, torch.Tensor, int]:
    """Row-wise backtracking along ``d = proposal - x0`` with the Armijo condition.

    Each row takes the largest step ``s = 2^-j`` (``j <= max_halvings``) whose objective
    improves on ``obj0`` by at least ``armijo * s * |slope|`` (``slope``: the directional
    derivative along ``d``, per row), else stays at ``x0``.  With ``armijo = 1/4`` the
    accepted step on a quadratic is the full step or lies in ``(3/4, 3/2]`` times the exact
    line minimiser, so a tiny improvement really means a small gradient (a bare "no worse"
    test would accept steps near twice the minimiser, which zig-zag with almost no progress
    and stop convergence tests early).  Only still-rejected rows are re-evaluated;
    ``objective(idx, cand)`` evaluates rows ``idx`` (``None`` = all).  There is no slack for
    round-off: a row whose computed objective would get worse stays where it is, so the
    computed objective is monotone exactly; halving stops once the predicted change drops
    below the objective's round-off.  Returns the new rows, their objective and the number of rows
    whose full step was rejected.
    """
    sign = 1.0 if ascent else -1.0
    # An infinite slope (e.g. g'(0) = inf at psi_i = 0) only asks for plain improvement.
    pred = (sign * slope).clamp_min(0.0)
    pred = torch.where(torch.isfinite(pred), pred, torch.zeros_like(pred))
    gain_rate = armijo * pred

    def ok(new: torch.Tensor, old: torch.Tensor, rate: torch.Tensor, step: float) -> torch.Tensor:
        return sign * (new - old) >= step * rate

    direction = proposal - x0
    cand_obj = objective(None, proposal)
    accept = ok(cand_obj, obj0, gain_rate, 1.0)
    shape = (-1,) + (1,) * (x0.ndim - 1)
    new_x = torch.where(accept.view(shape), proposal, x0)
    new_obj = torch.where(accept, cand_obj, obj0)
    idx = torch.nonzero(~accept, as_tuple=True)[0]
    rejected = int(idx.numel())
    # A row whose predicted change step * |slope| is below the round-off of its objective
    # cannot show a measurable improvement any more: it keeps x0 without further halvings.
    noise = 8 * torch.finfo(obj0.dtype).eps * obj0.abs()
    pred = torch.where(torch.isfinite(slope), pred, torch.full_like(pred, torch.inf))
    step = 0.5
    for _ in range(max_halvings):
        idx = idx[step * pred[idx] > noise[idx]]
        if idx.numel() == 0:
            break
        cand = x0[idx] + step * direction[idx]
        c_obj = objective(idx, cand)
        good = ok(c_obj, obj0[idx], gain_rate[idx], step)
        new_x[idx[good]] = cand[good]
        new_obj[idx[good]] = c_obj[good]
        idx = idx[~good]
        step *= 0.5
    return new_x, new_obj, rejected


__all__ = ["ARMIJO", "backtrack"]
