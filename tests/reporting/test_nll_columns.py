"""Learned models' held-out -log p(x) in the Fig. 5 / Table 4 tables and the true model's row."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from noisyor_bench.reporting.acp.synthetic_tables import fig5_markdown, fig5_table, table4_table

BASELINES = {
    "syn-random-1": {
        "dataset": "syn-random-1",
        "n_test": 1000,
        "independent_bernoulli": {
            "smoothing": "jeffreys",
            "nll_rows": 100,
            "rows": [
                {
                    "n_train": 30,
                    "nelbo": 10.0,
                    "n_test_scored": 1000,
                    "nll_rows": 100,
                    "nll_rows_nll": 9.4,
                    "nll_rows_se": 0.3,
                },
                {"n_train": 300, "nelbo": 9.0, "n_test_scored": 1000},
            ],
        },
        "true_model": {
            "exact_nll": None,
            "nll": {
                "nll_test": 8.7,
                "nll_test_se": 0.2,
                "nll_test_mc_se": 0.01,
                "nll_estimator": "exact+ais",
                "nll_paths": {"quickscore": 60, "ais": 40},
                "nll_rows": 100,
                "nll_rows_label": "fixed seeded subset of 100 of 1000 test rows (seed 20201212)",
                "nll_ais_rows": 40,
                "nll_ais_steps": 50,
                "nll_ais_chains": 8,
                "nll_ais_check_delta": 0.02,
                "nll_ais_converged": True,
                "baseline": [
                    {
                        "n_train": 30,
                        "baseline_nll": 9.4,
                        "baseline_nll_se": 0.3,
                        "diff": -0.7,
                        "diff_se": 0.05,
                    }
                ],
            },
        },
    }
}


def _runs() -> pd.DataFrame:
    rows = []
    for (method, n), nll in {
        ("avi", 30): (9.6, 9.8),
        ("acp", 30): (9.0, 9.2),
        ("acp", 300): (None, None),
    }.items():
        for seed, value in enumerate(nll):
            rows.append(
                {
                    "experiment": "fig5",
                    "dataset": "syn-random-1",
                    "method": method,
                    "n_train": n,
                    "seed": seed,
                    "nelbo": 10.5,
                    "nll_test": value,
                    "nll_test_se": None if value is None else 0.3 + 0.1 * seed,
                    "nll_rows": None if value is None else 100,
                    "nll_estimator": None if value is None else "exact",
                }
            )
    return pd.DataFrame(rows)


def test_fig5_cells_get_nll_and_the_baseline_on_the_same_rows() -> None:
    table = fig5_table(_runs(), BASELINES)
    cells = table[table["status"] == "measured"].set_index(["method", "n_train"])
    assert math.isclose(cells.loc[("avi", 30), "nll"], 9.7)
    assert math.isclose(cells.loc[("acp", 30), "nll_mean"], 9.1)
    assert "9.6" in str(cells.loc[("avi", 30), "nll_values"])
    # nll_se: root mean square of the runs' standard errors (0.3 and 0.4)
    assert math.isclose(cells.loc[("avi", 30), "nll_se"], math.sqrt((0.09 + 0.16) / 2))
    assert cells.loc[("avi", 30), "nll_rows"] == 100 and cells.loc[("avi", 30), "nll_estimator"] == "exact"
    assert cells.loc[("avi", 30), "baseline_nll"] == 9.4 and cells.loc[("avi", 30), "baseline_nll_se"] == 0.3
    assert np.isnan(cells.loc[("acp", 300), "nll"])  # no run has a likelihood there
    assert np.isnan(cells.loc[("acp", 300), "baseline_nll"])  # and no same-rows baseline
    refs = table[table["status"] == "baseline"].set_index("method")
    assert refs.loc["true-nll", "nelbo_mean"] == 8.7
    assert "100 of 1000 test rows" in refs.loc["true-nll", "method_label"]
    assert "exact+ais" in refs.loc["true-nll", "method_label"]
    note = refs.loc["true-nll", "note"]
    assert (
        "independent Bernoulli (N_train=30) 9.40" in note
        and "N=30: -0.70 ± 0.05" in note
        and "converged" in note
    )
    md = fig5_markdown(table)
    assert "## Held-out −log p(x) of the learned models" in md
    line = next(x for x in md.splitlines() if x.startswith("| syn-random-1 | 30 | AVI"))
    assert "9.70" in line and "9.40" in line and "| 100 |" in line


def test_table4_has_the_nll_columns_without_any_likelihood() -> None:
    runs = (
        _runs()
        .drop(columns=["nll_test", "nll_test_se", "nll_rows", "nll_estimator"])
        .assign(experiment="table4")
    )
    table = table4_table(runs, paper={"table4": {"rows": [], "source": {"item": "T4", "section": "4"}}})
    assert {"nll", "nll_mean", "nll_ci95", "nll_values", "nll_se", "nll_rows"} <= set(table.columns)
    assert table["nll"].isna().all()


def test_a_cell_names_its_nll_rows_fingerprint_only_when_every_seed_shares_it() -> None:
    """``nll_rows_digest``: what a comparison with a reference checks before comparing the NLL."""
    runs = _runs()
    runs["nll_rows_digest"] = [
        "aaaa" if (m, n) == ("avi", 30) else ("bbbb" if s == 0 else "cccc")
        for m, n, s in zip(runs["method"], runs["n_train"], runs["seed"])
    ]
    runs.loc[runs["nll_test"].isna(), "nll_rows_digest"] = None
    cells = fig5_table(runs, BASELINES)
    cells = cells[cells["status"] == "measured"].set_index(["method", "n_train"])
    assert cells.loc[("avi", 30), "nll_rows_digest"] == "aaaa"
    assert cells.loc[("acp", 30), "nll_rows_digest"] == ""  # the seeds scored other rows
    assert cells.loc[("acp", 300), "nll_rows_digest"] == ""  # no likelihood at all
