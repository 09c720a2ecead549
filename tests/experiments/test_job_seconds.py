"""The measured seconds per job that order the workflow's jobs (longest first)."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

import pytest

from noisyor_bench.experiments import job_seconds
from noisyor_bench.infra.errors import DataError

REPO = Path(__file__).resolve().parents[2]


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def test_priority_is_the_rounded_seconds_and_zero_when_unmeasured(tmp_path: Path) -> None:
    table = job_seconds.load(
        _write(tmp_path / "j.csv", "rule,job,seconds\ntrain_cell,fig4/a/n1,489.6\nbaselines,d,0.4\n")
    )
    assert job_seconds.priority(table, "train_cell", "fig4/a/n1") == 490
    assert job_seconds.priority(table, "baselines", "d") == 0
    assert job_seconds.priority(table, "train_cell", "fig4/a/n2") == 0
    # longer jobs get higher priorities; data preparation outranks every measured job
    assert job_seconds.UPSTREAM_PRIORITY > max(job_seconds.priority(table, *k) for k in table)


def test_missing_file_or_none_means_default_order(tmp_path: Path) -> None:
    assert job_seconds.load(None) == {}
    assert job_seconds.load(tmp_path / "absent.csv") == {}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("rule,job,s\ntrain_cell,a,1\n", "expected the header rule,job,seconds,work,cpu"),
        ("rule,job,seconds\ntrain_cell,a,fast\n", "line 2: seconds must be a number"),
        ("rule,job,seconds\ntrain_cell,a,-3\n", "line 2: seconds must be finite and >= 0"),
        ("rule,job,seconds\ntrain_cell,a,1\ntrain_cell,a,2\n", "line 3: job train_cell a is listed twice"),
        ("rule,job,seconds,work,cpu\ntrain_cell,a,1,big,X\n", "line 2: work must be a number"),
    ],
)
def test_bad_tables_name_file_line_and_problem(tmp_path: Path, text: str, message: str) -> None:
    path = _write(tmp_path / "bad.csv", text)
    with pytest.raises(DataError, match=message) as err:
        job_seconds.load(path)
    assert str(path) in str(err.value)


def test_merge_keeps_each_jobs_smallest_time_longest_first(tmp_path: Path) -> None:
    shared = [{"rule": "train_cell", "job": "a", "s": "500"}, {"rule": "tsne", "job": "K50", "s": "90"}]
    idle = [{"rule": "train_cell", "job": "a", "s": "420.04"}, {"rule": "baselines", "job": "d", "s": "130"}]
    idle = [{**row, "cpu": "Idle CPU"} for row in idle]
    rows = job_seconds.merge([shared, idle], work={("train_cell", "a"): 2560.0, ("baselines", "d"): 0.25})
    Row = job_seconds.Row
    assert rows == [
        ("train_cell", "a", Row(420.04, 2560.0, "Idle CPU")),
        ("baselines", "d", Row(130.0, 0.25, "Idle CPU")),
        ("tsne", "K50", Row(90.0)),
    ]
    out = tmp_path / "j.csv"
    job_seconds.write(rows, out)
    assert out.read_text().splitlines()[1:] == [
        "train_cell,a,420.0,2560,Idle CPU",
        "baselines,d,130.0,0.25,Idle CPU",
        "tsne,K50,90.0,,",
    ]
    assert job_seconds.load(out)[("baselines", "d")] == 130.0
    assert job_seconds.load_rows(out)[("baselines", "d")] == Row(130.0, 0.25, "Idle CPU")
    assert job_seconds.load_rows(out)[("tsne", "K50")] == Row(90.0)


def test_a_table_without_work_and_cpu_still_loads(tmp_path: Path) -> None:
    path = _write(tmp_path / "old.csv", "rule,job,seconds\ntrain_cell,a,12.5\n")
    assert job_seconds.load_rows(path) == {("train_cell", "a"): job_seconds.Row(12.5)}


def test_merge_keeps_an_earlier_tables_unmeasured_jobs_and_never_its_measured_ones() -> None:
    Row = job_seconds.Row
    earlier = {
        ("train_cell", "a"): Row(999.0, 5.0, "Old CPU"),
        ("train_cell", "gone"): Row(77.0, 3.0, "Old CPU"),
    }
    rows = job_seconds.merge([[{"rule": "train_cell", "job": "a", "s": "12", "cpu": "New"}]], earlier)
    assert rows == [
        ("train_cell", "gone", Row(77.0, 3.0, "Old CPU")),
        ("train_cell", "a", Row(12.0, None, "New")),
    ]


def test_committed_table_is_valid_and_orders_the_longest_acp_cell_first() -> None:
    """config/job_seconds.csv parses, and the MULTI-MNIST cells (the longest ACP training jobs
    of the quick grid) outrank the seconds-long syn-pattern inference cells."""
    config = REPO / "config" / "job_seconds.csv"
    table = job_seconds.load(config)
    assert table, f"{config} is empty or missing"
    slow = job_seconds.priority(table, "train_cell", "suppfig2/multi-mnist/acp/n2000")
    fast = job_seconds.priority(table, "train_cell", "fig3a/syn-pattern/avi/n20")
    assert slow > fast > 0


def test_cli_writes_the_table_with_each_jobs_work_and_cpu(tmp_path: Path) -> None:
    """Each row gets its work in the measured grid (the cost model's) and the CPU its run recorded
    beside the runtime table; a job of no cost model gets no work."""
    from noisyor_bench.experiments import costs
    from noisyor_bench.experiments.config import load_config

    cfg = load_config(REPO / "config" / "config.yaml", {"grid": "quick"})
    job = costs.paper_jobs(cfg, "ape_noisyor")[0]
    runtime = _write(
        tmp_path / "runtime_jobs.csv",
        f"rule,job,s,cpu_time_s,max_rss_mb,repeats\n{job.rule},{job.job},12.5,10,100,1\nsearch_table,b,3.25,3,90,1\n",
    )
    _write(tmp_path / "runtime_jobs.csv.prov.json", '{"environment": {"device": {"cpu_model": "Test CPU"}}}')
    out = tmp_path / "job_seconds.csv"
    cmd = [
        sys.executable,
        "-m",
        "noisyor_bench",
        "job-seconds",
        "--runtime-jobs",
        str(runtime),
        "--out",
        str(out),
    ]
    subprocess.run(cmd, check=True, cwd=REPO, capture_output=True)
    work = job_seconds.load_rows(out)[(job.rule, job.job)].work
    assert work == job.work
    lines = out.read_text().splitlines()
    assert lines[0] == "rule,job,seconds,work,cpu"
    assert lines[1].startswith(f"{job.rule},{job.job},12.5,") and lines[1].endswith(",Test CPU")
    assert lines[2] == "search_table,b,3.2,,Test CPU"
    bad = subprocess.run(
        [*cmd[:5], str(tmp_path / "nope.csv"), "--out", str(out)], cwd=REPO, capture_output=True, text=True
    )
    assert bad.returncode != 0 and "no such runtime table" in bad.stderr


def test_cli_rebases_the_slice_rows_priced_from_the_table_it_rewrites(tmp_path: Path) -> None:
    """``--rebase-slices``: a slice row scaling from a job of the table ``--out`` replaces moves by
    that job's new seconds per unit of work / its old ones; a row of another reference stays."""
    from noisyor_bench.experiments import cost_slices, costs
    from noisyor_bench.experiments.config import load_config

    cfg = load_config(REPO / "config" / "config.yaml", {"grid": "quick"})
    job = costs.paper_jobs(cfg, "ape_noisyor")[0]
    out = tmp_path / "job_seconds.csv"
    job_seconds.write([(job.rule, job.job, job_seconds.Row(10.0, job.work, "Test CPU"))], out)
    runtime = _write(
        tmp_path / "runtime_jobs.csv",
        f"rule,job,s,cpu_time_s,max_rss_mb,repeats\n{job.rule},{job.job},12.5,10,100,1\n",
    )
    row = cost_slices.Slice(
        "ape_noisyor_train", "big", 1000.0, 5.0, "Test CPU", 100.0, "w; x3 the same slice of the reference",
        0.3, f"quick: {job.rule}/{job.job}", 0.1, 333.3, "abc", "2026-11-30",
    )  # fmt: skip
    other = dataclasses.replace(row, job="other", reference="paper-synpattern: train_cell/a")
    slices = tmp_path / "cost_slices.csv"
    cost_slices.write([row, other], slices)
    cmd = [sys.executable, "-m", "noisyor_bench", "job-seconds", "--runtime-jobs", str(runtime),
           "--out", str(out), "--cpu", "Test CPU", "--rebase-slices", str(slices)]  # fmt: skip
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert f"quick: {job.rule}/{job.job}: x1.250 (1 slice row(s))" in proc.stdout
    new = {s.job: s for s in cost_slices.load(slices)}
    assert new["big"].seconds == pytest.approx(1250.0) and new["big"].estimate_seconds == pytest.approx(
        416.6, abs=0.1
    )
    assert "reference re-measured" in new["big"].what and new["other"] == other
    assert job_seconds.load_rows(out)[(job.rule, job.job)].seconds == 12.5
