"""Config validation: every kind of bad input is caught up front with the key named."""

from __future__ import annotations

import copy

import pytest
from conftest import REPO

from noisyor_bench.cli import main
from noisyor_bench.experiments import papers
from noisyor_bench.experiments.config import load_config, load_yaml, validate_config
from noisyor_bench.infra.errors import ConfigError


@pytest.fixture
def cfg(repo):
    return load_yaml(repo / "config" / "config.yaml")


def test_shipped_config_is_valid(cfg):
    validated = validate_config(cfg)
    assert validated["grid"] == "quick"
    assert {"smoke", "quick", "paper"} <= set(validated["grids"])
    assert len([n for n in validated["datasets"] if n.startswith("syn-random-")]) == 7


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda c: c.update(bogus=1), "'bogus' was unexpected"),
        (
            lambda c: c.update(grid="fast"),
            "allowed values: ['extended', 'extended-fig5', 'paper', 'paper-ape-toybars', 'paper-avipam-nips', 'paper-avipam-table1', 'paper-avipam-table2-timing', 'paper-fig5-table4', 'paper-synpattern', 'quick', 'smoke']",
        ),
        (lambda c: c["datasets"]["syn-pattern"].update(mu=1.5), "datasets.syn-pattern.mu"),
        (lambda c: c["datasets"]["syn-random-1"].update(D="fifty"), "datasets.syn-random-1.D"),
        (lambda c: c["datasets"]["syn-random-1"].pop("s"), "'s' is a required property"),
        (
            lambda c: c["datasets"]["syn-pattern"].update(patterns="letters"),
            "allowed values: ['syn-pattern', 'syn-pattern-overlap', 'mnist']",
        ),
        (lambda c: c["datasets"]["syn-pattern"].update(colour="red"), "'colour' was unexpected"),
        (lambda c: c["grids"]["quick"]["acp"].update(datasets=["nope"]), "unknown dataset 'nope'"),
        (lambda c: c["grids"]["quick"].update(speed=3), "grids.quick"),
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
    evil.write_text("results: !!python/object/apply:os.system ['echo pwned']\n")
    with pytest.raises(ConfigError, match=r"evil.yaml:1:10: invalid YAML: .*safe loader"):
        load_yaml(evil)


def test_missing_config_file(tmp_path):
    with pytest.raises(ConfigError, match="config file not found"):
        load_config(tmp_path / "nope.yaml")


