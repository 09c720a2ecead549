"""The inference methods (paper Table 1 and the ablation): the one list every layer reads.

Each entry says what the rest of the workflow needs to know about a method without importing
torch: its CLI/wildcard name, the paper's label, the class that implements it (imported lazily),
whether it is amortized and searched, the modes it exists in, and its colour and marker in every
figure.  The Snakefile's wildcard constraint, the config validation, the tables' column order and
labels, the plots' colours, which jobs hold a GPU, the cost model's rows per epoch and the claims'
search deviation are all derived from :data:`METHODS`; adding a method is one entry here and one
module beside this one.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass

from noisyor_bench.infra.errors import ConfigError

BOTH_MODES: tuple[str, ...] = ("inference", "learning")


@dataclass(frozen=True)
class MethodInfo:
    """What the workflow knows about one method (see the module docstring)."""

    name: str  # CLI, config and wildcard name, e.g. "lb-cdi"
    label: str  # the paper's name, e.g. "LB-CDI"
    entry: str  # "module:Class" inside noisyor_bench.inference
    amortized: bool  # one encoder for all datapoints (AVI, ACP) vs per-datapoint optimisation
    colour: str  # Okabe-Ito palette (colour-blind safe), the same in every figure
    marker: str
    modes: tuple[str, ...] = BOTH_MODES
    modes_reason: str = ""  # why a method exists in fewer modes
    ablates: str | None = None  # the method this one is an ablation of (shown next to it)
    searched: bool | None = None
    """Whether the paper's protocol draws its hyperparameters by random search (supplement
    Section 3) instead of running its documented defaults; ``None``: as :attr:`amortized` (the
    paper searched AVI and ACP and ran SVI, LB-CDI and UB-CDI with their defaults).  The config's
    ``search_spaces`` give the spaces, only for searched methods."""

    def __post_init__(self) -> None:
        if self.searched is None:
            object.__setattr__(self, "searched", self.amortized)

    @property
    def deterministic_in_inference(self) -> bool:
        """A per-datapoint optimisation on the held-out rows with the true model: no seed enters
        it, so one value per setting (the classical methods in inference mode)."""
        return not self.amortized


# Paper Table 1's order, then the ablations; tables and legends use :func:`display_order`.
METHODS: tuple[MethodInfo, ...] = (
    MethodInfo("avi", "AVI", "avi:AVI", True, "#0072B2", "o"),  # blue
    MethodInfo("acp", "ACP", "acp:ACP", True, "#D55E00", "s"),  # vermillion
    MethodInfo("svi", "SVI", "svi:SVI", False, "#009E73", "^"),  # bluish green
    MethodInfo("lb-cdi", "LB-CDI", "lbcdi:LBCDI", False, "#CC79A7", "D"),  # reddish purple
    MethodInfo(
        "ub-cdi",
        "UB-CDI",
        "ubcdi:UBCDI",
        False,
        "#E69F00",  # orange
        "v",
        modes=("inference",),
        modes_reason="UB-CDI is an inference-only baseline (paper Section 4.2: no global parameters, "
        "the paper does not use it for learning); allowed: inference",
    ),
    MethodInfo(
        "acp-sg",
        "ACP-SG",
        "acp:ACPStopGrad",
        True,
        "#000000",  # black: the ablation of ACP (theta stopped in eq. 11)
        "X",
        modes=("learning",),
        modes_reason="acp-sg (ACP with theta stopped in eq. 11) is a learning-mode ablation: in inference "
        "mode theta is fixed and acp-sg equals acp; use it only in learning experiments",
        ablates="acp",
    ),
)

_BY_NAME: dict[str, MethodInfo] = {m.name: m for m in METHODS}

METHOD_NAMES: tuple[str, ...] = tuple(m.name for m in METHODS)
LEARNING_ONLY: tuple[str, ...] = tuple(m.name for m in METHODS if m.modes == ("learning",))
"""Methods that exist only in learning mode (refused in inference experiments)."""
NON_AMORTIZED: tuple[str, ...] = tuple(m.name for m in METHODS if not m.amortized)
AMORTIZED: tuple[str, ...] = tuple(m.name for m in METHODS if m.amortized)
"""Methods fitted by minibatch network training: CUDA-capable (their jobs hold a GPU), and an
epoch touches at least ``min_epoch_steps`` batches; the others fit each data point on its own."""
SEARCHED: tuple[str, ...] = tuple(m.name for m in METHODS if m.searched)
"""Methods whose hyperparameters the paper searched (:attr:`MethodInfo.searched`): fewer draws
than the paper's is a protocol deviation of the claims that read them."""
ABLATIONS: tuple[str, ...] = tuple(m.name for m in METHODS if m.ablates is not None)
"""Our ablations (not methods of the paper): never a competitor in a claim about its methods."""


def method_info(name: str) -> MethodInfo:
    """The registry entry of ``name``; a clear error naming the allowed methods otherwise."""
    try:
        return _BY_NAME[name]
    except KeyError:
        raise ConfigError(f"unknown method {name!r}; allowed: {', '.join(METHOD_NAMES)}") from None


def get_method(name: str) -> type:
    """The :class:`~noisyor_bench.inference.noisyor.base.InferenceMethod` subclass registered under
    ``name`` (e.g. ``"acp"``), imported on first use (the registry itself never imports torch,
    nor the base class, which reads its identity from here)."""
    module_name, class_name = method_info(name).entry.split(":")
    module = importlib.import_module(f"{__package__}.{module_name}")
    return getattr(module, class_name)


def wildcard_pattern() -> str:
    """The Snakefile's ``method`` wildcard constraint: exactly the registered names."""
    return "|".join(METHOD_NAMES)


def display_order() -> tuple[str, ...]:
    """Tables' column and figures' legend order: registry order, each ablation after its method."""
    order: list[str] = []
    for m in METHODS:
        if m.ablates is None:
            order.append(m.name)
            order.extend(a.name for a in METHODS if a.ablates == m.name)
    return tuple(order)
