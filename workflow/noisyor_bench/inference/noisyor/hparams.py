"""Hyperparameters of the classical methods (SVI, LB-CDI, UB-CDI): defaults, types and ranges.

A method declares ``DEFAULTS`` (the type of each default is the type it accepts);
:func:`resolve_hparams` merges the user's values into them and :func:`require` states a
range, each failing with a ConfigError that names the method and the hyperparameter.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch

from noisyor_bench.infra.errors import ConfigError


def resolve_hparams(method: str, defaults: Mapping[str, Any], given: Mapping[str, Any]) -> dict[str, Any]:
    """``defaults`` overridden by ``given``; unknown keys and wrong types raise ConfigError.

    Types follow the defaults: an int default needs an int (not bool), a float default accepts
    ints, a str default needs a str.  Shared by SVI, LB-CDI and UB-CDI.
    """
    unknown = sorted(set(given) - set(defaults))
    if unknown:
        raise ConfigError(
            f"{method}: unknown hyperparameter(s) {', '.join(map(repr, unknown))}; "
            f"allowed: {', '.join(sorted(defaults))}"
        )
    out = dict(defaults)
    for key, value in given.items():
        want = type(defaults[key])
        ok = (
            isinstance(value, str)
            if want is str
            else not isinstance(value, bool) and isinstance(value, int if want is int else (int, float))
        )
        if not ok:
            raise ConfigError(f"{method}: hyperparameter {key!r} must be {want.__name__}; got {value!r}")
        out[key] = float(value) if want is float else value
    return out


def require(method: str, condition: bool, key: str, value: Any, what: str) -> None:
    """Raise ConfigError ``<method>: hyperparameter <key> must be <what>; got <value>`` unless ``condition``."""
    if not condition:
        raise ConfigError(f"{method}: hyperparameter {key!r} must be {what}; got {value!r}")


def torch_dtype(method: str, name: str) -> torch.dtype:
    """``"float64"``/``"float32"`` -> torch dtype (ConfigError otherwise)."""
    table = {"float64": torch.float64, "float32": torch.float32}
    require(method, name in table, "dtype", name, "one of float64, float32")
    return table[name]


__all__ = ["require", "resolve_hparams", "torch_dtype"]
