"""``torch.optim.Adam`` without the import of ``torch._dynamo`` it makes on first use.

Every training job of the workflow is a fresh process, and torch 2.13's optimisers import the
compiler front-end ``torch._dynamo`` the first time they are used: ``Optimizer.step`` to insert a
graph break for ``torch.compile``, and the methods decorated with ``torch._disable_dynamo``
(``add_param_group`` in the constructor, ``zero_grad``, ``state_dict``, ``load_state_dict``) to
build their "not under the compiler" wrapper.  That import alone (sympy, the distributed and FSDP
modules) costs over a second of CPU, a third of a short job; the
product never compiles, so it buys nothing.

:class:`Adam` is ``torch.optim.Adam`` with the same constructor, update, state and
``state_dict`` format, and ``step`` run as torch's own body under ``torch.no_grad()`` (what
the decorator does for a non-differentiable optimiser, minus the graph break).  Before the first
optimiser is built, :func:`skip_dynamo_wrappers` tells each ``torch._disable_dynamo`` wrapper of
``torch.optim.Optimizer`` that its "disabled" version is the plain function (the cache the wrapper
fills on first use), so none imports the compiler; it does nothing once ``torch._dynamo`` is
imported (then the real wrappers are as cheap).  ``tests/inference/test_adam.py`` checks that the
updates are bit-identical to ``torch.optim.Adam`` and that a training step leaves ``torch._dynamo``
unimported.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import torch

_TORCH_STEP: Callable[..., Any] = getattr(torch.optim.Adam.step, "__wrapped__", torch.optim.Adam.step)
_patched = False


def skip_dynamo_wrappers() -> None:
    """Make ``torch.optim.Optimizer``'s ``torch._disable_dynamo`` wrappers call their function
    directly, as they do after their first call when nothing is being compiled (idempotent)."""
    global _patched
    if _patched or "torch._dynamo" in sys.modules:
        return
    import torch._compile as torch_compile

    wrapper_code = torch_compile._disable_dynamo(lambda: None).__code__
    for name in dir(torch.optim.Optimizer):
        method = getattr(torch.optim.Optimizer, name, None)
        function = getattr(method, "__wrapped__", None)
        if function is not None and getattr(method, "__code__", None) is wrapper_code:
            function.__dynamo_disable = function  # the wrapper's cache of its disabled version
    _patched = True


class Adam(torch.optim.Adam):
    """``torch.optim.Adam`` (same arguments, update and state) that never imports ``torch._dynamo``."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        skip_dynamo_wrappers()
        super().__init__(*args, **kwargs)

    def step(self, closure: Callable[[], float] | None = None) -> float | None:  # type: ignore[override]
        """torch's update, under ``no_grad`` (Adam is not differentiable here)."""
        if self.defaults.get("differentiable"):
            raise ValueError("noisyor_bench's Adam does not support differentiable=True")
        with torch.no_grad():
            return _TORCH_STEP(self, closure)


__all__ = ["Adam", "skip_dynamo_wrappers"]
