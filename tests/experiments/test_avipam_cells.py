"""aviPAM grid cells: which runs each grid asks for and the settings a run receives."""

from __future__ import annotations

import pytest
import yaml
from conftest import REPO

from noisyor_bench.experiments.avipam import cells
from noisyor_bench.experiments.config import validate_config
from noisyor_bench.infra.errors import ConfigError


def _section(grid: str) -> dict:
    cfg = yaml.safe_load((REPO / "config/config.yaml").read_text(encoding="utf-8"))
    cfg["grid"] = grid
    return cells.section(validate_config(cfg))


def settings_online(sec: dict) -> dict:
    cell = next(c for c in cells.table_cells(sec, "small") if c.method == "lda-online")
    return cells.cell_settings(sec, cell)["mean_field"]


def test_quick_grid_runs_table1_sizes_on_both_corpora_and_a_reduced_collapse_study() -> None:
    sec = _section("quick")
    small = cells.table_cells(sec, "small")
    assert {c.corpus for c in small} == {"20news", "nips"}
    methods_20news = {c.method for c in small if c.corpus == "20news"}
    # every Table 1 method but batch DMFVI (paper grid only: its checked passes cost too much),
    # and every calibration row but NVLDA (paper grid only)
    assert methods_20news == set(cells.METHODS) - {"lda-batch", "nvlda"}
    assert cells.table_cells(sec, "large") == []  # Table 2/4 sizes: paper grid only
    # REDUCED: NIPS runs only the pair of its claim (aviPAM 4-PAM vs 4-PAM Gibbs); 3 seeds
    assert {c.method for c in small if c.corpus == "nips"} == {"pam4-gibbs", "avipam-pam4"}
    assert cells.seeds(sec) == [0, 1, 2]
    assert settings_online(sec)["stop_on_rule"] is True and settings_online(sec)["eval_docs"] > 0
    settings = cells.cell_settings(sec, small[0])
    assert settings["sizes"] == {"sub": 50, "super": 2, "superduper": 2, "molda": [10, 50]}
    assert settings["gibbs"]["iterations"] < 10000  # reduced, stated in the captions
    # aviPAM trains a fixed number of epochs (no plateau stop, patience never fires),
    # reduced below the coherence plateau the grid states per corpus (the qualifier says so);
    # scikit-learn checks its perplexity every pass so its convergence can be judged
    avi = cells.cell_settings(sec, next(c for c in small if c.method == "avipam-pam4"))
    assert avi["avi"]["stop_on_plateau"] is False and avi["avi"]["patience"] >= avi["avi"]["max_epochs"]
    assert avi["coherence_plateau_epoch"] > avi["avi"]["max_epochs"]
    assert "coherence_plateau_epoch" not in settings  # Gibbs chains are judged on their traces
    assert settings["mean_field"]["evaluate_every"] == 1 and settings["mean_field"]["max_iter"] >= 6
    collapse = cells.collapse_cells(sec)
    assert collapse and all(c.n_train == 1000 for c in collapse)


def test_paper_grid_has_the_papers_iteration_counts_and_sizes() -> None:
    sec = _section("paper")
    assert cells.seeds(sec) == [0, 1, 2, 3, 4]
    large = cells.table_cells(sec, "large")
    s = cells.cell_settings(sec, large[0])
    assert s["sizes"] == {"sub": 100, "super": 50, "superduper": 10, "molda": [50, 100]}
    assert s["gibbs"] == {"iterations": 3000, "burn_in": 2000, "trace_every": 100}
    small = cells.cell_settings(sec, cells.table_cells(sec, "small")[0])
    assert small["gibbs"]["iterations"] == 10000


def test_collapse_settings_carry_variant_and_learning_rate() -> None:
    sec = _section("paper")
    cell = next(c for c in cells.collapse_cells(sec) if c.method.startswith("batchnorm-nogain"))
    s = cells.cell_settings(sec, cell)
    assert s["variant"] == "batchnorm-nogain" and s["avi"]["lr"] == s["lr"]
    assert cells.parse_collapse_method("batchnorm-nogain-lr0.1") == ("batchnorm-nogain", 0.1)
    with pytest.raises(ConfigError):
        cells.parse_collapse_method("layernorm-lr0.1")


