"""The cached / warm-started lower-bound pieces (SVI/LB-CDI speed) give exactly the
numbers of the plain functions they replace inside a fixed-model loop."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from noisyor_bench.inference.noisyor import jj_lower_solver as solver
from noisyor_bench.inference.noisyor.jj_lower_solver import (
    HeldAtR,
    lb_elbo_fixed,
    lb_init_r,
    lb_round,
    lb_round_warm,
    lb_start,
    lb_tighten_r,
    lb_tighten_r_warm,
    lb_update_r,
    lb_update_r_warm,
)
from noisyor_bench.models.noisyor.elbo import bernoulli_kl_from_logits
from noisyor_bench.models.noisyor.jj_lower import (
    LBFixed,
    MStepConstants,
    PositiveEntries,
    lb_elbo,
    lb_elbo_mstep,
    lb_q_step,
)
from noisyor_bench.models.noisyor.model import NoisyOR, bernoulli_kl


def _problem(seed: int = 0, n: int = 40, d: int = 30, k: int = 6) -> tuple[NoisyOR, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    theta = torch.rand(d, k, generator=g, dtype=torch.float64) * 2.0
    theta[torch.rand(d, k, generator=g) < 0.4] = 0.0  # unconnected parents: r = 0 entries
    theta0 = torch.rand(d, generator=g, dtype=torch.float64) * 0.05
    theta0[0] = 0.0  # a zero leak: the leak floor applies
    mu = torch.rand(k, generator=g, dtype=torch.float64) * 0.4 + 0.05
    x = (torch.rand(n, d, generator=g) < 0.3).to(torch.float64)
    return NoisyOR(theta, theta0, mu), x


def test_warm_r_updates_equal_cold_ones_bit_for_bit() -> None:
    model, x = _problem()
    pos = PositiveEntries.of(x)
    fixed = LBFixed.of(model, x, pos, 1e-6)
    g = torch.Generator().manual_seed(1)
    r_cold = r_warm = lb_init_r(fixed.theta_rows, model.mu.expand_as(fixed.theta_rows))
    at_r = None
    for _ in range(12):  # q changes between updates, as in SVI's local steps
        q_rows = torch.rand(pos.count, model.K, generator=g, dtype=torch.float64)[:, :] * 0.98 + 0.01
        r_cold, obj_cold, gain_cold = lb_update_r(fixed.theta_rows, fixed.leak, q_rows, r_cold)
        r_warm, obj_warm, gain_warm, at_r = lb_update_r_warm(
            fixed.theta_rows, fixed.leak, q_rows, r_warm, at_r
        )
        assert torch.equal(r_cold, r_warm)
        assert torch.equal(obj_cold, obj_warm)
        assert torch.equal(gain_cold, gain_warm)
    q_rows = torch.full((pos.count, model.K), 0.3, dtype=torch.float64)
    r3 = lb_tighten_r(fixed.theta_rows, fixed.leak, q_rows, r_cold, 3)
    r3_warm, _ = lb_tighten_r_warm(fixed.theta_rows, fixed.leak, q_rows, r_warm, 3, at_r)
    assert torch.equal(r3, r3_warm)


def test_warm_rounds_equal_plain_rounds_bit_for_bit() -> None:
    model, x = _problem(seed=2)
    pos = PositiveEntries.of(x)
    fixed = LBFixed.of(model, x, pos, 1e-6)
    q, r, ll = lb_start(model, x, pos)
    qw, rw, llw, at_r = q, r, ll, None
    for _ in range(6):
        q, r, ll = lb_round(model, x, pos, q, r, r_iters=3)
        qw, rw, llw, at_r = lb_round_warm(model, x, pos, qw, rw, 3, 1e-6, at_r, fixed)
        assert torch.equal(q, qw) and torch.equal(r, rw) and torch.equal(ll, llw)
    # The q-step with the cached model rows, also without precomputed gains.
    q1, ll1 = lb_q_step(model, x, pos, r)
    q2, ll2 = lb_q_step(model, x, pos, r, fixed=fixed)
    assert torch.equal(q1, q2) and torch.equal(ll1, ll2)


def test_held_pieces_give_the_warm_rounds_bit_for_bit(monkeypatch: pytest.MonkeyPatch) -> None:
    """Keeping only m and excess between rounds (u and gain rebuilt from r) changes no number,
    also where the line search rejected the full step for some entries."""
    rejected = []
    plain_backtrack = solver.backtrack

    def counting_backtrack(*args: Any, **kwargs: Any) -> Any:
        out = plain_backtrack(*args, **kwargs)
        rejected.append(bool(out[2]))
        return out

    monkeypatch.setattr(solver, "backtrack", counting_backtrack, raising=True)
    for seed in range(6):
        model, x = _problem(seed=seed, k=8)
        model = NoisyOR(model.theta * 4.0, model.theta0, model.mu)  # steep: line searches reject
        pos = PositiveEntries.of(x)
        q, r, ll = lb_start(model, x, pos)
        qh, rh, llh, at_r, held = q, r, ll, None, None
        for _ in range(8):
            q, r, ll, at_r = lb_round_warm(model, x, pos, q, r, 2, 1e-6, at_r)
            fixed = LBFixed.of(model, x, pos, 1e-6)
            qh, rh, llh, at_h = lb_round_warm(
                model, x, pos, qh, rh, 2, 1e-6, None if held is None else held.at(fixed.theta_rows, rh), fixed
            )
            assert at_h is not None
            held = HeldAtR(at_h.m, at_h.excess)
            assert torch.equal(q, qh) and torch.equal(r, rh) and torch.equal(ll, llh)
            rebuilt = None if held is None else held.at(fixed.theta_rows, rh)
            assert at_r is not None and rebuilt is not None
            for name in ("u", "m", "excess", "gain"):
                assert torch.equal(getattr(at_r, name), getattr(rebuilt, name)), name
    assert any(rejected)  # the patched entries of a rejected full step are covered


def test_fixed_model_elbo_equals_lb_elbo_in_value_and_logit_gradient() -> None:
    model, x = _problem(seed=3)
    pos = PositiveEntries.of(x)
    fixed = LBFixed.of(model, x, pos, 1e-6)
    logits = torch.randn(x.shape[0], model.K, generator=torch.Generator().manual_seed(4), dtype=torch.float64)
    q0 = torch.sigmoid(logits)
    r = lb_tighten_r(fixed.theta_rows, fixed.leak, q0[pos.rows], lb_init_r(fixed.theta_rows, q0[pos.rows]), 2)
    grads = []
    values = []
    for use_fixed in (False, True):
        lg = logits.clone().requires_grad_(True)
        q = torch.sigmoid(lg)
        kl = bernoulli_kl_from_logits(lg, model.mu)
        obj = lb_elbo_fixed(fixed, pos, q, r, kl) if use_fixed else lb_elbo(model, x, pos, q, r, 1e-6, kl=kl)
        (grad,) = torch.autograd.grad(obj.sum(), lg)
        values.append(obj.detach())
        grads.append(grad)
    assert torch.equal(values[0], values[1])
    assert torch.equal(grads[0], grads[1])


def test_mstep_objective_gives_lb_elbo_gradients_bit_for_bit() -> None:
    """The M-step objective leaves out the KL (no theta in it): the theta/theta0 gradients of
    lb_elbo are reproduced exactly, and its value is lb_elbo + KL."""
    model, x = _problem(seed=5)
    pos = PositiveEntries.of(x)
    q, r, _ = lb_start(model, x, pos)
    for _ in range(3):
        q, r, _ = lb_round(model, x, pos, q, r, r_iters=2)
    const = MStepConstants.of(pos, q, r)
    grads = []
    for use_mstep in (False, True):
        theta = model.theta.clone().requires_grad_(True)
        theta0 = model.theta0.clone().requires_grad_(True)
        live = NoisyOR(theta, theta0, model.mu)
        obj = lb_elbo_mstep(live, pos, q, r, const) if use_mstep else lb_elbo(live, x, pos, q, r)
        (-obj.sum() / x.shape[0]).backward()
        grads.append((theta.grad, theta0.grad, obj.detach()))
    assert torch.equal(grads[0][0], grads[1][0])
    assert torch.equal(grads[0][1], grads[1][1])
    kl = bernoulli_kl(q, model.mu)
    assert torch.allclose(grads[1][2] - kl, grads[0][2], rtol=0, atol=1e-12)
