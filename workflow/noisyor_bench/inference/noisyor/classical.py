"""The base of the classical, per-datapoint methods SVI, LB-CDI and UB-CDI (paper Table 1).

They share what AVI and ACP get from :class:`~noisyor_bench.inference.noisyor.amortized.AmortizedMethod`:
hyperparameters merged into the method's ``DEFAULTS`` and checked
(:mod:`noisyor_bench.inference.noisyor.hparams`), the working dtype, the data check, the evaluation
generator of the curve's Monte Carlo ELBO, and the epoch bookkeeping of a fit
(:class:`~noisyor_bench.inference.noisyor.fitloop.FitLoop`: curve, early stopping, checkpoint), whose
outcome (best epoch, stop reason, convergence) every fit publishes the same way.  Each
subclass keeps only its own optimisation: SVI's row-wise Adam on logits, LB-CDI's
variational EM, UB-CDI's fixed-point rounds.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, ClassVar

import torch

from noisyor_bench.evaluation.heldout import elbo_of_q
from noisyor_bench.inference.convergence import Convergence
from noisyor_bench.inference.fitting import EpochRecord, FitBudget
from noisyor_bench.inference.noisyor.base import InferenceMethod, Mode, PosteriorProgress
from noisyor_bench.inference.noisyor.fitloop import FitLoop, clone_tensors, fingerprint
from noisyor_bench.inference.noisyor.hparams import resolve_hparams, torch_dtype
from noisyor_bench.inference.seeding import stream_generator
from noisyor_bench.infra.errors import ConfigError, DataError
from noisyor_bench.models.noisyor.generative import GenerativeModule, make_generative
from noisyor_bench.models.noisyor.model import NoisyOR


class ClassicalMethod(InferenceMethod):
    """A non-amortized method: per-datapoint variational parameters, optimised on the rows given.

    Subclasses set ``name`` and ``DEFAULTS`` (every hyperparameter with its default; the
    default's type is the accepted type), implement :meth:`check_hparams` (ranges) and hold
    their generative parameters in ``self.module`` (or override :attr:`generative` and
    :attr:`n_observed`).
    """

    module: GenerativeModule

    DEFAULTS: ClassVar[Mapping[str, Any]]

    def __init__(
        self,
        model: NoisyOR,
        mode: Mode,
        hparams: dict[str, Any],
        seed: int,
        device: torch.device | str = "cpu",
        init_key: str | None = None,
    ) -> None:
        super().__init__(model, mode, hparams, seed, device, init_key=init_key)
        self.hparams = resolve_hparams(self.name, self.DEFAULTS, hparams)
        self.check_hparams(self.hparams)
        self.dtype = torch_dtype(self.name, self.hparams["dtype"])
        self.best_epoch: int | None = None
        self.stop_reason: str | None = None
        self.convergence: Convergence | None = None  # set by fit (noisyor_bench.inference.convergence)
        self.posterior_progress: PosteriorProgress | None = None  # of the last posterior() call
        self._init_state(model, mode)

    def _init_state(self, model: NoisyOR, mode: Mode) -> None:
        """The method's own state, after the shared set-up above (the subclasses' constructor)."""

    def _generative_module(self, model: NoisyOR, mode: Mode) -> GenerativeModule:
        """The generative parameters, fixed (inference mode) or initialised for learning from the
        same stream as AVI/ACP: with one (seed, init_key) every learning-mode method starts from
        the same theta (paired comparisons)."""
        init_gen = stream_generator(self.init_seed, "generative-init")
        return make_generative(mode, model, init_gen, dtype=self.dtype, device=self.device)

    def check_hparams(self, h: Mapping[str, Any]) -> None:
        """Range checks of the resolved hyperparameters (ConfigError via ``hparams.require``)."""

    @property
    def generative(self) -> NoisyOR:
        """The model of ``self.module`` (a :class:`~noisyor_bench.models.noisyor.generative.GenerativeModule`:
        fixed in inference mode, learned in learning mode), detached; UB-CDI, which has no
        module, overrides it."""
        return self.module.model().detach()

    @property
    def n_observed(self) -> int:
        """D, the number of observed variables each data row must have."""
        return self.module.D

    # ------------------------------------------------------------------ shared pieces of fit
    def _fit_loop(
        self,
        budget: FitBudget,
        x_train: torch.Tensor,
        x_val: torch.Tensor,
        checkpoint_path: str | Path | None,
        generators: Mapping[str, torch.Generator],
        hint: str,
    ) -> FitLoop:
        """The :class:`FitLoop` of one fit of this run configuration (``hint``: what a divergence
        message tells the user to change)."""
        return FitLoop(
            fingerprint(self, budget, torch.as_tensor(x_train), torch.as_tensor(x_val)),
            checkpoint_path,
            generators,
            hint=hint,
        )

    def _end_fit(self, loop: FitLoop, budget: FitBudget, applicable: bool) -> None:
        """Publish the outcome of a finished fit.  ``applicable=False`` for a fit on held-out
        rows with the true model (inference mode): no training budget to judge."""
        self.best_epoch, self.stop_reason = loop.best_epoch, loop.stop_reason
        self.convergence = loop.convergence(budget, applicable=applicable)

    def _resume_learning(self, loop: FitLoop) -> None:
        """Load the checkpoint of an interrupted learning fit, or start at epoch 0."""
        saved = loop.resume()
        if saved is not None:
            self.load_state_dict(saved)
        else:
            self.epoch = 0

    def _learning_epochs(
        self,
        loop: FitLoop,
        budget: FitBudget,
        progress: Callable[[EpochRecord], None] | None,
        train_epoch: Callable[[], float],
        validate: Callable[[], float],
        state: Callable[[], dict[str, Any]],
        params: Callable[[], Iterable[tuple[str, torch.Tensor]]],
    ) -> list[EpochRecord]:
        """The epochs of a learning-mode fit: ``train_epoch()`` (returns the mean objective),
        ``validate()`` (the validation NELBO) every ``eval_every`` epochs and at the last,
        early stopping on it; the best generative parameters are restored at the end.
        ``state``/``params``: what :meth:`FitLoop.end_epoch` saves and checks."""
        for epoch in range(loop.state.epoch + 1, budget.max_epochs + 1):
            if loop.finished:
                break
            start = time.perf_counter()
            train_obj = train_epoch()
            self.epoch = epoch
            val_nelbo = None
            if epoch % budget.eval_every == 0 or epoch == budget.max_epochs:
                val_nelbo = validate()
            rec = EpochRecord(epoch, -train_obj, val_nelbo, time.perf_counter() - start)
            loop.end_epoch(
                rec,
                state,
                params=params(),
                best_fn=lambda: clone_tensors(self.module.state_dict()),
                patience=budget.patience,
                max_epochs=budget.max_epochs,
            )
            if progress is not None:
                progress(rec)
        if loop.best_params is not None:
            self.module.load_state_dict(loop.best_params)
        return list(loop.records)

    def _mean_elbo(
        self, model: NoisyOR, x: torch.Tensor, q: torch.Tensor, generator: torch.Generator
    ) -> float:
        """Mean ELBO of ``q`` on ``x`` (exact for ``K <= exact_max_k``, else Monte Carlo from ``generator``)."""
        h = self.hparams
        return float(elbo_of_q(model, x, q, h["exact_max_k"], h["eval_samples"], generator).mean())

    def _as_data(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.as_tensor(x).to(device=self.device, dtype=self.dtype)
        d = self.n_observed
        if x.ndim != 2 or x.shape[1] != d:
            raise DataError(f"{self.name}: data must have shape (N, {d}); got {tuple(x.shape)}")
        return x

    def _eval_generator(self) -> torch.Generator:
        """CPU generator of the Monte Carlo ELBO in the curve (used only when K > exact_max_k)."""
        return torch.Generator().manual_seed(self.init_seed)

    def _check_state_method(self, state: Mapping[str, Any]) -> None:
        """A saved state may only be loaded into the method that wrote it."""
        if state.get("method") != self.name:
            raise ConfigError(f"{self.name}: checkpoint is for method {state.get('method')!r}")


def lap(clock: list[float]) -> float:
    """Seconds since the previous lap (or the start), and start a new lap (an epoch's wall time)."""
    now = time.perf_counter()
    elapsed, clock[0] = now - clock[0], now
    return elapsed


__all__ = ["ClassicalMethod", "lap"]
