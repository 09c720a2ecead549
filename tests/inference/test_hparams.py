"""Hyperparameter resolution of the classical methods (noisyor_bench.inference.noisyor.hparams)."""

from __future__ import annotations

import pytest

from noisyor_bench.inference.noisyor.hparams import resolve_hparams
from noisyor_bench.infra.errors import ConfigError


def test_resolve_hparams_rejects_unknown_keys_and_wrong_types():
    defaults = {"tol": 1e-6, "rounds": 10, "init": "prior"}
    assert resolve_hparams("m", defaults, {"tol": 1, "rounds": 3}) == {
        "tol": 1.0,
        "rounds": 3,
        "init": "prior",
    }
    with pytest.raises(ConfigError, match=r"unknown hyperparameter.*'bogus'.*allowed: init, rounds, tol"):
        resolve_hparams("m", defaults, {"bogus": 1})
    with pytest.raises(ConfigError, match="'rounds' must be int"):
        resolve_hparams("m", defaults, {"rounds": 2.5})
    with pytest.raises(ConfigError, match="'rounds' must be int"):
        resolve_hparams("m", defaults, {"rounds": True})
