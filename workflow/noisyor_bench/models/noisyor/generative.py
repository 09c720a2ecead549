"""Noisy-OR parameters as torch modules: learnable (learning mode) or fixed (inference mode).

The methods that fit a generative model (AVI, ACP, SVI, LB-CDI in *learning* mode, paper
Sections 4.3-4.5) need the noisy-OR parameters of eqs. 3-6 as unconstrained optimisation
variables; the *inference* experiments (Section 4.2) hold them at the ground truth.  Both
cases are served by one tiny interface, :class:`GenerativeModule`:

* ``module.model()`` -> :class:`~noisyor_bench.models.noisyor.model.NoisyOR` view.  For the learnable module
  it is a differentiable function of the raw parameters, so a loss computed from it (and
  from anything else computed from the *same* view, e.g. ACP's posterior of eq. 11)
  back-propagates into them.  Call it once per optimisation step and reuse the view.
* ``module.prior_logits()`` -> ``logit(mu)`` evaluated without forming ``mu`` first (no
  round-off when ``mu`` saturates).
* ``module.learnable`` says whether the module has parameters to optimise.

Parameterisation of the learnable module (all constraints hold by construction):

    theta  = softplus(raw_theta)   >= 0     (D, K)
    theta0 = softplus(raw_theta0)  >= 0     (D,)
    mu     = sigmoid(raw_mu)       in (0,1) (K,)

Use :func:`make_generative` to build the right module for a mode.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from noisyor_bench.infra.errors import ConfigError
from noisyor_bench.models.noisyor.model import NoisyOR

# Floor for rates when a given model is inverted through softplus (softplus^-1(0) = -inf).
_MIN_RATE = 1e-6

# The default init's upper rate: 0.02 where it was measured (SYN-PATTERN, D = 64), where an
# active cause costs about D * 0.02 / 2 = 0.64 nats in the negative term of eq. 16; for larger D
# the bound shrinks so that this cost stays 0.64 nats (see GenerativeInit).
REFERENCE_D = 64
REFERENCE_THETA_HIGH = 0.02
ACTIVE_CAUSE_BURDEN = REFERENCE_D * REFERENCE_THETA_HIGH / 2.0  # 0.64 nats


def default_theta_high(d: int) -> float:
    """``min(0.02, 2 * 0.64 / D)``: the default init's upper rate for ``D`` observed variables."""
    return min(REFERENCE_THETA_HIGH, 2.0 * ACTIVE_CAUSE_BURDEN / d)


def inverse_softplus(y: torch.Tensor) -> torch.Tensor:
    """``x`` with ``softplus(x) = y`` for ``y > 0``: ``y + log(-expm1(-y))`` (stable for all y)."""
    return y + torch.log(-torch.expm1(-y))


