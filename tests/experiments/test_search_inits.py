"""A search draw is scored on several initialisations (``search.inits_per_draw``):
its score is the mean validation NELBO over them, so one lucky initialisation no longer decides
the selection; every initialisation is a run of its own (own init key and folder), the per-init
values are in search.csv and best.json, and the cost model charges each initialisation."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import pytest
from conftest import REPO, cli
from toydata import write_toy_dataset

from noisyor_bench.experiments.acp import costs as acp_costs
from noisyor_bench.experiments.acp import grid
from noisyor_bench.experiments.acp.search import best_draw, check_inits_per_draw, draw_score
from noisyor_bench.experiments.config import load_config
from noisyor_bench.inference.seeding import derive_init_seed, run_init_key
from noisyor_bench.infra.errors import ConfigError
from noisyor_bench.infra.io import read_json


def test_score_is_the_mean_and_a_diverged_init_disqualifies_the_draw() -> None:
    assert draw_score([10.0, 12.0]) == 11.0
    assert draw_score([3.5]) == 3.5
    assert draw_score([10.0, math.inf]) == math.inf
    assert draw_score([10.0, math.nan]) == math.inf
    assert draw_score([10.0, None]) == math.inf  # an init that left no validation NELBO
    with pytest.raises(ConfigError, match="at least one"):
        draw_score([])


def test_a_lucky_initialisation_no_longer_decides_the_selection() -> None:
    """Draw 1's first initialisation escapes the merged optimum (9.0), its second does not (12.0);
    draw 0 is 10.0 on both. One initialisation selects draw 1 by luck, the mean (10.0 < 10.5) draw 0."""
    per_init = {0: [10.0, 10.0], 1: [9.0, 12.0], 2: [11.0, 10.8]}
    assert best_draw({d: v[0] for d, v in per_init.items()}) == 1
    assert best_draw({d: draw_score(v) for d, v in per_init.items()}) == 0


@pytest.mark.parametrize("bad", [0, -1, 1.5, "2", True, None])
def test_inits_per_draw_must_be_a_positive_int(bad) -> None:
    with pytest.raises(ConfigError, match="search.inits_per_draw"):
        check_inits_per_draw(bad)


def test_init_keys_keep_init_zero_and_separate_the_others() -> None:
    assert run_init_key("fig4", "ds", 200, 3) == run_init_key("fig4", "ds", 200, 3, 0) == "fig4/ds/n200/draw3"
    assert run_init_key("fig4", "ds", 200, 3, 1) == "fig4/ds/n200/draw3/init1"
    with pytest.raises(ConfigError, match="final runs"):
        run_init_key("fig4", "ds", 200, None, 1)
    with pytest.raises(ConfigError, match="initialisation index"):
        run_init_key("fig4", "ds", 200, 3, -1)


def _quick(**search: object) -> dict:
    cfg = load_config(REPO / "config" / "config.yaml", {"grid": "quick"})
    cfg["grids"]["quick"]["acp"]["search"] = {"draws": 3, "seed": 1, **search}
    return cfg


def test_grid_key_defaults_to_two_and_experiments_override_it() -> None:
    cfg = _quick()
    cell = next(c for c in grid.cells(cfg, "fig3a") if grid.n_draws(cfg, c) > 1)
    assert grid.inits_per_draw(cfg, cell) == 2
    cfg["grids"]["quick"]["acp"]["experiments"]["fig3a"]["search"] = {"inits_per_draw": 3}
    assert grid.inits_per_draw(cfg, cell) == 3
    cfg["grids"]["quick"]["acp"]["experiments"]["fig3a"]["search"] = {"inits_per_draw": 0}
    with pytest.raises(ConfigError, match=r"grids\.quick\.acp\.experiments\.fig3a\.search\.inits_per_draw"):
        grid.inits_per_draw(cfg, cell)


def test_the_schema_rejects_a_bad_inits_per_draw() -> None:
    with pytest.raises(ConfigError, match="inits_per_draw"):
        load_config(
            REPO / "config" / "config.yaml",
            {
                "grid": "quick",
                "grids": {"quick": {"acp": {"datasets": [], "search": {"draws": 3, "inits_per_draw": 0}}}},
            },
        )


def test_cost_model_charges_every_initialisation() -> None:
    """A search chunk's work is draws x initialisations x one fit (the quick grid's cells)."""
    one, two = _quick(inits_per_draw=1), _quick(inits_per_draw=2)
    work = {
        name: {j.job: j.work for j in acp_costs.jobs(cfg) if j.rule == "search_chunk"}
        for name, cfg in (("one", one), ("two", two))
    }
    assert work["one"] and work["one"].keys() == work["two"].keys()
    for job, w in work["one"].items():
        assert work["two"][job] == pytest.approx(2 * w)


# ---------------------------------------------------------------------------- the CLI
def _args(dataset: Path, out: Path, *extra: str) -> list[str]:
    return [
        "acp-search",
        "--dataset", str(dataset), "--dataset-name", "toy", "--experiment", "exp",
        "--method", "avi", "--mode", "learning", "--n-train", "40", "--seed", "0",
        "--draws", json.dumps([{}, {"lr": 0.02}]),
        "--budget", json.dumps({"max_epochs": 2, "patience": 1, "batch_size": 32}),
        "--evaluation", json.dumps({"samples": 5, "iw_samples": 0}), "--device", "cpu",
        "--out-dir", str(out), *extra,
    ]  # fmt: skip


def test_each_draw_is_trained_from_two_initialisations_and_scored_by_their_mean(
    tmp_path: Path, capsys
) -> None:
    dataset = write_toy_dataset(tmp_path / "toy.npz")
    out = tmp_path / "search" / "exp" / "toy" / "avi" / "n40"
    code, _, err = cli(_args(dataset, out, "--inits-per-draw", "2"), capsys)
    assert code == 0, err
    rows = list(csv.DictReader(open(out / "search.csv", newline="")))
    assert [r["draw"] for r in rows] == ["0", "1"]
    for row in rows:
        d = int(row["draw"])
        runs = [read_json(out / name / "metrics.json") for name in (f"draw{d}", f"draw{d}-init1")]
        keys = [r["init_key"] for r in runs]
        assert keys == [f"exp/toy/n40/draw{d}", f"exp/toy/n40/draw{d}/init1"]
        assert runs[0]["init_seed"] == derive_init_seed(0, keys[0]) != runs[1]["init_seed"]
        values = [r["val_nelbo"] for r in runs]
        assert values[0] != values[1]  # two initialisations, two outcomes
        assert json.loads(row["val_nelbo_inits"]) == pytest.approx(values)
        assert float(row["val_nelbo"]) == pytest.approx((values[0] + values[1]) / 2)
    best = read_json(out / "best.json")
    scores = {int(r["draw"]): float(r["val_nelbo"]) for r in rows}
    assert best["draw"] == min(scores, key=scores.get)
    assert best["inits_per_draw"] == 2 and len(best["val_nelbo_inits"]) == 2
    assert best["val_nelbo"] == pytest.approx(sum(best["val_nelbo_inits"]) / 2)

    # the run's search table: every draw with its per-init values, the selected one marked
    code, _, err = cli(
        [
            "acp-search-table",
            "--searches",
            out,
            "--out-csv",
            tmp_path / "d.csv",
            "--out-md",
            tmp_path / "d.md",
        ],
        capsys,
    )
    assert code == 0, err
    table = list(csv.DictReader(open(tmp_path / "d.csv", newline="")))
    assert [(r["experiment"], r["dataset"], r["method"], r["n_train"]) for r in table] == [
        ("exp", "toy", "avi", "40")
    ] * 2
    assert [r["selected"] for r in table] == [str(d == best["draw"]) for d in (0, 1)]
    for r, row in zip(table, rows, strict=True):
        assert json.loads(r["val_nelbo_inits"]) == pytest.approx(json.loads(row["val_nelbo_inits"]))
        assert float(r["score"]) == pytest.approx(float(row["val_nelbo"])) and r["n_inits"] == "2"
    assert "| exp | toy | AVI | 40 | 2 x 2 |" in (tmp_path / "d.md").read_text()


def test_one_initialisation_is_the_search_as_before(tmp_path: Path, capsys) -> None:
    dataset = write_toy_dataset(tmp_path / "toy.npz")
    out = tmp_path / "search"
    code, _, err = cli(_args(dataset, out, "--inits-per-draw", "1"), capsys)
    assert code == 0, err
    assert not list(out.glob("draw*-init*"))
    row = next(csv.DictReader(open(out / "search.csv", newline="")))
    assert float(row["val_nelbo"]) == read_json(out / "draw0" / "metrics.json")["val_nelbo"]
    code, _, err = cli(_args(dataset, tmp_path / "bad", "--inits-per-draw", "0"), capsys)
    assert code == 2 and "--inits-per-draw" in err and "Traceback" not in err
