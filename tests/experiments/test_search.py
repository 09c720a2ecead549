"""Random search draws are deterministic, in range, and draw 0 is the defaults."""

from __future__ import annotations

import math

import pytest

from noisyor_bench.experiments.acp.search import best_draw, sample_hparams
from noisyor_bench.infra.errors import ConfigError

SPACE = {
    "lr": {"loguniform": [1e-4, 1e-1]},
    "beta1": {"uniform": [0.5, 0.95]},
    "hidden_layers": {"int": [1, 3]},
    "hidden_dim": {"choice": [32, 64, 128]},
}


def test_draw_zero_is_defaults():
    assert sample_hparams(SPACE, seed=1, draw=0) == {}


def test_draws_are_deterministic_and_distinct():
    a = [sample_hparams(SPACE, seed=3, draw=d) for d in range(1, 30)]
    b = [sample_hparams(SPACE, seed=3, draw=d) for d in range(1, 30)]
    assert a == b
    assert len({tuple(sorted(h.items())) for h in a}) == len(a)
    assert sample_hparams(SPACE, seed=4, draw=1) != a[0]


def test_draws_respect_bounds_and_cover_them():
    draws = [sample_hparams(SPACE, seed=0, draw=d) for d in range(1, 400)]
    lrs = [h["lr"] for h in draws]
    assert all(1e-4 <= v <= 1e-1 for v in lrs)
    # log-uniform: about half the mass below the geometric midpoint
    below = sum(v < math.sqrt(1e-4 * 1e-1) for v in lrs) / len(lrs)
    assert 0.4 < below < 0.6
    assert {h["hidden_layers"] for h in draws} == {1, 2, 3}
    assert {h["hidden_dim"] for h in draws} == {32, 64, 128}
    assert all(0.5 <= h["beta1"] <= 0.95 for h in draws)


@pytest.mark.parametrize(
    "space",
    [
        {"lr": {"normal": [0, 1]}},
        {"lr": {"loguniform": [0, 1]}},
        {"lr": {"uniform": [2, 1]}},
        {"x": {"choice": []}},
    ],
)
def test_bad_space_names_the_entry(space):
    with pytest.raises(ConfigError, match="search space entry"):
        sample_hparams(space, seed=0, draw=1)


def test_best_draw_skips_diverged_draws():
    assert best_draw({0: 10.0, 1: float("nan"), 2: 9.5, 3: 9.5}) == 2
    with pytest.raises(ConfigError, match="every search draw diverged"):
        best_draw({0: float("inf"), 1: None})
