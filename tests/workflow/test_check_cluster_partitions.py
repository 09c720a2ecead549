"""check-cluster against the cluster itself: captured ``sinfo`` text parsed into partitions (MaxTime,
GPUs, node memory), each job checked against its partition, and the CPU-only mode under which the
smoke and quick grids pass on a cluster without GPUs."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
from clustercheck import run_check_cluster
from conftest import REPO

from noisyor_bench.commands.cluster import DryJob, check, check_partitions
from noisyor_bench.experiments import costs, papers
from noisyor_bench.experiments.config import load_config
from noisyor_bench.experiments.costs import Estimate
from noisyor_bench.infra.errors import DataError
from noisyor_bench.infra.slurm_partitions import SINFO_COMMAND, gres_gpus, parse_sinfo, parse_time_limit

# Captured `sinfo --noheader --exact --format=%P|%l|%G|%m|%D` of a cluster with a default 24 h
# partition of GPU and CPU nodes, a week-long CPU partition and an unlimited debug one.
SINFO_GPU = """\
main*|1-00:00:00|gpu:a100:4(S:0-1)|515000|8
main*|1-00:00:00|(null)|257000|32
long|7-00:00:00|(null)|257000|4
debug|infinite|(null)|64000+|2
"""
# A CPU-only cluster.
SINFO_CPU = """\
cpu*|1-00:00:00|(null)|191000|40
short|30:00|(null)|64000|2
"""


@pytest.mark.parametrize(
    ("text", "minutes"),
    [
        ("1-00:00:00", 1440),
        ("7-00:00:00", 7 * 1440),
        ("2:00:00", 120),
        ("12:30:00", 750),
        ("30:00", 30),  # MM:SS
        ("0:30", 0.5),
        ("45", 45),
        ("1-12", 1440 + 720),  # D-HH
        ("2-03:04", 2 * 1440 + 3 * 60 + 4),  # D-HH:MM
        ("1-00:00:30", 1440.5),
        ("infinite", None),
        ("UNLIMITED", None),
    ],
)
def test_time_limits_in_every_slurm_format(text, minutes):
    assert parse_time_limit(text) == minutes


@pytest.mark.parametrize(
    ("gres", "gpus"),
    [
        ("(null)", 0),
        ("gpu:4", 4),
        ("gpu:a100:2(S:0-1)", 2),
        ("gpu:a100:2(S:0-1),mps:200", 2),
        ("mps:200,gpu:v100:1", 1),
        ("gpu", 1),
        ("gpu:tesla", 1),
        ("craynetwork:4", 0),
    ],
)
def test_gpus_of_a_gres(gres, gpus):
    assert gres_gpus(gres) == gpus


def test_parse_sinfo_merges_the_lines_of_a_partition():
    parts = parse_sinfo(SINFO_GPU)
    assert list(parts) == ["main", "long", "debug"]
    main, long_, debug = parts["main"], parts["long"], parts["debug"]
    assert main.default and not long_.default and not debug.default
    assert (main.max_minutes, long_.max_minutes, debug.max_minutes) == (1440, 10080, None)
    assert main.has_gpus and not long_.has_gpus
    assert main.largest_memory() == 515000 and main.largest_memory(gpu=True) == 515000
    assert debug.largest_memory() == 64000  # "64000+": at least 64000 MB
    assert [g.nodes for g in main.groups] == [8, 32]
    assert "--noheader" in SINFO_COMMAND and any(a.startswith("--format=") for a in SINFO_COMMAND)


@pytest.mark.parametrize(
    "line",
    ["main*|1-00:00:00|(null)|257000", "main*|soon|(null)|257000|4", "main*|1:00:00|(null)|lots|4"],
)
def test_a_line_in_another_format_is_a_clear_error(line):
    with pytest.raises(DataError, match="sinfo"):
        parse_sinfo(line + "\n")


def _job(rule: str, stem: str, **resources: str) -> DryJob:
    return DryJob(rule, (rule, stem), dict(resources))


def test_each_job_is_checked_against_its_partition():
    """Hand-made jobs on SINFO_GPU's partitions: main's MaxTime is 1440 min, long's 10080 min, a
    GPU node has 515000 MB and a CPU node 257000 MB."""
    parts = parse_sinfo(SINFO_GPU)
    jobs = [
        _job("ape_train", "over", runtime="1488", mem_mb="6750", gpu="1"),  # 24.8 h > 24 h
        _job("ape_train", "at", runtime="1440", mem_mb="6750", gpu="1"),  # = MaxTime: fits, its retry not
        _job("ape_train", "retry", runtime="800", mem_mb="3000", gpu="1"),  # fits, its retry (1600 min) not
        _job("train_cell", "long", runtime="1488", mem_mb="3000", gpu="0", slurm_partition="long"),
        _job("train_cell", "gpu-long", runtime="60", mem_mb="3000", gpu="1", slurm_partition="long"),
        _job(
            "train_cell", "gres", runtime="60", mem_mb="3000", gpu="0", gres="gpu:1", slurm_partition="long"
        ),
        _job("avipam_run", "big", runtime="60", mem_mb="300000", gpu="0", slurm_partition="long"),
        _job("avipam_run", "nowhere", runtime="60", mem_mb="3000", gpu="0", slurm_partition="'gpu'"),
    ]
    problems, notes = check_partitions(jobs, parts)
    named = {p.split(":")[0]: p for p in problems}
    assert set(named) == {
        "ape_train over",
        "train_cell gpu-long",
        "train_cell gres",
        "avipam_run big",
        "avipam_run nowhere",
    }
    assert "24.8 h > partition main MaxTime 24.0 h" in named["ape_train over"]
    assert "PartitionTimeLimit" in named["ape_train over"]
    assert "partition long has no GPU" in named["train_cell gpu-long"]
    assert "partition long has no GPU" in named["train_cell gres"]
    assert "300000 > the largest node of partition long (257000 MB)" in named["avipam_run big"]
    assert "'gpu' is not in sinfo" in named["avipam_run nowhere"]
    # a retry doubles the limit: 2 x 1440 and 2 x 800 min exceed main's 1440, so only a note
    assert len(notes) == 1 and notes[0].startswith("2 job(s)") and "TIMEOUT" in notes[0]
    assert "ape_train at" in notes[0] and "ape_train retry" in notes[0]
    _, notes = check_partitions(jobs, parts, max_names=1)  # check-cluster's --max-problems
    assert notes[0].endswith(": ape_train at ... and 1 more")


def test_without_a_default_partition_a_job_must_name_one():
    parts = parse_sinfo("a|1:00:00|(null)|1000|1\n")
    problems, _ = check_partitions([_job("train_cell", "x", runtime="10", mem_mb="500")], parts)
    assert len(problems) == 1 and "no default partition" in problems[0]
    problems, _ = check_partitions(
        [_job("train_cell", "x", runtime="10", mem_mb="500", slurm_partition="a")], parts
    )
    assert problems == []


def test_cpu_only_mode_reports_gpu_requests_not_cuda_jobs_on_cpu():
    def est(rule: str, job: str) -> Estimate:
        return Estimate("acp", rule, job, 3600.0, "extrapolated", "", True, 2000, True)

    estimates = {("train_cell", s): est("train_cell", s) for s in ("cpu", "gpu", "gres")}
    jobs = [
        _job("train_cell", "cpu", runtime="120", gpu="0"),
        _job("train_cell", "gpu", runtime="120", gpu="1"),
        _job("train_cell", "gres", runtime="120", gpu="0", gres="gpu:1"),
    ]
    problems, _ = check(jobs, estimates, {"train_cell"}, gpus=True, cpu_only=True)
    assert sorted(p.split(":")[0] for p in problems) == ["train_cell gpu", "train_cell gres"]
    assert all("CPU-only" in p for p in problems)
    problems, _ = check(jobs, estimates, {"train_cell"}, gpus=True)  # a GPU cluster
    assert [p.split(":")[0] for p in problems] == ["train_cell cpu"]


def test_a_rule_short_only_in_a_small_grid_is_not_reported():
    """A rule whose jobs take 5 s in this grid but an hour at the papers' scale is a real compute rule."""
    e = Estimate("acp", "baselines", "d", 5.0, "extrapolated", "", False, 2000, True)
    jobs = [_job("baselines", "d", runtime="10", gpu="0")]
    problems, _ = check(jobs, {("baselines", "d"): e}, {"baselines"}, gpus=False)
    assert len(problems) == 1 and "own cluster job" in problems[0]
    problems, _ = check(
        jobs, {("baselines", "d"): e}, {"baselines"}, gpus=False, full_scale={"baselines": 3600.0}
    )
    assert problems == []


