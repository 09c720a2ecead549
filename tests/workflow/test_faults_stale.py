"""Fault catalogue: nothing stale is reused (docs/faults.md).

A search draw is reused only when the settings it was made under -- dataset content, budget,
evaluation, latents, mode, method, device, the key a resumed run uses -- are the current ones;
``results_dir`` has one spelling; and when the workflow plans a training job, the dataset
sha256 and budget its finished runs recorded are compared with the current ones, so a run made
from another dataset content or budget reruns whatever the mtimes say.
"""

from __future__ import annotations

import os
import shutil
import time
from dataclasses import asdict
from pathlib import Path

import pandas as pd
import pytest
import yaml
from conftest import REPO
from faultworld import DATA, cell_argv, smoke_snakemake
from toydata import write_toy_dataset

from noisyor_bench.cli import main
from noisyor_bench.infra.io import load_npz, write_json_atomic, write_npz_atomic

DRAWS = '[{}, {"lr_global": 0.01}]'
SETTINGS = {"budget": '{"max_epochs": 2}', "factor": "1", "evaluation": '{"samples": 10, "iw_samples": 0}'}


def _search(
    out: str,
    budget: str = SETTINGS["budget"],
    factor: str = SETTINGS["factor"],
    evaluation: str = SETTINGS["evaluation"],
) -> list[str]:
    argv = cell_argv("acp-search", "--seed", "0", "--draws", DRAWS, "--inits-per-draw", "1")
    argv[argv.index(SETTINGS["budget"])] = budget
    argv[argv.index(SETTINGS["evaluation"])] = evaluation
    return [*argv, "--latents-factor", factor, "--draws-range", "0:2", "--out-chunk", f"{out}/chunks/0.csv"]


def _without_timing(path: Path) -> pd.DataFrame:
    return pd.read_csv(path).drop(columns=["train_seconds"])


