"""The one interface every inference method implements.

A method owns a factorised Bernoulli posterior ``q(z | x)`` and, in learning mode, the
generative parameters of a :class:`~noisyor_bench.models.noisyor.model.NoisyOR`.  In inference mode the
generative model is fixed at the ground truth and only the inference side is fitted.

* ``fit(x_train, x_val, ...)`` fits the *global* parameters (an encoder and/or the
  generative model) on training data, using the validation set only for early stopping and
  model selection.
* ``posterior(x)`` returns ``q(z_k = 1 | x)`` for new data.  Amortized methods run their
  encoder; non-amortized methods (SVI, LB-CDI, UB-CDI) optimise their per-datapoint
  parameters on ``x`` with the generative model held fixed -- which is how the paper
  evaluates them on held-out data (Section 4.2).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Literal

import torch

from noisyor_bench.inference.fitting import EpochRecord, FitBudget
from noisyor_bench.inference.noisyor.registry import BOTH_MODES, METHOD_NAMES, method_info
from noisyor_bench.inference.seeding import derive_init_seed
from noisyor_bench.infra.errors import ConfigError
from noisyor_bench.models.noisyor.model import NoisyOR

Mode = Literal["inference", "learning"]


@dataclass(frozen=True)
class PosteriorProgress:
    """How far a non-amortized ``posterior(x)`` optimised its per-datapoint parameters.

    ``steps``: optimisation steps taken (SVI: Adam steps on the logits; LB-CDI: E-step
    rounds), at most the method's cap (SVI ``posterior_steps``, LB-CDI ``max_rounds``);
    ``converged``: whether the method's tolerance stopped it before the cap.
    """

    steps: int
    converged: bool


class InferenceMethod(ABC):
    """Base class; subclasses set ``name`` and implement the abstract API.

    What the workflow knows about a method (``amortized``, the ``modes`` it exists in and
    ``modes_reason``) is read from its entry in :data:`noisyor_bench.inference.noisyor.registry.METHODS`
    when the subclass is defined, so the registry is the one source of it.
    """

    name: ClassVar[str]
    amortized: ClassVar[bool]
    modes: ClassVar[tuple[str, ...]] = BOTH_MODES
    modes_reason: ClassVar[str] = ""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        name = cls.__dict__.get("name")
        if name in METHOD_NAMES:  # a registered method (abstract intermediates and test fakes are not)
            info = method_info(name)
            cls.amortized, cls.modes, cls.modes_reason = info.amortized, info.modes, info.modes_reason

    def __init__(
        self,
        model: NoisyOR,
        mode: Mode,
        hparams: dict[str, Any],
        seed: int,
        device: torch.device | str = "cpu",
        init_key: str | None = None,
    ) -> None:
        """``seed``: the run's seed; ``init_key`` (e.g. ``"fig4/syn-pattern/n1000/final"``,
        :func:`~noisyor_bench.inference.seeding.run_init_key`): what the run's random streams derive
        from besides the seed.  ``self.init_seed`` (= ``seed`` without a key) is the root of
        every training stream (generative and encoder initialisation, shuffling, Monte Carlo
        noise); methods must draw from it, never from ``seed`` directly."""
        if mode not in ("inference", "learning"):
            raise ConfigError(f"{self.name}: unknown mode {mode!r}; allowed: inference, learning")
        if mode not in self.modes:  # the reason is the registry's (``MethodInfo.modes_reason``)
            raise ConfigError(f"{self.name} cannot run in {mode} mode: {self.modes_reason}")
        self.mode = mode
        self.hparams = dict(hparams)
        self.seed = seed
        self.init_key = init_key
        self.init_seed = derive_init_seed(seed, init_key)
        self.device = torch.device(device)

    @abstractmethod
    def fit(
        self,
        x_train: torch.Tensor,
        x_val: torch.Tensor,
        budget: FitBudget,
        progress: Callable[[EpochRecord], None] | None = None,
        checkpoint_path: str | Path | None = None,
    ) -> list[EpochRecord]:
        """Fit the global parameters; return the training curve.

        ``checkpoint_path``: where to save resumable state after each epoch (and resume
        from, when it exists).  A fit resumed from it returns the whole curve and ends
        bit-identical to an uninterrupted fit (every method of the registry does this;
        ``runs.execute_run`` falls back to a fresh start for a method without the argument).
        """

    @abstractmethod
    def posterior(self, x: torch.Tensor) -> torch.Tensor:
        """``q(z_k = 1 | x)`` for each row of ``x``: shape (N, K), values in [0, 1]."""

    @property
    @abstractmethod
    def generative(self) -> NoisyOR:
        """The generative model currently used (ground truth in inference mode)."""

    def resolved_hparams(self) -> dict[str, Any]:
        """Every hyperparameter after defaults (what ``metrics.json`` records as the run's
        resolved hyperparameters).  Methods that resolve ``hparams`` into ``self.hparams`` (the
        classical ones) need nothing more; the amortized ones return their parsed dataclass."""
        return dict(self.hparams)

    def state_dict(self) -> dict[str, Any]:
        """Everything needed to resume a fit (tensors and plain values only)."""
        raise NotImplementedError(f"{self.name} does not support checkpointing")

    def load_state_dict(self, state: dict[str, Any]) -> None:
        raise NotImplementedError(f"{self.name} does not support checkpointing")