def test_cli_reports_user_errors_without_traceback(capsys, tmp_path, repo):
    code = main(
        [
            "acp-make-dataset",
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
            lambda c: c["grids"]["quick"]["acp"]["experiments"]["fig3a"]["runs"].update(vae=[10]),
            "unknown method 'vae'",
        ),
        (
            lambda c: c["grids"]["quick"]["acp"]["experiments"]["fig3a"]["runs"].update(avi=[5000]),
            "N_train = 5000 exceeds the training pool of syn-pattern (1000 rows",
        ),
        (
            lambda c: c["grids"]["quick"]["acp"]["experiments"]["fig3a"]["runs"].update(acp=[0]),
            "N_train = 0 is only for",
        ),
        (
            lambda c: c["grids"]["quick"]["acp"]["experiments"]["fig3a"].update(mode="learn"),
            "allowed values: ['inference', 'learning']",
        ),
        (
            lambda c: c["grids"]["quick"]["acp"]["experiments"]["fig3a"].update(datasets=["mnist"]),
            "unknown dataset 'mnist'",
        ),
        (
            lambda c: c["grids"]["quick"]["acp"]["budget"].update(max_epochs="ten"),
            "grids.quick.acp.budget.max_epochs",
        ),
        (lambda c: c["grids"]["quick"]["acp"]["budget"].update(epochs=3), "'epochs' was unexpected"),
        (
            lambda c: c["grids"]["quick"]["acp"]["budget"].update(convergence_rel_tol=0),
            "grids.quick.acp.budget.convergence_rel_tol",
        ),
        (
            lambda c: c["grids"]["quick"]["acp"]["text"]["budget"].update(convergence_window=0),
            "grids.quick.acp.text.budget.convergence_window",
        ),
        (lambda c: c["search_spaces"]["avi"].update(lr={"gaussian": [0, 1]}), "search_spaces.avi.lr"),
        # the real-corpus grid is checked by the same validation (CLI and Snakefile alike)
        (
            lambda c: c["grids"]["quick"]["acp"]["text"]["tsne"].update(n_train=[1000, 777]),
            "grids.quick.acp.text.tsne.n_train: [777] not in grids.quick.acp.text.classification.n_train",
        ),
        (
            lambda c: c["grids"]["quick"]["acp"]["text"]["topics"].update(best_topics=99),
            "grids.quick.acp.text.topics.best_topics = 99 exceeds",
        ),
        # a generator variant is judged beside the dataset it varies, never alone
        (
            lambda c: c["grids"]["quick"]["acp"]["experiments"]["fig3a"].update(
                datasets=["syn-pattern-leak2"]
            ),
            "grids.quick.acp.experiments.fig3a.datasets: 'syn-pattern-leak2' is a generator variant of "
            "'syn-pattern' (datasets.syn-pattern-leak2.variant_of) and is judged beside it",
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
            "allowed keys: corpora, datasets, grid, grids, job_seconds, overwrite_grid, papers, pmi, raw_data_dir, reference_dir, results_dir, search_spaces",
        ),
        (
            lambda c: c["grids"]["quick"]["acp"]["budget"].update(epochs=3),
            "grids.quick.acp.budget: ",
            "allowed keys: batch_size, convergence_rel_tol, convergence_window, eval_every, max_epochs, min_epoch_steps, "
            "patience",
        ),
        (
            lambda c: c["grids"]["quick"]["acp"]["experiments"]["fig3a"].update(colour=1),
            "grids.quick.acp.experiments.fig3a: ",
            "allowed keys: budget, dataset_runs, dataset_seeds, datasets, latents_factor, method_budget, mode, not_run, recovery_of, runs, search",
        ),
        (
            lambda c: c["grids"]["quick"]["acp"]["experiments"]["fig3a"]["runs"].update(vae=[10]),
            "grids.quick.acp.experiments.fig3a.runs: unknown method 'vae'",
            f"allowed values: {METHODS}",
        ),
        (
            lambda c: (
                c["grids"]["quick"]["acp"].setdefault("method_budget", {}).update(vae={"max_epochs": 3})
            ),
            "grids.quick.acp.method_budget: 'vae'",
            f"allowed values: {METHODS}",
        ),
        (
            lambda c: c["search_spaces"].update(vae={}),
            "search_spaces: unknown method(s) 'vae'",
            f"allowed values: {METHODS}",
        ),
        (
            lambda c: c.update(grid="fast"),
            "grid: 'fast'",
            "allowed values: ['extended', 'extended-fig5', 'paper', 'paper-ape-toybars', 'paper-avipam-nips', 'paper-avipam-table1', 'paper-avipam-table2-timing', 'paper-fig5-table4', 'paper-synpattern', 'quick', 'smoke']",
        ),
        (
            lambda c: c["grids"]["quick"]["acp"]["experiments"]["fig3a"].update(mode="learn"),
            "grids.quick.acp.experiments.fig3a.mode: 'learn'",
            "allowed values: ['inference', 'learning']",
        ),
        (
            lambda c: c["datasets"]["syn-random-1"].update(D="fifty"),
            "datasets.syn-random-1.D: 'fifty'",
            "is not of type 'integer'",
        ),
        (
            lambda c: c["grids"]["quick"]["acp"]["experiments"]["fig3a"]["runs"].update(avi=[5000]),
            "grids.quick.acp.experiments.fig3a.runs.avi: N_train = 5000",
            "exceeds the training pool of syn-pattern (1000 rows, datasets.syn-pattern.n_train_pool)",
        ),
    ],
)
def test_invalid_config_names_the_key_and_the_allowed_values(cfg, mutate, key, allowed):
    """The message names the offending key *and* what would have been accepted."""
    bad = copy.deepcopy(cfg)
    mutate(bad)
    with pytest.raises(ConfigError) as err:
        validate_config(bad)
    assert key in str(err.value) and allowed in str(err.value)


