"""The project's Adam: the very updates of ``torch.optim.Adam``, and no import of ``torch._dynamo``."""

from __future__ import annotations

import copy
import subprocess
import sys
import textwrap

import pytest
import torch

from noisyor_bench.inference.adam import Adam


def _params(seed: int) -> list[torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return [
        torch.randn(7, 3, generator=g, dtype=torch.float64).requires_grad_(),
        torch.randn(4, generator=g).requires_grad_(),
    ]


def _run(optimizer_class, fused: bool, steps: int = 12) -> tuple[list[torch.Tensor], dict]:
    first, second = _params(3)
    opt = optimizer_class(
        [{"params": [first]}, {"params": [second], "lr": 0.03, "weight_decay": 0.01}],
        lr=0.1,
        betas=(0.99, 0.999),
        fused=fused,
    )
    for step in range(steps):
        loss = (first**3).sum() + torch.sin(second).sum() * (step + 1)
        opt.zero_grad(set_to_none=step % 2 == 0)
        loss.backward()
        if step == 5:  # a schedule changes a group's rate between steps (APE's VI does)
            opt.param_groups[0]["lr"] = 0.05
        opt.step()
    return [first.detach().clone(), second.detach().clone()], opt.state_dict()


@pytest.mark.parametrize("fused", [False, True], ids=["single-tensor", "fused"])
def test_updates_and_state_are_torchs_bit_for_bit(fused):
    ours, our_state = _run(Adam, fused)
    theirs, their_state = _run(torch.optim.Adam, fused)
    for a, b in zip(ours, theirs, strict=True):
        assert torch.equal(a, b)
    assert our_state["param_groups"] == their_state["param_groups"]
    for key, state in their_state["state"].items():
        for name, value in state.items():
            assert torch.equal(our_state["state"][key][name], value), (key, name)


def test_a_state_saved_by_one_loads_into_the_other_and_continues_alike():
    """Checkpoints keep torch's format: a run resumed with either class continues identically."""
    params, state = _run(Adam, True, steps=4)
    continued = []
    for cls in (Adam, torch.optim.Adam):
        p = [t.clone().requires_grad_() for t in params]
        opt = cls(
            [{"params": [p[0]]}, {"params": [p[1]], "lr": 0.03, "weight_decay": 0.01}], lr=0.1, fused=True
        )
        opt.load_state_dict(copy.deepcopy(state))  # loading shares the step tensors
        (p[0] ** 2).sum().add(p[1].sum()).backward()
        opt.step()
        continued.append([t.detach() for t in p])
    for a, b in zip(*continued, strict=True):
        assert torch.equal(a, b)


def test_a_closure_is_evaluated_with_gradients_and_its_loss_returned():
    p = torch.tensor([1.0, -2.0], requires_grad=True)
    opt = Adam([p], lr=0.1)

    def closure() -> torch.Tensor:
        opt.zero_grad()
        loss = (p**2).sum()
        loss.backward()
        return loss

    assert float(opt.step(closure).detach()) == pytest.approx(5.0)
    assert p.grad is not None and torch.all(p.detach().abs() < torch.tensor([1.0, 2.0]))


def test_a_differentiable_optimiser_is_refused_by_name():
    opt = Adam([torch.zeros(2, requires_grad=True)], differentiable=True)
    with pytest.raises(ValueError, match="differentiable"):
        opt.step()


def test_training_with_it_never_imports_the_compiler():
    """In a fresh interpreter (this one may have imported it already): construction, steps,
    zero_grad, a state_dict round trip; torch.optim.Adam itself would import torch._dynamo."""
    code = textwrap.dedent(
        """
        import sys, torch
        from noisyor_bench.inference.adam import Adam
        p = torch.zeros(3, requires_grad=True)
        for fused in (True, False):
            opt = Adam([p], lr=0.1, fused=fused)
            for _ in range(3):
                (p - 1.0).pow(2).sum().backward()
                opt.step()
                opt.zero_grad()
            opt.load_state_dict(opt.state_dict())
        print("torch._dynamo" in sys.modules)
        torch.optim.Adam([p]).step()
        print("torch._dynamo" in sys.modules)
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "True"]
