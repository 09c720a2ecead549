"""Time estimates follow the config and the machine: a measured job row records the work it
measured, a grid's measured time records its config hash, and estimate-time names and scales a
CPU other than the measuring one."""

from __future__ import annotations

import copy

import pytest
import yaml
from conftest import REPO

from noisyor_bench.experiments import calibration, costs
from noisyor_bench.experiments.acp import grid
from noisyor_bench.experiments.config import load_config
from noisyor_bench.experiments.config_hash import config_hash
from noisyor_bench.reporting import summary

TABLE = REPO / "config" / "runtime_estimates.yaml"


@pytest.fixture(scope="module")
def quick_cfg():
    return load_config(REPO / "config" / "config.yaml", {"grid": costs.REFERENCE_GRID})


@pytest.fixture(scope="module")
def quick_reference():
    return [r for r in costs.load_references(REPO) if r.grid == costs.REFERENCE_GRID]


def _measured_acp_cell(cfg, references):
    """An ACP cell trained as one job over several seeds whose estimate is its measurement."""
    for e in costs.estimate_jobs(cfg, references, ["acp"]):
        if e.rule != "train_cell" or e.basis != "measured":
            continue
        experiment, dataset, method, _ = e.job.split("/")
        seeds = grid.seeds(cfg, experiment, dataset, method)
        if len(seeds) >= 2:
            return e, experiment, dataset, seeds
    raise AssertionError("no measured multi-seed ACP training job in the quick grid")


def _with_one_more_seed(cfg, experiment, dataset, seeds):
    """``cfg`` with one more seed in ``experiment``'s ``dataset`` (wherever the grid keeps ACP's keys)."""
    raised = copy.deepcopy(cfg)
    row = raised["grids"][raised["grid"]]
    exp = (row.get("acp") or row)["experiments"][experiment]
    more = [*seeds, max(seeds) + 1]
    if dataset in (exp.get("dataset_seeds") or {}):
        exp["dataset_seeds"][dataset] = more
    else:
        exp["seeds"] = more
    return raised


def test_raising_a_cells_seeds_makes_its_estimate_extrapolated_and_scaled(quick_cfg, quick_reference):
    before, experiment, dataset, seeds = _measured_acp_cell(quick_cfg, quick_reference)
    measured = quick_reference[0].jobs[(before.rule, before.job)]
    assert before.cpu_seconds == pytest.approx(measured.seconds)
    raised = _with_one_more_seed(quick_cfg, experiment, dataset, seeds)
    after = costs.by_job(costs.estimate_jobs(raised, quick_reference, ["acp"]))[(before.rule, before.job)]
    assert after.basis == "extrapolated"
    assert after.cpu_seconds == pytest.approx(measured.seconds * (len(seeds) + 1) / len(seeds))


def test_job_rows_record_the_work_and_cpu_they_measured(quick_cfg, quick_reference):
    """The committed table's compute rows carry the work of the config that ran and its CPU."""
    table = quick_reference[0].jobs
    reference_jobs = [j for pid in ("acp", "ape", "avipam") for j in costs.paper_jobs(quick_cfg, pid, True)]
    rows = [table[(j.rule, j.job)] for j in reference_jobs if (j.rule, j.job) in table]
    assert len(rows) > 100
    assert all(m.work is not None and m.work > 0 and m.cpu for m in rows)


def test_a_changed_config_hash_warns_and_takes_the_cost_model(quick_cfg):
    before, experiment, dataset, seeds = _measured_acp_cell(
        quick_cfg, [r for r in costs.load_references(REPO) if r.grid == costs.REFERENCE_GRID]
    )
    then = config_hash(quick_cfg, "quick", "acp")
    now = config_hash(_with_one_more_seed(quick_cfg, experiment, dataset, seeds), "quick", "acp")
    assert then and now and then != now
    table = {
        "grids": {
            "quick": {
                "paper": "acp",
                "wall_seconds": 600,
                "core_seconds": 1100,
                "cores": 2,
                "config_hash": then,
                "how": "m",
            }
        }
    }
    same = summary.estimate_time(table, "quick", 2, ["acp"], hashes={"acp": then})
    assert "warning" not in same and "about 10 min" in same
    changed = summary.estimate_time(table, "quick", 2, ["acp"], hashes={"acp": now}, modelled={"acp": 1500})
    assert "warning" in changed and then in changed and now in changed
    assert "about 25 min" in changed  # the cost model's time replaces the measured row's


def test_committed_rows_record_todays_config_where_they_measured_it(quick_cfg):
    """The quick rows were measured at today's config (a moved key keeps the hash); extended's
    ACP row at an earlier one, which estimate-time reports."""
    rows = summary.paper_rows(yaml.safe_load(TABLE.read_text())["grids"]["quick"], "quick")
    for pid in ("acp", "ape", "avipam"):
        assert rows[pid]["config_hash"] == config_hash(quick_cfg, "quick", pid), pid
    extended = yaml.safe_load(TABLE.read_text())["grids"]["extended"]
    assert extended["config_hash"] != config_hash(quick_cfg, "extended", "acp")


def test_a_different_cpu_is_named_and_scales_the_estimate():
    table = {"grids": {"quick": {"paper": "acp", "wall_seconds": 600, "cores": 2, "how": "m"}}}
    measuring = calibration.Machine("AMD EPYC", 0.05)
    slower = calibration.Speed(calibration.Machine("Intel Xeon Test", 0.1), measuring)
    text = summary.estimate_time(table, "quick", 2, ["acp"], speed=slower)
    assert "about 20 min" in text  # 10 min measured, x 2
    assert "Intel Xeon Test" in text and "differs from the measuring CPU (AMD EPYC)" in text
    same = summary.estimate_time(
        table, "quick", 2, ["acp"], speed=calibration.Speed(calibration.Machine("AMD EPYC", 0.05), measuring)
    )
    assert "about 10 min" in same and "differs" not in same
    loaded = calibration.Speed(calibration.Machine("AMD EPYC", 0.06), measuring)  # the same CPU, busy
    assert loaded.factor == 1.0 and "times as measured" in " ".join(loaded.lines())


def test_estimate_time_on_another_cpu_says_so(monkeypatch, capsys):
    from noisyor_bench.cli import main

    recorded = calibration.recorded(yaml.safe_load(TABLE.read_text()))
    assert recorded is not None and recorded.cpu and recorded.seconds > 0
    here = calibration.Machine("Intel(R) Xeon(R) CPU @ 2.20GHz", 2 * recorded.seconds)
    monkeypatch.setattr(calibration, "this_machine", lambda: here)
    argv = ["estimate-time", "--grid", "quick", "--cores", "2", "--papers", "ape", "--table", str(TABLE)]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert f"differs from the measuring CPU ({recorded.cpu})" in out and here.cpu in out
    ape = summary.paper_rows(yaml.safe_load(TABLE.read_text())["grids"]["quick"], "quick")["ape"]
    assert f"about {summary._human(2 * summary._row_wall(ape, 2))}" in out  # APE's time on 2 cores, x 2
    assert main(["estimate-time", "--grid", "paper", "--cores", "2", "--table", str(TABLE)]) == 0
    assert here.cpu in capsys.readouterr().out


def test_calibration_is_short_and_measured_once():
    assert calibration.benchmark_seconds(1) < 0.5  # well under 2 s for all repeats on any recent CPU
    assert calibration.this_machine() is calibration.this_machine()
