"""The APE training budget of each encoder: its own section when the grid has one, else ``training``."""

from __future__ import annotations

from noisyor_bench.experiments.ape.steps import training_section
from noisyor_bench.experiments.ape.train import training_config

TRAINING = {"max_steps": 6000, "eval_every": 100, "window": 5, "rel_tol": 0.002}
NAIVE = {"max_steps": 1500, "eval_every": 100, "window": 5, "rel_tol": 0.002}
STANDARD = {"max_steps": 4000, "eval_every": 100, "window": 3, "rel_tol": 0.002}


def test_each_encoder_reads_its_own_section():
    section = {"training": TRAINING, "naive_training": NAIVE, "standard_training": STANDARD}
    assert training_section(section, "ape-model-aware") is TRAINING
    assert training_section(section, "ape-naive") is NAIVE
    assert training_section(section, "standard") is STANDARD


def test_without_an_own_section_the_encoders_share_training():
    section = {"training": TRAINING}
    for method in ("ape-model-aware", "ape-naive", "standard"):
        assert training_section(section, method) is TRAINING


def test_step_cap_below_the_epochs_and_patience_are_passed_on():
    # 2 epochs of 500 documents x 2,000 models / batch 100 = 20,000 steps; the cap decides.
    config, epoch_steps, steps = training_config({**TRAINING, "epochs": 2, "patience": 7}, 500, 2000)
    assert (epoch_steps, steps, config.max_steps) == (20_000, 6000, 6000)
    assert config.patience == 7 and config.convergence_window == 5 and config.convergence_rel_tol == 0.002
    config, _, steps = training_config({"epochs": 2, "eval_every": 100}, 500, 1)
    assert steps == 10 and config.patience is None and config.eval_every == 10


def test_each_step_is_given_exactly_the_settings_it_reads() -> None:
    """A rule's params are its step's part of the dataset's settings: NUTS's seeds reach NUTS
    and the evaluation, never the dataset or an encoder (whose jobs would rerun on the change)."""
    import copy

    from conftest import REPO

    from noisyor_bench.experiments.ape.steps import step_settings
    from noisyor_bench.experiments.config import load_config

    cfg = load_config(REPO / "config" / "config.yaml", {"grid": "quick"})
    section = cfg["grids"]["quick"]["ape"]["datasets"]["mdreviews"]
    changed = copy.deepcopy(section)
    changed["nuts"]["seeds"] = [7]
    steps = [
        ("ape-data", None),
        ("ape-train", "standard"),
        ("ape-train", "ape-model-aware"),
        ("ape-vi", None),
    ]
    for step, method in steps:
        assert step_settings(changed, step, method) == step_settings(section, step, method), step
    for step in ("ape-nuts", "ape-evaluate"):
        assert step_settings(changed, step) != step_settings(section, step), step
    # each encoder its own budget: the Standard encoder's does not reach the model-aware one
    changed["standard_training"]["max_steps"] += 1
    assert step_settings(changed, "ape-train", "ape-model-aware") == step_settings(
        section, "ape-train", "ape-model-aware"
    )
    assert step_settings(changed, "ape-train", "standard") != step_settings(section, "ape-train", "standard")
    assert step_settings(section, "ape-data")["evaluation"] == {
        "documents": section["evaluation"]["documents"]
    }
