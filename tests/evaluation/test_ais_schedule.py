"""The AIS schedule the config chooses for the truth, and how an unconverged one is labelled.

The chosen schedule is checked where 2^K enumeration gives the exact ``log p(x)``; the labels on
hand-made records (:func:`doubling_check_text`, :func:`upper_bound_label`)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import torch

from noisyor_bench.evaluation.noisyor_likelihood import (
    LikelihoodConfig,
    doubling_check_text,
    estimate_log_px,
    upper_bound_label,
)
from noisyor_bench.experiments.acp import grid
from noisyor_bench.experiments.config import load_yaml
from noisyor_bench.models.noisyor.exact import exact_posterior
from noisyor_bench.models.noisyor.model import NoisyOR


def _hard_model() -> tuple[NoisyOR, torch.Tensor]:
    """K = 14 (enumerable), D = 60, dense rates: 9-41 positives a row, a posterior far from the
    prior, where a short schedule is visibly biased."""
    rng = np.random.default_rng(46)
    k, d = 14, 60
    theta = rng.gamma(1.0, 0.6, (d, k)) * (rng.random((d, k)) < 0.4)
    model = NoisyOR.from_numpy(theta, rng.uniform(0.01, 0.05, d), rng.uniform(0.1, 0.4, k))
    x = model.sample(24, torch.Generator().manual_seed(47))[1]
    return model, x


def _truth_schedule(grid_name: str) -> LikelihoodConfig:
    """The likelihood config of the truth's -log p(x) in a grid (``baselines.nll``)."""
    cfg = load_yaml(Path(__file__).resolve().parents[2] / "config" / "config.yaml")
    cfg["grid"] = grid_name
    return LikelihoodConfig.from_mapping(grid.baseline_settings(cfg)["nll"])


def test_the_paper_protocol_grids_share_the_truth_schedule() -> None:
    assert _truth_schedule("paper").ais == _truth_schedule("paper-fig5-table4").ais


@pytest.mark.parametrize("grid_name", ["paper"])
def test_the_chosen_truth_schedule_converges_to_the_exact_log_px(grid_name: str) -> None:
    """The grid's AIS schedule for the truth (``baselines.nll.ais``) on rows of a model
    enumeration scores exactly: its mean error within 3 of its own Monte Carlo SEs, and the
    doubled-schedule check passes, so no upper-bound label."""
    model, x = _hard_model()
    x = x[:12]
    exact = exact_posterior(model, x).log_px.numpy()
    config = _truth_schedule(grid_name)
    result = estimate_log_px(model, x, config, seed=11, force="ais")
    record = result.summary()
    err = float(np.mean(result.log_px - exact))
    assert abs(err) <= 3 * record["nll_test_mc_se"], (err, record["nll_test_mc_se"])
    assert record["nll_ais_converged"] is True, record
    assert upper_bound_label(record) == ""


def test_a_short_schedule_reads_high_and_its_check_labels_it_an_upper_bound() -> None:
    """Three temperatures on the same rows: -log p(x) far above the exact one, the doubling moves
    it by more than check_tol, and the label says upper bound with the measured move."""
    model, x = _hard_model()
    exact = exact_posterior(model, x).log_px.numpy()
    config = LikelihoodConfig.from_mapping({"ais": {"steps": 3, "chains": 4, "check_rows": 8}})
    result = estimate_log_px(model, x, config, seed=11, force="ais")
    record = result.summary()
    assert float(np.mean(-result.log_px + exact)) > 3 * record["nll_test_mc_se"]  # reads high
    assert record["nll_ais_converged"] is False
    assert record["nll_ais_check_delta"] > config.ais.check_tol  # doubling raises log p
    moved = f"{abs(record['nll_ais_check_delta']):.2f} ± {record['nll_ais_check_delta_se']:.2f}"
    assert upper_bound_label(record) == f"upper bound (doubling moved {moved} nats/row)"


AIS = {"nll_ais_rows": 100, "nll_ais_steps": 50, "nll_ais_chains": 8, "nll_ais_check_rows": 8}


@pytest.mark.parametrize(
    ("record", "label", "text"),
    [
        # the quick grid's truth on SYN-RANDOM-7 before this schedule: log p rose 0.437 on doubling
        (
            {
                **AIS,
                "nll_ais_check_delta": 0.437,
                "nll_ais_check_delta_se": 0.081,
                "nll_ais_converged": False,
            },
            "upper bound (doubling moved 0.44 ± 0.08 nats/row)",
            "AIS 50 temperatures x 8 chains; doubling moved -log p(x) by -0.437 ± 0.081 nats/row on 8 rows",
        ),
        # a small mean change with a wide SE is not converged either: the SE is in the label
        (
            {**AIS, "nll_ais_check_delta": -0.03, "nll_ais_check_delta_se": 0.15, "nll_ais_converged": False},
            "upper bound (doubling moved 0.03 ± 0.15 nats/row)",
            "AIS 50 temperatures x 8 chains; doubling moved -log p(x) by +0.030 ± 0.150 nats/row on 8 rows",
        ),
        (
            {**AIS, "nll_ais_check_delta": 0.05, "nll_ais_check_delta_se": 0.02, "nll_ais_converged": True},
            "",
            "AIS 50 temperatures x 8 chains; doubling moved -log p(x) by -0.050 ± 0.020 nats/row on 8 rows",
        ),
        # no check run (check_rows 0): not known to be converged
        (
            {**AIS, "nll_ais_check_rows": 0, "nll_ais_check_delta": None, "nll_ais_converged": None},
            "upper bound (doubling not checked)",
            "AIS 50 temperatures x 8 chains; doubling not checked",
        ),
        # exact rows only: nothing to say
        ({"nll_ais_rows": None}, "", ""),
        ({}, "", ""),
    ],
)
def test_labels_on_hand_made_records(record: dict, label: str, text: str) -> None:
    assert upper_bound_label(record) == label
    assert doubling_check_text(record) == text


def test_the_check_tolerance_decides_the_label() -> None:
    """converged is what estimate_log_px computes from check_tol: the same move is a bound at a
    tolerance below it and not above it (the label reads the flag, not its own threshold)."""
    model, x = _hard_model()
    base = {"ais": {"steps": 3, "chains": 4, "check_rows": 8}}
    moved = estimate_log_px(model, x, LikelihoodConfig.from_mapping(base), seed=11, force="ais").summary()
    delta = abs(moved["nll_ais_check_delta"])
    se = moved["nll_ais_check_delta_se"]
    loose = {"ais": {**base["ais"], "check_tol": math.ceil(10 * max(delta, se)) / 10 + 0.1}}
    again = estimate_log_px(model, x, LikelihoodConfig.from_mapping(loose), seed=11, force="ais").summary()
    assert again["nll_ais_check_delta"] == moved["nll_ais_check_delta"]  # same seeds, same numbers
    assert upper_bound_label(moved) != "" and upper_bound_label(again) == ""
