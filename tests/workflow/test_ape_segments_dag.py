"""A training the cost model puts over ``ape.max_job_hours`` runs through Snakemake as segment
jobs (rule ape_train_segment, then ape_train from the last one's state): a real smoke-grid run
of one encoder with the bound set to split it, whose run equals the one-job command's, with each
segment's state removed once the next job has read it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import torch
import yaml
from conftest import REPO

from noisyor_bench.cli import main
from noisyor_bench.experiments.ape import costs as ape_costs
from noisyor_bench.experiments.ape.steps import step_settings
from noisyor_bench.experiments.config import load_config

STEM = "toybars_ape-model-aware_n20_seed0"
RUN = Path("runs/ape-train/toybars/ape-model-aware/n20/seed0")


def test_a_split_training_runs_as_segment_jobs_and_equals_one_job(tmp_path):
    cfg = load_config(REPO / "config" / "config.yaml", {"grid": "smoke"})
    seconds = ape_costs._whole_training_seconds(json.dumps(cfg, sort_keys=True, default=str))[STEM]
    hours = seconds / 3600 / 2.5  # the bound that makes the cost model split it in three
    cfg["grids"]["smoke"]["ape"]["max_job_hours"] = hours
    segments = ape_costs.segment_count(cfg, "toybars", "ape-model-aware", 0)
    assert segments == 3
    overlay = tmp_path / "overlay.yaml"
    overlay.write_text(yaml.safe_dump({"grids": {"smoke": {"ape": {"max_job_hours": hours}}}}))
    results = tmp_path / "results"
    cmd = [sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "Snakefile"), "--directory", str(tmp_path),
           "--configfile", str(REPO / "config" / "config.yaml"), str(overlay), "--cores", "1", "--config",
           "results_dir=results", "grid=smoke", "papers=[ape]", f"raw_data_dir={REPO.parent / 'shared' / 'data'}",
           "--", str(Path("results") / RUN / "metrics.json")]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(REPO / "workflow")}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-4000:]
    benchmarks = sorted(p.name for p in (results / "benchmarks" / "ape_train").glob(f"{STEM}*.tsv"))
    assert benchmarks == [f"{STEM}.tsv", f"{STEM}_segment0.tsv", f"{STEM}_segment1.tsv"]
    assert not list((results / "segments").rglob("*.pt*"))  # temporary: removed once read
    assert json.loads((results / RUN / "metrics.json").read_text())["segmented"] is True

    # the same training as one job, from the same dataset file
    section = cfg["grids"]["smoke"]["ape"]["datasets"]["toybars"]
    whole = tmp_path / "whole"
    args = ["ape-train", "--dataset", "toybars", "--dataset-file", str(results / "data" / "ape-toybars.npz"),
            "--method", "ape-model-aware", "--seed", "0", "--out-dir", str(whole),
            "--settings", json.dumps(step_settings(section, "ape-train", "ape-model-aware"))]  # fmt: skip
    assert main(args) == 0
    a = torch.load(whole / "encoder.pt", weights_only=True)
    b = torch.load(results / RUN / "encoder.pt", weights_only=True)
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    assert (whole / "curve.csv").read_text().splitlines()[1:] != []
    steps = [json.loads((d / "metrics.json").read_text())["steps"] for d in (whole, results / RUN)]
    assert steps[0] == steps[1]
