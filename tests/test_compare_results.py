"""tests/compare_results.py, the comparison of two results directories: with --ignore-timing, two
hand-made results folders that differ only in timing fields are equal (exit 0), and a metric that
differs is still found (exit 1)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import compare_results
import pytest
from conftest import REPO

CSV_HEADER = "cell,nll,total_s,started_at\n"
MD_TABLE = (
    "| method | NLL | wall time (h) |\n|---|---|---|\n| avi | {nll} | {hours} |\n\nRun took {secs} s.\n"
)


def write_results(root: Path, total_s: str, started: str, nll: str, hours: str, elapsed: float) -> Path:
    """A tiny results folder: a table, its Markdown view and a run record."""
    (root / "tables").mkdir(parents=True)
    (root / "runs").mkdir()
    (root / "tables" / "cells.csv").write_text(CSV_HEADER + f"fig5/avi,{nll},{total_s},{started}\n")
    (root / "tables" / "cells.md").write_text(MD_TABLE.format(nll=nll, hours=hours, secs=total_s))
    record = {
        "cell": "fig5/avi",
        "nll": float(nll),
        "elapsed": elapsed,
        "finished": started,
        "log": f"{total_s} s",
    }
    (root / "runs" / "metrics.json").write_text(json.dumps(record))
    return root


@pytest.fixture
def local(tmp_path):
    return write_results(tmp_path / "local", "12.5", "2024-05-01T10:00:00", "91.25", "0.4", 12.5)


def run(a: Path, b: Path, *options: str) -> int:
    return compare_results.main([str(a), str(b), *options])


def test_timing_only_differences_are_equal_with_ignore_timing(tmp_path, local):
    cluster = write_results(tmp_path / "cluster", "31.0", "2024-05-02T08:15:42+02:00", "91.25", "1.3", 31.0)
    assert run(local, cluster, "--ignore-timing") == 0
    # without the option the timing fields the default does not know (total_s, elapsed, ...) differ
    result = compare_results.compare(local, cluster)
    assert set(result["diffs"]) == {"tables/cells.csv", "tables/cells.md", "runs/metrics.json"}
    assert run(local, cluster) == 1


def test_a_metric_that_differs_is_found_with_ignore_timing(tmp_path, local):
    changed = write_results(tmp_path / "changed", "31.0", "2024-05-02T08:15:42", "91.26", "1.3", 31.0)
    result = compare_results.compare(local, changed, timing=True)
    assert set(result["diffs"]) == {"tables/cells.csv", "tables/cells.md", "runs/metrics.json"}
    assert result["same"] == 0
    assert run(local, changed, "--ignore-timing") == 1


def test_a_file_on_one_side_only_fails_the_comparison(tmp_path, local):
    other = write_results(tmp_path / "other", "12.5", "2024-05-01T10:00:00", "91.25", "0.4", 12.5)
    assert run(local, other, "--ignore-timing") == 0
    (other / "tables" / "extra.csv").write_text("a\n1\n")
    assert compare_results.compare(local, other, timing=True)["only_b"] == ["tables/extra.csv"]
    assert run(local, other, "--ignore-timing") == 1


@pytest.mark.parametrize(
    ("name", "timing"),
    [
        ("total_s", True),
        ("cpu_time_s", True),
        ("time_s_median_std", True),
        ("vi_time_to_ape_elbo", True),
        ("train_minutes", True),
        ("train_cpu_minutes_median_values", True),
        ("cpu_timing", True),
        ("elapsed", True),
        ("started_at", True),
        ("finished", True),
        ("wall time (h)", True),
        ("runtime", True),
        ("nll", False),
        ("s", False),
        ("min_epoch_steps", False),
        ("timing_repeats", False),
        ("lr_min", False),
        ("n_topics", False),
        ("NLL", False),
    ],
)
def test_which_names_are_timing(name, timing):
    assert compare_results.is_timing(name) is timing


def test_the_command_line_exits_with_the_comparison(tmp_path, local):
    cluster = write_results(tmp_path / "cluster", "31.0", "2024-05-02T08:15:42", "91.25", "1.3", 31.0)
    cmd = [sys.executable, str(REPO / "tests" / "compare_results.py"), str(local), str(cluster)]
    ok = subprocess.run([*cmd, "--ignore-timing"], capture_output=True, text=True, check=False)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "compared 3 files: 3 equal" in ok.stdout
    bad = subprocess.run(cmd, capture_output=True, text=True, check=False)
    assert bad.returncode == 1 and "DIFF tables/cells.csv" in bad.stdout
