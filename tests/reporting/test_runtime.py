"""The runtime table: per-rule totals and slowest jobs from Snakemake benchmark files."""

from __future__ import annotations

import csv
from pathlib import Path

import pandas as pd
import pytest

from noisyor_bench.cli import main
from noisyor_bench.infra.errors import DataError
from noisyor_bench.reporting.runtime import collect, markdown, per_rule

HEADER = "s\th:m:s\tmax_rss\tmax_vms\tmax_uss\tmax_pss\tio_in\tio_out\tmean_load\tcpu_time\n"


def bench(root: Path, rel: str, *rows: tuple[str, str, str]) -> None:
    """A benchmark file with rows (s, max_rss, cpu_time), as Snakemake writes it."""
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    body = "".join(f"{s}\t0:00:00\t{rss}\t1\t1\t1\t0\t0\t50\t{cpu}\n" for s, rss, cpu in rows)
    path.write_text(HEADER + body)


@pytest.fixture
def benchmarks(tmp_path: Path) -> Path:
    root = tmp_path / "benchmarks"
    bench(root, "train_cell/fig5/syn-random-1/avi/n10.tsv", ("30.0", "500", "29"))
    bench(root, "train_cell/fig5/syn-random-1/acp/n10.tsv", ("10.0", "700", "9"))
    bench(root, "search/fig5/syn-random-1/avi/n10.tsv", ("5.0", "NA", "NA"))
    # --benchmark-repeats 2: the job's time is the mean of its repetitions
    bench(root, "make_dataset/syn-random-1.tsv", ("1.0", "100", "1"), ("3.0", "120", "3"))
    return root


def test_per_rule_totals_and_slowest_job(benchmarks):
    jobs = collect(benchmarks)
    assert list(jobs["s"]) == [30.0, 10.0, 5.0, 2.0]  # slowest first
    rules = per_rule(jobs).set_index("rule")
    assert list(rules.index) == ["train_cell", "search", "make_dataset"]  # by total
    train = rules.loc["train_cell"]
    assert (train["jobs"], train["total_s"], train["mean_s"], train["max_s"]) == (2, 40.0, 20.0, 30.0)
    assert train["slowest_job"] == "fig5/syn-random-1/avi/n10"
    assert train["max_rss_mb"] == 700.0
    assert rules.loc["make_dataset", "total_s"] == 2.0 and rules.loc["make_dataset", "max_rss_mb"] == 120.0
    assert pd.isna(rules.loc["search", "max_rss_mb"])  # NA in the file: unknown, not 0


def test_markdown_lists_the_slowest_jobs_and_the_total(benchmarks):
    jobs = collect(benchmarks)
    text = markdown(per_rule(jobs), jobs, top=2)
    assert "4 jobs, 47 s" in text
    assert "## The 2 slowest jobs" in text
    slow = text.split("## The 2 slowest jobs")[1]
    assert "fig5/syn-random-1/avi/n10 | 30.0" in slow and "fig5/syn-random-1/acp/n10 | 10.0" in slow
    assert "syn-random-1/avi/n10 | 5.0" not in slow


def test_cli_writes_every_output(benchmarks, tmp_path):
    out = tmp_path / "out"
    rc = main(
        [
            "runtime-table",
            "--benchmarks",
            str(benchmarks),
            "--out-csv",
            str(out / "r.csv"),
            "--out-md",
            str(out / "r.md"),
            "--out-jobs-csv",
            str(out / "jobs.csv"),
            "--out-png",
            str(out / "r.png"),
        ]
    )
    assert rc == 0
    with open(out / "r.csv", newline="") as fh:
        assert [r["rule"] for r in csv.DictReader(fh)] == ["train_cell", "search", "make_dataset"]
    with open(out / "jobs.csv", newline="") as fh:
        assert len(list(csv.DictReader(fh))) == 4
    assert (out / "r.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize(
    "setup, message",
    [
        (lambda root: None, "not found"),
        (lambda root: root.mkdir(), "no benchmark files"),
        (
            lambda root: (
                (root / "rule_x").mkdir(parents=True)
                or (root / "rule_x" / "a.tsv").write_text("x\ty\n1\t2\n")
            ),
            "not a Snakemake benchmark file",
        ),
        (
            lambda root: (
                (root / "rule_x").mkdir(parents=True)
                or (root / "rule_x" / "a.tsv").write_text(HEADER + "oops\t0\n")
            ),
            "non-numeric",
        ),
    ],
)
def test_bad_benchmark_directories_are_user_errors(tmp_path, setup, message, capsys):
    root = tmp_path / "benchmarks"
    setup(root)
    with pytest.raises(DataError, match=message):
        collect(root)
    rc = main(
        [
            "runtime-table",
            "--benchmarks",
            str(root),
            "--out-csv",
            str(tmp_path / "r.csv"),
            "--out-md",
            str(tmp_path / "r.md"),
        ]
    )
    assert rc == 2 and message in capsys.readouterr().err
    assert not (tmp_path / "r.csv").exists()
