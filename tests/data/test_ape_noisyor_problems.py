"""Problems of the APE-on-noisy-OR experiment: candidates, determinism, split independence."""

from __future__ import annotations

import numpy as np
import pytest

from noisyor_bench.data.synthetic.ape_noisyor import candidates, make_problems
from noisyor_bench.infra.errors import ConfigError

RANDOM = {"family": "random", "D": 12, "K": 4, "alpha_theta": 2, "beta_theta": 3, "alpha_mu": 1, "beta_mu": 1,
          "s": 0.5, "mu": 0.2, "leak_prob": 0.01}  # fmt: skip
PATTERN = {
    "family": "pattern",
    "p_low": 0.5,
    "p_high": 0.9,
    "extra_pixels": 2,
    "mu": 0.125,
    "leak_prob": 0.01,
}


def test_candidates_keep_the_graph_and_grow_with_c() -> None:
    theta = np.array([[0.5, 0.0], [0.0, 1.2], [0.3, 0.4]])
    cands = candidates(theta, 10, 1.0, np.random.default_rng(0))
    assert cands.shape == (10, 3, 2)
    np.testing.assert_array_equal(cands[0], theta)  # candidate 0 is the truth
    assert np.all((cands > 0) == (theta > 0))  # no edge added or removed
    log_ratio = np.abs(np.log(cands[:, theta > 0] / theta[theta > 0]))
    assert log_ratio[1].mean() < log_ratio[9].mean()  # scale grows with c
    np.testing.assert_array_equal(candidates(theta, 3, 0.0, np.random.default_rng(0))[2], theta)
    with pytest.raises(ConfigError):
        candidates(theta, 1, 1.0, np.random.default_rng(0))


@pytest.mark.parametrize("spec", [RANDOM, PATTERN])
def test_problems_deterministic_and_splits_differ(spec: dict) -> None:
    a = make_problems(spec, "train", 2, 5, 3, 0.5, seed=1)
    b = make_problems(spec, "train", 2, 5, 3, 0.5, seed=1)
    t = make_problems(spec, "test", 2, 5, 3, 0.5, seed=1)
    np.testing.assert_array_equal(a.theta, b.theta)
    np.testing.assert_array_equal(a.x, b.x)
    assert not np.array_equal(a.theta[:, 0], t.theta[:, 0])
    assert a.x.dtype == np.uint8 and set(np.unique(a.x)) <= {0, 1}
    assert np.allclose(a.mu, spec["mu"]) and np.allclose(a.theta0, -np.log(1 - spec["leak_prob"]))
    if spec["family"] == "pattern":
        assert a.theta.shape[2:] == (64, 8)
        assert np.all(a.theta[:, 0] <= -np.log(1 - 0.9) + 1e-12)
