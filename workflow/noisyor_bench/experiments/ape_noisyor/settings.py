"""The grid section ``grids.<grid>.ape_noisyor`` as a checked record (schema: config.schema.yaml)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from noisyor_bench.inference.fitting import FitBudget, budget_from_mapping
from noisyor_bench.inference.noisyor.amortized import ENCODER_INPUTS
from noisyor_bench.infra.errors import ConfigError

EXPERIMENT = "ape-noisyor"  # the run directories' experiment name: results/runs/ape-noisyor/...
ENCODER_METHODS = ("avi", "acp")
BASELINE_METHODS = ("svi", "lb-cdi")


@dataclass(frozen=True)
class EncoderSpec:
    """One encoder of the comparison: an amortized method and what its encoder reads."""

    name: str
    method: str
    encoder_input: str


@dataclass(frozen=True)
class Settings:
    seed: int
    families: dict[str, dict[str, Any]]
    problems: dict[str, int]
    rows: dict[str, int]
    candidates: int
    encoders: dict[str, EncoderSpec]
    baselines: tuple[str, ...]
    seeds: tuple[int, ...]
    hparams: dict[str, Any]
    baseline_hparams: dict[str, dict[str, Any]]
    budget: FitBudget
    rows_per_model: int

    @property
    def n_train(self) -> int:
        """Training problems (the run directories' ``n<N>``)."""
        return int(self.problems["train"])


def parse_settings(section: Mapping[str, Any]) -> Settings:
    """The section, checked (ConfigError naming the key otherwise)."""
    where = "ape_noisyor"
    try:
        encoders = {}
        for name, spec in section["encoders"].items():
            if spec["method"] not in ENCODER_METHODS:
                raise ConfigError(f"{where}.encoders.{name}.method must be one of {ENCODER_METHODS}")
            if spec["input"] not in ENCODER_INPUTS:
                raise ConfigError(f"{where}.encoders.{name}.input must be one of {ENCODER_INPUTS}")
            encoders[name] = EncoderSpec(name, spec["method"], spec["input"])
        baselines = tuple(section.get("baselines", ()))
        for b in baselines:
            if b not in BASELINE_METHODS:
                raise ConfigError(f"{where}.baselines: {b!r} is not one of {BASELINE_METHODS}")
        settings = Settings(
            seed=int(section["seed"]),
            families={k: dict(v) for k, v in section["families"].items()},
            problems={k: int(section["problems"][k]) for k in ("train", "val", "test")},
            rows={k: int(section["rows"][k]) for k in ("train", "val", "test")},
            candidates=int(section["candidates"]),
            encoders=encoders,
            baselines=baselines,
            seeds=tuple(int(s) for s in section["seeds"]),
            hparams=dict(section.get("hparams", {})),
            baseline_hparams={k: dict(v) for k, v in section.get("baseline_hparams", {}).items()},
            budget=budget_from_mapping(dict(section["budget"]), f"{where}.budget"),
            rows_per_model=int(section["rows_per_model"]),
        )
    except KeyError as err:
        raise ConfigError(f"{where}: missing key {err}") from None
    if settings.candidates < 2:
        raise ConfigError(f"{where}.candidates must be >= 2 (pairs to rank); got {settings.candidates}")
    return settings


__all__ = ["BASELINE_METHODS", "EXPERIMENT", "EncoderSpec", "Settings", "parse_settings"]