def check_cluster(grid: str, sinfo: Path, *extra: str) -> subprocess.CompletedProcess:
    slurm = REPO / "profiles" / "slurm"
    return run_check_cluster(
        slurm, "--config", f"grid={grid}", "--sinfo-file", str(sinfo), "--max-problems", "1000", *extra
    )


@pytest.mark.parametrize("grid", ["smoke", "quick"])
def test_small_grids_pass_on_a_cpu_only_cluster(tmp_path, grid):
    """The smoke and quick grids set no gpus_per_job: under the SLURM profile that is CPU-only mode,
    and every job fits the CPU cluster's default 24 h partition."""
    sinfo = tmp_path / "sinfo.txt"
    sinfo.write_text(SINFO_CPU)
    proc = check_cluster(grid, sinfo)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert "CPU-only mode (the grid's gpus_per_job is 0)" in proc.stdout
    assert "cpu* (MaxTime 24.0 h, no GPUs, 191000 MB)" in proc.stdout
    assert "check-cluster: OK" in proc.stdout


def _paper_limits() -> dict[str, int]:
    """First-attempt runtime limits (minutes) of the paper grid's measured jobs, from the estimates."""
    cfg = load_config(REPO / "config" / "config.yaml", {"grid": "paper"})
    selected = [p.id for p in papers.selected(cfg["papers"])]
    estimates = costs.estimate_jobs(cfg, costs.load_references(REPO, cfg.get("job_seconds")), selected)
    return {f"{e.rule} {e.job}": costs.runtime_minutes(e.cpu_seconds) for e in estimates if e.measured}


