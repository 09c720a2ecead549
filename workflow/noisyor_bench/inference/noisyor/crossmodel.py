"""Amortizing inference across noisy-OR models (the APE question, docs/ape_noisyor.md).

APE (Rapid Model Comparison by Amortizing Across Models) trains one encoder on random
(data point, model) pairs so that it returns ``q(z | x, theta)`` for models it never saw.  Here
the encoder is an AVI or ACP instance of :mod:`.amortized` in inference mode (no generative
parameters are learned) whose ``encoder_input`` says what it reads (``x``; APE's model-aware
``[theta^T x, theta^T (1 - x)]``; APE's naive concatenation of ``x`` and ``theta``); ACP is
model-aware by construction even on ``x`` alone, since eq. 11 maps its ``psi`` through the
given ``theta``.  The model enters only through ``logits(x, model, logit(mu))`` and the ELBO
(eq. 16, :func:`~noisyor_bench.models.noisyor.elbo.elbo`), both evaluated at the pair's model.

Training (:func:`fit_across_models`): the :class:`~noisyor_bench.inference.training.Trainer`
over the training *models* (problem x candidate); a step takes ``batch_size`` models and
``rows_per_model`` random data rows of each model's problem, with the method's temperature
schedule and L samples.  Validation: the exact mean negative ELBO (2^K enumeration, no noise)
over fixed rows of the validation problems' models, so epochs compare exactly and early
stopping and the convergence rule (:mod:`.convergence`) see no Monte Carlo noise.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from noisyor_bench.inference.fitting import EpochRecord, FitBudget
from noisyor_bench.inference.noisyor.amortized import AmortizedMethod, temperature
from noisyor_bench.inference.seeding import stream_generator
from noisyor_bench.inference.training import Trainer
from noisyor_bench.models.noisyor.elbo import elbo
from noisyor_bench.models.noisyor.exact import exact_elbo
from noisyor_bench.models.noisyor.model import NoisyOR


@dataclass(frozen=True)
class ModelBank:
    """Models to amortize over: ``theta`` (P, C, D, K) candidates of P problems, their data ``x`` (P, N, D)."""

    theta: torch.Tensor
    x: torch.Tensor
    theta0: torch.Tensor
    mu: torch.Tensor

    @classmethod
    def from_numpy(
        cls, theta: np.ndarray, x: np.ndarray, theta0: np.ndarray, mu: np.ndarray, dtype: torch.dtype
    ) -> ModelBank:
        return cls(
            theta=torch.as_tensor(theta, dtype=dtype),
            x=torch.as_tensor(x, dtype=dtype),
            theta0=torch.as_tensor(theta0, dtype=dtype),
            mu=torch.as_tensor(mu, dtype=dtype),
        )

    @property
    def n_models(self) -> int:
        return int(self.theta.shape[0] * self.theta.shape[1])

    def locate(self, index: int) -> tuple[int, int]:
        """(problem, candidate) of flat model ``index``."""
        return divmod(int(index), int(self.theta.shape[1]))

    def model(self, problem: int, candidate: int) -> NoisyOR:
        return NoisyOR(self.theta[problem, candidate], self.theta0, self.mu)


def block_model(models: Sequence[NoisyOR]) -> NoisyOR:
    """Models side by side: block-diagonal ``theta``, concatenated ``theta0`` and ``mu``.

    Its latents and observations are the union of the models' with no edge between blocks,
    so ``log p(x, z)``, ``q`` and the ELBO (eq. 16) of a row made of one row per model are the
    sums of the models' own: one ELBO evaluation serves a minibatch of many models."""
    return NoisyOR(
        torch.block_diag(*(m.theta for m in models)),
        torch.cat([m.theta0 for m in models]),
        torch.cat([m.mu for m in models]),
    )


def logits_under(method: AmortizedMethod, model: NoisyOR, x: torch.Tensor) -> torch.Tensor:
    """Logits of the method's ``q(z | x)`` when the generative model is ``model`` (N, K)."""
    return method.logits(x, model, torch.logit(model.mu))


@torch.no_grad()
def posterior_under(method: AmortizedMethod, model: NoisyOR, x: torch.Tensor) -> torch.Tensor:
    """``q(z_k = 1 | x)`` under ``model`` in float64 (N, K)."""
    method.net.eval()
    m = model.to(dtype=method.dtype)
    return torch.sigmoid(logits_under(method, m, x.to(method.dtype)).double())


