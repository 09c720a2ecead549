"""One run-folder contract (experiments/rundir.py: RunKey): every paper's cells build their run
paths ``<experiment>/<dataset>/<method>/n<N>/seed<s>`` through it, and it parses them back."""

from __future__ import annotations

from pathlib import Path, PurePosixPath

import pytest

from noisyor_bench.experiments.acp.grid import Cell
from noisyor_bench.experiments.acp.grid.corpora import CorpusCell
from noisyor_bench.experiments.ape.evaluate import eval_key
from noisyor_bench.experiments.ape.train import EXPERIMENT as APE_TRAIN
from noisyor_bench.experiments.ape.train import train_dir
from noisyor_bench.experiments.ape_noisyor.runs import run_path as ape_noisyor_run_path
from noisyor_bench.experiments.ape_noisyor.settings import EXPERIMENT as APE_NOISYOR
from noisyor_bench.experiments.avipam.cells import RunCell
from noisyor_bench.experiments.rundir import RunKey, cell_path, check_out_dir, run_dir, run_path
from noisyor_bench.infra.errors import ConfigError


def test_path_and_cell_path() -> None:
    key = RunKey("fig3a", "syn-pattern", "acp", 100, 2)
    assert key.path == "fig3a/syn-pattern/acp/n100/seed2"
    assert key.cell_path == cell_path("fig3a", "syn-pattern", "acp", 100) == "fig3a/syn-pattern/acp/n100"
    assert key.directory("results") == Path("results/runs/fig3a/syn-pattern/acp/n100/seed2")
    assert run_dir("results", "fig3a", "syn-pattern", "acp", 100, 2) == key.directory("results")


@pytest.mark.parametrize(
    "path",
    [
        "fig3a/syn-pattern/acp/n100/seed2",
        "results/runs/fig3a/syn-pattern/acp/n100/seed2",
        Path("/abs/results/runs/fig3a/syn-pattern/acp/n100/seed2"),
        PurePosixPath("runs/fig3a/syn-pattern/acp/n100/seed2"),
    ],
)
def test_from_path_reads_the_last_five_components(path: str | Path) -> None:
    assert RunKey.from_path(path) == RunKey("fig3a", "syn-pattern", "acp", 100, 2)


@pytest.mark.parametrize(
    "path", ["acp/n100/seed2", "e/d/m/n100", "e/d/m/100/seed2", "e/d/m/n100/seed", "e/d/m/n1x/seed2"]
)
def test_from_path_refuses_other_paths(path: str) -> None:
    with pytest.raises(ValueError, match="not a run directory"):
        RunKey.from_path(path)


def test_round_trip() -> None:
    key = RunKey("avipam-small", "20news", "batchnorm-lr0.002", 0, 11)
    assert RunKey.from_path(key.path) == key
    assert RunKey.from_path(key.directory("/tmp/r")) == key


def test_every_papers_cells_build_their_paths_through_the_key() -> None:
    cell = Cell("fig3a", "syn-pattern", "acp", 100, "inference")
    assert cell.path == "fig3a/syn-pattern/acp/n100"
    assert cell.run_key(3) == RunKey("fig3a", "syn-pattern", "acp", 100, 3)
    assert cell.run_key(3).cell_path == cell.path

    corpus = CorpusCell("classification-K20", "reuters", "avi", 500, 20)
    assert corpus.path == "classification-K20/reuters/avi/n500"
    assert corpus.run_key(0).path == "classification-K20/reuters/avi/n500/seed0"

    avipam = RunCell("small", "20news", "avipam-pam4", 3, 0)
    assert avipam.key == RunKey("avipam-small", "20news", "avipam-pam4", 0, 3)
    assert avipam.path == "avipam-small/20news/avipam-pam4/n0/seed3"

    assert ape_noisyor_run_path("res/runs", "grid", "acp", 40, 1) == Path(
        f"res/runs/{APE_NOISYOR}/grid/acp/n40/seed1"
    )
    assert train_dir("res", "toybars", "standard", 10, 4) == Path(
        f"res/runs/{APE_TRAIN}/toybars/standard/n1/seed4"
    )
    assert train_dir("res", "toybars", "ape-naive", 10, 4) == Path(
        f"res/runs/{APE_TRAIN}/toybars/ape-naive/n10/seed4"
    )


def test_run_path_spells_run_folders_and_the_rules_patterns() -> None:
    key = RunKey("fig3a", "syn-pattern", "acp", 100, 2)
    assert key.directory("results") == Path("results") / run_path(key.cell_path, key.seed)
    assert run_path(key.cell_path, 2, "metrics.json") == "runs/fig3a/syn-pattern/acp/n100/seed2/metrics.json"
    pattern = run_path(cell_path("{experiment}", "{dataset}", "{method}", "{n}"), "{seed}", "curve.csv")
    assert pattern == "runs/{experiment}/{dataset}/{method}/n{n}/seed{seed}/curve.csv"
    assert run_path("{cell}", "{seed}") == "runs/{cell}/seed{seed}"
    with pytest.raises(ValueError):
        cell_path("fig3a", "syn-pattern", "acp", "{n}/x")


def test_check_out_dir_accepts_only_the_run_it_writes() -> None:
    key = RunKey("fig3a", "syn-pattern", "acp", 100, 2)
    assert check_out_dir(key.directory("/r"), key) == key.directory("/r")
    for wrong in (
        "/r/runs/fig3a/syn-pattern/acp/n100/seed3",
        "/r/runs/fig3a/syn-pattern/acp/n100",
        "/r/runs",
    ):
        with pytest.raises(ConfigError, match="fig3a/syn-pattern/acp/n100/seed2"):
            check_out_dir(wrong, key)
    with pytest.raises(ConfigError, match="dataset name"):
        check_out_dir("/r/runs/fig3a/../acp/n100/seed2", RunKey("fig3a", "..", "acp", 100, 2))


def test_ape_evaluation_runs_follow_the_contract() -> None:
    key = eval_key("toybars", 1)
    assert key.path == "ape-eval/toybars/all/n0/seed1"
    assert RunKey.from_path(key.directory("res")) == key
    with pytest.raises(ConfigError):  # the evaluation folder's former layout
        check_out_dir("res/runs/ape-eval/toybars/seed1", key)