def test_run_paths_follow_the_project_layout() -> None:
    c = cells.RunCell("small", "20news", "avipam-pam4", 3, 0)
    assert c.path == "avipam-small/20news/avipam-pam4/n0/seed3"


def test_one_gibbs_cap_for_lda_and_pam_and_stop_on_rule_in_quick_only() -> None:
    assert cells.gibbs_settings({"iterations": 40, "stop_on_rule": True}, "pam4-gibbs") == {
        "iterations": 40,
        "stop_on_rule": True,
    }
    with pytest.raises(ConfigError, match="pam_iterations"):
        cells.gibbs_settings({"iterations": 500, "pam_iterations": 300}, "pam4-gibbs")
    sec = _section("quick")
    small = cells.table_cells(sec, "small")
    settings = {c.method: cells.cell_settings(sec, c)["gibbs"] for c in small}
    assert settings["pam4-gibbs"] == settings["lda-gibbs"]
    assert settings["lda-gibbs"]["stop_on_rule"] is True
    paper = _section("paper")
    for exp in ("small", "large"):
        for c in cells.table_cells(paper, exp):
            g = cells.cell_settings(paper, c)["gibbs"]
            assert not g.get("stop_on_rule", False)  # the paper's fixed iteration counts


def test_gibbs_settings_by_method_override_the_shared_ones() -> None:
    gibbs = {"iterations": 10000, "trace_every": 100, "by_method": {"pam4-gibbs": {"max_minutes": 25}}}
    assert cells.gibbs_settings(gibbs, "pam4-gibbs") == {
        "iterations": 10000,
        "trace_every": 100,
        "max_minutes": 25,
    }
    assert cells.gibbs_settings(gibbs, "lda-gibbs") == {"iterations": 10000, "trace_every": 100}


def test_gain_ablation_is_4pam_with_the_gain_and_the_reference_grid_runs_fixed_epochs() -> None:
    from noisyor_bench.experiments.avipam.methods import AVIPAM_STRUCTURES, avipam_config

    sec = _section("quick")
    gain_cells = [c for c in cells.table_cells(sec, "small") if c.method == "avipam-pam4-gain"]
    assert [c.seed for c in gain_cells] == [0]  # method_seeds: the ablation at one seed (cost)
    assert (
        len([c for c in cells.table_cells(sec, "small") if c.method == "avipam-pam4"]) == 6
    )  # 2 corpora x 3
    cell = gain_cells[0]
    settings = cells.cell_settings(sec, cell)
    assert AVIPAM_STRUCTURES["avipam-pam4-gain"](settings["sizes"]) == ("pam4", [2, 50])
    assert avipam_config(settings).output_norm == "batchnorm"
    plain = cells.cell_settings(sec, cells.RunCell("small", "20news", "avipam-pam4", 0))
    assert avipam_config(plain).output_norm == "batchnorm-nogain"
    ref = _section("paper-avipam-table1")
    s = cells.cell_settings(ref, cells.RunCell("small", "20news", "avipam-pam4", 0))
    assert s["avi"]["stop_on_plateau"] is False and s["avi"]["patience"] >= s["avi"]["max_epochs"]
    lda = cells.cell_settings(ref, cells.RunCell("small", "20news", "lda-gibbs", 0))
    # the reference's chains run fixed sweeps (no time limit: its numbers do not depend on the load)
    pam = cells.cell_settings(ref, cells.RunCell("small", "20news", "pam4-gibbs", 0))
    assert (lda["gibbs"]["iterations"], pam["gibbs"]["iterations"]) == (6000, 1200)
    assert not lda["gibbs"].get("max_minutes") and not pam["gibbs"].get("max_minutes")


