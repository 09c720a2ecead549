"""Amortized conjugate posterior (ACP, paper Section 3, eqs. 11, 14-16, Algorithm 1).

The encoder predicts the conjugate-dual variational parameters ``psi = softplus(MLP(x)) >= 0``
(one per observation, eq. 14; the softplus output layer is the supplement's constraint
``psi > 0``), and ``q`` takes the closed form of the conjugate posterior (eq. 11)

    q(z_k = 1 | x) = sigmoid( sum_{i: x_i=1} psi_i theta_ik - sum_{i: x_i=0} theta_ik + logit(mu_k) ).

``psi`` is chosen to maximise the ELBO (eq. 16), not the tightest bound (eq. 12).  Because
``q`` is a function of ``theta`` and ``mu``, in learning mode the gradient of the ELBO
reaches the generative parameters through ``q`` as well as directly.  :class:`ACPStopGrad`
(``acp-sg``) is the ablation without that path for ``theta``.
"""

from __future__ import annotations

from typing import ClassVar

import torch
import torch.nn.functional as F

from noisyor_bench.inference.noisyor.amortized import AmortizedMethod
from noisyor_bench.models.noisyor.jj_upper import conjugate_posterior_logits
from noisyor_bench.models.noisyor.model import NoisyOR
from noisyor_bench.models.noisyor.sparse import ActiveSet, active_matmul, linear_at_active


class ACP(AmortizedMethod):
    """ACP: encoder -> ``psi`` (D outputs) -> eq. 11 logits."""

    name = "acp"
    theta_through_q: ClassVar[bool] = True
    """Whether eq. 11 sees the learnable ``theta`` (ACP) or a detached copy (:class:`ACPStopGrad`)."""

    def encoder_out_dim(self) -> int:
        return self.D

    def psi(self, x: torch.Tensor) -> torch.Tensor:
        """Variational parameters of the conjugate bound (eq. 7/14), ``>= 0``: (N, D)."""
        return F.softplus(self.encoder(x))

    def logits(
        self, x: torch.Tensor, model: NoisyOR, prior_logits: torch.Tensor, active: ActiveSet | None = None
    ) -> torch.Tensor:
        theta = model.theta if self.theta_through_q else model.theta.detach()
        if self.encoder_input != "x":  # a model-aware encoder input (crossmodel): dense path
            psi = F.softplus(self.encoder(self.features(x, model)))
            return conjugate_posterior_logits(x, psi, theta, prior_logits)
        if active is None or not active.sparse_linear:
            return conjugate_posterior_logits(x, self.psi(x), theta, prior_logits)
        # Eq. 11 rewritten over the active entries: sum_{x_i=1} (psi_i + 1) theta_ik - sum_i theta_ik
        # + logit(mu_k); psi is needed (and computed) only where x_i = 1.
        psi_active = F.softplus(linear_at_active(active, self.hidden(x, active), self.encoder[-1]))
        return active_matmul(active, theta, psi_active + 1.0) - theta.sum(0) + prior_logits


class ACPStopGrad(ACP):
    """ACP-SG, an ablation (not a method of the paper): ACP with ``theta`` detached in eq. 11.

    ``q`` keeps ACP's model-dependent form -- eq. 11 is evaluated at the current ``theta`` --
    but the ELBO's gradient reaches ``theta`` only through the likelihood terms (the positive
    term through the samples' rates, the negative term), as in AVI.  Comparing it with ACP
    (paired by seed) measures the mechanism the paper credits for ACP's advantage: "the
    posterior contributes explicitly to the gradient of the ELBO with respect to the
    generative model parameters" (Section 1; Section 3, paper lines 21 and 188).

    Only ``theta`` is stopped; ``logit(mu)`` still enters eq. 11 with its gradient, so the two
    methods differ in exactly one path, the one the paper's sentence is about (``mu`` has K
    entries against ``theta``'s D x K, and its path through ``q`` is not what the paper names).

    Same random streams as ACP (generative init, encoder init, shuffling, samples): with the
    same hyperparameters and seed, ACP and ACP-SG start from the identical state and compute
    the same ELBO *value* at every step until their parameters part.

    Learning mode only: in inference mode ``theta`` is fixed and receives no gradient at all,
    so ACP-SG would be ACP run twice; it is refused there.
    """

    name = "acp-sg"
    theta_through_q: ClassVar[bool] = False
    encoder_stream = "acp"

    # modes (learning only) and the refusal's reason: registry.METHODS['acp-sg']
