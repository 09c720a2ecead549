"""A search split into chunk jobs (``acp-search --draws-range``, ``acp-search-select``) selects
what the search run in one job selects: the same best.json and the same search.csv rows, for any
chunk size, because a draw's values and initialisation depend on (cell, draw index, seed) only."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import pytest
from conftest import cli
from toydata import write_toy_dataset

from noisyor_bench.experiments.acp import costs as acp_costs
from noisyor_bench.experiments.acp.search import chunk_count, chunk_ranges, even_ranges, sample_hparams
from noisyor_bench.infra.io import read_json

# A small space around the toy's scale; two encoder widths, so batched draws form several groups.
SPACE = {
    "dtype": {"choice": ["float64"]},
    "hidden_dim": {"choice": [8, 16]},
    "lr": {"loguniform": [3e-3, 5e-2]},
    "gen_lr": {"loguniform": [3e-3, 9e-2]},
    "beta1": {"uniform": [0.5, 0.95]},
}
N_DRAWS = 5
DRAWS = [sample_hparams(SPACE, seed=7, draw=d) for d in range(N_DRAWS)]
# Columns of search.csv compared exactly; train_seconds is wall time.
COMPARED = ("draw", "val_nelbo", "epochs", "hparams", "reason")


def _search_args(dataset: Path, *extra: str, batch: bool) -> list[str]:
    return [
        "acp-search",
        "--dataset", str(dataset), "--dataset-name", "toy", "--experiment", "fig4",
        "--method", "acp", "--mode", "learning", "--n-train", "40", "--seed", "0",
        "--draws", json.dumps(DRAWS),
        "--budget", json.dumps({"max_epochs": 6, "patience": 2, "batch_size": 16}),
        "--evaluation", json.dumps({"samples": 20}), "--device", "cpu",
        *(["--batch-draws"] if batch else []), *extra,
    ]  # fmt: skip


def _chunked(dataset: Path, out: Path, per_job: int, capsys, batch: bool) -> None:
    """The search as the workflow runs it: one ``acp-search --draws-range`` per chunk, then ``acp-search-select``."""
    tables = []
    for i, (start, stop) in enumerate(chunk_ranges(N_DRAWS, per_job)):
        table = out / "chunks" / f"{i}.csv"
        code, _, err = cli(
            _search_args(dataset, "--draws-range", f"{start}:{stop}", "--out-chunk", table, batch=batch),
            capsys,
        )
        assert code == 0, err
        assert Path(f"{table}.prov.json").is_file()  # the chunk's provenance sidecar
        tables.append(table)
    code, _, err = cli(["acp-search-select", "--chunks", *reversed(tables), "--out-dir", out], capsys)
    assert code == 0, err


def _rows(path: Path) -> list[tuple[str, ...]]:
    with open(path, newline="") as fh:
        return [tuple(r[c] for c in COMPARED) for r in csv.DictReader(fh)]


def _selection(path: Path) -> dict:
    best = read_json(path)
    del best["provenance"]
    return best


@pytest.mark.parametrize("batch", [False, True], ids=["one-by-one", "batched"])
def test_chunk_sizes_select_what_one_job_selects(tmp_path: Path, capsys, batch: bool) -> None:
    dataset = write_toy_dataset(tmp_path / "toy.npz")
    whole = tmp_path / "whole"
    code, _, err = cli(_search_args(dataset, "--out-dir", whole, batch=batch), capsys)
    assert code == 0, err
    expected_best, expected_rows = _selection(whole / "best.json"), _rows(whole / "search.csv")
    assert len(expected_rows) == N_DRAWS and all(math.isfinite(float(r[1])) for r in expected_rows)
    assert expected_best["draw"] != 0  # the winner is a sampled draw, not the defaults
    for per_job in (1, 3, N_DRAWS):
        out = tmp_path / f"k{per_job}"
        _chunked(dataset, out, per_job, capsys, batch)
        assert _selection(out / "best.json") == expected_best, per_job
        assert _rows(out / "search.csv") == expected_rows, per_job
        header = (out / "search.csv").read_text().splitlines()[0]
        assert header == (whole / "search.csv").read_text().splitlines()[0]


def _write_chunk(path: Path, rows: list[tuple[int, float, str]], n_draws: int) -> Path:
    """A chunk table as ``search --draws-range`` writes it: (draw, val_nelbo, reason) rows."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="") as fh:
        out = csv.writer(fh)
        out.writerow(["draw", "val_nelbo", "epochs", "train_seconds", "hparams", "reason", "n_draws"])
        for draw, val, reason in rows:
            epochs = "" if reason else "3"
            out.writerow([draw, val, epochs, "0.5", json.dumps({"lr": draw / 10}), reason, n_draws])
    return path