def test_the_nips_reference_grid_runs_tables_3_and_4_at_fixed_sweeps_and_epochs() -> None:
    """paper-avipam-nips: Table 3 at the paper's 10,000 sweeps, Table 4 at the paper's sizes with
    half its 3,000 sweeps and burn-in in proportion, aviPAM at 100 NIPS epochs (batch 50), no time
    limits and no stopping rule (its numbers do not depend on the machine's load)."""
    ref = _section("paper-avipam-nips")
    assert {(c.experiment, c.corpus) for c in cells.all_cells(ref)} == {("small", "nips"), ("large", "nips")}
    small = cells.cell_settings(ref, cells.RunCell("small", "nips", "pam4-gibbs", 0))
    large = cells.cell_settings(ref, cells.RunCell("large", "nips", "pam4-gibbs", 0))
    assert small["gibbs"]["iterations"] == 10000 and not small["gibbs"].get("stop_on_rule")
    assert (large["gibbs"]["iterations"], large["gibbs"]["burn_in"]) == (1500, 1000)
    assert large["sizes"] == cells.PAPER_SIZES["large"] and small["sizes"] == cells.PAPER_SIZES["small"]
    assert not small["gibbs"].get("max_minutes") and not large["gibbs"].get("max_minutes")
    avi = cells.cell_settings(ref, cells.RunCell("large", "nips", "avipam-pam4", 0))
    assert avi["corpus"] == {"batch_size": 50, "max_epochs": 100, "patience": 100}
    assert avi["avi"]["stop_on_plateau"] is False


def test_the_table2_timing_grid_times_a_few_steps_at_the_papers_large_sizes() -> None:
    """paper-avipam-table2-timing: 4-PAM Gibbs and aviPAM 4-PAM on 20 Newsgroups at Table 2's
    sizes, a few sweeps (burn-in in the paper's 2,000-of-3,000 proportion) and epochs, marked as a
    timing cell; the table's avi override wins over the grid's, the other keys stay."""
    ref = _section("paper-avipam-table2-timing")
    assert {(c.experiment, c.corpus, c.method) for c in cells.all_cells(ref)} == {
        ("large", "20news", "pam4-gibbs"),
        ("large", "20news", "avipam-pam4"),
    }
    gibbs = cells.cell_settings(ref, cells.RunCell("large", "20news", "pam4-gibbs", 0))
    avi = cells.cell_settings(ref, cells.RunCell("large", "20news", "avipam-pam4", 0))
    assert gibbs["sizes"] == cells.PAPER_SIZES["large"] == avi["sizes"]
    assert gibbs["timing_only"] is True and avi["timing_only"] is True
    assert 3 * gibbs["gibbs"]["burn_in"] == 2 * gibbs["gibbs"]["iterations"]
    assert (avi["avi"]["max_epochs"], avi["avi"]["patience"], avi["avi"]["batch_size"]) == (5, 5, 200)
    assert avi["coherence_plateau_epoch"] == 200
    # the other grids' tables are not timing cells
    quick = cells.cell_settings(_section("quick"), cells.RunCell("small", "20news", "avipam-pam4", 0))
    assert "timing_only" not in quick and quick["avi"]["max_epochs"] == 34


@pytest.mark.parametrize(
    ("method", "device", "expected"),
    [
        ("avipam-pam4", "cpu", "cpu"),
        ("avipam-pam4", "cuda", "cuda"),
        ("avipam-pam4", "cuda:1", "cuda"),
        ("pam4-gibbs", "cuda", "cpu"),  # tomotopy's chains run on the CPU whatever the grid says
        ("lda-online", "auto", "cpu"),
    ],
)
def test_a_gpu_run_is_timed_on_its_wall_clock(method: str, device: str, expected: str) -> None:
    """Where a run computes decides its speed clock: a GPU run records no process CPU time."""
    from noisyor_bench.experiments.avipam.runs import compute_device

    assert compute_device({"method": method, "device": device}) == expected
