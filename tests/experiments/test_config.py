"""Config validation: every kind of bad input is caught up front with the key named."""

from __future__ import annotations

import copy

import pytest

from noisyor_bench.cli import main
from noisyor_bench.experiments.config import load_config, load_yaml, validate_config
from noisyor_bench.infra.errors import ConfigError


@pytest.fixture
def cfg(repo):
    return load_yaml(repo / "config" / "config.yaml")


def test_shipped_config_is_valid(cfg):
    validated = validate_config(cfg)
    assert validated["profile"] == "quick"
    assert {"smoke", "quick", "paper"} <= set(validated["profiles"])
    assert len([n for n in validated["datasets"] if n.startswith("syn-random-")]) == 7


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda c: c.update(bogus=1), "'bogus' was unexpected"),
        (lambda c: c.update(profile="fast"), "allowed values: ['paper', 'quick', 'smoke']"),
        (lambda c: c["datasets"]["syn-pattern"].update(mu=1.5), "datasets.syn-pattern.mu"),
        (lambda c: c["datasets"]["syn-random-1"].update(D="fifty"), "datasets.syn-random-1.D"),
        (lambda c: c["datasets"]["syn-random-1"].pop("s"), "'s' is a required property"),
        (
            lambda c: c["datasets"]["syn-pattern"].update(patterns="letters"),
            "allowed values: ['syn-pattern', 'mnist']",
        ),
        (lambda c: c["datasets"]["syn-pattern"].update(colour="red"), "'colour' was unexpected"),
        (lambda c: c["profiles"]["quick"].update(datasets=["nope"]), "unknown dataset 'nope'"),
        (lambda c: c["profiles"]["quick"].update(speed=3), "profiles.quick"),
    ],
)
def test_invalid_config_names_the_key(cfg, mutate, message):
    bad = copy.deepcopy(cfg)
    mutate(bad)
    with pytest.raises(ConfigError) as err:
        validate_config(bad)
    assert message in str(err.value)


def test_yaml_is_loaded_safely(tmp_path):
    evil = tmp_path / "evil.yaml"
    evil.write_text("profile: !!python/object/apply:os.system ['echo pwned']\n")
    with pytest.raises(ConfigError, match=r"evil.yaml:1:10: invalid YAML: .*safe loader"):
        load_yaml(evil)


def test_missing_config_file(tmp_path):
    with pytest.raises(ConfigError, match="config file not found"):
        load_config(tmp_path / "nope.yaml")


def test_cli_reports_user_errors_without_traceback(capsys, tmp_path, repo):
    code = main(
        [
            "make-dataset",
            "--name",
            "nope",
            "--config",
            str(repo / "config" / "config.yaml"),
            "--out",
            str(tmp_path / "x.npz"),
        ]
    )
    assert code == 2
    err = capsys.readouterr().err
    assert "unknown dataset 'nope'" in err and "Traceback" not in err


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (
            lambda c: c["profiles"]["quick"]["experiments"]["fig3a"]["runs"].update(vae=[10]),
            "unknown method 'vae'",
        ),
        (
            lambda c: c["profiles"]["quick"]["experiments"]["fig3a"]["runs"].update(avi=[5000]),
            "N_train = 5000 exceeds the training pool of syn-pattern (1000 rows",
        ),
        (
            lambda c: c["profiles"]["quick"]["experiments"]["fig3a"]["runs"].update(acp=[0]),
            "N_train = 0 is only for",
        ),
        (
            lambda c: c["profiles"]["quick"]["experiments"]["fig3a"].update(mode="learn"),
            "allowed values: ['inference', 'learning']",
        ),
        (
            lambda c: c["profiles"]["quick"]["experiments"]["fig3a"].update(datasets=["mnist"]),
            "unknown dataset 'mnist'",
        ),
        (
            lambda c: c["profiles"]["quick"]["budget"].update(max_epochs="ten"),
            "profiles.quick.budget.max_epochs",
        ),
        (lambda c: c["profiles"]["quick"]["budget"].update(epochs=3), "'epochs' was unexpected"),
        (
            lambda c: c["profiles"]["quick"]["budget"].update(convergence_rel_tol=0),
            "profiles.quick.budget.convergence_rel_tol",
        ),
        (
            lambda c: c["profiles"]["quick"]["text"]["budget"].update(convergence_window=0),
            "profiles.quick.text.budget.convergence_window",
        ),
        (lambda c: c["search_spaces"]["avi"].update(lr={"gaussian": [0, 1]}), "search_spaces.avi.lr"),
        # the real-corpus grid is checked by the same validation (CLI and Snakefile alike)
        (
            lambda c: c["profiles"]["quick"]["text"]["tsne"].update(n_train=[4543, 777]),
            "profiles.quick.text.tsne.n_train: [777] not in profiles.quick.text.classification.n_train",
        ),
        (
            lambda c: c["profiles"]["quick"]["text"]["topics"].update(best_topics=99),
            "profiles.quick.text.topics.best_topics = 99 exceeds",
        ),
    ],
)
def test_invalid_grid_fails_before_any_job(cfg, mutate, message):
    bad = copy.deepcopy(cfg)
    mutate(bad)
    with pytest.raises(ConfigError) as err:
        validate_config(bad)
    assert message in str(err.value)


