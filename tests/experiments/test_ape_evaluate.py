"""APE evaluation helpers: totals per test model, time to a quality level, Figure 1's times."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from noisyor_bench.experiments.ape.evaluate import _figure1, per_model_totals, time_to_reach


def test_per_model_totals_sum_each_models_combinations():
    values = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    model_index = np.array([0, 1, 2, 0, 1, 2])  # two documents x three models, document-major
    np.testing.assert_allclose(per_model_totals(values, model_index), [5.0, 7.0, 9.0])


def test_time_to_reach_uses_the_first_crossing_of_the_fixed_noise_elbo():
    curve = pd.DataFrame(
        {"seconds": [0.0, 1.0, 2.0, 3.0], "elbo": [-9, -1, -1, -1], "eval_elbo": [-10.0, np.nan, -4.0, -2.0]}
    )
    assert time_to_reach(curve, -5.0) == 2.0  # the noisy step ELBO crossed at 1 s: not used
    assert time_to_reach(curve, -5.0, offset=0.5) == 2.5
    assert math.isinf(time_to_reach(curve, -1.0))


def test_figure1_times():
    vi = pd.DataFrame(
        {"seconds": [0.0, 1.0, 2.0, 3.0, 4.0], "eval_elbo": [-200.0, -120.0, -101.5, -99.5, -100.0]}
    )
    warm = pd.DataFrame({"seconds": [0.0, 0.5], "eval_elbo": [-110.0, -100.95]})
    out = _figure1({"ape-model-aware": {"time_s": 0.01, "elbo_pair": -110.0}}, vi, warm)
    # 99% of the improvement from -200 to the final -100: -200 + 99 = -101
    assert out["vi_final_elbo"] == -100.0 and math.isclose(out["quality_target"], -101.0)
    assert (
        out["vi_initial_elbo"] == -200.0 and out["vi_best_elbo"] == -99.5 and out["quality_fraction"] == 0.99
    )
    assert out["vi_time_to_quality"] == 3.0  # -101.5 at 2 s is short of it
    assert math.isclose(out["warm_time_to_quality"], 0.51)
    assert out["vi_time_to_ape_elbo"] == 2.0
