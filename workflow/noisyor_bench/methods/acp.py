"""Amortized conjugate posterior (ACP, paper Section 3, eqs. 11, 14-16, Algorithm 1).

The encoder predicts the conjugate-dual variational parameters ``psi = softplus(MLP(x)) >= 0``
(one per observation, eq. 14; the softplus output layer is the supplement's constraint
``psi > 0``), and ``q`` takes the closed form of the conjugate posterior (eq. 11)

    q(z_k = 1 | x) = sigmoid( sum_{i: x_i=1} psi_i theta_ik - sum_{i: x_i=0} theta_ik + logit(mu_k) ).

``psi`` is chosen to maximise the ELBO (eq. 16), not the tightest bound (eq. 12).  Because
``q`` is a function of ``theta`` and ``mu``, in learning mode the gradient of the ELBO
reaches the generative parameters through ``q`` as well as directly.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from ..model import NoisyOR
from ..sparse import ActiveSet, active_matmul, linear_at_active
from .amortized import AmortizedMethod, acp_logits


class ACP(AmortizedMethod):
    """ACP: encoder -> ``psi`` (D outputs) -> eq. 11 logits."""

    name = "acp"

    def encoder_out_dim(self) -> int:
        return self.D

    def psi(self, x: torch.Tensor) -> torch.Tensor:
        """Variational parameters of the conjugate bound (eq. 7/14), ``>= 0``: (N, D)."""
        return F.softplus(self.encoder(x))

    def logits(
        self, x: torch.Tensor, model: NoisyOR, prior_logits: torch.Tensor, active: ActiveSet | None = None
    ) -> torch.Tensor:
        if active is None or not active.sparse_linear:
            return acp_logits(x, self.psi(x), model.theta, prior_logits)
        # Eq. 11 rewritten over the active entries: sum_{x_i=1} (psi_i + 1) theta_ik - sum_i theta_ik
        # + logit(mu_k); psi is needed (and computed) only where x_i = 1.
        psi_active = F.softplus(linear_at_active(active, self.hidden(x, active), self.encoder[-1]))
        return active_matmul(active, model.theta, psi_active + 1.0) - model.theta.sum(0) + prior_logits
