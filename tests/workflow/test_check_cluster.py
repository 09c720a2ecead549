"""noisyor-bench check-cluster: the real profiles pass on the paper grid for all papers; a
profile with a too-short limit or a GPU removed fails (one dry run each, cached per module)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from clustercheck import run_check_cluster
from conftest import REPO

from noisyor_bench.commands.cluster import parse_dry_run


def check_cluster(profile: Path) -> subprocess.CompletedProcess:
    return run_check_cluster(profile, "--config", "grid=paper")


@pytest.fixture(scope="module")
def slurm_check():
    return check_cluster(REPO / "profiles" / "slurm")


def _unmeasured_jobs() -> set[str]:
    """The paper grid's jobs without a measured job of their family (computed from the model)."""
    from noisyor_bench.experiments import costs, papers
    from noisyor_bench.experiments.config import load_config

    cfg = load_config(REPO / "config" / "config.yaml", {"grid": "paper"})
    ids = [p.id for p in papers.selected(cfg["papers"])]
    estimates = costs.estimate_jobs(cfg, costs.load_references(REPO, cfg.get("job_seconds")), ids)
    return {f"{e.rule} {e.job}" for e in estimates if not e.measured}


def _only_unmeasured_refused(proc: subprocess.CompletedProcess) -> None:
    """check-cluster refuses the paper grid for its jobs without a measurement of their family or
    whose own calibration slice failed, each named, and for nothing else (the limits, GPUs and
    submissions hold)."""
    out = proc.stdout
    expected = _unmeasured_jobs()
    if not expected:
        assert proc.returncode == 0 and "check-cluster: OK" in out, out[-3000:] + proc.stderr[-2000:]
        return
    assert proc.returncode == 1, out[-3000:] + proc.stderr[-2000:]
    problems = int(re.search(r"check-cluster: FAILED, (\d+) problem", out).group(1))
    named = set(re.findall(r"^  (\S+ \S+): not measured \(", out, re.M))
    assert named == expected and problems == len(expected), out[-3000:]


def test_slurm_profile_refuses_only_the_unmeasured_jobs_on_the_paper_grid(slurm_check):
    _only_unmeasured_refused(slurm_check)
    out = slurm_check.stdout
    assert "five longest jobs" in out
    submitted, bound = map(int, re.search(r"(\d+) cluster submissions \(bound (\d+)\)", out).groups())
    assert 0 < submitted <= bound
    assert not re.search(r"^note: .*search_chunk", out, re.M)  # searches sized by search.max_job_hours


def test_gpu_profile_refuses_only_the_unmeasured_jobs_on_the_paper_grid():
    """profiles/gpu counts GPUs (`resources: gpu`): every CUDA-capable job of the three papers must
    request one, and the limits hold as under SLURM."""
    _only_unmeasured_refused(check_cluster(REPO / "profiles" / "gpu"))


def test_broken_profile_fails(tmp_path):
    """A one-minute limit for the searches and no GPU for APE's encoders: both are reported."""
    broken = tmp_path / "slurm"
    shutil.copytree(REPO / "profiles" / "slurm", broken)
    text = (broken / "config.yaml").read_text()
    text += "\nset-resources:\n  search_chunk:\n    runtime: 1\n  ape_train:\n    gpu: 0\n"
    (broken / "config.yaml").write_text(text)
    proc = check_cluster(broken)
    assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert "runtime limit 1 min < 1.5x" in proc.stdout
    assert "CUDA-capable but requests no GPU" in proc.stdout


def test_parse_dry_run_reads_benchmarks_and_resources():
    text = (
        "rule search_chunk:\n    benchmark: /r/benchmarks/search_chunk/fig5/d/avi/n10/0.tsv\n"
        "    resources: tmpdir=/tmp, mem_mb=3000, runtime=20, gpu=1\n"
        "localrule table4:\n    benchmark: /r/benchmarks/table4/table4.tsv\n    resources: tmpdir=/tmp\n"
    )
    jobs = parse_dry_run(text, "/r")
    assert [j.bench for j in jobs] == [("search_chunk", "fig5/d/avi/n10/0"), ("table4", "table4")]
    assert jobs[0].resources["runtime"] == "20" and jobs[0].resources["gpu"] == "1"