# ------------------------------------------------------------------ grid key
def test_grid_key_selects_the_experiment_grid(cfg):
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # today's spelling: no deprecation warning
        validated = validate_config({**cfg, "grid": "paper"})
    assert validated["grid"] == "paper" and "profile" not in validated and "profiles" not in validated


def test_deprecated_profile_key_still_works_and_warns(cfg):
    from noisyor_bench.experiments.config import ConfigDeprecationWarning

    # `snakemake --config profile=paper` over today's config.yaml (which sets grid: quick)
    with pytest.warns(
        ConfigDeprecationWarning, match=r"config key 'profile' is deprecated: use grid=paper"
    ) as rec:
        validated = validate_config({**cfg, "profile": "paper"})
    assert validated["grid"] == "paper" and "profile" not in validated
    assert len(rec) == 1


def test_deprecated_profiles_section_still_works_and_warns(cfg):
    from noisyor_bench.experiments.config import ConfigDeprecationWarning

    old = {k: v for k, v in cfg.items() if k not in ("grid", "grids")}
    old.update(profile="smoke", profiles=cfg["grids"])  # a config file in the old spelling
    with pytest.warns(ConfigDeprecationWarning) as rec:
        validated = validate_config(old)
    messages = sorted(str(w.message) for w in rec)
    assert messages == [
        "config key 'profile' is deprecated: use grid=smoke",
        "config section 'profiles' is deprecated: rename it to 'grids'",
    ]
    assert validated["grid"] == "smoke" and validated["grids"] == cfg["grids"]
    # an old file with today's key on the command line: the command line (grid) wins
    with pytest.warns(ConfigDeprecationWarning):
        assert validate_config({**old, "grid": "paper"})["grid"] == "paper"


def test_grids_and_profiles_sections_together_are_refused(cfg):
    with pytest.raises(ConfigError, match="both 'grids' and the deprecated 'profiles'"):
        validate_config({**cfg, "profiles": cfg["grids"]})


def test_check_config_accepts_the_deprecated_set_profile(repo, capsys):
    from noisyor_bench.experiments.config import ConfigDeprecationWarning

    with pytest.warns(ConfigDeprecationWarning, match="use grid=smoke"):
        assert main(["check-config", str(repo / "config" / "config.yaml"), "--set", "profile=smoke"]) == 0
    assert "valid (grid smoke:" in capsys.readouterr().out


def schema_papers() -> list[str]:
    from noisyor_bench.experiments.config import schema

    return schema()["properties"]["papers"]["items"]["enum"]


def test_method_enums_of_the_schema_come_from_the_registry():
    from noisyor_bench.experiments.config import schema
    from noisyor_bench.inference.noisyor.registry import METHOD_NAMES

    defs = schema()["$defs"]
    assert defs["method"]["enum"] == list(METHOD_NAMES)
    assert defs["corpus_method"]["enum"] == ["avi", "acp"]


def test_papers_defaults_to_every_registered_paper_and_rejects_unknown_names():
    cfg = load_yaml(REPO / "config" / "config.yaml")
    assert validate_config({k: v for k, v in cfg.items() if k != "papers"})["papers"] == list(papers.ids())
    assert schema_papers() == list(papers.ids()) == ["acp", "ape", "ape_noisyor", "avipam"]
    with pytest.raises(ConfigError, match="papers.0: 'foo' is not allowed"):
        validate_config({**cfg, "papers": ["foo"]})


def test_paper_grid_runs_fig5s_n_train_values(repo):
    """The paper grid's Fig. 5 cells are the plot's N_train values written down once, in
    paper_numbers.yaml (the on-par claim's "large amount of data" is their largest)."""
    from noisyor_bench.experiments.acp import grid
    from noisyor_bench.reporting.acp.synthetic_claims import FIG5_LARGE_N_TRAIN, FIG5_PAPER_N_TRAIN

    paper = load_config(repo / "config" / "config.yaml", {"grid": "paper"})
    sizes = {c.n_train for c in grid.cells(paper, "fig5") if c.method in ("avi", "acp")}
    assert sorted(sizes) == list(FIG5_PAPER_N_TRAIN)
    assert FIG5_LARGE_N_TRAIN == max(sizes)


