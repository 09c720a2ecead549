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


def test_aggregate_marks_deterministic_cells_and_counts_convergence():
    from noisyor_bench.reporting.tables import parse_values, stat_cell, summarise

    runs = pd.DataFrame(
        {
            "method": ["svi", "svi", "acp", "acp", "acp"],
            "mode": ["inference"] * 3 + ["learning"] * 2,
            "n_train": [0, 0, 20, 20, 20],
            "seed": [0, 1, 0, 1, 0],
            "nelbo": [22.0, 22.2, 10.0, 11.0, 12.0],
            "converged": [None, None, True, False, True],
        }
    )
    runs.loc[4, "n_train"] = 30
    out = summarise(runs, ["method", "n_train"], ["nelbo"]).set_index(["method", "n_train"])
    svi, acp = out.loc[("svi", 0)], out.loc[("acp", 20)]
    assert bool(svi["deterministic"]) and svi["nelbo_n"] == 1 and math.isnan(svi["nelbo_ci95"])
    assert svi["nelbo_mean"] == pytest.approx(22.1) and parse_values(svi["nelbo_values"]) == {
        0: 22.0,
        1: 22.2,
    }
    assert (svi["n_runs"], svi["n_converged"]) == (2, 2)  # null: no fit of its own, counts as converged
    assert not bool(acp["deterministic"]) and (acp["n_runs"], acp["n_converged"]) == (2, 1)
    assert stat_cell(dict(svi), "nelbo", 2) == "22.10 (deterministic)"
    assert stat_cell(dict(acp), "nelbo", 2).endswith(" [1/2 conv.]")