def test_check_reports_each_kind_of_problem():
    """Without a dry run: a short limit, a CUDA job without a GPU under a GPU-counting profile, and a
    rule of second-long jobs submitted to the cluster are each reported; local rules are skipped."""
    from noisyor_bench.commands.cluster import DryJob, check
    from noisyor_bench.experiments.costs import Estimate

    def est(rule: str, job: str, seconds: float, cuda: bool) -> Estimate:
        return Estimate("acp", rule, job, seconds, "extrapolated", "", cuda, 2000, True)

    estimates = {
        ("train_cell", "a"): est("train_cell", "a", 3600, True),
        ("train_cell", "b"): est("train_cell", "b", 3600, True),
        ("baselines", "d"): est("baselines", "d", 5, False),
    }
    jobs = [
        DryJob("train_cell", ("train_cell", "a"), {"runtime": "89", "gpu": "1"}),  # 89 min < 1.5 h
        DryJob("train_cell", ("train_cell", "b"), {"runtime": "120", "gpu": "0"}),
        DryJob("baselines", ("baselines", "d"), {"runtime": "10", "gpu": "0"}),
        DryJob("table4", ("table4", "table4"), {}),  # local: not a compute rule
    ]
    problems, submitted = check(jobs, estimates, {"train_cell", "baselines"}, gpus=True)
    assert len(submitted) == 3
    assert [p for p in problems if "runtime limit 89 min" in p and p.startswith("train_cell a")]
    assert [p for p in problems if p.startswith("train_cell b") and "requests no GPU" in p]
    assert [p for p in problems if p.startswith("rule baselines") and "own cluster job" in p]
    assert len(problems) == 3
    problems, _ = check(jobs[1:2], estimates, {"train_cell"}, gpus=False)  # the default profile
    assert problems == []


def test_a_job_without_a_measurement_of_its_family_is_refused():
    """Its limit would be a guess: check-cluster names it and how to measure it, and checks nothing
    else of it (no limit or short-rule problem from its placeholder seconds)."""
    from noisyor_bench.commands.cluster import DryJob, check
    from noisyor_bench.experiments.costs import UNMEASURED, Estimate

    est = Estimate(
        "avipam", "avipam_run", "b", 3600.0, UNMEASURED, "no measured avipam_run job of family lda-batch",
        False, 2000, True, family="lda-batch",
    )  # fmt: skip
    jobs = [DryJob("avipam_run", ("avipam_run", "b"), {"runtime": "1", "gpu": "0"})]
    problems, submitted = check(jobs, {("avipam_run", "b"): est}, {"avipam_run"}, gpus=False)
    assert problems == [
        "avipam_run b: not measured (no measured avipam_run job of family lda-batch); measure it first: "
        "noisyor-bench calibrate-costs"
    ]
    assert len(submitted) == 1


def test_a_runtime_floor_lowered_for_tests_fails_the_check():
    """NOISYOR_TEST_RUNTIME_FLOOR_MIN (the real-SLURM test's 1-minute job) is never fit for a real
    submission: check-cluster names it as a problem; an invalid value is refused outright."""
    from noisyor_bench.experiments.costs import RUNTIME_FLOOR_ENV

    slurm = REPO / "profiles" / "slurm"
    proc = run_check_cluster(slurm, "--config", "grid=smoke", env={RUNTIME_FLOOR_ENV: "1"})
    assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert "check-cluster: FAILED, 1 problem(s):" in proc.stdout
    assert (
        f"  {RUNTIME_FLOOR_ENV}=1: every compute job's wall-time floor is 1 min instead of 10" in proc.stdout
    )
    bad = run_check_cluster(slurm, "--config", "grid=smoke", env={RUNTIME_FLOOR_ENV: "0"})
    assert bad.returncode != 0 and f"{RUNTIME_FLOOR_ENV}='0'" in bad.stderr, bad.stderr[-2000:]
