"""Baselines of the NELBO tables: independent Bernoulli, the true model, and the below-baseline flag.

The formulas are checked against independent computations (scipy's Bernoulli log-pmf, a
hand enumeration of a tiny noisy-OR with itertools), the flag on hand-made aggregation input.
"""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from toydata import write_toy_dataset

from noisyor_bench.cli import main
from noisyor_bench.experiments.acp.baselines import (
    bernoulli_rates,
    independent_baselines,
    independent_nll,
    scored_rows,
    true_model_scores,
)
from noisyor_bench.infra.errors import ConfigError
from noisyor_bench.reporting.acp.baselines import BELOW_MARK, baseline_rows, nelbo_baseline_markdown
from noisyor_bench.reporting.acp.synthetic_claims import (
    claim_acp_beats_avi,
    claim_acp_lowest_table4,
    claim_advantage_grows,
)
from noisyor_bench.reporting.acp.synthetic_tables import (
    fig3a_markdown,
    fig3a_table,
    fig5_markdown,
    fig5_table,
    table4_markdown,
    table4_table,
)
from noisyor_bench.reporting.claims import INCONCLUSIVE, table_values
from noisyor_bench.reporting.tables import read_table, write_table


# ---------------------------------------------------------------------------------- independent Bernoulli
def test_independent_nll_matches_scipy_and_a_hand_example():
    x_train = np.array([[1, 0], [1, 0], [0, 0]], dtype=np.uint8)
    x_test = np.array([[1, 1], [0, 0], [0, 1]], dtype=np.uint8)
    rates = bernoulli_rates(x_train)
    # Jeffreys: (count + 1/2) / (N + 1) with N = 3 -> (2.5/4, 0.5/4)
    assert rates == pytest.approx([0.625, 0.125], abs=1e-15)
    nll = independent_nll(rates, x_test)
    expected = [-stats.bernoulli.logpmf(row, [0.625, 0.125]).sum() for row in x_test]
    assert nll == pytest.approx(expected, rel=1e-12)
    assert nll[0] == pytest.approx(-(math.log(0.625) + math.log(0.125)), rel=1e-12)
    # a pixel never on in training (column 2) keeps a finite loss when on at test time
    assert np.isfinite(nll).all()


def test_independent_baselines_use_the_first_rows_of_the_pool():
    rng = np.random.default_rng(3)
    x_train = (rng.random((50, 7)) < 0.2).astype(np.uint8)
    x_train[10:] = 1  # rows beyond the prefix must not count
    x_test = (rng.random((30, 7)) < 0.2).astype(np.uint8)
    rows = independent_baselines({"x_train": x_train, "x_test": x_test}, [10, 50], "toy.npz")
    assert [r["n_train"] for r in rows] == [10, 50]
    p10 = (x_train[:10].sum(0) + 0.5) / 11.0
    by_scipy = np.mean([-stats.bernoulli.logpmf(r, p10).sum() for r in x_test])
    assert rows[0]["nelbo"] == pytest.approx(by_scipy, rel=1e-12)
    assert rows[0]["n_test_scored"] == 30
    assert rows[1]["nelbo"] > rows[0]["nelbo"]  # the all-ones rows make the N=50 fit worse here


def test_bad_baseline_input_raises_clear_errors():
    with pytest.raises(ConfigError, match="n-train"):
        independent_baselines({"x_train": np.zeros((5, 2)), "x_test": np.zeros((3, 2))}, [0], "toy.npz")
    with pytest.raises(ConfigError, match="pseudo_count"):
        bernoulli_rates(np.zeros((3, 2)), pseudo_count=0.0)


def test_scored_rows_is_a_fixed_seeded_subset():
    a, b = scored_rows(1000, 50), scored_rows(1000, 50)
    assert np.array_equal(a, b) and len(np.unique(a)) == 50 and np.all(np.diff(a) > 0)
    assert np.array_equal(scored_rows(40, 500), np.arange(40))


