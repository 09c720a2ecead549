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


@dataclass
class EpochRecord:
    """One row of the training curve (``curve.csv``); ``extra`` holds method-specific columns."""

    epoch: int
    train_nelbo: float
    val_nelbo: float | None
    seconds: float
    extra: dict[str, float] = field(default_factory=dict)
