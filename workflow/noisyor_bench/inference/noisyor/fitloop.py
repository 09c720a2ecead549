"""Epoch bookkeeping of the classical methods (SVI, LB-CDI, UB-CDI): curve, early stopping,
divergence checks and an exact per-epoch checkpoint.

AVI and ACP get all of this from :class:`noisyor_bench.inference.training.Trainer`.  The classical
methods keep their own loops (full-batch EM, row-wise Adam on per-datapoint logits,
fixed-point rounds), so they share this smaller piece instead: after every epoch (EM
iteration, fixed-point round) :meth:`FitLoop.end_epoch` checks the numbers, updates early
stopping and writes a checkpoint holding

* the loop state (epoch counter, best value / epoch, evaluations without improvement, stop
  reason, last finite losses) and the curve records,
* the states of the random generators the fit draws from,
* the parameters of the best epoch (early stopping restores them), and
* the method's own state (``state_fn()``: parameters, optimiser moments, warm-started
  E-step / logits ...),

written atomically and read back with ``torch.load(weights_only=True)``
(:func:`~noisyor_bench.inference.training.write_checkpoint`).  A fit started with an existing
checkpoint continues after its last epoch and ends bit-identical to an uninterrupted fit.

The state can be large (LB-CDI's ``r`` holds K numbers per positive observation: 1.8 GB
for 40,000 points of SYN-RANDOM-7).  So when a write takes longer than
:data:`FREE_WRITE_SECONDS`, an epoch's checkpoint is skipped if writing it would make
checkpointing cost more than :data:`MAX_OVERHEAD` of the time since the last write (judged
by the previous write); the first and the last epoch are always written, and so is the epoch a
fit pauses at (:mod:`noisyor_bench.inference.deadline`).  Which epochs are
written never changes the numbers, only how much a killed run has to redo.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch

from noisyor_bench.inference import deadline
from noisyor_bench.inference.convergence import Convergence, assess
from noisyor_bench.inference.fitting import EpochRecord, FitBudget, fit_budget_fields
from noisyor_bench.inference.training import CHECKPOINT_VERSION, diverged, read_checkpoint, write_checkpoint
from noisyor_bench.infra.errors import DataError

CHECKPOINT_KIND = "classical-fit"
MAX_OVERHEAD = 0.1  # checkpoint writes take at most ~this fraction of the fit's wall time ...
FREE_WRITE_SECONDS = 0.2  # ... unless they are this quick: then every epoch is written

StateFn = Callable[[], dict[str, Any]]


@dataclass
class LoopState:
    """Everything about the loop (not the model) that a resumed fit needs; plain values only."""

    epoch: int = 0  # epoch / round of the last record (0 = the initial record, if any)
    best_value: float = math.inf
    best_epoch: int = 0
    bad_evals: int = 0
    stop_reason: str = ""  # "" while running; then "patience", "max_epochs" or "converged"
    last_train: float | None = None
    last_val: float | None = None


def fingerprint(method: Any, budget: FitBudget, x_train: torch.Tensor, x_val: torch.Tensor) -> dict[str, Any]:
    """What a checkpoint must agree on to be resumed by ``method`` (a run configuration)."""
    return {
        "method": method.name,
        "mode": method.mode,
        "seed": int(method.seed),
        "init_key": getattr(method, "init_key", None),
        "init_seed": int(getattr(method, "init_seed", method.seed)),
        "hparams": dict(method.hparams),
        "budget": fit_budget_fields(budget),
        "n_train": int(x_train.shape[0]),
        "n_val": int(x_val.shape[0]),
        "shape": [int(x_val.shape[1]), int(method.generative.K)],
    }


class FitLoop:
    """Curve, early stopping, divergence checks and checkpoint of one classical fit.

    ``generators``: every random generator the fit draws from (restored on resume).
    ``hint``: what a divergence message tells the user to change.
    """

    def __init__(
        self,
        fingerprint: Mapping[str, Any],
        checkpoint_path: str | Path | None,
        generators: Mapping[str, torch.Generator],
        hint: str,
    ) -> None:
        self.fingerprint = dict(fingerprint)
        self.checkpoint_path = Path(checkpoint_path) if checkpoint_path is not None else None
        self.generators = dict(generators)
        self.hint = hint
        self.state = LoopState()
        self.records: list[EpochRecord] = []
        self.best_params: dict[str, torch.Tensor] | None = None
        self.clock: Callable[[], float] = time.perf_counter
        self._write_seconds = 0.0  # duration of the last checkpoint write
        self._written_at: float | None = None  # when it ended

    # ------------------------------------------------------------------ resume
    def resume(self) -> dict[str, Any] | None:
        """Restore loop state, curve and generators from the checkpoint, if there is one.

        Returns the method's saved state (what its ``state_fn`` returned), or ``None`` when
        the fit starts afresh.
        """
        if self.checkpoint_path is None or not self.checkpoint_path.exists():
            return None
        payload = read_checkpoint(self.checkpoint_path, self.fingerprint)
        if payload.get("kind") != CHECKPOINT_KIND:
            raise DataError(
                f"checkpoint {self.checkpoint_path} was not written by a classical fit (kind "
                f"{payload.get('kind')!r}); delete it to start afresh"
            )
        if set(payload["generators"]) != set(self.generators):
            raise DataError(
                f"checkpoint {self.checkpoint_path} holds generators {sorted(payload['generators'])}, "
                f"expected {sorted(self.generators)}; delete it to start afresh"
            )
        for name, g in self.generators.items():
            g.set_state(payload["generators"][name])
        self.state = LoopState(**payload["loop"])
        self.records = [EpochRecord(**r) for r in payload["records"]]
        self.best_params = payload["best_params"]
        return payload["method"]

    def restart(self) -> None:
        """Forget a restored state (the generators must be reseeded by the caller)."""
        self.state, self.records, self.best_params = LoopState(), [], None

    # ------------------------------------------------------------------ per epoch
    @property
    def finished(self) -> bool:
        return bool(self.state.stop_reason)

    @property
    def best_epoch(self) -> int | None:
        return self.state.best_epoch or None

    @property
    def stop_reason(self) -> str | None:
        return self.state.stop_reason or None

    def convergence(self, budget: FitBudget, applicable: bool = True) -> Convergence:
        """Whether the finished fit converged (:func:`noisyor_bench.inference.convergence.assess`);
        ``applicable=False`` for an inference-mode fit on held-out rows (no training budget)."""
        return assess(self.records, self.stop_reason, self.best_epoch, budget, applicable)

    def end_epoch(
        self,
        record: EpochRecord,
        state_fn: StateFn,
        params: Iterable[tuple[str, torch.Tensor]] = (),
        best_fn: StateFn | None = None,
        patience: int | None = None,
        max_epochs: int | None = None,
        stop: str = "",
    ) -> None:
        """Check ``record`` and ``params``, append the record, update stopping, save the checkpoint.

        With ``best_fn``, the record's ``val_nelbo`` is monitored: a new minimum stores
        ``best_fn()`` (the parameters to restore), ``patience`` evaluations without one stop
        the fit.  ``stop`` ends the fit with that reason (e.g. ``"converged"``); reaching
        ``max_epochs`` ends it with ``"max_epochs"``.  Inside
        :func:`~noisyor_bench.inference.deadline.pause_after`, an unfinished fit past the deadline
        writes this epoch's checkpoint and raises :class:`~noisyor_bench.inference.deadline.Paused`.
        """
        self._check(record, params)
        s = self.state
        s.epoch = record.epoch
        s.last_train = record.train_nelbo
        if record.val_nelbo is not None:
            s.last_val = record.val_nelbo
        self.records.append(record)
        if best_fn is not None and record.val_nelbo is not None:
            if record.val_nelbo < s.best_value:
                s.best_value, s.best_epoch, s.bad_evals = record.val_nelbo, record.epoch, 0
                self.best_params = best_fn()
            else:
                s.bad_evals += 1
        if stop:
            s.stop_reason = stop
        elif patience is not None and s.bad_evals >= patience:
            s.stop_reason = "patience"
        elif max_epochs is not None and record.epoch >= max_epochs:
            s.stop_reason = "max_epochs"
        pause = self.checkpoint_path is not None and not self.finished and deadline.due()
        self._save(state_fn, force=pause)
        if pause:
            raise deadline.Paused(record.epoch)

    def _check(self, record: EpochRecord, params: Iterable[tuple[str, torch.Tensor]]) -> None:
        """NaN anywhere, a non-finite objective or non-finite parameters: the fit diverged.

        A validation NELBO of ``+inf`` is not divergence: with a zero leak the ELBO of a
        factorised ``q`` can be ``-inf`` exactly (docs/bounds.md, section 6).
        """
        what = ""
        if not math.isfinite(record.train_nelbo):
            what = f"non-finite training objective ({record.train_nelbo})"
        elif record.val_nelbo is not None and (math.isnan(record.val_nelbo) or record.val_nelbo == -math.inf):
            what = f"non-finite validation NELBO ({record.val_nelbo})"
        else:
            for name, p in params:
                if not bool(torch.isfinite(p).all()):
                    what = f"non-finite values in parameter {name!r}"
                    break
        if what:
            raise diverged(
                f"{what} at epoch {record.epoch}", self.state.last_train, self.state.last_val, self.hint
            )

    def _save(self, state_fn: StateFn, force: bool = False) -> None:
        if self.checkpoint_path is None:
            return
        now = self.clock()
        due = (
            force
            or self._written_at is None
            or self._write_seconds <= FREE_WRITE_SECONDS
            or now - self._written_at >= self._write_seconds / MAX_OVERHEAD
        )
        if not (due or self.finished):
            return
        write_checkpoint(
            self.checkpoint_path,
            {
                "version": CHECKPOINT_VERSION,
                "kind": CHECKPOINT_KIND,
                "fingerprint": self.fingerprint,
                "loop": asdict(self.state),
                "records": [asdict(r) for r in self.records],
                "generators": {name: g.get_state() for name, g in self.generators.items()},
                "best_params": self.best_params,
                "method": state_fn(),
            },
        )
        self._written_at = self.clock()
        self._write_seconds = self._written_at - now


def clone_tensors(state: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Detached copies (a checkpoint or best state must not alias live parameters)."""
    return {k: v.detach().clone() for k, v in state.items()}


__all__ = [
    "CHECKPOINT_KIND",
    "FREE_WRITE_SECONDS",
    "MAX_OVERHEAD",
    "FitLoop",
    "LoopState",
    "clone_tensors",
    "fingerprint",
]
