"""Generic tables (noisyor_bench.reporting.tables): per-seed values, summaries over seeds."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from noisyor_bench.infra.errors import DataError
from noisyor_bench.reporting.tables import format_values, parse_values, summarise


def test_values_roundtrip_exact():
    text = format_values([0, 3], [0.1 + 0.2, -1e-300])
    assert parse_values(text) == {0: 0.1 + 0.2, 3: -1e-300}
    assert parse_values(float("nan")) == {}
    with pytest.raises(DataError):
        parse_values("0:abc")


def test_summarise_hand_made_frame():
    df = pd.DataFrame(
        {
            "method": ["acp", "acp", "acp", "avi", "avi"],
            "n_train": [20, 20, 20, 20, 20],
            "seed": [2, 0, 1, 0, 1],
            "nelbo": [3.0, 1.0, 2.0, 10.0, np.nan],  # AVI seed 1 has no value (null in metrics.json)
        }
    )
    out = summarise(df, ["method", "n_train"], ["nelbo"]).set_index("method")
    assert out.loc["acp", "n_seeds"] == 3 and out.loc["acp", "seeds"] == "0;1;2"
    assert out.loc["acp", "nelbo_mean"] == pytest.approx(2.0)
    assert out.loc["acp", "nelbo_std"] == pytest.approx(1.0)
    assert out.loc["acp", "nelbo_ci95"] == pytest.approx(stats.t.ppf(0.975, 2) / math.sqrt(3))
    assert parse_values(out.loc["acp", "nelbo_values"]) == {0: 1.0, 1: 2.0, 2: 3.0}
    assert out.loc["avi", "n_seeds"] == 2 and out.loc["avi", "nelbo_n"] == 1
    assert math.isnan(out.loc["avi", "nelbo_ci95"])
