"""Random hyperparameter search (supplement Section 3: 100 random draws, best kept).

A draw is a pure function of ``(space, search seed, draw index)``, so the hyperparameters of
every draw are plain values known when the DAG is built: Snakemake sees them as rule params
and reruns exactly the draws whose values change.  Draw 0 is always the method's defaults, so
a grid with ``draws: 1`` runs no search at all.

Each draw is scored on ``inits_per_draw`` initialisations: the validation NELBO of a
single initialisation mostly measures initialisation luck (0.6-1 nat between an escaped and a
merged optimum against ~0.1 nat hyperparameter effects), so a draw's score is the mean over its
initialisations, and the lowest score is selected.
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


DEFAULT_INITS_PER_DRAW = 2


def check_inits_per_draw(value: Any, where: str = "search.inits_per_draw") -> int:
    """``value`` as a count of initialisations per draw (an int >= 1); ConfigError naming ``where``."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(
            f"{where}: expected an integer >= 1 (initialisations scored per draw), got {value!r}"
        )
    return value


def draw_score(val_nelbos: list[float]) -> float:
    """A draw's score: the mean validation NELBO over its initialisations; infinite when any
    initialisation diverged or left no finite NELBO (the draw's hyperparameters are not stable)."""
    if not val_nelbos:
        raise ConfigError("a search draw needs at least one initialisation's validation NELBO")
    values = [math.inf if v is None else float(v) for v in val_nelbos]
    if not all(math.isfinite(v) for v in values):
        return math.inf
    return float(sum(values) / len(values))


def best_draw(val_nelbos: Mapping[int, float]) -> int:
    """The draw with the lowest finite validation NELBO (ties: lowest index)."""
    finite = {d: v for d, v in val_nelbos.items() if v is not None and math.isfinite(v)}
    if not finite:
        raise ConfigError(
            "every search draw diverged (no finite validation NELBO); widen or fix the search space"
        )
    return min(sorted(finite), key=lambda d: finite[d])


def chunk_ranges(n_draws: int, per_job: int | None) -> list[tuple[int, int]]:
    """Draw ranges ``[start, stop)`` of a search split into jobs of ``per_job`` draws.

    ``None`` (or a value >= ``n_draws``) is one chunk, the whole search.  A draw's values and
    initialisation depend only on (cell, draw index, seed), so the split changes no number.
    """
    if n_draws < 1:
        raise ConfigError(f"a search needs at least one draw, got {n_draws}")
    if per_job is not None and per_job < 1:
        raise ConfigError(f"draws_per_job must be >= 1, got {per_job}")
    step = n_draws if per_job is None else min(per_job, n_draws)
    return [(start, min(start + step, n_draws)) for start in range(0, n_draws, step)]


def even_ranges(n_draws: int, n_chunks: int) -> list[tuple[int, int]]:
    """``n_draws`` split into ``n_chunks`` contiguous ranges whose sizes differ by at most one
    (the larger ones first); at most one chunk per draw."""
    if n_draws < 1:
        raise ConfigError(f"a search needs at least one draw, got {n_draws}")
    k = max(1, min(int(n_chunks), n_draws))
    bounds = [i * n_draws // k for i in range(k + 1)]
    sizes = sorted((b - a for a, b in zip(bounds, bounds[1:], strict=False)), reverse=True)
    starts = [sum(sizes[:i]) for i in range(k + 1)]
    return list(zip(starts, starts[1:], strict=False))


def chunk_count(n_draws: int, search_seconds: float, max_job_hours: float) -> int:
    """Chunks of a search whose draws take ``search_seconds`` in all (the cost model's estimate):
    ``ceil(hours / max_job_hours)``, one more while the largest of :func:`even_ranges` would still
    exceed ``max_job_hours`` (a draw is not split: a single draw over the bound is its own chunk).

    Why here: the grid (which chunks exist) and the cost model (what they cost) both reach this
    module, and neither imports the other at module level."""
    if max_job_hours <= 0:
        raise ConfigError(f"search.max_job_hours must be > 0, got {max_job_hours}")
    per_draw = search_seconds / 3600 / n_draws
    k = max(1, math.ceil(search_seconds / 3600 / max_job_hours))
    while k < n_draws and math.ceil(n_draws / k) * per_draw > max_job_hours:
        k += 1
    return min(k, n_draws)


def parse_draws_range(text: str, n_draws: int) -> range:
    """``A:B`` (draws A..B-1 of a search of ``n_draws``) as a range; ConfigError naming the option."""
    parts = text.split(":")
    try:
        start, stop = (int(p) for p in parts)
    except ValueError:
        raise ConfigError(f"--draws-range {text!r}: expected START:STOP, e.g. 0:10") from None
    if not 0 <= start < stop <= n_draws:
        raise ConfigError(
            f"--draws-range {text!r}: need 0 <= START < STOP <= {n_draws} (the number of --draws)"
        )
    return range(start, stop)


def check_chunk_coverage(draws: list[int], where: str) -> None:
    """The merged chunk tables hold each draw 0..n-1 exactly once (no chunk missing or repeated)."""
    seen = sorted(draws)
    if seen != list(range(len(seen))):
        repeated = sorted({d for d in seen if seen.count(d) > 1})
        missing = sorted(set(range(max(seen, default=-1) + 1)) - set(seen))
        raise ConfigError(
            f"{where}: the chunk tables must hold draws 0..n-1 once each; "
            f"missing {missing or 'none'}, repeated {repeated or 'none'}"
        )
