"""Random hyperparameter search (supplement Section 3: 100 random draws, best kept).

A draw is a pure function of ``(space, search seed, draw index)``, so the hyperparameters of
every draw are plain values known when the DAG is built: Snakemake sees them as rule params
and reruns exactly the draws whose values change.  Draw 0 is always the method's defaults, so
a grid with ``draws: 1`` runs no search at all.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from noisyor_bench.infra.errors import ConfigError

DISTRIBUTIONS = ("choice", "uniform", "loguniform", "int")


def _draw_one(name: str, dist: Mapping[str, Any], rng: np.random.Generator) -> Any:
    if len(dist) != 1 or next(iter(dist)) not in DISTRIBUTIONS:
        raise ConfigError(
            f"search space entry {name!r}: {dict(dist)!r} must have exactly one of {', '.join(DISTRIBUTIONS)}"
        )
    kind, arg = next(iter(dist.items()))
    if kind == "choice":
        if not isinstance(arg, list) or not arg:
            raise ConfigError(f"search space entry {name!r}: choice needs a non-empty list")
        return arg[int(rng.integers(len(arg)))]
    lo, hi = arg
    if not lo <= hi:
        raise ConfigError(f"search space entry {name!r}: {kind} bounds [{lo}, {hi}] are not ordered")
    if kind == "uniform":
        return float(rng.uniform(lo, hi))
    if kind == "loguniform":
        if lo <= 0:
            raise ConfigError(f"search space entry {name!r}: loguniform needs positive bounds, got {lo}")
        return float(math.exp(rng.uniform(math.log(lo), math.log(hi))))
    return int(rng.integers(int(lo), int(hi) + 1))  # int: inclusive bounds


def sample_hparams(space: Mapping[str, Mapping[str, Any]], seed: int, draw: int) -> dict[str, Any]:
    """Hyperparameters of draw ``draw``: ``{}`` (the method's defaults) for draw 0."""
    if draw < 0:
        raise ConfigError(f"search draw must be >= 0, got {draw}")
    if draw == 0:
        return {}
    rng = np.random.default_rng(np.random.SeedSequence([seed, draw]))
    return {name: _draw_one(name, space[name], rng) for name in sorted(space)}


def best_draw(val_nelbos: Mapping[int, float]) -> int:
    """The draw with the lowest finite validation NELBO (ties: lowest index)."""
    finite = {d: v for d, v in val_nelbos.items() if v is not None and math.isfinite(v)}
    if not finite:
        raise ConfigError(
            "every search draw diverged (no finite validation NELBO); widen or fix the search space"
        )
    return min(sorted(finite), key=lambda d: finite[d])