# ---------------------------------------------------------------------------------- true model
def _hand_log_px(theta: np.ndarray, theta0: np.ndarray, mu: np.ndarray, x: np.ndarray) -> np.ndarray:
    """log p(x) of a noisy-OR by summing p(z) p(x | z) over every z with itertools (no package code)."""
    d, k = theta.shape
    out = []
    for row in x:
        total = 0.0
        for z in itertools.product([0, 1], repeat=k):
            z = np.array(z)
            prior = np.prod(np.where(z == 1, mu, 1 - mu))
            p_on = 1 - np.exp(-(theta0 + theta @ z))
            total += prior * np.prod(np.where(row == 1, p_on, 1 - p_on))
        out.append(math.log(total))
    return np.array(out)


@pytest.fixture
def toy(tmp_path):
    from noisyor_bench.data.loading import load_dataset

    path = write_toy_dataset(tmp_path / "toy.npz", n_test=40)
    return path, load_dataset(path)


def test_true_model_exact_row_matches_a_hand_enumeration(toy):
    _, data = toy
    scores = true_model_scores(data, exact_max_k=20, max_rows=None, n_samples=200, iw_samples=0, seed=0)
    hand = _hand_log_px(data["theta"], data["theta0"], data["mu"], data["x_test"])
    assert scores["exact_nll"] == pytest.approx(-hand.mean(), rel=1e-10)
    assert scores["exact_n_test_scored"] == scores["n_test_scored"] == 40
    # the per-datapoint mean-field NELBO bounds -log p(x) from above (Monte Carlo: a few SEMs of slack)
    assert scores["elbo_nelbo"] >= scores["exact_nll"] - 3 * scores["elbo_nelbo_sem"]
    assert scores["iw_nll"] is None  # enumerable: the exact value, no bound


def test_true_model_iw_bound_where_not_enumerable(toy):
    _, data = toy
    scores = true_model_scores(data, exact_max_k=0, max_rows=25, n_samples=100, iw_samples=2000, seed=1)
    hand = _hand_log_px(data["theta"], data["theta0"], data["mu"], data["x_test"][scored_rows(40, 25)])
    assert scores["exact_nll"] is None and scores["n_test_scored"] == 25
    assert scores["iw_nll"] == pytest.approx(-hand.mean(), abs=0.05)  # 2000 samples: tight on K = 3
    assert scores["elbo_nelbo"] > scores["iw_nll"]
    again = true_model_scores(data, exact_max_k=0, max_rows=25, n_samples=100, iw_samples=2000, seed=1)
    assert again["iw_nll"] == scores["iw_nll"] and again["elbo_nelbo"] == scores["elbo_nelbo"]


def test_baselines_cli_writes_the_record_and_its_provenance(toy, tmp_path):
    path, data = toy
    out = tmp_path / "baselines" / "toy.json"
    assert (
        main(
            [
                "acp-baselines",
                "--dataset",
                str(path),
                "--n-train",
                "20",
                "60",
                "--max-rows",
                "10",
                "--iw-samples",
                "50",
                "--samples",
                "20",
                "--out-json",
                str(out),
            ]
        )
        == 0
    )
    record = json.loads(out.read_text())
    assert record["dataset"] == "toy"
    assert [r["n_train"] for r in record["independent_bernoulli"]["rows"]] == [20, 60]
    truth = record["true_model"]
    assert (
        truth["exact_n_test_scored"] == 40 and truth["n_test_scored"] == 10
    )  # exact: all rows; ELBO: the subset
    assert truth["exact_nll_scored_rows"] <= truth["elbo_nelbo"] + 3 * truth["elbo_nelbo_sem"]
    assert (tmp_path / "baselines" / "toy.json.prov.json").is_file()
    assert (
        main(
            [
                "acp-baselines",
                "--dataset",
                str(path),
                "--n-train",
                "20",
                "--max-rows",
                "0",
                "--out-json",
                str(out),
            ]
        )
        == 2
    )


