"""A generic minibatch trainer with early stopping, best-state restore and exact resume.

Any method whose global parameters live in one ``nn.Module`` and whose objective is a mean
of per-datapoint losses can use :class:`Trainer` (AVI and ACP do; the classical methods keep
their own loops and share :func:`write_checkpoint` / :func:`read_checkpoint` through
:mod:`noisyor_bench.inference.noisyor.fitloop`).  The caller supplies

* ``loss_fn(batch_idx, step) -> (B,) tensor``: per-datapoint losses of the training points
  ``batch_idx`` (a CPU int64 tensor of row indices) at optimiser step ``step`` (0-based,
  counted over the whole run; use it for schedules such as the Gumbel-softmax temperature).
  The optimiser minimises their mean.
* ``val_fn() -> float`` (optional): the monitored validation loss, e.g. a held-out NELBO;
  it must be deterministic for a given parameter state (seed its own generator on every
  call) so epochs are comparable.  Without it the epoch's training loss is monitored.
* an optimiser over ``module``'s parameters, a :class:`~noisyor_bench.inference.fitting.FitBudget`,
  a CPU ``torch.Generator`` for shuffling and any further generators ``loss_fn`` draws from.

Per epoch: one pass (or, with ``budget.min_epoch_steps``, as many as make that many steps) over
a fresh permutation of ``range(n_train)`` in minibatches; then (every
``eval_every`` epochs and at the last epoch) ``val_fn``; the module state with the lowest
monitored loss is kept; training stops after ``patience`` evaluations without improvement or
at ``max_epochs``; the best state is restored at the end.

Checkpoint / resume: with ``checkpoint_path`` the trainer writes, after every epoch and
atomically (temp file + ``os.replace``), the module and optimiser state, epoch and step
counters, the state of every generator, the best state, the history and the patience counter
-- tensors, dicts, lists, numbers and strings only, so it loads with
``torch.load(..., weights_only=True)``.  A run started with an existing checkpoint continues
from it and ends with bit-identical parameters to an uninterrupted run.  A ``fingerprint``
(any JSON-like dict describing the run configuration) is stored and must match on resume.

Sketch of use (see ``inference/noisyor/amortized.py``; streams from :mod:`noisyor_bench.inference.seeding` for a full one)::

    noise = stream_generator(seed, "elbo-samples", device)
    trainer = Trainer(
        module=net,                                   # all trained parameters (+ buffers)
        loss_fn=lambda idx, step: per_point_loss(x_train[idx], step, noise),
        optimizer=Adam(net.parameters(), lr=lr),         # noisyor_bench.inference.adam
        n_train=len(x_train),
        budget=budget,
        shuffle_generator=stream_generator(seed, "shuffle"),
        val_fn=lambda: held_out_loss(x_val),         # run under torch.no_grad()
        generators={"noise": noise},                  # checkpointed with the run
        checkpoint_path=path_or_None,
        fingerprint={"hparams": hparams, "seed": seed},
    )
    history = trainer.run(progress)                   # best state restored into net
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn

from noisyor_bench.inference import deadline
from noisyor_bench.inference.convergence import Convergence, assess, monitored_values, plateau_reached
from noisyor_bench.inference.fitting import EpochRecord, FitBudget, check_budget, fit_budget_fields
from noisyor_bench.infra.errors import ConfigError, DataError, NonFiniteLossError
from noisyor_bench.infra.io import save_torch_atomic

CHECKPOINT_VERSION = 1

LossFn = Callable[[torch.Tensor, int], torch.Tensor]
ValFn = Callable[[], float]
ExtraFn = Callable[[int], Mapping[str, float]]
ProgressFn = Callable[[EpochRecord], None]


def validate_budget(budget: FitBudget) -> None:
    """Reject budgets that cannot describe a run (ConfigError naming the field)."""
    check_budget(budget, "fit budget")


def _clone_state(module: nn.Module) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in module.state_dict().items()}


def _fmt(value: float | None) -> str:
    return "none yet" if value is None else f"{value:.6g}"


@dataclass
class RunProgress:
    """Mutable loop state of one run; everything here goes into the checkpoint."""

    epoch: int = 0  # completed epochs
    step: int = 0  # completed optimiser steps
    best_value: float = math.inf
    best_epoch: int = 0
    bad_evals: int = 0
    finished: bool = False
    stop_reason: str = ""
    last_train: float | None = None
    last_val: float | None = None


def passes_per_epoch(n_train: int, budget: FitBudget) -> int:
    """Passes over ``n_train`` rows per epoch: enough for ``budget.min_epoch_steps`` steps."""
    batches = math.ceil(n_train / budget.batch_size)
    return max(1, math.ceil(budget.min_epoch_steps / batches))


def evaluates_at(epoch: int, budget: FitBudget) -> bool:
    """Whether the validation loss is computed after ``epoch`` (1-based): every
    ``eval_every`` epochs and at the last epoch."""
    return epoch % budget.eval_every == 0 or epoch == budget.max_epochs


def update_stopping(s: RunProgress, monitored: float | None, epoch: int, budget: FitBudget) -> bool:
    """The early-stopping rule after ``epoch`` (``s.epoch`` already counts it): a lower
    ``monitored`` loss becomes the best (returns True: keep the state), otherwise one more bad
    evaluation; ``patience`` bad evaluations or ``max_epochs`` finish the run."""
    improved = False
    if monitored is not None:
        if monitored < s.best_value:
            s.best_value, s.best_epoch, s.bad_evals = monitored, epoch, 0
            improved = True
        else:
            s.bad_evals += 1
    if s.bad_evals >= budget.patience:
        s.finished, s.stop_reason = True, "patience"
    elif s.epoch >= budget.max_epochs:
        s.finished, s.stop_reason = True, "max_epochs"
    return improved


class Trainer:
    """Minibatch training loop; see the module docstring for the contract."""

    def __init__(
        self,
        module: nn.Module,
        loss_fn: LossFn,
        optimizer: torch.optim.Optimizer,
        n_train: int,
        budget: FitBudget,
        shuffle_generator: torch.Generator,
        val_fn: ValFn | None = None,
        generators: Mapping[str, torch.Generator] | None = None,
        checkpoint_path: str | Path | None = None,
        extra_fn: ExtraFn | None = None,
        fingerprint: Mapping[str, Any] | None = None,
        stop_on_plateau: bool = False,
    ) -> None:
        """``extra_fn(step)`` adds method-specific columns to each epoch's record (called
        with the number of completed steps, e.g. to log the current temperature)."""
        validate_budget(budget)
        if n_train < 1:
            raise DataError("training set is empty: need at least one training row")
        if shuffle_generator.device.type != "cpu":
            raise ValueError("shuffle_generator must be a CPU generator")
        self.module = module
        self.loss_fn = loss_fn
        self.val_fn = val_fn
        self.optimizer = optimizer
        self.n_train = int(n_train)
        self.budget = budget
        self.generators: dict[str, torch.Generator] = {"shuffle": shuffle_generator, **(generators or {})}
        self.checkpoint_path = Path(checkpoint_path) if checkpoint_path is not None else None
        self.extra_fn = extra_fn
        self.fingerprint = dict(fingerprint or {})
        # Stop as soon as the convergence rule (inference.convergence) holds on the curve so far
        # (stop reason "plateau"); max_epochs is then a cap (aviPAM's quick grid: docs/avipam.md).
        self.stop_on_plateau = bool(stop_on_plateau)
        if self.stop_on_plateau:
            self.fingerprint["stop_on_plateau"] = True
        self.fingerprint["budget"] = fit_budget_fields(budget)
        self.fingerprint["n_train"] = self.n_train
        self.state = RunProgress()
        self.history: list[EpochRecord] = []
        self.best_state: dict[str, torch.Tensor] = _clone_state(module)

    # ------------------------------------------------------------------ public
    @property
    def best_epoch(self) -> int:
        return self.state.best_epoch

    @property
    def stop_reason(self) -> str:
        """``"patience"`` (early stop), ``"plateau"`` (``stop_on_plateau``) or ``"max_epochs"``; empty before the run ends."""
        return self.state.stop_reason

    def convergence(self) -> Convergence:
        """Whether the finished fit converged (:func:`noisyor_bench.inference.convergence.assess`)."""
        best = self.state.best_epoch or None
        return assess(self.history, self.stop_reason, best, self.budget)

    @property
    def passes_per_epoch(self) -> int:
        """Passes over the training set per epoch: enough for ``budget.min_epoch_steps`` steps."""
        return passes_per_epoch(self.n_train, self.budget)

    def run(self, progress: ProgressFn | None = None) -> list[EpochRecord]:
        """Train (or resume), restore the best state into ``module`` and return the curve.

        Inside :func:`~noisyor_bench.inference.deadline.pause_after`, raises
        :class:`~noisyor_bench.inference.deadline.Paused` at the first epoch end past the deadline
        (checkpoint written, best state not restored)."""
        if self.checkpoint_path is not None and self.checkpoint_path.exists():
            self._load_checkpoint(self.checkpoint_path)
        while not self.state.finished:
            record = self._run_epoch()
            self.history.append(record)
            self._update_stopping(record)
            self._save_checkpoint()
            if progress is not None:
                progress(record)
            if self.checkpoint_path is not None and not self.state.finished and deadline.due():
                raise deadline.Paused(record.epoch)  # the checkpoint above is this epoch's
        self.module.load_state_dict(self.best_state)
        return list(self.history)

    # ------------------------------------------------------------------ one epoch
    def _run_epoch(self) -> EpochRecord:
        start, cpu_start = time.perf_counter(), time.process_time()
        epoch = self.state.epoch + 1
        self.module.train()
        total = 0.0
        for _ in range(self.passes_per_epoch):
            perm = torch.randperm(self.n_train, generator=self.generators["shuffle"])
            for batch_idx in torch.split(perm, self.budget.batch_size):
                total += self._step(batch_idx, epoch) * len(batch_idx)
        train = total / (self.n_train * self.passes_per_epoch)
        self.state.last_train = train
        self._check_parameters(epoch)
        val = None
        if self.val_fn is not None and evaluates_at(epoch, self.budget):
            self.module.eval()
            with torch.no_grad():
                val = float(self.val_fn())
            if not math.isfinite(val):
                raise self._diverged(epoch, f"non-finite validation loss ({val})")
            self.state.last_val = val
        self.state.epoch = epoch
        extra = {k: float(v) for k, v in (self.extra_fn(self.state.step) if self.extra_fn else {}).items()}
        seconds, cpu = time.perf_counter() - start, time.process_time() - cpu_start
        return EpochRecord(
            epoch=epoch, train_nelbo=train, val_nelbo=val, seconds=seconds, extra=extra, cpu_seconds=cpu
        )

    def _step(self, batch_idx: torch.Tensor, epoch: int) -> float:
        losses = self.loss_fn(batch_idx, self.state.step)
        if losses.ndim != 1 or losses.shape[0] != len(batch_idx):
            raise ValueError(
                f"loss_fn must return per-datapoint losses of shape ({len(batch_idx)},); got {tuple(losses.shape)}"
            )
        loss = losses.mean()
        value = float(loss.detach())
        if not math.isfinite(value):
            raise self._diverged(epoch, f"non-finite training loss ({value})")
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        self.optimizer.step()
        self.state.step += 1
        return value

    def _check_parameters(self, epoch: int) -> None:
        for name, p in self.module.named_parameters():
            if not bool(torch.isfinite(p).all()):
                raise self._diverged(epoch, f"non-finite values in parameter {name!r}")

    def _diverged(self, epoch: int, what: str) -> NonFiniteLossError:
        s = self.state
        return diverged(
            f"{what} at epoch {epoch}, optimiser step {s.step} (0-based)",
            s.last_train,
            s.last_val,
            lower_lr_hint("'lr'"),
        )

    # ------------------------------------------------------------------ stopping
    def _update_stopping(self, record: EpochRecord) -> None:
        monitored = record.val_nelbo if self.val_fn is not None else record.train_nelbo
        if update_stopping(self.state, monitored, record.epoch, self.budget):
            self.best_state = _clone_state(self.module)
        if self.stop_on_plateau and self.state.stop_reason != "patience":
            _, values = monitored_values(self.history)  # the values assess() will judge
            if plateau_reached(values, self.budget.convergence_window, self.budget.convergence_rel_tol):
                self.state.finished, self.state.stop_reason = True, "plateau"

    # ------------------------------------------------------------------ checkpoints
    def _save_checkpoint(self) -> None:
        if self.checkpoint_path is None:
            return
        payload = {
            "version": CHECKPOINT_VERSION,
            "fingerprint": self.fingerprint,
            "module": self.module.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "generators": {name: g.get_state() for name, g in self.generators.items()},
            "best_state": self.best_state,
            "progress": asdict(self.state),
            "history": [asdict(r) for r in self.history],
        }
        write_checkpoint(self.checkpoint_path, payload)

    def _load_checkpoint(self, path: Path) -> None:
        payload = read_checkpoint(path, self.fingerprint)
        missing = set(payload["generators"]) ^ set(self.generators)
        if missing:
            raise DataError(
                f"checkpoint {path} holds generators {sorted(payload['generators'])}, expected {sorted(self.generators)}"
            )
        self.module.load_state_dict(payload["module"])
        self.optimizer.load_state_dict(payload["optimizer"])
        for name, g in self.generators.items():
            g.set_state(payload["generators"][name])
        self.best_state = payload["best_state"]
        self.state = RunProgress(**payload["progress"])
        self.history = [EpochRecord(**r) for r in payload["history"]]


def _check_fingerprint(path: Path, saved: Mapping[str, Any], current: Mapping[str, Any]) -> None:
    """A checkpoint may only resume the run that wrote it."""
    if saved == current:
        return
    for key in sorted(set(saved) | set(current)):
        if saved.get(key) != current.get(key):
            raise ConfigError(
                f"checkpoint {path} belongs to a different run configuration: {key!r} is "
                f"{saved.get(key)!r} there but {current.get(key)!r} now. Delete the checkpoint to start afresh."
            )


def load_checkpoint(path: str | Path) -> dict[str, Any]:
    """Read a trainer checkpoint (safe loader: ``weights_only=True``)."""
    return torch.load(Path(path), map_location="cpu", weights_only=True)


def write_checkpoint(path: str | Path, payload: Mapping[str, Any]) -> None:
    """``torch.save`` into a temporary file, then rename: a kill never leaves half a checkpoint,
    a full disk is reported as ENOSPC naming ``path`` (:func:`~noisyor_bench.infra.io.save_torch_atomic`)."""
    save_torch_atomic(path, dict(payload))


def checkpoint_epoch(path: str | Path) -> int:
    """The last epoch a checkpoint holds (a :class:`Trainer`'s or a classical fit's), read
    without loading its tensors (memory-mapped).  DataError for an unreadable file."""
    path = Path(path)
    try:
        payload = torch.load(path, map_location="cpu", weights_only=True, mmap=True)
        return int((payload.get("progress") or payload["loop"])["epoch"])
    except Exception as exc:  # corrupt / foreign file
        raise DataError(
            f"cannot read the epoch of training checkpoint {path} ({type(exc).__name__}): it is corrupt, "
            "truncated or not a noisyor-bench checkpoint"
        ) from exc


def read_checkpoint(path: str | Path, fingerprint: Mapping[str, Any]) -> dict[str, Any]:
    """Load a checkpoint written by :func:`write_checkpoint` for the run ``fingerprint``.

    ``weights_only=True``: a checkpoint holds tensors and plain values, never pickled code.
    DataError for an unreadable file or another format version, ConfigError when the
    checkpoint belongs to another run configuration.
    """
    path = Path(path)
    try:
        payload = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # corrupt / foreign file
        raise DataError(
            f"cannot read training checkpoint {path} ({type(exc).__name__}): it is corrupt, truncated or not "
            "a noisyor-bench checkpoint. Delete it (or re-run with --no-resume) to start afresh."
        ) from exc
    if not isinstance(payload, dict) or payload.get("version") != CHECKPOINT_VERSION:
        version = payload.get("version") if isinstance(payload, dict) else None
        raise DataError(
            f"checkpoint {path} has version {version!r}, expected {CHECKPOINT_VERSION}. "
            "Delete it (or re-run with --no-resume) to start afresh."
        )
    _check_fingerprint(path, payload.get("fingerprint", {}), fingerprint)
    return payload


def diverged(where: str, last_train: float | None, last_val: float | None, hint: str) -> NonFiniteLossError:
    """The error of a diverged fit: where it happened, the last finite losses and ``hint``
    (what to change, e.g. which learning rate).  The caller that knows the run
    (``runs.execute_run``) prefixes the run's identity."""
    return NonFiniteLossError(
        f"{where}; last finite train loss {_fmt(last_train)}, last finite validation loss {_fmt(last_val)}. "
        f"Training diverged: {hint}."
    )


def lower_lr_hint(keys: str) -> str:
    """The usual remedy of a divergence, naming the learning-rate hyperparameter(s) ``keys``."""
    return f"lower the learning rate (hyperparameter {keys}) or check the data"


__all__ = [
    "NonFiniteLossError",
    "RunProgress",
    "Trainer",
    "checkpoint_epoch",
    "diverged",
    "evaluates_at",
    "load_checkpoint",
    "lower_lr_hint",
    "passes_per_epoch",
    "read_checkpoint",
    "update_stopping",
    "validate_budget",
    "write_checkpoint",
]