# --- one layout for every paper: neutral keys plus one section per registered paper ---------------


def test_every_grid_key_is_neutral_or_a_registered_paper(cfg):
    from noisyor_bench.experiments.config import NEUTRAL_GRID_KEYS

    allowed = set(NEUTRAL_GRID_KEYS) | set(papers.ids())
    for name, grid_ in cfg["grids"].items():
        stray = sorted(set(grid_) - allowed)
        assert not stray, f"grids.{name}: keys {stray} are neither paper-neutral nor a registered paper"


def test_the_neutral_keys_are_exactly_the_schemas_grid_keys():
    from importlib import resources

    import yaml

    from noisyor_bench.experiments.config import NEUTRAL_GRID_KEYS

    text = resources.files("noisyor_bench.experiments").joinpath("schemas/config.schema.yaml").read_text()
    assert tuple(yaml.safe_load(text)["$defs"]["grid"]["properties"]) == NEUTRAL_GRID_KEYS


def test_every_paper_declares_its_grid_section_in_its_own_schema_fragment():
    for paper in papers.papers():
        fragment = papers.config_schema(paper)
        assert tuple(fragment["grid_sections"]) == paper.grid_sections == (paper.id,), paper.id


@pytest.mark.parametrize("grid_name", sorted(load_yaml(REPO / "config" / "config.yaml")["grids"]))
def test_every_grid_passes_check_config(grid_name, capsys):
    assert main(["check-config", str(REPO / "config" / "config.yaml"), "--set", f"grid={grid_name}"]) == 0
    assert f"grid {grid_name}" in capsys.readouterr().out


def test_the_old_layout_loads_with_a_warning_naming_the_new_keys(cfg):
    from noisyor_bench.experiments import config as config_module

    old = copy.deepcopy(cfg)
    for grid_ in old["grids"].values():
        grid_.update(grid_.pop("acp", {}))  # ACP's keys back at the grid's root
    config_module._WARNED.clear()
    with pytest.warns(
        FutureWarning, match=r"grids\.quick\.experiments is now grids\.quick\.acp\.experiments"
    ):
        migrated = validate_config(old)
    assert migrated["grids"] == validate_config(cfg)["grids"]


def test_acp_keys_in_both_layouts_are_refused(cfg):
    both = copy.deepcopy(cfg)
    both["grids"]["quick"]["seeds"] = [0]
    with pytest.raises(ConfigError, match=r"grids\.quick: ACP's keys seeds stand both at the grid's root"):
        validate_config(both)


def test_a_grid_without_a_papers_section_configures_none_of_its_cells(cfg):
    from noisyor_bench.experiments.acp import grid

    validated = validate_config({**cfg, "grid": "paper-ape-toybars"})
    assert "acp" not in validated["grids"]["paper-ape-toybars"]
    assert grid.cells(validated) == [] and grid.active_grid(validated) == {"threads": 1}


def test_explain_seeds_prints_each_cells_effective_seeds(repo, capsys):
    """The table agrees with the config's own overrides: an experiment's seeds win over the
    grid's, a deterministic inference cell runs its first seed, the text experiments their own."""
    assert main(["check-config", str(repo / "config" / "config.yaml"), "--explain", "seeds"]) == 0
    out = capsys.readouterr().out
    acp = load_yaml(repo / "config" / "config.yaml")["grids"]["quick"]["acp"]
    rows = {
        " ".join(line.split()[:2]): line.split(None, 2)[2]
        for line in out.splitlines()
        if line.startswith("  ")
    }

    def listed(seeds):
        return ", ".join(map(str, seeds))

    assert rows["fig4 acp"] == listed(acp["experiments"]["fig4"]["seeds"])
    assert rows["fig3a acp"] == listed(acp["seeds"])  # no override: the grid's seeds
    assert rows["fig3a svi"] == listed(acp["seeds"][:1])  # deterministic in inference mode
    assert rows["table5 avi"] == listed(acp["text"]["seeds"])