def test_select_keeps_ties_and_divergences_as_one_job_does(tmp_path: Path, capsys) -> None:
    """Ties go to the lowest draw and a diverged draw is a row with an infinite NELBO, even when
    the tied or diverged draws sit in different chunks."""
    a = _write_chunk(tmp_path / "chunks" / "0.csv", [(0, 9.0, ""), (1, 8.5, "")], 4)
    b = _write_chunk(tmp_path / "chunks" / "1.csv", [(2, math.inf, "diverged: nan loss"), (3, 8.5, "")], 4)
    code, out, err = cli(["acp-search-select", "--chunks", b, a, "--out-dir", tmp_path], capsys)
    assert code == 0, err
    best = read_json(tmp_path / "best.json")
    assert (best["draw"], best["hparams"], best["val_nelbo"], best["n_draws"]) == (1, {"lr": 0.1}, 8.5, 4)
    rows = list(csv.DictReader(open(tmp_path / "search.csv")))
    assert [r["draw"] for r in rows] == ["0", "1", "2", "3"]
    assert (rows[2]["val_nelbo"], rows[2]["reason"], rows[2]["epochs"]) == ("inf", "diverged: nan loss", "")
    assert "n_draws" not in rows[0]


def test_select_fails_when_every_draw_diverged(tmp_path: Path, capsys) -> None:
    a = _write_chunk(tmp_path / "c" / "0.csv", [(0, math.inf, "diverged: nan loss")], 2)
    b = _write_chunk(tmp_path / "c" / "1.csv", [(1, math.inf, "diverged: inf grad")], 2)
    code, _, err = cli(["acp-search-select", "--chunks", a, b, "--out-dir", tmp_path], capsys)
    assert code != 0
    assert "every draw of the search" in err and "draw 0" in err and "draw 1" in err
    assert not (tmp_path / "best.json").exists()


@pytest.mark.parametrize(
    ("chunks", "words"),
    [
        ([[(0, 1.0, "")], [(2, 1.0, "")]], "missing [1]"),  # a chunk in the middle missing
        ([[(0, 1.0, "")], [(1, 1.0, "")]], "a chunk table is missing"),  # the last chunk missing
        ([[(0, 1.0, ""), (1, 1.0, "")], [(1, 1.0, "")]], "repeated [1]"),
    ],
    ids=["gap", "last", "overlap"],
)
def test_select_names_missing_or_repeated_chunks(tmp_path: Path, capsys, chunks, words) -> None:
    paths = [_write_chunk(tmp_path / "c" / f"{i}.csv", rows, 3) for i, rows in enumerate(chunks)]
    code, _, err = cli(["acp-search-select", "--chunks", *paths, "--out-dir", tmp_path], capsys)
    assert code == 2
    assert words in err and "Traceback" not in err


@pytest.mark.parametrize(
    ("extra", "words"),
    [
        (["--draws-range", "0:2"], "--draws-range needs --out-chunk"),
        (["--draws-range", "3:9", "--out-chunk", "c.csv"], "0 <= START < STOP <= 5"),
        (["--draws-range", "a-b", "--out-chunk", "c.csv"], "expected START:STOP"),
        (["--out-chunk", "c.csv"], "--out-chunk needs --draws-range"),
        ([], "acp-search needs --out-dir"),
    ],
)
def test_bad_chunk_arguments_are_one_line_errors(dataset: Path, capsys, extra, words) -> None:
    code, _, err = cli(_search_args(dataset, *extra, batch=False), capsys)
    assert code == 2
    assert words in err and "Traceback" not in err


def test_chunk_ranges_cover_the_draws_in_order() -> None:
    assert chunk_ranges(5, None) == [(0, 5)]
    assert chunk_ranges(5, 9) == [(0, 5)]
    assert chunk_ranges(5, 1) == [(0, 1), (1, 2), (2, 3), (3, 4), (4, 5)]
    assert chunk_ranges(100, 10)[-1] == (90, 100) and len(chunk_ranges(100, 10)) == 10
    assert chunk_ranges(7, 3) == [(0, 3), (3, 6), (6, 7)]


def test_even_ranges_and_cost_based_chunk_counts() -> None:
    assert even_ranges(10, 3) == [(0, 4), (4, 7), (7, 10)]
    assert even_ranges(5, 9) == [(i, i + 1) for i in range(5)] and even_ranges(5, 1) == [(0, 5)]
    hour = 3600.0
    assert chunk_count(100, 0.5 * hour, 8) == 1  # a small cell: one job
    assert chunk_count(100, 20 * hour, 8) == 3  # ceil(20 / 8); 34 draws x 0.2 h <= 8 h
    assert chunk_count(3, 15 * hour, 8) == 3  # ceil(15 / 8) = 2 leaves 2 draws x 5 h = 10 h > 8 h
    assert chunk_count(2, 30 * hour, 8) == 2  # a draw over the bound: one chunk per draw, no more


