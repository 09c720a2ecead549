"""Registry of inference methods (paper Table 1), imported lazily by name."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from noisyor_bench.infra.errors import ConfigError

if TYPE_CHECKING:  # the base class imports torch; the registry must not
    from noisyor_bench.inference.base import InferenceMethod

# name -> "module:Class" inside this package
_REGISTRY: dict[str, str] = {
    "avi": "avi:AVI",
    "acp": "acp:ACP",
    "svi": "svi:SVI",
    "lb-cdi": "lbcdi:LBCDI",
    "ub-cdi": "ubcdi:UBCDI",
    "acp-sg": "acp:ACPStopGrad",  # ablation: ACP with theta detached in eq. 11 (learning mode only)
}

LEARNING_ONLY: tuple[str, ...] = ("acp-sg",)
"""Methods that exist only in learning mode (refused in inference experiments)."""

METHOD_NAMES: tuple[str, ...] = tuple(_REGISTRY)


def get_method(name: str) -> type[InferenceMethod]:
    """The method class registered under ``name`` (e.g. ``"acp"``)."""
    try:
        module_name, class_name = _REGISTRY[name].split(":")
    except KeyError:
        raise ConfigError(f"unknown method {name!r}; allowed: {', '.join(METHOD_NAMES)}") from None
    module = importlib.import_module(f"{__package__}.{module_name}")
    return getattr(module, class_name)
