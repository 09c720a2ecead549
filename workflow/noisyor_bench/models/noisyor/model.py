"""The noisy-OR network (paper Section 2.2, eqs. 3-6).

A bipartite Bayesian network with K binary latent causes ``z`` and D binary observations
``x``.  With rates ``theta_ik = -log(1 - p_ik) >= 0`` and a leak rate ``theta_i0 >= 0``

    p(x_i = 0 | z) = exp(-a_i),      a_i = theta_i0 + sum_k theta_ik z_k      (eq. 5)
    p(x_i = 1 | z) = 1 - exp(-a_i)                                            (eq. 4)
    p(z_k = 1)     = mu_k

so ``log p(x | z) = sum_i x_i log(1 - exp(-a_i)) - (1 - x_i) a_i`` (eq. 6).  The positive
term is the only non-linear one; :func:`log1mexp` evaluates it without cancellation for
rates near zero and without underflow for large rates.

All functions accept relaxed (continuous) ``z`` so the same code serves the binary-concrete
reparameterised estimators and the discrete evaluation.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from noisyor_bench.infra.errors import ConfigError

_LOG2 = math.log(2.0)


def log1mexp(a: torch.Tensor) -> torch.Tensor:
    """``log(1 - exp(-a))`` for ``a >= 0``, accurate over the whole range.

    Uses ``log(-expm1(-a))`` for small ``a`` (where ``1 - exp(-a)`` cancels) and
    ``log1p(-exp(-a))`` for large ``a`` (Maechler, 2012).  ``a = 0`` gives ``-inf``: an
    observation that no active cause (and no leak) can switch on is impossible.
    """
    small = a <= _LOG2
    # Evaluate both branches on safe inputs so neither produces NaN gradients.
    a_small = torch.where(small, a, torch.full_like(a, _LOG2))
    a_large = torch.where(small, torch.full_like(a, _LOG2), a)
    return torch.where(small, torch.log(-torch.expm1(-a_small)), torch.log1p(-torch.exp(-a_large)))


def bernoulli_kl(q: torch.Tensor, mu: torch.Tensor) -> torch.Tensor:
    """``KL(Bern(q) || Bern(mu))`` summed over the last axis, exact at ``q in {0, 1}``."""
    q = q.to(mu.dtype) if not torch.is_floating_point(q) else q
    t1 = torch.xlogy(q, q) - q * torch.log(mu)
    t0 = torch.xlogy(1 - q, 1 - q) - (1 - q) * torch.log1p(-mu)
    return (t1 + t0).sum(-1)


@dataclass
class NoisyOR:
    """Parameters of a noisy-OR network.

    ``theta``: (D, K) non-negative rates; ``theta0``: (D,) non-negative leak rates;
    ``mu``: (K,) prior probabilities in (0, 1).
    """

    theta: torch.Tensor
    theta0: torch.Tensor
    mu: torch.Tensor

    def __post_init__(self) -> None:
        d, k = self.theta.shape
        if self.theta0.shape != (d,):
            raise ConfigError(f"theta0 has shape {tuple(self.theta0.shape)}, expected ({d},)")
        if self.mu.shape != (k,):
            raise ConfigError(f"mu has shape {tuple(self.mu.shape)}, expected ({k},)")

    # ------------------------------------------------------------------ constructors
    @classmethod
    def from_numpy(
        cls,
        theta: np.ndarray,
        theta0: np.ndarray,
        mu: np.ndarray,
        dtype: torch.dtype = torch.float64,
        device: torch.device | str | None = None,
    ) -> NoisyOR:
        def t(a: np.ndarray) -> torch.Tensor:
            return torch.as_tensor(np.asarray(a), dtype=dtype, device=device)

        return cls(theta=t(theta), theta0=t(theta0), mu=t(mu))

    def to(self, dtype: torch.dtype | None = None, device: torch.device | str | None = None) -> NoisyOR:
        return NoisyOR(
            theta=self.theta.to(device=device, dtype=dtype),
            theta0=self.theta0.to(device=device, dtype=dtype),
            mu=self.mu.to(device=device, dtype=dtype),
        )

    def detach(self) -> NoisyOR:
        return NoisyOR(self.theta.detach(), self.theta0.detach(), self.mu.detach())

    def numpy(self) -> dict[str, np.ndarray]:
        """Parameters as float64 arrays, keyed as in the dataset and posterior files."""
        return {
            "theta": self.theta.detach().cpu().double().numpy(),
            "theta0": self.theta0.detach().cpu().double().numpy(),
            "mu": self.mu.detach().cpu().double().numpy(),
        }

    @property
    def D(self) -> int:  # noqa: N802 - the paper's symbol
        return int(self.theta.shape[0])

    @property
    def K(self) -> int:  # noqa: N802
        return int(self.theta.shape[1])

    # ------------------------------------------------------------------ densities
    def rates(self, z: torch.Tensor) -> torch.Tensor:
        """``a = theta0 + z theta^T`` with shape ``z.shape[:-1] + (D,)``."""
        return self.theta0 + z.to(self.theta.dtype) @ self.theta.T

    def log_px_given_z(self, x: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
        """``log p(x | z)`` summed over the D observations (eq. 6), broadcast over batch axes.

        ``x``: (..., D) in {0, 1}; ``z``: (..., K) in [0, 1] (relaxed samples allowed).
        """
        x = x.to(self.theta.dtype)
        a = self.rates(z)
        pos = torch.where(x > 0, log1mexp(a), torch.zeros_like(a))
        return (pos - (1 - x) * a).sum(-1)

    def log_prior(self, z: torch.Tensor) -> torch.Tensor:
        """``log p(z)`` for binary ``z`` of shape (..., K)."""
        z = z.to(self.mu.dtype)
        return (z * torch.log(self.mu) + (1 - z) * torch.log1p(-self.mu)).sum(-1)

    def log_joint(self, x: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
        return self.log_px_given_z(x, z) + self.log_prior(z)

    # ------------------------------------------------------------------ sampling
    def sample(self, n: int, generator: torch.Generator | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """Ancestral sampling: ``z ~ p(z)``, then ``x ~ p(x | z)``. Returns ``(z, x)`` as 0/1 floats."""
        u_z = torch.rand((n, self.K), generator=generator, dtype=self.mu.dtype, device=self.mu.device)
        z = (u_z < self.mu).to(self.mu.dtype)
        p_on = -torch.expm1(-self.rates(z))
        u_x = torch.rand((n, self.D), generator=generator, dtype=self.mu.dtype, device=self.mu.device)
        x = (u_x < p_on).to(self.mu.dtype)
        return z, x
