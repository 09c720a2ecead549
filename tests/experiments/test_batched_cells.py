"""acp-train-cell --batch-seeds: the seeds of a cell as one computation write the same run
directories, with the same metrics to float rounding, as the seeds trained one by one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from toydata import write_toy_dataset

from noisyor_bench.cli import main
from noisyor_bench.experiments.acp.runs import BATCH_DIR, RunSpec, batchable
from noisyor_bench.inference.fitting import FitBudget
from noisyor_bench.infra.io import read_json

SEEDS = ("0", "1", "2")
# float64 and a small encoder: rounding differences stay ~1e-13, far below any decision
HPARAMS = {"dtype": "float64", "hidden_dim": 16, "lr": 3e-2, "gen_lr": 9e-2}


def _train_cell(dataset: Path, results: Path, method: str, *extra: str) -> None:
    best = results.parent / f"best-{method}.json"
    best.write_text(json.dumps({"hparams": HPARAMS}))
    args = [
        "acp-train-cell",
        "--dataset", str(dataset), "--dataset-name", "toy", "--experiment", "exp",
        "--method", method, "--mode", "learning", "--n-train", "40",
        "--budget", json.dumps({"max_epochs": 12, "patience": 2, "batch_size": 16}),
        "--evaluation", json.dumps({"samples": 20, "iw_samples": 0}),
        "--device", "cpu", "--seeds", *SEEDS, "--best", str(best),
        "--out-dir", *(str(results / f"runs/exp/toy/{method}/n40/seed{s}") for s in SEEDS), *extra,
    ]  # fmt: skip
    assert main(args) == 0


@pytest.mark.parametrize("method", ["avi", "acp"])
def test_batched_seeds_write_the_runs_the_seeds_alone_write(tmp_path: Path, method: str) -> None:
    dataset = write_toy_dataset(tmp_path / "toy.npz")
    _train_cell(dataset, tmp_path / "alone", method)
    _train_cell(dataset, tmp_path / "batched", method, "--batch-seeds")
    cell = Path("runs/exp/toy") / method / "n40"
    assert not (tmp_path / "batched" / cell / BATCH_DIR).exists()  # the batch's working dir is gone
    for seed in SEEDS:
        a = read_json(tmp_path / "alone" / cell / f"seed{seed}" / "metrics.json")
        b = read_json(tmp_path / "batched" / cell / f"seed{seed}" / "metrics.json")
        assert "batch" not in a
        assert b["batch"]["runs"] == 3 and b["batch"]["index"] == int(seed)
        for key in ("init_seed", "epochs", "best_epoch", "stop_reason", "converged", "hparams"):
            assert b[key] == a[key], key
        for key in ("nelbo", "val_nelbo", "f1", "em", "exact_nll", "best_curve_val_nelbo"):
            assert b[key] == pytest.approx(a[key], rel=1e-9, abs=1e-9), key
        assert b["train_seconds"] == pytest.approx(b["batch"]["wall_seconds"] / 3)


def test_only_cells_of_one_amortized_method_are_batched(tmp_path: Path) -> None:
    def spec(method: str, seed: int, **kw: object) -> RunSpec:
        return RunSpec(
            dataset=tmp_path / "d.npz", method=method, mode="learning", n_train=40, seed=seed,
            out_dir=tmp_path / f"{method}{seed}", **kw,
        )  # fmt: skip

    assert batchable([spec("acp", 0), spec("acp", 1)])
    assert not batchable([spec("acp", 0)])  # one run: nothing to batch
    assert not batchable([spec("svi", 0), spec("svi", 1)])  # per-datapoint method
    assert not batchable([spec("acp", 0), spec("avi", 1)])
    assert not batchable([spec("acp", 0), spec("acp", 1, budget=FitBudget(max_epochs=3))])


def test_search_batches_the_draws_of_one_encoder_shape(tmp_path: Path) -> None:
    """Four draws, two encoder shapes: two batches of two; search.csv and best.json agree with
    the search run draw by draw (validation NELBO to float rounding, same best draw)."""
    dataset = write_toy_dataset(tmp_path / "toy.npz")
    draws = [
        {**HPARAMS, "lr": 3e-2},
        {**HPARAMS, "hidden_dim": 8},
        {**HPARAMS, "lr": 1e-2, "beta1": 0.8},
        {**HPARAMS, "hidden_dim": 8, "gen_lr": 3e-2},
    ]
    tables = {}
    for name, extra in (("alone", []), ("batched", ["--batch-draws"])):
        out = tmp_path / name
        args = [
            "acp-search",
            "--dataset", str(dataset), "--dataset-name", "toy", "--experiment", "exp",
            "--method", "acp", "--mode", "learning", "--n-train", "40", "--seed", "0",
            "--draws", json.dumps(draws),
            "--budget", json.dumps({"max_epochs": 8, "patience": 2, "batch_size": 16}),
            "--evaluation", json.dumps({"samples": 20}), "--device", "cpu", "--out-dir", str(out), *extra,
        ]  # fmt: skip
        assert main(args) == 0
        tables[name] = (out / "search.csv").read_text().splitlines()
        assert not (out / BATCH_DIR).exists()
        if name == "batched":
            # search.inits_per_draw defaults to 2: each draw's two initialisations
            # (draw<d>/ and draw<d>-init1/) join its shape's batch, so each batch holds 2 x 2 runs,
            # indexed in (draw, init) order: draws 0, 2 in one shape's batch, 1, 3 in the other's.
            batches = [
                read_json(out / folder / "metrics.json")["batch"]
                for i in range(4)
                for folder in (f"draw{i}", f"draw{i}-init1")
            ]
            assert [(b["runs"], b["index"]) for b in batches] == [
                (4, 0),
                (4, 1),
                (4, 0),
                (4, 1),
                (4, 2),
                (4, 3),
                (4, 2),
                (4, 3),
            ]
    alone = [read_json(tmp_path / "alone" / f"draw{i}" / "metrics.json") for i in range(4)]
    batched = [read_json(tmp_path / "batched" / f"draw{i}" / "metrics.json") for i in range(4)]
    for a, b in zip(alone, batched, strict=True):
        assert b["val_nelbo"] == pytest.approx(a["val_nelbo"], rel=1e-9)
        assert (b["epochs"], b["best_epoch"], b["init_key"]) == (a["epochs"], a["best_epoch"], a["init_key"])
    assert (
        read_json(tmp_path / "batched" / "best.json")["draw"]
        == read_json(tmp_path / "alone" / "best.json")["draw"]
    )


def test_batch_groups_follow_the_shape_fixing_hyperparameters(tmp_path: Path) -> None:
    from noisyor_bench.experiments.acp.runs import batch_groups

    def spec(method: str, seed: int, hparams: dict) -> RunSpec:
        return RunSpec(
            dataset=tmp_path / "d.npz", method=method, mode="learning", n_train=40, seed=seed,
            out_dir=tmp_path / f"r{seed}", hparams=hparams,
        )  # fmt: skip

    specs = [
        spec("acp", 0, {"hidden_dim": 50, "lr": 1e-3}),
        spec("acp", 1, {"hidden_dim": 100}),
        spec("acp", 2, {"hidden_dim": 50, "lr": 1e-2, "beta1": 0.7}),
        spec("svi", 3, {}),
        spec("acp", 4, {"hidden_dim": 100, "hidden_layers": 2}),
    ]
    assert batch_groups(specs) == [[0, 2], [1], [3], [4]]
