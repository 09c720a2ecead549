"""The experiment grid: cells, per-dataset runs, budgets and search draws from the config."""

from __future__ import annotations

import copy

import pytest

from noisyor_bench.experiments.acp import grid
from noisyor_bench.experiments.config import load_yaml, validate_config
from noisyor_bench.infra.errors import ConfigError


@pytest.fixture
def cfg(repo):
    raw = load_yaml(repo / "config" / "config.yaml")
    raw["grids"]["t"] = {
        "acp": {
            "datasets": ["syn-pattern", "syn-random-1"],
            "seeds": [3, 4],
            "budget": {"max_epochs": 7},
            "search": {"draws": 4, "seed": 9},
            "experiments": {
                "e": {
                    "mode": "learning",
                    "datasets": ["syn-pattern", "syn-random-1"],
                    "runs": {"avi": [20, 100], "svi": [100]},
                    "dataset_runs": {"syn-random-1": {"acp": [50]}},
                    "budget": {"patience": 2},
                }
            },
        }
    }
    raw["grid"] = "t"
    return validate_config(raw)


def test_cells_follow_runs_and_dataset_overrides(cfg):
    cells = grid.cells(cfg)
    assert [(c.dataset, c.method, c.n_train) for c in cells] == [
        ("syn-pattern", "avi", 20),
        ("syn-pattern", "avi", 100),
        ("syn-pattern", "svi", 100),
        ("syn-random-1", "acp", 50),
    ]
    assert {c.mode for c in cells} == {"learning"}
    assert cells[0].path == "e/syn-pattern/avi/n20"
    assert grid.seeds(cfg) == [3, 4]


def test_budget_layers_defaults_grid_experiment(cfg):
    cell = grid.cells(cfg)[0]
    assert grid.budget(cfg, cell) == {"max_epochs": 7, "patience": 2, "batch_size": 128}


def test_method_budget_overrides_apply_to_that_method_only(cfg):
    cfg = copy.deepcopy(cfg)
    cfg["grids"]["t"]["acp"]["method_budget"] = {"svi": {"eval_every": 5, "max_epochs": 9}}
    cfg["grids"]["t"]["acp"]["experiments"]["e"]["method_budget"] = {"svi": {"max_epochs": 3}}
    cfg = validate_config(cfg)
    avi, _, svi, _ = grid.cells(cfg)
    assert grid.budget(cfg, svi) == {"max_epochs": 3, "patience": 2, "batch_size": 128, "eval_every": 5}
    assert grid.budget(cfg, avi) == {"max_epochs": 7, "patience": 2, "batch_size": 128}


def test_method_budget_rejects_unknown_methods(cfg):
    bad = copy.deepcopy(cfg)
    bad["grids"]["t"]["acp"]["method_budget"] = {"vae": {"max_epochs": 3}}
    with pytest.raises(ConfigError, match="method_budget"):
        validate_config(bad)


def test_only_methods_with_a_search_space_are_searched(cfg):
    avi, _, svi, acp = grid.cells(cfg)
    assert grid.n_draws(cfg, avi) == 4 and grid.n_draws(cfg, acp) == 4
    assert grid.n_draws(cfg, svi) == 1 and grid.draws(cfg, svi) == [{}]
    draws = grid.draws(cfg, avi)
    assert draws[0] == {} and len(draws) == 4 and all(d for d in draws[1:])
    assert grid.draws(cfg, avi) == draws  # deterministic: plain values for Snakemake params


def test_dataset_runs_must_name_an_experiment_dataset(cfg):
    bad = copy.deepcopy(cfg)
    bad["grids"]["t"]["acp"]["experiments"]["e"]["dataset_runs"] = {"multi-mnist": {"avi": [10]}}
    with pytest.raises(ConfigError, match="dataset_runs: 'multi-mnist' is not one of"):
        validate_config(bad)


def test_dataset_runs_are_checked_against_the_pool(cfg):
    bad = copy.deepcopy(cfg)
    bad["grids"]["t"]["acp"]["experiments"]["e"]["dataset_runs"] = {"syn-random-1": {"acp": [10001]}}
    with pytest.raises(ConfigError, match="N_train = 10001 exceeds the training pool of syn-random-1"):
        validate_config(bad)


def test_experiment_seeds_replace_the_grid_seeds(cfg):
    assert grid.seeds(cfg, "e") == [3, 4]  # no own seeds: the grid's
    assert grid.seed_groups(cfg) == [grid.SeedGroup("", ("e",), None, (3, 4))]
    raw = copy.deepcopy(cfg)
    raw["grids"]["t"]["acp"]["experiments"]["e"]["seeds"] = list(range(10))
    raw["grids"]["t"]["acp"]["experiments"]["f-2"] = {
        "mode": "inference",
        "datasets": ["syn-pattern"],
        "runs": {"avi": [20]},
        "seeds": [3, 4],
    }
    raw = validate_config(raw)
    assert grid.seeds(raw, "e") == list(range(10))
    assert grid.seeds(raw) == [3, 4]
    # one training rule per seed list: the grid's (suffix "") first, then each experiment of its own
    assert grid.seed_groups(raw) == [
        grid.SeedGroup("", ("f-2",), None, (3, 4)),
        grid.SeedGroup("_e", ("e",), None, tuple(range(10))),
    ]