def _paper_unmeasured() -> set[str]:
    cfg = load_config(REPO / "config" / "config.yaml", {"grid": "paper"})
    selected = [p.id for p in papers.selected(cfg["papers"])]
    estimates = costs.estimate_jobs(cfg, costs.load_references(REPO, cfg.get("job_seconds")), selected)
    return {f"{e.rule} {e.job}" for e in estimates if not e.measured}


def test_the_paper_grid_fits_a_one_day_partition(tmp_path):
    """Every paper-grid job's first limit, 2 x the cost model's estimate, is within 24 h: the APE
    trainings of days run as segment jobs under ape.max_job_hours, the searches as chunks and the
    long seeds' trainings as segment jobs under search.max_job_hours (the SYN-RANDOM-6 LB-CDI
    seeds at N_train = 10,000 as three); the note names exactly the jobs whose doubled retry would
    not fit; the only problems are the jobs the cost model cannot price (refused until measured)."""
    limits = _paper_limits()
    over = {name for name, m in limits.items() if m > 24 * 60}
    assert not over, sorted(over)
    sinfo = tmp_path / "sinfo.txt"
    sinfo.write_text(SINFO_GPU)
    proc = check_cluster("paper", sinfo)
    unmeasured = _paper_unmeasured()  # refused until measured (a failed slice, no family measured)
    refused = set(re.findall(r"^  (\S+ \S+): not measured \(", proc.stdout, re.M))
    assert refused == unmeasured, proc.stdout[-3000:]
    named = set(
        re.findall(
            r"^  \S+ (\S+): runtime limit [\d.]+ h > partition main MaxTime 24\.0 h", proc.stdout, re.M
        )
    )
    assert named == {name.split(" ", 1)[1] for name in over}, proc.stdout[-3000:]
    failed = re.search(r"check-cluster: FAILED, (\d+) problem", proc.stdout)
    problems = len(unmeasured) + len(over)
    assert (int(failed.group(1)) if failed else 0) == problems, proc.stdout[-3000:]
    assert proc.returncode == (1 if problems else 0), proc.stdout[-3000:] + proc.stderr[-2000:]
    retry_over = {name for name, m in limits.items() if m <= 24 * 60 < 2 * m}
    note = re.search(r"^note: (\d+) job\(s\) whose retry \(time limit doubled\).*?: (.*)$", proc.stdout, re.M)
    if retry_over:  # by job: a cell's per-seed jobs are rule train_cell_seed in the DAG
        named = {name.split(" ", 1)[1] for name in note.group(2).split(", ")} if note else set()
        assert named == {name.split(" ", 1)[1] for name in retry_over}, proc.stdout[-3000:]
    else:
        assert note is None
    assert "CPU-only mode" not in proc.stdout and "has no GPU" not in proc.stdout


def test_paper_grid_on_a_12h_partition_fails_naming_the_longer_jobs(tmp_path):
    """The jobs named are exactly those whose first limit exceeds the partition's 12 h (computed
    here from the estimates, not from the limits check-cluster read)."""
    sinfo = tmp_path / "sinfo.txt"
    sinfo.write_text(SINFO_GPU.replace("1-00:00:00", "12:00:00"))
    expected = {name for name, m in _paper_limits().items() if m > 12 * 60}
    assert expected, "the paper grid has no job above 12 h: this test needs another partition"
    proc = check_cluster("paper", sinfo)
    assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr[-2000:]
    named = set(
        re.findall(
            r"^  (\S+ \S+): runtime limit [\d.]+ h > partition main MaxTime 12\.0 h", proc.stdout, re.M
        )
    )
    # by job: a cell's per-seed jobs are rule train_cell_seed in the DAG, train_cell in the model
    assert {n.split(" ", 1)[1] for n in named} == {n.split(" ", 1)[1] for n in expected}
    assert "CPU-only mode" not in proc.stdout and "has no GPU" not in proc.stdout