@dataclass(frozen=True)
class GenerativeInit:
    """Initial values of learnable noisy-OR parameters (learning mode).

    Defaults and why:

    * ``theta_ik ~ Uniform(theta_low, theta_high)`` with (0, 0.02) at D <= 64 and, by
      default (``theta_high = None``), ``theta_high = min(0.02, 1.28 / D)``
      (:func:`default_theta_high`): every cause starts
      (almost) disconnected, with independent random strengths that break the symmetry
      between the K causes (identical starts would receive identical gradients and learn the
      same pattern).  Through the softplus, Adam moves small rates on a log scale, so a cause
      "grows" onto the pixels it explains one by one; starting from strong random
      connections instead makes causes that already explain a bit of everything, which tends
      to end in merged patterns.  Measured on an 8x8 bars problem (K=8, 1000 training
      points, lr 1e-2, <= 300 epochs, AVI and ACP, seeds 0-3; a pattern counts as recovered
      at cosine > 0.95 after matching): (0.05, 0.5) recovered 4-8 of 8 (mean 5.8), (0, 0.02)
      6-8 (mean 7.5; 8 of 8 in 6 of 8 runs); (0, 0.1) on seeds 0-1 4-8.
      Re-measured with the generative learning rate of 3e-2 on SYN-PATTERN
      (``benchmarks/learning_curves.py``, ``docs/convergence.md``): (0, 0.1) recovered 2-6 of
      8 against 3-7 for (0, 0.02), with worse test NELBO -- the larger start does not help.
      The small start works only with a generative learning rate well above the encoder's:
      the learned rates grow at most like ``theta_high * e^(gen_lr * steps)``, hence
      ``AmortizedHParams.gen_lr = 1e-2``.
    * Why the upper rate shrinks with D: an active cause costs about ``sum_i theta_ik =
      D * theta_high / 2`` nats on its negative pixels; 0.64 at D = 64, but 5 at D = 500 and
      6 at D = 784, so the first steps switch every cause off and the learned model collapses
      towards independent pixels (the text corpora showed it first, ``experiments.corpus_hparams``).
      Keeping the cost at 0.64 nats (``docs/convergence.md``): SYN-RANDOM-7,
      N_train = 1,000, AVI, gen_lr 1e-2: test NELBO 163.1 with (0, 0.02) against 156.0 with
      (0, 0.00256) (independent pixels: 154.3).
    * ``theta0_i = 0.05`` (leak probability 4.9%): the leak only has to explain the rare
      unexplained positive observations; a small start leaves the explaining to the causes
      (0.01 behaved the same in the measurement above).
    * ``mu_k = 0.2``: sparse activity, of the order of the priors of the paper's synthetic
      data (0.125 for SYN-PATTERN, 0.2 for MULTI-MNIST); ``mu`` is learned anyway (0.1 and
      0.5 behaved the same or worse above).
    """

    theta_low: float = 0.0
    theta_high: float | None = None  # None: default_theta_high(D)
    theta0: float = 0.05
    mu: float = 0.2

    def __post_init__(self) -> None:
        high = self.theta_high
        if not (0.0 <= self.theta_low < math.inf) or (
            high is not None and not self.theta_low <= high < math.inf
        ):
            raise ConfigError(
                f"generative init needs 0 <= theta_low <= theta_high < inf; got "
                f"theta_low={self.theta_low}, theta_high={high}"
            )
        if not (0.0 < self.theta0 < math.inf):
            raise ConfigError(f"generative init theta0 must be > 0; got {self.theta0}")
        if not (0.0 < self.mu < 1.0):
            raise ConfigError(f"generative init mu must lie in (0, 1); got {self.mu}")

    def high(self, d: int) -> float:
        """The upper initial rate for ``d`` observed variables (``theta_high`` or the default rule)."""
        high = default_theta_high(d) if self.theta_high is None else self.theta_high
        if self.theta_low > high:
            raise ConfigError(
                f"generative init needs theta_low <= theta_high; got theta_low={self.theta_low} and "
                f"theta_high={high} (the default for D={d}: min(0.02, 1.28 / D))"
            )
        return high


class GenerativeModule(nn.Module):
    """Common interface of :class:`LearnableNoisyOR` and :class:`FixedNoisyOR`."""

    learnable: bool = False

    def model(self) -> NoisyOR:  # pragma: no cover - abstract
        raise NotImplementedError

    def prior_logits(self) -> torch.Tensor:  # pragma: no cover - abstract
        """``log(mu / (1 - mu))``, shape (K,)."""
        raise NotImplementedError

    @property
    def D(self) -> int:  # noqa: N802 - the paper's symbol
        raise NotImplementedError

    @property
    def K(self) -> int:  # noqa: N802
        raise NotImplementedError


