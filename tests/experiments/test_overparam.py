"""The K = 2 x K_true sensitivity of Fig. 4: grid keys ``latents_factor`` and
``recovery_of``, the CLI's ``--latents-factor``, and the recovery table's best one-to-one match
of K_true true patterns among more learned columns."""

from __future__ import annotations

import copy
from pathlib import Path

import numpy as np
import pytest
from conftest import REPO, cli
from toydata import write_toy_dataset

from noisyor_bench.evaluation.recovery import match_patterns
from noisyor_bench.experiments.acp import grid
from noisyor_bench.experiments.acp.grid import validate_grid
from noisyor_bench.experiments.config import load_config
from noisyor_bench.infra.errors import ConfigError
from noisyor_bench.infra.io import read_json


def test_extended_grid_lists_the_overparameterised_rows_in_fig4() -> None:
    cfg = load_config(REPO / "config" / "config.yaml", {"grid": "extended"})
    # supplement Fig. 1's SVI/LB-CDI rows (their own seeds) and the K = 2 x K_true rows
    assert grid.recovery_experiments(cfg, "fig4") == ["fig4", "fig4k2", "suppfig1"]
    assert grid.latents_factor(cfg, "fig4k2") == 2 and grid.latents_factor(cfg, "fig4") == 1
    # paired with fig4 by seed: the same seeds
    assert grid.seeds(cfg, "fig4k2", "syn-pattern") == grid.seeds(cfg, "fig4", "syn-pattern")


METHODS = ("avi", "acp", "svi", "lb-cdi", "ub-cdi", "acp-sg")


def test_recovery_of_must_name_an_experiment_of_the_grid() -> None:
    cfg = load_config(REPO / "config" / "config.yaml", {"grid": "extended"})
    bad = copy.deepcopy(cfg)
    bad["grids"]["extended"]["acp"]["experiments"]["fig4k2"]["recovery_of"] = "fig9"
    with pytest.raises(ConfigError, match=r"grids\.extended\.acp\.experiments\.fig4k2\.recovery_of: 'fig9'"):
        validate_grid(bad, METHODS, {ds: 10**6 for ds in cfg["datasets"]})
    bad = copy.deepcopy(cfg)
    bad["grids"]["extended"]["acp"]["experiments"]["fig3a"]["latents_factor"] = 2
    with pytest.raises(ConfigError, match="latents_factor: only learning-mode"):
        validate_grid(bad, METHODS, {ds: 10**6 for ds in cfg["datasets"]})


def test_best_subset_match_of_more_learned_columns() -> None:
    """8 learned columns for 3 true patterns: the true ones sit at columns 5, 1, 6 among decoys;
    the match must find exactly them (a greedy or K-by-K match would not)."""
    rng = np.random.default_rng(3)
    truth = np.zeros((12, 3))
    for k in range(3):
        truth[4 * k : 4 * k + 4, k] = 2.0
    learned = rng.uniform(0, 0.05, (12, 8))
    for k, col in enumerate((5, 1, 6)):
        learned[:, col] = truth[:, k] + 0.01
    learned[:, 0] = truth[:, 0] + truth[:, 1]  # a merged decoy, similar to both
    rec = match_patterns(truth, learned, 0.8)
    assert rec.assignment.tolist() == [5, 1, 6] and rec.n_recovered == 3


def _train(dataset: Path, out: Path, *extra: str) -> list[str]:
    return [
        "acp-train-cell",
        "--dataset", str(dataset), "--dataset-name", "toy", "--experiment", "exp",
        "--method", "acp", "--mode", "learning", "--n-train", "40", "--seeds", "0",
        "--budget", '{"max_epochs": 1, "patience": 1, "batch_size": 32}',
        "--evaluation", '{"samples": 5, "iw_samples": 0, "exact_max_k": 4}', "--device", "cpu",
        "--out-dir", str(out / "runs/exp/toy/acp/n40/seed0"), *extra,
    ]  # fmt: skip


def test_latents_factor_learns_twice_the_true_k(tmp_path: Path, capsys) -> None:
    from noisyor_bench.experiments.rundir import load_posterior

    dataset = write_toy_dataset(tmp_path / "toy.npz")  # K = 3
    code, _, err = cli(_train(dataset, tmp_path / "r", "--latents-factor", "2"), capsys)
    assert code == 0, err
    post = load_posterior(tmp_path / "r/runs/exp/toy/acp/n40/seed0")
    assert post["theta"].shape == (10, 6)
    # evaluation.exact_max_k 4 < K = 6: no 2^K enumeration of the exact -log p(x)
    assert read_json(tmp_path / "r/runs/exp/toy/acp/n40/seed0/metrics.json").get("exact_nll") is None
    code, _, err = cli(_train(dataset, tmp_path / "bad", "--latents-factor", "2", "--latents", "4"), capsys)
    assert code == 2 and "--latents-factor and --latents" in err
