"""Plain records of a fit (no torch), shared by the methods, the trainer and the CLI."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class FitBudget:
    """Limits of one fit: epochs (or fixed-point rounds), patience and evaluation cadence."""

    max_epochs: int = 200
    patience: int = 10
    batch_size: int = 128
    eval_every: int = 1
    # Minibatch trainers (AVI, ACP): an epoch is as many passes over the training set as it
    # takes to make at least this many optimiser steps, so that small training sets (N=10-100,
    # one minibatch) are not stopped after a handful of steps by an epoch budget sized for
    # thousands of points.  1 = one pass (the usual epoch).
    min_epoch_steps: int = 1


BUDGET_FIELDS = ("max_epochs", "patience", "batch_size", "eval_every", "min_epoch_steps")


def budget_from_mapping(values: dict, where: str = "budget") -> FitBudget:
    """A :class:`FitBudget` from a JSON/YAML mapping; unknown keys raise ConfigError naming them."""
    from .errors import ConfigError

    unknown = sorted(set(values) - set(BUDGET_FIELDS))
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {', '.join(map(repr, unknown))}; allowed: {', '.join(BUDGET_FIELDS)}")
    return FitBudget(**values)


@dataclass
class EpochRecord:
    """One row of the training curve (``curve.csv``); ``extra`` holds method-specific columns."""

    epoch: int
    train_nelbo: float
    val_nelbo: float | None
    seconds: float
    extra: dict[str, float] = field(default_factory=dict)