class LearnableNoisyOR(GenerativeModule):
    """Noisy-OR parameters learned by gradient descent (softplus / sigmoid parameterisation)."""

    learnable = True

    def __init__(
        self,
        d: int,
        k: int,
        generator: torch.Generator | None = None,
        init: GenerativeInit = GenerativeInit(),
        dtype: torch.dtype = torch.float32,
        device: torch.device | str = "cpu",
    ) -> None:
        """Random initialisation per :class:`GenerativeInit`.

        ``generator`` must be a CPU generator: values are drawn on the CPU in float64 and then
        moved, so the initial parameters do not depend on the device.
        """
        super().__init__()
        if d < 1 or k < 1:
            raise ConfigError(f"noisy-OR needs D >= 1 and K >= 1; got D={d}, K={k}")
        u = torch.rand((d, k), generator=generator, dtype=torch.float64)
        theta = init.theta_low + (init.high(d) - init.theta_low) * u
        theta0 = torch.full((d,), init.theta0, dtype=torch.float64)
        mu = torch.full((k,), init.mu, dtype=torch.float64)
        self._set_raw(theta, theta0, mu, dtype, device)

    def _set_raw(
        self,
        theta: torch.Tensor,
        theta0: torch.Tensor,
        mu: torch.Tensor,
        dtype: torch.dtype,
        device: torch.device | str,
    ) -> None:
        def param(t: torch.Tensor) -> nn.Parameter:
            return nn.Parameter(t.to(device=device, dtype=dtype))

        self.raw_theta = param(inverse_softplus(theta.clamp_min(_MIN_RATE)))
        self.raw_theta0 = param(inverse_softplus(theta0.clamp_min(_MIN_RATE)))
        self.raw_mu = param(torch.logit(mu))

    @classmethod
    def from_model(
        cls, model: NoisyOR, dtype: torch.dtype = torch.float32, device: torch.device | str = "cpu"
    ) -> LearnableNoisyOR:
        """Start learning from given parameter values (rates are floored at 1e-6 so the
        inverse softplus stays finite)."""
        module = cls.__new__(cls)
        nn.Module.__init__(module)
        m = model.to(dtype=torch.float64, device="cpu").detach()
        mu = m.mu.clamp(1e-12, 1 - 1e-12)
        module._set_raw(m.theta, m.theta0, mu, dtype, device)
        return module

    def model(self) -> NoisyOR:
        theta, theta0 = F.softplus(self.raw_theta), F.softplus(self.raw_theta0)
        return NoisyOR(theta=theta, theta0=theta0, mu=torch.sigmoid(self.raw_mu))

    def prior_logits(self) -> torch.Tensor:
        return self.raw_mu  # logit(sigmoid(r)) = r exactly

    @property
    def D(self) -> int:  # noqa: N802
        return int(self.raw_theta.shape[0])

    @property
    def K(self) -> int:  # noqa: N802
        return int(self.raw_theta.shape[1])


class FixedNoisyOR(GenerativeModule):
    """A given noisy-OR (e.g. the ground truth) held as buffers: no parameters, no gradients.

    Buffers travel with ``.to(device)`` and appear in ``state_dict`` like parameters do, so
    code treating both variants alike keeps working.
    """

    learnable = False

    def __init__(
        self, model: NoisyOR, dtype: torch.dtype = torch.float32, device: torch.device | str = "cpu"
    ) -> None:
        super().__init__()
        m = model.detach().to(dtype=dtype, device=device)
        self.register_buffer("theta", m.theta.clone())
        self.register_buffer("theta0", m.theta0.clone())
        self.register_buffer("mu", m.mu.clone())
        # logit(mu) from the float64 values, then cast: exact up to the final rounding.
        mu64 = model.mu.detach().to(dtype=torch.float64)
        self.register_buffer("_prior_logits", torch.logit(mu64).to(dtype=dtype, device=device))

    def model(self) -> NoisyOR:
        return NoisyOR(theta=self.theta, theta0=self.theta0, mu=self.mu)

    def prior_logits(self) -> torch.Tensor:
        return self._prior_logits

    @property
    def D(self) -> int:  # noqa: N802
        return int(self.theta.shape[0])

    @property
    def K(self) -> int:  # noqa: N802
        return int(self.theta.shape[1])


def make_generative(
    mode: str,
    model: NoisyOR,
    generator: torch.Generator | None = None,
    init: GenerativeInit = GenerativeInit(),
    dtype: torch.dtype = torch.float32,
    device: torch.device | str = "cpu",
) -> GenerativeModule:
    """The generative module for a method's ``mode``.

    ``"inference"``: :class:`FixedNoisyOR` at ``model`` (the ground truth).  ``"learning"``:
    :class:`LearnableNoisyOR` with ``model``'s shape (D, K) only -- its values are *not* used,
    so nothing of the ground truth leaks into learning.
    """
    if mode == "inference":
        return FixedNoisyOR(model, dtype=dtype, device=device)
    if mode == "learning":
        return LearnableNoisyOR(model.D, model.K, generator=generator, init=init, dtype=dtype, device=device)
    raise ConfigError(f"unknown mode {mode!r}; allowed: inference, learning")


__all__ = [
    "ACTIVE_CAUSE_BURDEN",
    "FixedNoisyOR",
    "GenerativeInit",
    "GenerativeModule",
    "LearnableNoisyOR",
    "inverse_softplus",
    "default_theta_high",
    "make_generative",
]