def exact_mean_nelbo(method: AmortizedMethod, bank: ModelBank, rows: int) -> float:
    """Mean exact negative ELBO over every model of ``bank`` on the first ``rows`` rows of its problem."""
    total, count = 0.0, 0
    for index in range(bank.n_models):
        p, c = bank.locate(index)
        model = bank.model(p, c)
        x = bank.x[p, :rows]
        q = posterior_under(method, model, x)
        total += float(-exact_elbo(model, x, q).sum())
        count += x.shape[0]
    return total / count


def fit_across_models(
    method: AmortizedMethod,
    train: ModelBank,
    val: ModelBank,
    budget: FitBudget,
    rows_per_model: int,
    val_rows: int,
    progress: Callable[[EpochRecord], None] | None = None,
) -> list[EpochRecord]:
    """Train ``method``'s encoder on random (model, row) pairs of ``train``; early stopping on ``val``.

    Sets ``method.best_epoch``, ``stop_reason`` and ``convergence`` as :meth:`AmortizedMethod.fit` does.
    """
    hp = method.hp

    def tau_of(step: int) -> float:
        return temperature(step, hp)

    sample_gen = stream_generator(method.init_seed, "elbo-samples", method.device)
    row_gen = stream_generator(method.init_seed, "crossmodel-rows")
    n_rows = int(train.x.shape[1])
    xt = train.x.to(device=method.device, dtype=method.dtype)
    bank = ModelBank(
        theta=train.theta.to(device=method.device, dtype=method.dtype),
        x=xt,
        theta0=train.theta0.to(device=method.device, dtype=method.dtype),
        mu=train.mu.to(device=method.device, dtype=method.dtype),
    )

    def loss_fn(batch_idx: torch.Tensor, step: int) -> torch.Tensor:
        xs, logits, models = [], [], []
        for index in batch_idx.tolist():
            p, c = bank.locate(index)
            model = bank.model(p, c)
            rows = torch.randint(n_rows, (rows_per_model,), generator=row_gen)
            x = bank.x[p, rows.to(method.device)]
            xs.append(x)
            logits.append(logits_under(method, model, x))
            models.append(model)
        # One ELBO for the whole step: the models side by side as one block-diagonal noisy-OR,
        # whose ELBO of a row of side-by-side data is the sum of the models' ELBOs.
        total = -elbo(
            block_model(models),
            torch.cat(xs, 1),
            torch.cat(logits, 1),
            hp.n_samples,
            tau_of(step),
            sample_gen,
        )
        share = total.mean() / len(models)  # the mean NELBO per (model, row)
        return share.expand(len(models))

    trainer = Trainer(
        module=method.net,
        loss_fn=loss_fn,
        optimizer=method.make_optimizer(),
        n_train=train.n_models,
        budget=budget,
        shuffle_generator=stream_generator(method.init_seed, "shuffle"),
        val_fn=lambda: exact_mean_nelbo(method, val, val_rows),
        generators={"elbo": sample_gen, "rows": row_gen},
        extra_fn=lambda steps: {"temperature": temperature(max(steps - 1, 0), hp)},
        fingerprint={"method": method.name, "encoder_input": method.encoder_input, "seed": int(method.seed)},
    )
    try:
        history = trainer.run(progress)
    finally:
        method.net.eval()
    method.best_epoch, method.stop_reason = trainer.best_epoch, trainer.stop_reason
    method.convergence = trainer.convergence()
    return history


def candidate_elbos(
    method: AmortizedMethod, thetas: torch.Tensor, theta0: torch.Tensor, mu: torch.Tensor, x: torch.Tensor
) -> np.ndarray:
    """Exact per-row ELBO of ``method``'s ``q`` under each candidate ``thetas[c]`` on rows ``x``: (C, N)."""
    out = []
    for theta in thetas:
        model = NoisyOR(theta.double(), theta0.double(), mu.double())
        q = posterior_under(method, model, x)
        out.append(exact_elbo(model, x.double(), q).numpy())
    return np.stack(out)


__all__ = [
    "ModelBank",
    "block_model",
    "candidate_elbos",
    "exact_mean_nelbo",
    "fit_across_models",
    "logits_under",
    "posterior_under",
]
