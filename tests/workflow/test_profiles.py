"""The Snakemake profiles under profiles/ parse and give jobs the resources they document."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from conftest import REPO

from noisyor_bench.inference.noisyor.registry import AMORTIZED

PROFILES = ("default", "gpu", "slurm")


def dry_run(
    profile: str,
    results: Path,
    grid: str,
    key: str = "grid",
    stderr: list | None = None,
    checkout: Path = REPO,
    env: dict[str, str] | None = None,
) -> str:
    """``snakemake --dry-run`` of ``grid`` under ``profile`` in ``checkout`` (this one by default)."""
    env = dict(os.environ if env is None else env)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env.setdefault("NOISYOR_RAW_DATA", str(REPO.parent / "shared" / "data"))
    cmd = [
        str(Path(sys.executable).parent / "snakemake"),
        "--workflow-profile",
        f"profiles/{profile}",
        "--dry-run",
        "--nolock",
        "--config",
        f"{key}={grid}",
        f"results_dir={results}",
    ]
    proc = subprocess.run(cmd, cwd=checkout, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert f"workflow specific profile profiles/{profile}" in proc.stderr
    if stderr is not None:
        stderr.append(proc.stderr)
    return proc.stdout


def job_resources(output: str, rule: str) -> list[str]:
    """The `resources:` line of every job of ``rule`` in a dry run."""
    blocks = re.split(r"\n(?=(?:local)?rule \S+:\n)", output)
    return [
        m.group(1)
        for b in blocks
        if b.startswith(f"rule {rule}:\n")
        for m in [re.search(r"\n\s+resources: (.*)", b)]
        if m
    ]


def method_resources(output: str, rule: str) -> list[tuple[str, str]]:
    """(method wildcard, `resources:` line) of every job of ``rule`` in a dry run."""
    blocks = re.split(r"\n(?=(?:local)?rule \S+:\n)", output)
    out = []
    for b in blocks:
        if b.startswith(f"rule {rule}:\n"):
            method = re.search(r"\n\s+wildcards: .*?\bmethod=([^,\n]+)", b)
            res = re.search(r"\n\s+resources: (.*)", b)
            if method and res:
                out.append((method.group(1), res.group(1)))
    return out


def assert_gpus_follow_the_methods(output: str, rule: str) -> None:
    """The registry's amortized methods hold a GPU; SVI, LB-CDI and UB-CDI stay on the CPU."""
    jobs = method_resources(output, rule)
    assert jobs, rule
    for method, res in jobs:
        assert ("gpu=1" in res) == (method in AMORTIZED), (rule, method, res)


@pytest.mark.parametrize("profile", PROFILES)
def test_profile_parses_and_plans_the_dag(profile, tmp_path):
    out = dry_run(profile, tmp_path / "results", "smoke")
    assert re.search(r"^total\s+\d+", out, re.M)


def test_deprecated_profile_key_selects_the_grid_with_one_warning(tmp_path):
    """`--config profile=smoke` (the experiment grid's old key) still works."""
    stderr: list[str] = []
    old = dry_run("default", tmp_path / "results", "smoke", key="profile", stderr=stderr)
    warning = "config key 'profile' is deprecated: use grid=smoke"
    assert stderr[0].count(warning) == 1
    new_stderr: list[str] = []
    new = dry_run("default", tmp_path / "results", "smoke", stderr=new_stderr)
    assert "deprecated" not in new_stderr[0]
    assert re.search(r"^total\s+\d+", old, re.M).group(0) == re.search(r"^total\s+\d+", new, re.M).group(0)


def test_gpu_profile_gives_every_training_job_one_gpu(tmp_path):
    out = dry_run("gpu", tmp_path / "results", "smoke")  # smoke: gpus_per_job 0 in the config
    for rule in ("search_chunk", "train_cell", "train_cell_corpus"):
        assert_gpus_follow_the_methods(out, rule)
    for rule in ("make_dataset", "ape_vi", "ape_nuts"):  # CPU-only: no GPU held
        assert all("gpu=1" not in r for r in job_resources(out, rule)), rule


def test_gpu_profile_covers_the_rules_of_experiments_with_own_seeds(tmp_path):
    """extended's fig4 has seeds of its own, so it trains under rule train_cell_fig4; fig5's datasets
    differ (dataset_seeds), so it trains under train_cell_fig5_2seeds / _5seeds (grid.seed_groups)."""
    out = dry_run("gpu", tmp_path / "results", "extended")
    for rule in ("train_cell_fig4", "train_cell_fig5_2seeds", "train_cell_fig5_5seeds"):
        assert_gpus_follow_the_methods(out, rule)
    assert "seed9/metrics.json" in out
    # 5 seeds on the D = 50 panels of Fig. 5, the grid's 2 at D = 500
    assert "runs/fig5/syn-random-1/avi/n30/seed4" in out and "runs/fig5/syn-random-4/avi/n30/seed2" not in out


def test_slurm_profile_takes_limits_from_the_cost_model(tmp_path):
    """Compute jobs get the cost model's limits (never the plugin's or a profile's default), CUDA
    jobs a GPU, Gibbs chains none; the full check is tests/workflow/test_check_cluster.py."""
    sys.path.insert(0, str(REPO / "workflow"))
    from noisyor_bench.experiments import costs

    out = dry_run("slurm", tmp_path / "results", "paper")
    train = job_resources(out, "train_cell")
    limits = [int(re.search(r"runtime=(\d+)", r).group(1)) for r in train]
    assert_gpus_follow_the_methods(out, "train_cell")
    assert min(limits) >= costs.MIN_RUNTIME_MIN and len(set(limits)) > 10  # per job, not one number per rule
    gibbs = [r for r in job_resources(out, "avipam_run") if "gpu=0" in r]
    assert gibbs and all("runtime=" in r for r in gibbs)
    assert all("runtime=" not in r for r in job_resources(out, "table4"))


def test_slurm_profile_documents_every_entry():
    """Every value in profiles/slurm has a comment line right above it; account and partition
    are left for the user (commented out, marked FILL IN)."""
    lines = (REPO / "profiles" / "slurm" / "config.yaml").read_text().splitlines()
    for i, line in enumerate(lines):
        if re.match(r"^\s*[\w-]+:\s*\S", line) and not line.lstrip().startswith("#"):
            above = lines[i - 1].strip()
            assert above.startswith("#"), f"line {i + 1} has no comment: {line!r}"
    settings = yaml.safe_load("\n".join(lines))
    assert settings["executor"] == "slurm"
    assert (
        "slurm_account" not in settings["default-resources"]
        and "runtime" not in settings["default-resources"]
    )
    assert "set-resources" not in settings  # limits come from the cost model, not per rule
    text = "\n".join(lines)
    assert re.search(r"FILL IN.*\n\s*# slurm_account:", text) and re.search(
        r"FILL IN.*\n\s*# slurm_partition:", text
    )