def _paper(**search: object) -> dict:
    from conftest import REPO

    from noisyor_bench.experiments.config import load_config

    cfg = load_config(REPO / "config" / "config.yaml", {"grid": "paper"})
    cfg["grids"]["paper"]["acp"]["search"] = {"draws": 100, "seed": 1, **search}
    for exp in cfg["grids"]["paper"]["acp"]["experiments"].values():
        assert not {"draws_per_job", "max_job_hours"} & set(exp.get("search") or {})
    return cfg


@pytest.mark.parametrize("hours", [0.5, 8.0])
def test_max_job_hours_sizes_each_search_by_its_estimate(hours: float) -> None:
    """search.max_job_hours: ceil(estimated hours of the whole search / bound) nearly equal chunks,
    each estimated under the bound by the cost model; the cells under the bound stay one job."""
    from conftest import REPO

    from noisyor_bench.experiments import costs
    from noisyor_bench.experiments.acp import grid

    cfg = _paper(max_job_hours=hours)
    refs = costs.load_references(REPO)
    est = costs.estimate_jobs(cfg, refs, ["acp"])
    chunk_hours: dict[str, list[float]] = {}
    for e in est:
        if e.rule == "search_chunk":
            chunk_hours.setdefault(e.job.rsplit("/", 1)[0], []).append(e.cpu_seconds / 3600)
    whole = {path: sum(h) for path, h in chunk_hours.items()}
    searched = [c for c in grid.cells(cfg) if grid.n_draws(cfg, c) > 1]
    assert searched and set(whole) == {c.path for c in searched}
    small = [c for c in searched if whole[c.path] <= hours]
    assert small  # a small cell is one job
    for cell in searched:
        ranges = acp_costs.search_chunks(cfg, cell)
        assert [d for a, b in ranges for d in range(a, b)] == list(range(100))
        assert max(b - a for a, b in ranges) - min(b - a for a, b in ranges) <= 1
        draw_hours = whole[cell.path] / 100  # a draw is never split: over the bound, its own chunk
        assert len(ranges) >= min(100, math.ceil(whole[cell.path] / hours - 1e-9))
        assert max(chunk_hours[cell.path]) <= max(hours, draw_hours) * (1 + 1e-9)
        assert (len(ranges) == 1) == (cell in small)
    if hours < 1:  # the model puts the largest searches over half an hour: they are split
        assert len(small) < len(searched)


def test_draws_per_job_wins_over_max_job_hours_and_experiments_over_the_grid() -> None:
    from noisyor_bench.experiments.acp import grid

    cfg = _paper(max_job_hours=0.01, draws_per_job=25)
    cell = next(c for c in grid.cells(cfg) if grid.n_draws(cfg, c) > 1)
    assert grid.max_job_hours(cfg, cell) is None and len(acp_costs.search_chunks(cfg, cell)) == 4
    cfg["grids"]["paper"]["acp"]["experiments"][cell.experiment]["search"] = {"max_job_hours": 1000}
    assert grid.draws_per_job(cfg, cell) is None and acp_costs.search_chunks(cfg, cell) == [(0, 100)]


def test_grids_split_the_paper_searches_by_cost_and_keep_smoke_in_one_job() -> None:
    """The paper grid sizes its 100-draw searches by search.max_job_hours (each chunk <= 8 h on one
    core by the cost model); smoke and quick set neither key (one job per search)."""
    from conftest import REPO

    from noisyor_bench.experiments.acp import grid
    from noisyor_bench.experiments.config import load_config

    for name, hours in (("paper", 8.0), ("smoke", None), ("quick", None)):
        cfg = load_config(REPO / "config" / "config.yaml", {"grid": name})
        searched = [c for c in grid.cells(cfg) if grid.n_draws(cfg, c) > 1]
        assert searched, name
        for cell in searched:
            assert grid.draws_per_job(cfg, cell) is None
            assert grid.max_job_hours(cfg, cell) == hours
            ranges = acp_costs.search_chunks(cfg, cell)
            assert [d for start, stop in ranges for d in range(start, stop)] == list(
                range(grid.n_draws(cfg, cell))
            )
            if hours is None:
                assert ranges == [(0, grid.n_draws(cfg, cell))]