# ---------------------------------------------------------------------------------- aggregation
BASELINES = {
    "syn-random-1": {
        "dataset": "syn-random-1",
        "independent_bernoulli": {
            "smoothing": "jeffreys",
            "rows": [
                {"n_train": 30, "nelbo": 10.0, "n_test_scored": 1000},
                {"n_train": 300, "nelbo": 9.0, "n_test_scored": 1000},
            ],
        },
        "true_model": {
            "exact_nll": None,
            "iw_nll": 8.5,
            "iw_samples": 1000,
            "elbo_nelbo": 9.5,
            "n_test_scored": 200,
            "inference": {"method": "lb-cdi", "hparams": {"max_rounds": 50}},
            "rows": "subset",
        },
    }
}


def _runs() -> pd.DataFrame:
    values = {
        ("avi", 30): (10.5, 10.7),
        ("acp", 30): (9.8, 9.9),
        ("avi", 300): (9.1, 8.8),
        ("acp", 300): (9.0, 9.0),
    }
    return pd.DataFrame(
        [
            {
                "experiment": "fig5",
                "dataset": "syn-random-1",
                "method": m,
                "n_train": n,
                "seed": s,
                "nelbo": v,
            }
            for (m, n), vs in values.items()
            for s, v in enumerate(vs)
        ]
    )


def test_below_baseline_is_set_on_a_hand_made_fig5_table(tmp_path):
    table = fig5_table(_runs(), BASELINES)
    cells = table[table["status"] == "measured"].set_index(["method", "n_train"])
    assert bool(cells.loc[("avi", 30), "below_baseline"]) is True  # mean 10.6 > 10.0
    assert bool(cells.loc[("acp", 30), "below_baseline"]) is False  # 9.85 < 10.0
    assert bool(cells.loc[("avi", 300), "below_baseline"]) is False  # 8.95 < 9.0
    assert bool(cells.loc[("acp", 300), "below_baseline"]) is False  # equal is not worse
    assert cells.loc[("avi", 30), "baseline_nelbo"] == 10.0
    refs = table[table["status"] == "baseline"]
    assert set(refs["method"]) == {"indep-bernoulli", "true-iw", "true-elbo"}
    assert not refs["below_baseline"].any()
    # CSV round trip keeps the columns; the claims code ignores the reference rows
    write_table(table, tmp_path / "fig5.csv")
    back = read_table(tmp_path / "fig5.csv")
    assert back["below_baseline"].dtype == bool
    assert table_values(back, "nelbo", dataset="syn-random-1", n_train=30, method="avi") == {
        0: 10.5,
        1: 10.7,
    }
    assert table_values(back, "nelbo", dataset="syn-random-1", n_train=0, method="true-iw") == {}
    claim_advantage_grows({"fig5": back}, "syn-random-1")
    md = fig5_markdown(table)
    assert "10.60 ± " in md and f"{BELOW_MARK}" in md and "true model (IW bound)" in md
    flagged = [line for line in md.splitlines() if BELOW_MARK in line and line.startswith("| syn")]
    assert len(flagged) == 1 and "| 30 |" in flagged[0]