@pytest.fixture(scope="module")
def searched(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A world with the toy dataset and a finished two-draw search chunk (max_epochs 2)."""
    root = tmp_path_factory.mktemp("searched")
    write_toy_dataset(root / DATA)
    cwd = Path.cwd()
    os.chdir(root)
    try:
        assert main(_search("search")) == 0
    finally:
        os.chdir(cwd)
    return root


def _rebuilt_dataset() -> None:
    """data/toy.npz rebuilt from another seed: the same name and shapes, other training rows."""
    arrays = load_npz(DATA)
    arrays["x_train"] = arrays["x_train"][::-1].copy()
    write_npz_atomic(DATA, **arrays)


@pytest.mark.parametrize(
    "change, rerun, why",
    [
        ("same settings", {}, None),
        ("budget 2 -> 3 epochs", {"budget": '{"max_epochs": 3}'}, "budget"),
        ("dataset rebuilt with another seed", {}, "dataset content"),
        ("latents_factor 1 -> 2", {"factor": "2"}, "latents"),
        ("evaluation samples 10 -> 12", {"evaluation": '{"samples": 12, "iw_samples": 0}'}, "evaluation"),
    ],
)
def test_search_draws_reused_only_under_their_settings(
    searched: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    change: str,
    rerun: dict,
    why: str | None,
) -> None:
    """A finished search rerun after a change: its chunk table equals a fresh search's with the new
    settings (draws recomputed, said in the log: "2 draws recomputed: settings changed (<what>)");
    with the same settings every draw is reused, its files untouched."""
    world = tmp_path / "world"
    shutil.copytree(searched, world)
    monkeypatch.chdir(world)
    draws = sorted(Path("search/chunks/0").glob("draw*/metrics.json"))
    before = {p: p.read_bytes() for p in draws}
    if change.startswith("dataset"):
        _rebuilt_dataset()
    caplog.clear()
    assert main(_search("search", **rerun)) == 0
    err = caplog.text
    if why is None:
        assert "recomputed" not in err
        assert {p: p.read_bytes() for p in draws} == before
        return
    assert f"2 draws recomputed: settings changed ({why})" in err, err[-2000:]
    assert main(_search("fresh", **rerun)) == 0
    pd.testing.assert_frame_equal(
        _without_timing(Path("search/chunks/0.csv")), _without_timing(Path("fresh/chunks/0.csv"))
    )


def test_results_dir_spellings_are_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """results, results/, ./results and its absolute path: one results_dir, spelled "results"
    (Snakemake keys its records of jobs by the spelled path)."""
    from noisyor_bench.experiments.config import load_config

    monkeypatch.chdir(tmp_path)
    spelled = {
        value: load_config(REPO / "config" / "config.yaml", {"results_dir": value})["results_dir"]
        for value in ("results", "results/", "./results", str(tmp_path / "results"))
    }
    assert set(spelled.values()) == {"results"}, spelled
    outside = load_config(REPO / "config" / "config.yaml", {"results_dir": "/tmp/x/../elsewhere/"})
    assert outside["results_dir"] == "/tmp/elsewhere"


def test_finished_runs_of_another_budget_or_dataset_are_found(tmp_path: Path) -> None:
    """What the workflow checks when it plans a training job: a run recording the grid's budget and
    today's dataset content is current; another budget (2 -> 3 epochs) or a rebuilt dataset makes it
    stale, with the reason (the rule then forces the job, as the Snakemake case below shows)."""
    from noisyor_bench.experiments.acp.stale_runs import stale_runs
    from noisyor_bench.inference.fitting import budget_from_mapping
    from noisyor_bench.infra.hashing import sha256_file

    npz = write_toy_dataset(tmp_path / "toy.npz")
    budget = {"max_epochs": 2, "batch_size": 128}
    record = {"dataset_sha256": sha256_file(npz), "budget": asdict(budget_from_mapping(budget))}
    run = tmp_path / "run" / "metrics.json"
    run.parent.mkdir()
    write_json_atomic(run, record)
    assert stale_runs([run], npz, budget) == {}
    assert stale_runs([run], npz, {**budget, "max_epochs": 3}) == {str(run): ["budget max_epochs 2 -> 3"]}
    old = record["dataset_sha256"][:12]
    arrays = load_npz(npz)
    arrays["x_train"] = arrays["x_train"][::-1].copy()
    write_npz_atomic(npz, **arrays)
    (reason,) = stale_runs([run], npz, budget)[str(run)]
    assert reason == f"dataset content {old} -> {sha256_file(npz)[:12]}"


@pytest.mark.slow
def test_results_dir_spellings_plan_the_same_jobs(tmp_path: Path) -> None:
    """The four spellings plan the same jobs with the same output paths: Snakemake finds its record
    of a job (params, inputs, code) by the output path as spelled, so another spelling of the same
    folder used to plan none of the jobs a changed setting reruns."""

    def planned(spelling: str) -> list[str]:
        done = smoke_snakemake(tmp_path, spelling, None, "--dry-run", config=("papers=[acp]",))
        assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
        return sorted(line.strip() for line in done.stdout.splitlines() if line.strip().startswith("output:"))

    jobs = {s: planned(s) for s in ("results", "results/", "./results", str(tmp_path / "results"))}
    assert len(jobs["results"]) > 50 and all(line.startswith("output: results/") for line in jobs["results"])
    assert all(found == jobs["results"] for found in jobs.values()), {s: len(j) for s, j in jobs.items()}


def test_config_hash_recorded_only_when_rebuilt(tmp_path: Path) -> None:
    """A run under a changed config records its grid at once but keeps the results' config hash
    until it has rebuilt every target (the warning of a changed config stays until then)."""
    from noisyor_bench.experiments.config import load_config
    from noisyor_bench.infra.resultsdir import check_identity, read_identity, record_rebuilt, write_identity

    old = load_config(REPO / "config" / "config.yaml", {"grid": "smoke"})
    new = load_config(REPO / "config" / "config.yaml", {"grid": "smoke"})
    new["grids"]["smoke"]["acp"]["budget"]["max_epochs"] = 3
    write_identity(tmp_path, old, "c0")
    first = read_identity(tmp_path)["config_hash"]
    write_identity(tmp_path, new, "c1")  # a real run starts under the new config
    assert read_identity(tmp_path)["config_hash"] == first
    assert any("changed since its results were made" in w for w in check_identity(tmp_path, new))
    record_rebuilt(tmp_path, new, "c1")
    assert read_identity(tmp_path)["config_hash"] != first
    assert check_identity(tmp_path, new) == []


def test_a_changed_config_on_results_made_elsewhere_names_the_rules_to_rerun(tmp_path: Path) -> None:
    """Snakemake's records of how files were made live in the working directory that ran them:
    results last run from another one (a copy, a worktree) get a warning naming --forcerun."""
    from noisyor_bench.experiments.config import load_config
    from noisyor_bench.infra.resultsdir import check_identity, read_identity, write_identity

    old = load_config(REPO / "config" / "config.yaml", {"grid": "smoke"})
    new = load_config(REPO / "config" / "config.yaml", {"grid": "smoke"})
    new["grids"]["smoke"]["acp"]["budget"]["max_epochs"] = 3
    made_in, here = tmp_path / "checkout-a", tmp_path / "checkout-b"
    made_in.mkdir(), here.mkdir()
    results = tmp_path / "results"
    results.mkdir()
    write_identity(results, old, "c0", workdir=made_in)
    assert read_identity(results)["workdir"] == str(made_in.resolve())
    (elsewhere,) = check_identity(results, new, here, ("avipam_tables", "claims_avipam"))
    assert f"last run from another working directory ({made_in.resolve()})" in elsewhere
    assert "--forcerun avipam_tables claims_avipam" in elsewhere
    (same,) = check_identity(results, new, made_in, ("avipam_tables",))
    assert "forcerun" not in same and "triggers rerun what the change touches" in same
    assert check_identity(results, old, here, ("avipam_tables",)) == []  # an unchanged config: nothing to say
    write_identity(results, old, "c1")  # a run that does not say where keeps the recorded directory
    assert read_identity(results)["workdir"] == str(made_in.resolve())


# ---------------------------------------------------------------------------------- Snakemake
def _fig5_cells(results: Path) -> tuple[dict, list]:
    from noisyor_bench.experiments.acp import grid
    from noisyor_bench.experiments.config import validate_config

    raw = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    cfg = validate_config({**raw, "grid": "smoke", "results_dir": str(results)})
    return cfg, [c for c in grid.cells(cfg) if c.experiment == "fig5" and c.dataset == "syn-random-1"]


def _finished_fig5(results: Path, dataset_sha256: str) -> list[str]:
    """Finished fig5 runs on syn-random-1 (and their searches) recording ``dataset_sha256`` and the
    grid's budget, every file newer than the dataset (mtimes say: nothing to do); returns the
    runs' metrics.json paths."""
    from noisyor_bench.experiments.acp import costs, grid
    from noisyor_bench.experiments.rundir import run_path
    from noisyor_bench.inference.fitting import budget_from_mapping

    cfg, cells = _fig5_cells(results)
    targets = []
    for cell in cells:
        record = {
            "dataset_sha256": dataset_sha256,
            "budget": asdict(budget_from_mapping(grid.budget(cfg, cell))),
        }
        for seed in grid.seeds(cfg, cell.experiment, cell.dataset, cell.method):
            run = results / run_path(cell.path, seed)
            run.mkdir(parents=True)
            write_json_atomic(run / "metrics.json", record)
            (run / "posterior_test.npz").write_bytes(b"finished")
            (run / "curve.csv").write_text("epoch\n")
            targets.append(str(Path("results") / run_path(cell.path, seed) / "metrics.json"))
        if grid.n_draws(cfg, cell) > 1:
            search = results / "search" / cell.path
            for i in range(len(costs.search_chunks(cfg, cell))):
                write_json_atomic(search / "chunks" / str(i) / "draw0" / "metrics.json", record)
                (search / "chunks" / f"{i}.csv").write_text("draw\n")
            write_json_atomic(search / "best.json", {"hparams": {}})
            (search / "search.csv").write_text("draw\n")
    built, ran = time.time() - 2 * 86400, time.time() - 86400  # the runs a day newer than the dataset
    for path in [*(results / "runs").rglob("*"), *(results / "search").rglob("*")]:
        os.utime(path, (ran, ran))
    for path in (results / "data").iterdir():
        os.utime(path, (built, built))
    return targets


def _planned(done) -> dict[str, int]:
    """Jobs per rule of a dry run's "Job stats" table."""
    text = done.stdout + done.stderr
    if "Nothing to be done" in text:
        return {}
    table = text.split("Job stats:", 1)[1].split("\n\n", 1)[0]
    rows = [line.split() for line in table.splitlines()[3:] if line.strip()]
    return {row[0]: int(row[1]) for row in rows if len(row) == 2 and row[0] != "total"}


@pytest.mark.slow
def test_snakemake_runs_of_another_dataset_content_rerun_despite_mtimes(tmp_path: Path) -> None:
    """The skewed copy: fig5's finished runs on syn-random-1, newer than the dataset by their mtimes
    (copied with times ahead of it; times ahead of the clock are refused first), made from another
    content of the dataset than today's: the six training jobs (and the searches) are planned, the
    reason said; the same runs recording today's content plan nothing."""
    from test_fault_catalogue import _fake_dataset

    from noisyor_bench.infra.hashing import sha256_file

    for stale in (False, True):
        work = tmp_path / ("stale" if stale else "current")
        results = work / "results"
        npz = _fake_dataset(results, "syn-random-1")
        sha = "0" * 64 if stale else sha256_file(npz)
        targets = _finished_fig5(results, sha)
        assert len(targets) == 6
        done = smoke_snakemake(work, "results", None, "--dry-run", *targets)
        assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
        planned = _planned(done)
        if not stale:
            assert planned == {}, planned
            continue
        train = sum(n for rule, n in planned.items() if rule.startswith("train_cell"))
        assert train == 6, planned
        assert planned.get("search_chunk", 0) >= 1 and "make_dataset" not in planned, planned
        assert "made from another dataset (" in done.stderr and "dataset content 000000000000" in done.stderr