METHODS = "['avi', 'acp', 'svi', 'lb-cdi', 'ub-cdi', 'acp-sg']"


@pytest.mark.parametrize(
    ("mutate", "key", "allowed"),
    [
        (
            lambda c: c.update(bogus=1),
            "'bogus' was unexpected",
            "allowed keys: corpora, datasets, pmi, profile, profiles, raw_data_dir, results_dir, search_spaces",
        ),
        (
            lambda c: c["profiles"]["quick"]["budget"].update(epochs=3),
            "profiles.quick.budget: ",
            "allowed keys: batch_size, convergence_rel_tol, convergence_window, eval_every, max_epochs, min_epoch_steps, "
            "patience",
        ),
        (
            lambda c: c["profiles"]["quick"]["experiments"]["fig3a"].update(colour=1),
            "profiles.quick.experiments.fig3a: ",
            "allowed keys: budget, dataset_runs, dataset_seeds, datasets, method_budget, mode, not_run, runs, search",
        ),
        (
            lambda c: c["profiles"]["quick"]["experiments"]["fig3a"]["runs"].update(vae=[10]),
            "profiles.quick.experiments.fig3a.runs: unknown method 'vae'",
            f"allowed values: {METHODS}",
        ),
        (
            lambda c: c["profiles"]["quick"].setdefault("method_budget", {}).update(vae={"max_epochs": 3}),
            "profiles.quick.method_budget: 'vae'",
            f"allowed values: {METHODS}",
        ),
        (
            lambda c: c["search_spaces"].update(vae={}),
            "search_spaces: unknown method(s) 'vae'",
            f"allowed values: {METHODS}",
        ),
        (
            lambda c: c.update(profile="fast"),
            "profile: 'fast'",
            "allowed values: ['paper', 'quick', 'smoke']",
        ),
        (
            lambda c: c["profiles"]["quick"]["experiments"]["fig3a"].update(mode="learn"),
            "profiles.quick.experiments.fig3a.mode: 'learn'",
            "allowed values: ['inference', 'learning']",
        ),
        (
            lambda c: c["datasets"]["syn-random-1"].update(D="fifty"),
            "datasets.syn-random-1.D: 'fifty'",
            "is not of type 'integer'",
        ),
        (
            lambda c: c["profiles"]["quick"]["experiments"]["fig3a"]["runs"].update(avi=[5000]),
            "profiles.quick.experiments.fig3a.runs.avi: N_train = 5000",
            "exceeds the training pool of syn-pattern (1000 rows, datasets.syn-pattern.n_train_pool)",
        ),
    ],
)
def test_invalid_config_names_the_key_and_the_allowed_values(cfg, mutate, key, allowed):
    """Issue 6: the message names the offending key *and* what would have been accepted."""
    bad = copy.deepcopy(cfg)
    mutate(bad)
    with pytest.raises(ConfigError) as err:
        validate_config(bad)
    assert key in str(err.value) and allowed in str(err.value)
