"""Plain records of a fit (no torch), shared by the methods, the trainer and the CLI."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass
class FitBudget:
    """Limits of one fit: epochs (or fixed-point rounds), patience and evaluation cadence, and
    the rule that says afterwards whether a fit stopped by its epoch limit had converged."""

    max_epochs: int = 200
    patience: int = 10
    batch_size: int = 128
    eval_every: int = 1
    # Minibatch trainers (AVI, ACP): an epoch is as many passes over the training set as it
    # takes to make at least this many optimiser steps, so that small training sets (N=10-100,
    # one minibatch) are not stopped after a handful of steps by an epoch budget sized for
    # thousands of points.  1 = one pass (the usual epoch).
    min_epoch_steps: int = 1
    # Convergence (noisyor_bench.inference.convergence): a fit that reached max_epochs converged if the
    # best monitored NELBO of its last `convergence_window` evaluations improved on the best
    # before them by less than `convergence_rel_tol` (relative).  They only judge the finished
    # curve: they never change the fit, so they are not part of checkpoint fingerprints.
    convergence_window: int = 5
    convergence_rel_tol: float = 1e-3


CONFIG_BUDGET_FIELDS = ("max_epochs", "patience", "batch_size")
"""The budget keys a config's experiment grid fills in when an experiment sets none."""


def config_budget_defaults() -> dict[str, Any]:
    """``{max_epochs, patience, batch_size}`` at :class:`FitBudget`'s defaults (a fresh dict):
    the config grids' default budget, so the defaults live in one place."""
    defaults = FitBudget()
    return {name: getattr(defaults, name) for name in CONFIG_BUDGET_FIELDS}


BUDGET_FIELDS = (
    "max_epochs",
    "patience",
    "batch_size",
    "eval_every",
    "min_epoch_steps",
    "convergence_window",
    "convergence_rel_tol",
)
BUDGET_FLOAT_FIELDS = ("convergence_rel_tol",)
"""Budget keys that are positive real numbers; every other key is an integer >= 1."""
BUDGET_INT_FIELDS = tuple(f for f in BUDGET_FIELDS if f not in BUDGET_FLOAT_FIELDS)
CONVERGENCE_FIELDS = ("convergence_window", "convergence_rel_tol")
"""Budget keys that judge a finished curve and never change the fit (not in fingerprints)."""


def check_budget(budget: FitBudget, where: str = "fit budget") -> None:
    """ConfigError naming the field unless every integer key is an int >= 1 and every float
    key a finite number > 0 (``where`` prefixes the field: ``"budget."`` gives ``budget.patience``)."""
    from noisyor_bench.infra.errors import ConfigError

    sep = "" if where.endswith(".") else " "
    for name in BUDGET_INT_FIELDS:
        value = getattr(budget, name)
        if not _is_int(value) or value < 1:
            raise ConfigError(f"{where}{sep}{name} must be an integer >= 1; got {value!r}")
    for name in BUDGET_FLOAT_FIELDS:
        value = getattr(budget, name)
        ok = (
            isinstance(value, (int, float))
            and not isinstance(value, bool)
            and math.isfinite(value)
            and value > 0
        )
        if not ok:
            raise ConfigError(f"{where}{sep}{name} must be a number > 0; got {value!r}")


def _is_int(value: Any) -> bool:
    import numpy as np

    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


def fit_budget_fields(budget: FitBudget) -> dict[str, Any]:
    """The budget keys that shape the fit (for checkpoint fingerprints / resume keys): all but
    :data:`CONVERGENCE_FIELDS`, so a checkpoint resumes under a changed convergence rule."""
    return {k: v for k, v in asdict(budget).items() if k not in CONVERGENCE_FIELDS}


def budget_from_mapping(values: dict, where: str = "budget") -> FitBudget:
    """A :class:`FitBudget` from a JSON/YAML mapping; unknown keys raise ConfigError naming them."""
    from noisyor_bench.infra.errors import ConfigError

    unknown = sorted(set(values) - set(BUDGET_FIELDS))
    if unknown:
        raise ConfigError(
            f"{where}: unknown key(s) {', '.join(map(repr, unknown))}; allowed: {', '.join(BUDGET_FIELDS)}"
        )
    return FitBudget(**values)


@dataclass
class EpochRecord:
    """One row of the training curve (``curve.csv``); ``extra`` holds method-specific columns.

    ``seconds`` is the epoch's wall time; ``cpu_seconds`` the CPU time the process spent on it
    (``time.process_time``: every thread; ``None`` where a loop does not measure it).  A
    one-thread run's CPU time is the wall time it would take on an idle core, so a speed claim
    judged on it does not move with the machine's load (:mod:`noisyor_bench.infra.timing`)."""

    epoch: int
    train_nelbo: float
    val_nelbo: float | None
    seconds: float
    extra: dict[str, float] = field(default_factory=dict)
    cpu_seconds: float | None = None
