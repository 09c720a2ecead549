"""The registry is the one source of what a method is (amortized, modes, the refusal's reason)."""

from __future__ import annotations

import pytest
import torch

from noisyor_bench.inference.noisyor.classical import ClassicalMethod
from noisyor_bench.inference.noisyor.registry import METHODS, NON_AMORTIZED, get_method
from noisyor_bench.infra.errors import ConfigError
from noisyor_bench.models.noisyor.model import NoisyOR


@pytest.mark.parametrize("info", METHODS, ids=lambda m: m.name)
def test_classes_read_their_identity_from_the_registry(info) -> None:
    cls = get_method(info.name)
    assert cls.name == info.name
    assert (cls.amortized, cls.modes, cls.modes_reason) == (info.amortized, info.modes, info.modes_reason)
    assert issubclass(cls, ClassicalMethod) == (info.name in NON_AMORTIZED)


@pytest.mark.parametrize("info", [m for m in METHODS if len(m.modes) == 1], ids=lambda m: m.name)
def test_a_refused_mode_names_the_registry_reason(info) -> None:
    model = NoisyOR.from_numpy(
        torch.full((3, 2), 0.5).numpy(), torch.full((3,), 0.1).numpy(), torch.full((2,), 0.3).numpy()
    )
    refused = "inference" if info.modes == ("learning",) else "learning"
    with pytest.raises(ConfigError, match=f"{info.name} cannot run in {refused} mode") as err:
        get_method(info.name)(model, refused, {}, seed=0)
    assert info.modes_reason in str(err.value)
