"""The calibration panel against brute force on small models, the feasibility flags on hand-made
rows, and the placement of rows on a degradation curve worked out by hand."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from noisyor_bruteforce import brute_elbo, brute_log_joint, sample_rows, scipy_best_elbo, small_model
from scipy.special import entr, logsumexp
from sklearn.metrics import f1_score

from noisyor_bench.experiments.acp.calibration import panel
from noisyor_bench.infra.errors import DataError
from noisyor_bench.reporting.acp.calibration import flag_rows, mean_residual, paper_rows, place_on_curve
from noisyor_bench.reporting.acp.degradation import degradation_curve


def small_dataset(seed: int, n: int, k: int = 4, d: int = 7) -> dict[str, np.ndarray]:
    theta, theta0, mu = small_model(seed, k, d)
    x, z = sample_rows(theta, theta0, mu, n, seed)
    return {"theta": theta, "theta0": theta0, "mu": mu, "x_test": x, "z_test": z, "x_train": x}


def test_panel_numbers_match_enumeration_and_scipy():
    data = small_dataset(11, n=8)
    rec = panel(data, "tiny", exact_max_k=12, samples=50, seed=0)
    states, lj = brute_log_joint(data["theta"], data["theta0"], data["mu"], data["x_test"])
    nll = -logsumexp(lj, axis=1)
    assert rec["truth_nll"] == pytest.approx(nll.mean(), abs=1e-10)
    assert rec["truth_se"] == pytest.approx(nll.std(ddof=1) / np.sqrt(nll.size), abs=1e-10)
    assert rec["truth_estimator"].startswith("exact")
    # best factorised q per row, found independently (scipy from random starts)
    best = np.array([scipy_best_elbo(states, lj[n], states.shape[1]) for n in range(lj.shape[0])])
    assert rec["meanfield_nelbo"] == pytest.approx(-best.mean(), abs=1e-7)
    assert rec["meanfield_gap"] >= 0.0
    post = np.exp(lj - logsumexp(lj, axis=1, keepdims=True))
    truth_index = [int(np.flatnonzero((states == zn).all(1))[0]) for zn in data["z_test"]]
    assert rec["near_exact_em"] == pytest.approx(100 * post[np.arange(8), truth_index].mean(), abs=1e-9)
    mode = states[post.argmax(1)]
    hits = (mode == data["z_test"]).all(1)
    assert rec["map_em"] == pytest.approx(100 * hits.mean())
    assert rec["map_em_se"] == pytest.approx(100 * hits.std(ddof=1) / np.sqrt(8))
    expected_f1 = 100 * f1_score(data["z_test"], mode, average="macro", zero_division=1.0)
    assert rec["map_f1"] == pytest.approx(expected_f1)
    # independent Bernoulli with the exact pixel marginals, by summing over the latent states
    prior = np.prod(np.where(states == 1, data["mu"], 1 - data["mu"]), axis=1)
    p_on = prior @ -np.expm1(-(data["theta0"] + states @ data["theta"].T))
    assert rec["indep_entropy"] == pytest.approx(np.sum(entr(p_on) + entr(1 - p_on)), abs=1e-10)
    assert 0.0 <= rec["near_exact_f1"] <= 100.0 and rec["rows"] == 8 and rec["rows_label"] == "all test rows"


def test_panel_on_a_subset_says_so():
    rec = panel(small_dataset(12, n=30), "tiny", max_rows=10, samples=5)
    assert rec["rows"] == 10 and "subset of 10 of 30" in rec["rows_label"]


def test_panel_above_the_enumeration_limit_reads_the_truth_and_says_not_computed():
    data = small_dataset(13, n=8)
    record = {
        "dataset": "tiny",
        "true_model": {
            "nll": {
                "nll_test": 12.5,
                "nll_test_se": 0.4,
                "nll_estimator": "ais",
                "nll_rows": 8,
                "nll_rows_label": "all test rows",
                "nll_ais_rows": 8,
                "nll_ais_steps": 50,
                "nll_ais_chains": 8,
                "nll_ais_check_rows": 4,
                "nll_ais_check_delta": 0.437,
                "nll_ais_check_delta_se": 0.08,
                "nll_ais_converged": False,
            }
        },
    }
    rec = panel(data, "tiny", record, exact_max_k=3)
    assert rec["enumerated"] == "not computed (K = 4)"
    assert rec["meanfield_nelbo"] is None and rec["map_em"] is None and rec["near_exact_f1"] is None
    assert (rec["truth_nll"], rec["truth_se"]) == (12.5, 0.4)
    assert rec["truth_estimator"] == (
        "ais, all test rows, upper bound (doubling moved 0.44 ± 0.08 nats/row); "
        "AIS 50 temperatures x 8 chains; doubling moved -log p(x) by -0.437 ± 0.080 nats/row on 4 rows"
    )
    bare = panel(data, "tiny", None, exact_max_k=3)
    assert bare["truth_nll"] is None and "not computed" in bare["truth_estimator"]


def test_panel_estimates_the_truth_itself_where_the_grid_asks_for_more_rows():
    """Above the enumeration limit, ``truth_nll`` makes the panel estimate the truth on its own rows
    (AIS here: enumerate_k 0 and no exact path) instead of reading the baselines' record; the
    estimate agrees with brute-force enumeration within its Monte Carlo error."""
    data = small_dataset(14, n=40, k=6, d=9)
    settings = {
        "enumerate_k": 0,
        "exact_elements": 1,
        "row_budget": 1.0,
        "max_rows": 25,
        "ais": {"steps": 400, "chains": 16, "check_rows": 0},
    }
    rec = panel(
        data,
        "tiny",
        {"dataset": "tiny", "true_model": {"nll": {"nll_test": 99.0}}},
        exact_max_k=3,
        truth_nll=settings,
    )
    assert rec["truth_rows"] == 25 and "ais" in rec["truth_estimator"]
    assert "fixed seeded subset of 25 of 40" in rec["truth_estimator"]
    from noisyor_bench.evaluation.noisyor_likelihood import LikelihoodConfig, scored_rows

    rows, _ = scored_rows(data["x_test"], 6, LikelihoodConfig.from_mapping(settings))
    _, lj = brute_log_joint(data["theta"], data["theta0"], data["mu"], data["x_test"][rows])
    exact = -logsumexp(lj, axis=1)
    assert rec["truth_nll"] == pytest.approx(exact.mean(), abs=0.05)
    assert rec["truth_nll"] != 99.0  # the baselines' record is not read
    assert rec["truth_se"] == pytest.approx(exact.std(ddof=1) / np.sqrt(exact.size), rel=0.05)


def test_panel_refuses_data_without_truth():
    with pytest.raises(DataError, match="synthetic dataset"):
        panel({"x_test": np.zeros((3, 4))}, "real")


HAND_PANEL = {"dataset": "d", "truth_nll": 10.0, "truth_se": 0.5, "map_em": 90.0, "map_em_se": 1.0}


@pytest.mark.parametrize(
    ("nelbo", "em", "nelbo_ok", "em_ok"),
    [
        (9.0, 92.0, True, True),  # both exactly at the 2-SE margins
        (8.99, 92.01, False, False),  # just beyond them
        (25.0, 50.0, True, True),
        (None, 95.0, None, False),
        (9.5, None, True, None),
    ],
)
def test_feasibility_flags_on_hand_made_rows(nelbo, em, nelbo_ok, em_ok):
    row = {
        "paper_artifact": "x",
        "dataset": "d",
        "n_train": 0,
        "method": "m",
        "paper_nelbo": nelbo,
        "paper_em": em,
    }
    out = flag_rows([row], [HAND_PANEL]).iloc[0]
    assert out["nelbo_feasible"] == nelbo_ok if nelbo_ok is not None else out["nelbo_feasible"] is None
    assert out["em_feasible"] == em_ok if em_ok is not None else out["em_feasible"] is None
    if nelbo is not None:
        assert out["nelbo_above_truth"] == pytest.approx(nelbo - 10.0)


def test_a_paper_row_is_flagged_on_its_dataset_and_on_every_generator_variant_of_it():
    """A variant panel (variant_of = the row's dataset) gets the row too, against its own truth,
    MAP EM and curve; a panel of another dataset does not."""
    variant = {
        "dataset": "d-noisy",
        "variant_of": "d",
        "truth_nll": 12.0,
        "truth_se": 0.5,
        "map_em": 85.0,
        "map_em_se": 1.0,
    }
    other = {"dataset": "e", "truth_nll": 1.0, "truth_se": 0.1, "map_em": 99.0, "map_em_se": 0.1}
    curves = pd.DataFrame(
        {
            "dataset": ["d", "d", "d-noisy", "d-noisy"],
            "step": [0, 10, 0, 10],
            "nelbo": [30.0, 10.0, 40.0, 14.0],
            "f1": [50.0, 99.0, 40.0, 95.0],
        }
    )
    row = {
        "paper_artifact": "x",
        "dataset": "d",
        "n_train": 0,
        "method": "m",
        "paper_nelbo": 13.0,
        "paper_f1": 90.0,
        "paper_em": 88.0,
    }
    out = flag_rows([row], [HAND_PANEL, variant, other], curves).set_index("dataset")
    assert list(out.index) == ["d", "d-noisy"]
    assert out.loc["d-noisy", "variant_of"] == "d" and pd.isna(out.loc["d", "variant_of"])
    assert out.loc["d", "em_feasible"] and not out.loc["d-noisy", "em_feasible"]  # 88 > 85 + 2 x 1
    assert out.loc["d-noisy", "nelbo_above_truth"] == pytest.approx(1.0)
    # on each generator's own curve: d at F1 90 is 30 - 20 x 40/49, d-noisy 40 - 26 x 50/55
    assert out.loc["d", "curve_nelbo"] == pytest.approx(30.0 - 20.0 * 40.0 / 49.0)
    assert out.loc["d-noisy", "curve_nelbo"] == pytest.approx(40.0 - 26.0 * 50.0 / 55.0)


def test_rows_of_a_dataset_without_a_panel_are_left_out_and_table4_rows_have_no_em():
    rows = [
        r
        for r in paper_rows({"table4": {"dataset": "d", "rows": [{"n_train": 5, "avi": 11.0, "svi": None}]}})
    ]
    assert rows == [
        {
            "paper_artifact": "table4",
            "dataset": "d",
            "n_train": 5,
            "method": "avi",
            "paper_nelbo": 11.0,
            "paper_f1": None,
            "paper_em": None,
        }
    ]
    out = flag_rows(rows + [{**rows[0], "dataset": "other"}], [HAND_PANEL])
    assert len(out) == 1 and bool(out.iloc[0]["nelbo_feasible"]) and out.iloc[0]["em_feasible"] is None


CURVE = pd.DataFrame(
    {
        "dataset": "d",
        "step": [0, 1, 2, 5, 10],
        "nelbo": [30.0, 20.0, 10.0, 9.0, 9.5],
        "f1": [10.0, 50.0, 90.0, 88.0, 95.0],
    }
)


def test_a_row_is_placed_at_its_f1_between_the_neighbouring_steps():
    # F1 70 lies halfway between steps 1 (F1 50, NELBO 20) and 2 (F1 90, NELBO 10): NELBO 15
    assert place_on_curve(17.0, 70.0, CURVE) == (pytest.approx(15.0), 1)
    # step 5 lost F1 (88 < 90): the running best keeps 90, so F1 93 lies between 90 and 95 (steps 5, 10)
    nelbo, step = place_on_curve(12.0, 93.0, CURVE)
    assert nelbo == pytest.approx(9.0 + 0.6 * (9.5 - 9.0)) and step == 10
    assert place_on_curve(12.0, 5.0, CURVE) == (None, None)  # below the curve's F1 range
    assert place_on_curve(12.0, 96.0, CURVE) == (None, None)  # above it
    rows = [
        {"paper_artifact": "x", "dataset": "d", "n_train": 0, "method": m, "paper_nelbo": n, "paper_f1": f}
        for m, n, f in (("a", 17.0, 70.0), ("b", 12.0, 50.0), ("c", 12.0, 99.0))
    ]
    flagged = flag_rows(rows, [HAND_PANEL], CURVE.assign(em=0.0))
    assert list(flagged["residual"].iloc[:2]) == [pytest.approx(2.0), pytest.approx(-8.0)]
    assert pd.isna(flagged["residual"].iloc[2])
    assert mean_residual(flagged) == (pytest.approx(-3.0), 2)


def test_degradation_curve_starts_at_the_prior_and_ends_above_the_mean_field_optimum():
    data = small_dataset(14, n=6, k=3, d=5)
    curve = degradation_curve(data, "tiny", np.arange(6), steps=[0, 400], samples=20)
    states, lj = brute_log_joint(data["theta"], data["theta0"], data["mu"], data["x_test"])
    at_prior = np.mean([-brute_elbo(states, lj[n], data["mu"]) for n in range(6)])
    assert curve["nelbo"].iloc[0] == pytest.approx(at_prior, abs=1e-10)
    optimum = -np.mean([scipy_best_elbo(states, lj[n], 3) for n in range(6)])
    assert optimum - 1e-9 <= curve["nelbo"].iloc[1] <= optimum + 1e-3
    assert list(curve["step"]) == [0, 400] and curve["f1"].between(0, 100).all()
