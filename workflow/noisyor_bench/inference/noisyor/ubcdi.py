"""UB-CDI: conjugate dual inference with the Jaakkola-Jordan *upper* bound (paper Sections 2.3, 4.2).

Per data point the positive likelihoods are replaced by the conjugate upper bound
``exp(psi_i a_i - g(psi_i))`` (eqs. 7-8); the posterior of the bounded joint factorises
(eq. 11) and ``psi`` is chosen to give the tightest bound, i.e. to minimise the
log-likelihood upper bound ``LL-UB = log p~(x | psi)`` (eq. 12 applied to the whole data
vector; closed form: supplement eq. 4 with the missing ``exp`` restored).  The minimiser is
the fixed point ``psi_i = 1 / (exp(E_q[a_i]) - 1)`` (derivation: :mod:`noisyor_bench.models.noisyor.jj_upper`
and docs/bounds.md), iterated with backtracking so that LL-UB decreases monotonically.

Initial ``psi`` (hyperparameter ``psi_init``):

* ``"marginal"`` (default): eq. 12 taken literally, ``psi_i = argmin E_{p(z)}[p~(x_i=1|z,psi)]``
  per observation -- the classical per-finding tightest bound under the prior.
* ``"prior"``: ``psi_i = 1/(exp(E_{p(z)}[a_i]) - 1)``, the tangent at the prior-mean rate.
* ``"one"`` / ``"zero"``: constants.

Measured on a SYN-PATTERN-like model (D=64, K=8, mu=0.125, leak 0.01; exact NLL 10.04):
the NELBO of ``q`` goes 11.82 -> 16.70 -> ... -> 15.89 from ``marginal``, 10.77 -> 24.51 ->
... -> 15.89 from ``prior`` and 10.77 -> 16.47 -> ... -> 15.89 from ``one``: the ELBO first
drops and the converged ELBO is *worse* than the initial one, as the paper reports for
Fig. 3b.  From ``zero`` (30.99 -> 12.34 -> ... -> 15.89) it ends better than it starts.  All
inits reach the same LL-UB minimum (LL-UB is convex in ``psi``); docs/bounds.md has the table.

Damping (hyperparameter ``damping``): the plain fixed-point iteration ``psi <- F(psi)`` is
not monotone -- ``F`` is decreasing in ``psi`` and, when many positives share parents, it
overshoots; on the SYN-PATTERN-like model above it falls into a 2-cycle with LL-UB rising
from -6.4 to about +94 nats and the ELBO degrading to about -21.  The default
``"backtrack"`` halves the step along ``F(psi) - psi`` (a descent direction of the convex
LL-UB) per data point until LL-UB does not increase; ``"none"`` keeps the plain iteration
for comparison.

UB-CDI has no global parameters and the paper uses it for inference only ("we will not
compare to UB-CDI in the rest of our experiments"), so learning mode is refused.
``fit`` runs the rounds on the validation data (the paper optimises non-amortized methods on
held-out samples directly) and records, per round, the mean LL-UB and the mean ELBO of the
current ``q`` for Fig. 3b.

Resume: ``fit(..., checkpoint_path=...)`` saves after every round the curve, the evaluation
generator and a sha256 digest of ``psi`` (:mod:`.fitloop`).  The rounds are a deterministic
function of the data, so a resumed fit replays the saved rounds without their ELBO
evaluation, checks that it reached the saved ``psi`` bit for bit, and continues; if it did
not (e.g. a different number of threads), it starts afresh.  The curve of a resumed fit is
bit-identical to an uninterrupted one.  (Replaying instead of storing ``psi`` keeps
:func:`~noisyor_bench.models.noisyor.jj_upper.ub_optimize` the only implementation of a round; a whole fit on
SYN-PATTERN's 1,000 validation points takes under a second, of which the rounds are ~70%.)
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, ClassVar

import torch

from noisyor_bench.inference.fitting import EpochRecord, FitBudget
from noisyor_bench.inference.noisyor.base import Mode
from noisyor_bench.inference.noisyor.classical import ClassicalMethod, lap
from noisyor_bench.inference.noisyor.fitloop import FitLoop
from noisyor_bench.inference.noisyor.hparams import require
from noisyor_bench.infra.constants import DEFAULT_N_SAMPLES
from noisyor_bench.infra.hashing import sha256_bytes
from noisyor_bench.models.noisyor.jj_upper import UBRound, ub_optimize, ub_psi_marginal, ub_psi_prior
from noisyor_bench.models.noisyor.model import NoisyOR

log = logging.getLogger(__name__)

DEFAULTS: dict[str, Any] = {
    "max_rounds": 100,  # fixed-point rounds (also capped by FitBudget.max_epochs in fit)
    "tol": 1e-8,  # stop when no data point's LL-UB fell by more than this in a round
    "psi_init": "marginal",  # marginal | prior | one | zero (see module docstring)
    "damping": "backtrack",  # backtrack (monotone LL-UB) | none (plain fixed point, may oscillate)
    "exact_max_k": 12,  # ELBO by 2^K enumeration up to this K, else Monte Carlo
    "eval_samples": DEFAULT_N_SAMPLES,  # Bernoulli samples per data point for the Monte Carlo ELBO
    "dtype": "float64",
}
PSI_INITS = ("marginal", "prior", "one", "zero")


class UBCDI(ClassicalMethod):
    """Tightest-upper-bound conjugate dual inference (inference mode only: registry ``modes``)."""

    name: ClassVar[str] = "ub-cdi"
    DEFAULTS: ClassVar[dict[str, Any]] = DEFAULTS

    def _init_state(self, model: NoisyOR, mode: Mode) -> None:
        self._model = model.detach().to(dtype=self.dtype, device=self.device)
        self.rounds_done = 0

    def check_hparams(self, h: Mapping[str, Any]) -> None:
        require(
            self.name, h["psi_init"] in PSI_INITS, "psi_init", h["psi_init"], f"one of {', '.join(PSI_INITS)}"
        )
        require(
            self.name, h["damping"] in ("backtrack", "none"), "damping", h["damping"], "backtrack or none"
        )
        require(self.name, h["max_rounds"] >= 0, "max_rounds", h["max_rounds"], ">= 0")
        require(self.name, h["tol"] >= 0, "tol", h["tol"], ">= 0")
        require(self.name, h["eval_samples"] >= 1, "eval_samples", h["eval_samples"], ">= 1")

    # ------------------------------------------------------------------ API
    @property
    def generative(self) -> NoisyOR:
        return self._model

    def initial_psi(self, x: torch.Tensor) -> torch.Tensor:
        """The starting ``psi`` (N, D) selected by ``psi_init`` (zero where ``x_i = 0``)."""
        kind = self.hparams["psi_init"]
        if kind == "marginal":
            return ub_psi_marginal(self._model, x)
        if kind == "prior":
            return ub_psi_prior(self._model, x)
        value = 1.0 if kind == "one" else 0.0
        return torch.where(x > 0, torch.full_like(x, value), torch.zeros_like(x))

    @torch.no_grad()
    def optimize(
        self,
        x: torch.Tensor,
        callback: Callable[[UBRound], None] | None = None,
        max_rounds: int | None = None,
    ) -> UBRound:
        """Run the fixed-point rounds on ``x`` from the initial ``psi``; the final round's state."""
        x = self._as_data(x)
        rounds = self.hparams["max_rounds"] if max_rounds is None else max_rounds
        return ub_optimize(
            self._model,
            x,
            self.initial_psi(x),
            rounds,
            self.hparams["tol"],
            callback=callback,
            damped=self.hparams["damping"] == "backtrack",
        )

    def fit(
        self,
        x_train: torch.Tensor,
        x_val: torch.Tensor,
        budget: FitBudget,
        progress: Callable[[EpochRecord], None] | None = None,
        checkpoint_path: str | Path | None = None,
    ) -> list[EpochRecord]:
        """Fixed-point rounds on ``x_val`` with the Fig. 3b curve; ``x_train`` is not needed.

        Record ``t`` (``t = 0`` is the initial ``psi``): ``train_nelbo = -mean LL-UB`` (the
        negated objective; a lower bound on the NLL, not an NELBO), ``val_nelbo = -mean ELBO``
        of ``q`` (exact for ``K <= exact_max_k``), ``extra = {"ll_ub", "elbo", "backtracked"}``
        (``backtracked``: data points whose plain fixed-point step had to be damped).
        ``seconds``: wall time of the round (update and evaluation).  ``checkpoint_path``:
        save after every round, and resume from it when it exists (see the module docstring).
        """
        x = self._as_data(x_val)
        generator = self._eval_generator()
        loop = self._fit_loop(
            budget,
            x_train,
            x_val,
            checkpoint_path,
            {"evaluation": generator},
            "check the data and the ground-truth parameters (UB-CDI has no learning rate)",
        )
        saved = loop.resume()
        try:
            records = self._rounds_with_curve(x, budget, progress, loop, generator, saved)
        except _ReplayDiverged as err:
            log.warning("%s; starting afresh", err)
            loop.restart()
            generator.manual_seed(self.init_seed)
            records = self._rounds_with_curve(x, budget, progress, loop, generator, None)
        # Rounds on held-out rows with the true model: only its own criterion ("converged") counts.
        self._end_fit(loop, budget, applicable=False)
        return records

    def _rounds_with_curve(
        self,
        x: torch.Tensor,
        budget: FitBudget,
        progress: Callable[[EpochRecord], None] | None,
        loop: FitLoop,
        generator: torch.Generator,
        saved: dict[str, Any] | None,
    ) -> list[EpochRecord]:
        """The rounds of :meth:`fit`, replaying (without evaluation) those already in ``loop``."""
        replay = len(loop.records)
        rounds = min(self.hparams["max_rounds"], budget.max_epochs)
        clock = [time.perf_counter()]

        def record(state: UBRound) -> None:
            if state.round < replay:
                if state.round == replay - 1 and _digest(state.psi) != saved["psi_sha256"]:
                    raise _ReplayDiverged(f"ub-cdi: replayed round {state.round} differs from the checkpoint")
                clock[0] = time.perf_counter()
                return
            elbo = self._mean_elbo(self._model, x, state.q, generator)
            ll = float(state.ll_ub.mean())
            rec = EpochRecord(
                epoch=state.round,
                train_nelbo=-ll,
                val_nelbo=-elbo,
                seconds=lap(clock),
                extra={"ll_ub": ll, "elbo": elbo, "backtracked": float(state.backtracked)},
            )
            # Whether this round is the last is only known after it; a resumed fit replays to the same end.
            loop.end_epoch(rec, lambda: {"psi_sha256": _digest(state.psi)}, max_epochs=rounds)
            if progress is not None:
                progress(rec)

        final = self.optimize(x, callback=record, max_rounds=rounds)
        self.rounds_done = final.round
        if not loop.finished:
            loop.state.stop_reason = "converged"
        return list(loop.records)

    @torch.no_grad()
    def posterior(self, x: torch.Tensor) -> torch.Tensor:
        """``q`` of eq. 11 at the tightest-bound ``psi`` for each row of ``x``, (N, K)."""
        return self.optimize(x).q.to(torch.float64)

    def state_dict(self) -> dict[str, Any]:
        return {"method": self.name, "hparams": dict(self.hparams), "rounds_done": self.rounds_done}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self._check_state_method(state)
        self.rounds_done = int(state["rounds_done"])

    # ------------------------------------------------------------------ helpers
    @property
    def n_observed(self) -> int:
        return self._model.D


class _ReplayDiverged(Exception):
    """A resumed fit did not reproduce the checkpointed ``psi`` (internal; fit starts afresh)."""


def _digest(psi: torch.Tensor) -> str:
    """sha256 of ``psi``'s bytes: enough to check a replay bit for bit without storing ``psi``."""
    return sha256_bytes(psi.detach().cpu().contiguous().numpy().tobytes())


__all__ = ["DEFAULTS", "UBCDI"]
