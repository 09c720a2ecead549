"""The one run-directory publisher (experiments/rundir.py): a run directory is either complete or
absent, and a rerun replaces the previous run only once it has finished."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from noisyor_bench.experiments import rundir
from noisyor_bench.experiments.rundir import fresh_partial_dir, partial_dir, publish_run_dir


def _write_run(out: Path, files: dict[str, str], drop: tuple[str, ...] = ()) -> Path:
    work = fresh_partial_dir(out)
    for name, text in files.items():
        (work / name).write_text(text)
    return publish_run_dir(work, out, drop=drop)


def _contents(directory: Path) -> dict[str, str]:
    return {p.name: p.read_text() for p in sorted(directory.iterdir())}


def test_publish_moves_the_finished_directory_into_place(tmp_path: Path) -> None:
    out = tmp_path / "runs" / "x" / "seed0"
    assert _write_run(out, {"metrics.json": "{}", "curve.csv": "a\n"}) == out
    assert _contents(out) == {"curve.csv": "a\n", "metrics.json": "{}"}
    assert not partial_dir(out).exists()
    assert not out.with_name("seed0.old").exists()


def test_rerun_replaces_the_previous_run_entirely(tmp_path: Path) -> None:
    out = tmp_path / "seed0"
    _write_run(out, {"metrics.json": "old", "stale.npz": "old"})
    _write_run(out, {"metrics.json": "new"})
    assert _contents(out) == {"metrics.json": "new"}  # nothing of the old run survives
    assert sorted(p.name for p in tmp_path.iterdir()) == ["seed0"]


def test_drop_keeps_resume_state_out_of_the_published_run(tmp_path: Path) -> None:
    out = tmp_path / "seed0"
    _write_run(
        out,
        {"metrics.json": "{}", "checkpoint.pt": "w", "spec.json": "{}"},
        drop=("checkpoint.pt", "spec.json"),
    )
    assert _contents(out) == {"metrics.json": "{}"}


def test_run_killed_before_publishing_leaves_the_finished_run_untouched(tmp_path: Path) -> None:
    out = tmp_path / "seed0"
    _write_run(out, {"metrics.json": "first"})
    work = fresh_partial_dir(out)  # a rerun starts ...
    (work / "metrics.json").write_text("half")  # ... and is killed here
    assert _contents(out) == {"metrics.json": "first"}
    again = fresh_partial_dir(out)  # the next attempt starts from an empty directory
    assert again == work and list(again.iterdir()) == []


def test_never_published_run_is_absent(tmp_path: Path) -> None:
    out = tmp_path / "seed0"
    (fresh_partial_dir(out) / "metrics.json").write_text("half")
    assert not out.exists()


def test_failed_final_rename_puts_the_previous_run_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "seed0"
    _write_run(out, {"metrics.json": "first"})
    work = fresh_partial_dir(out)
    (work / "metrics.json").write_text("second")
    real_replace = os.replace

    def failing_replace(src: os.PathLike[str], dst: os.PathLike[str]) -> None:
        if Path(src) == work:
            raise OSError("disk full")
        real_replace(src, dst)

    monkeypatch.setattr(rundir.os, "replace", failing_replace)
    with pytest.raises(OSError, match="disk full"):
        publish_run_dir(work, out)
    assert _contents(out) == {"metrics.json": "first"}
    assert not out.with_name("seed0.old").exists()


def test_leftover_old_directory_of_a_killed_publish_is_removed(tmp_path: Path) -> None:
    out = tmp_path / "seed0"
    old = tmp_path / "seed0.old"
    old.mkdir()
    (old / "metrics.json").write_text("older")
    _write_run(out, {"metrics.json": "new"})
    assert _contents(out) == {"metrics.json": "new"}
    assert not old.exists()
