"""Amortized variational inference (AVI, paper Section 2.5).

``q(z | x) = prod_k Bern(z_k; sigmoid(MLP(x)_k))``: an unconstrained encoder with K outputs,
parameterised independently of the generative model (Kingma and Welling, 2013).  Trained on
the ELBO of eq. 16 with binary-concrete samples; see :mod:`.amortized` for the shared loop.
"""

from __future__ import annotations

import torch

from noisyor_bench.inference.noisyor.amortized import AmortizedMethod
from noisyor_bench.models.noisyor.model import NoisyOR
from noisyor_bench.models.noisyor.sparse import ActiveSet


class AVI(AmortizedMethod):
    """AVI: ``logits = MLP(x)``; ``q`` has no path to ``theta`` or ``mu``."""

    name = "avi"

    def encoder_out_dim(self) -> int:
        return self.K

    def logits(
        self, x: torch.Tensor, model: NoisyOR, prior_logits: torch.Tensor, active: ActiveSet | None = None
    ) -> torch.Tensor:
        if self.encoder_input == "x":
            return self.encode(x, active)
        return self.encode(self.features(x, model))