def test_dataset_seeds_replace_the_experiment_seeds_for_one_dataset(cfg):
    raw = copy.deepcopy(cfg)
    exp = raw["grids"]["t"]["acp"]["experiments"]["e"]
    exp["datasets"] = ["syn-pattern", "syn-random-1"]
    exp["dataset_seeds"] = {"syn-random-1": [0, 1, 2, 3, 4]}
    raw = validate_config(raw)
    assert grid.seeds(raw, "e", "syn-random-1") == [0, 1, 2, 3, 4]
    assert grid.seeds(raw, "e", "syn-pattern") == [3, 4]  # the grid's
    # one rule per seed list of the experiment, each restricted to its datasets
    assert grid.seed_groups(raw) == [
        grid.SeedGroup("", (), None, (3, 4)),
        grid.SeedGroup("_e_2seeds", ("e",), ("syn-pattern",), (3, 4)),
        grid.SeedGroup("_e_5seeds", ("e",), ("syn-random-1",), (0, 1, 2, 3, 4)),
    ]
    bad = copy.deepcopy(raw)
    bad["grids"]["t"]["acp"]["experiments"]["e"]["dataset_seeds"] = {"syn-random-7": [0]}
    with pytest.raises(
        ConfigError, match="dataset_seeds: 'syn-random-7' is not one of the experiment's datasets"
    ):
        validate_config(bad)


@pytest.mark.parametrize("seeds", [[], [1, 1], [-1], ["zero"], 3])  # "0" is read as 0
def test_experiment_seeds_are_validated(cfg, seeds):
    raw = copy.deepcopy(cfg)
    raw["grids"]["t"]["acp"]["experiments"]["e"]["seeds"] = seeds
    with pytest.raises(ConfigError, match="seeds"):
        validate_config(raw)


def test_quick_grid_runs_ten_recovery_seeds(repo):
    raw = load_yaml(repo / "config" / "config.yaml")
    raw["grid"] = "quick"
    cfg = validate_config(raw)
    assert len(grid.seeds(cfg, "fig4")) >= 10


def test_deterministic_cells_run_the_first_seed_once(repo):
    """SVI/LB-CDI/UB-CDI in inference mode give one posterior whatever the seed: one run, in
    rule train_cell_once; the same methods in learning mode keep every seed."""
    raw = load_yaml(repo / "config" / "config.yaml")
    raw["grids"]["t"] = {"acp": {
        "datasets": ["syn-pattern", "syn-random-1"],
        "seeds": [3, 4],
        "experiments": {
            "inf": {"mode": "inference", "datasets": ["syn-pattern"], "runs": {"acp": [20], "svi": [0], "ub-cdi": [0]}},
            "learn": {"mode": "learning", "datasets": ["syn-random-1"], "runs": {"svi": [10]}},
        },
    }}  # fmt: skip
    raw["grid"] = "t"
    cfg = validate_config(raw)
    assert grid.seeds(cfg, "inf", "syn-pattern", "acp") == [3, 4]
    assert grid.seeds(cfg, "inf", "syn-pattern", "svi") == [3]
    assert grid.seeds(cfg, "inf", "syn-pattern", "ub-cdi") == [3]
    assert grid.seeds(cfg, "learn", "syn-random-1", "svi") == [3, 4]
    once = [g for g in grid.seed_groups(cfg) if g.methods]
    assert [(g.suffix, g.experiments, g.seeds, g.methods) for g in once] == [
        ("_once", ("inf",), (3,), ("svi", "ub-cdi"))
    ]


def test_calibration_panel_adds_only_generator_variants(cfg):
    """The panel covers the grid's experiment datasets, then the variants of ``calibration.datasets``;
    a name that is not a dataset, or a dataset that is no variant, is refused by name."""
    assert grid.calibration_datasets(cfg) == ["syn-pattern", "syn-random-1"]
    with_variants = copy.deepcopy(cfg)
    with_variants["grids"]["t"]["acp"]["calibration"] = {
        "datasets": ["syn-pattern-leak2", "syn-pattern-overlap"]
    }
    assert grid.calibration_datasets(with_variants) == [
        "syn-pattern",
        "syn-random-1",
        "syn-pattern-leak2",
        "syn-pattern-overlap",
    ]
    for name, match in (
        ("nope", "'nope' is not a key of datasets"),
        ("syn-random-2", "'syn-random-2' has no variant_of"),
    ):
        bad = copy.deepcopy(cfg)
        bad["grids"]["t"]["acp"]["calibration"] = {"datasets": [name]}
        with pytest.raises(ConfigError, match=rf"grids\.t\.acp\.calibration\.datasets: {match}"):
            grid.calibration_datasets(bad)