def test_table4_and_fig3a_get_reference_rows():
    runs = _runs().assign(experiment="table4")
    runs = runs[runs["n_train"] == 30].assign(n_train=1000)
    # a third seed at each method's mean: two paired seeds (1 degree of freedom) would decide nothing
    third = runs[runs["seed"] == 0].assign(
        seed=2, nelbo=lambda r: r["method"].map({"avi": 10.6, "acp": 9.85})
    )
    runs = pd.concat([runs, third], ignore_index=True)
    base = {
        "syn-random-1": {
            **BASELINES["syn-random-1"],
            "independent_bernoulli": {"rows": [{"n_train": 1000, "nelbo": 10.0}]},
        }
    }
    t4 = table4_table(runs, baselines=base)
    measured = t4[t4["status"] == "measured"].set_index("method")
    assert bool(measured.loc["avi", "below_baseline"]) and not bool(measured.loc["acp", "below_baseline"])
    assert not t4.loc[t4["status"] == "not run", "below_baseline"].any()
    claim = claim_acp_lowest_table4({"table4": t4})
    # reference rows are no competitors of ACP (the numbers compare ACP with AVI only) ...
    assert "−INDEP" not in claim.numbers.upper() and "−TRUE" not in claim.numbers.upper()
    # ... and AVI's cell above the baseline (the losing side) qualifies the claim, never changes its
    # verdict (inconclusive: 1 of the paper's 11 comparisons run)
    assert claim.verdict == INCONCLUSIVE and claim.weak_learning.startswith(
        "1 cell not better than the independent baseline"
    )
    assert BELOW_MARK in table4_markdown(t4)

    fig3a_runs = runs.assign(experiment="fig3a", mode="inference", n_train=20, dataset="syn-pattern")
    pattern = {
        "syn-pattern": {
            "dataset": "syn-pattern",
            "independent_bernoulli": {"rows": [{"n_train": 20, "nelbo": 21.5}]},
            "true_model": {"exact_nll": 9.9, "exact_n_test_scored": 1000, "elbo_nelbo": None},
        }
    }
    for m in ("f1", "em", "exact_nll", "exact_gap"):
        fig3a_runs[m] = 1.0
    f3 = fig3a_table(fig3a_runs, baselines=pattern)
    refs = f3[f3["status"] == "baseline"].set_index("method")
    assert refs.loc["indep-bernoulli", "nelbo_mean"] == 21.5 and refs.loc["true-exact", "nelbo_mean"] == 9.9
    assert "below_baseline" not in f3.columns  # inference mode: no learned model to flag
    assert "true model (exact)" in fig3a_markdown(f3)
    claim_acp_beats_avi({"fig3a": f3}, 20)


def test_text_note_flags_cells_worse_than_the_baseline():
    runs = pd.DataFrame(
        [
            {
                "experiment": "table5",
                "dataset": "neurips-titles",
                "method": m,
                "n_train": 2000,
                "seed": s,
                "nelbo": v,
            }
            for m, vs in (("avi", (29.9, 29.7)), ("acp", (29.0, 29.2)))
            for s, v in enumerate(vs)
        ]
    )
    base = {
        "neurips-titles": {
            "dataset": "neurips-titles",
            "independent_bernoulli": {"rows": [{"n_train": 2000, "nelbo": 29.31}]},
            "true_model": None,
        }
    }
    md = nelbo_baseline_markdown(runs, base)
    lines = {line.split("|")[2].strip(): line for line in md.splitlines() if line.startswith("| neurips")}
    assert BELOW_MARK in lines["AVI"] and BELOW_MARK not in lines["ACP"]
    assert "29.31" in lines["AVI"]
    assert nelbo_baseline_markdown(runs, {}) == ""


def test_a_true_model_score_on_a_subset_of_rows_is_labelled_with_it():
    """A true-model NELBO on 200 of 1,000 test rows can be lower than the exact -log p(x) of all
    1,000 (it is not on its own rows): its label must say which rows it is on."""
    record = {
        "dataset": "syn-pattern",
        "n_test": 1000,
        "independent_bernoulli": {"rows": []},
        "true_model": {
            "exact_nll": 9.89,
            "exact_n_test_scored": 1000,
            "exact_nll_scored_rows": 9.46,
            "elbo_nelbo": 9.47,
            "n_test_scored": 200,
            "inference": {"method": "lb-cdi", "hparams": {"max_rounds": 50}},
            "rows": "fixed seeded subset of 200 of 1000 test rows",
        },
    }
    rows = {r["method"]: r for r in baseline_rows({"syn-pattern": record}, "syn-pattern", [], "fig3a")}
    assert rows["true-exact"]["method_label"] == "true model (exact)"
    assert rows["true-elbo"]["method_label"] == "true model (ELBO, per-datapoint), 200 of 1000 test rows"
    assert "exact −log p(x) on these rows 9.46" in rows["true-elbo"]["note"]
    record["true_model"]["n_test_scored"] = 1000
    rows = {r["method"]: r for r in baseline_rows({"syn-pattern": record}, "syn-pattern", [], "fig3a")}
    assert rows["true-elbo"]["method_label"] == "true model (ELBO, per-datapoint)"
