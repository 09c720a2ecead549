"""The smoke profile of the Snakemake DAG, end to end: every rule executes once.

This is the test that proves the workflow, not just the package: datasets, ingestion, the
random search, training of all five methods, aggregation, figures and claims, through the
same `noisyor-bench` commands a user runs.  It takes a few minutes on 2 cores.
"""

from __future__ import annotations

import csv
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow


def snakemake(repo: Path, results: Path, mirror: Path, *extra: str) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["NOISYOR_RAW_DATA"] = str(mirror)
    cmd = [
        str(Path(sys.executable).parent / "snakemake"),
        "--cores",
        "2",
        "--config",
        "profile=smoke",
        f"results_dir={results}",
        *extra,
    ]
    return subprocess.run(cmd, cwd=repo, env=env, capture_output=True, text=True, timeout=1800)


@pytest.fixture(scope="module")
def smoke_results(tmp_path_factory, request):
    from conftest import MIRROR, REPO

    if MIRROR is None:
        pytest.skip("raw-data mirror not found")
    results = tmp_path_factory.mktemp("smoke") / "results"
    proc = snakemake(REPO, results, MIRROR)
    if proc.returncode != 0:
        logs = sorted(results.glob("logs/**/*.log"))
        tails = "\n".join(f"--- {p}\n{p.read_text()[-1500:]}" for p in logs if "rror" in p.read_text())
        pytest.fail(f"smoke DAG failed:\n{proc.stderr[-4000:]}\n{tails}")
    return results


def test_every_artifact_is_built(smoke_results):
    expected = [
        "tables/datasets.csv",
        "figures/patterns_syn-pattern.png",
        "figures/patterns_multi-mnist.png",
        "tables/fig3a.md",
        "figures/fig3b.png",
        "figures/fig4_patterns.png",
        "figures/suppfig2_patterns.png",
        "figures/fig5.png",
        "tables/table4.md",
        "tables/claims.csv",
        "data/neurips-titles.npz",
        "data/reuters.npz",
        "pmi/cooccurrence.npz",
    ]
    missing = [p for p in expected if not (smoke_results / p).is_file() or (smoke_results / p).stat().st_size == 0]
    assert not missing


def test_runs_have_finite_metrics_and_the_public_files(smoke_results):
    from conftest import REPO

    from noisyor_bench import grid
    from noisyor_bench.config import load_config

    cfg = load_config(REPO / "config" / "config.yaml", {"profile": "smoke"})
    synthetic = set(grid.experiments(cfg))
    metrics_files = sorted(
        p for p in smoke_results.glob("runs/*/*/*/n*/seed*/metrics.json") if p.parts[-6] in synthetic
    )
    assert len(metrics_files) == len(grid.cells(cfg)) * len(grid.seeds(cfg))
    methods = set()
    for path in metrics_files:
        m = json.loads(path.read_text())
        methods.add(m["method"])
        assert math.isfinite(m["nelbo"]) and m["nelbo"] > 0, path
        assert m["test_evaluated"] is True
        for name in ("posterior_test.npz", "curve.csv"):
            assert (path.parent / name).is_file(), path.parent / name
    assert methods == {"avi", "acp", "svi", "lb-cdi", "ub-cdi"}


def test_search_never_touches_the_test_set(smoke_results):
    draws = sorted(smoke_results.glob("search/*/*/*/n*/draw*/metrics.json"))
    assert draws
    for path in draws:
        m = json.loads(path.read_text())
        assert m["test_evaluated"] is False and m.get("nelbo") is None
        assert not (path.parent / "posterior_test.npz").exists()
        assert math.isfinite(m["val_nelbo"])
    best = json.loads(next(smoke_results.glob("search/*/*/*/n*/best.json")).read_text())
    assert {"draw", "hparams", "val_nelbo"} <= set(best)


def test_claims_table_has_a_verdict_per_claim(smoke_results):
    with open(smoke_results / "tables" / "claims.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) >= 8
    assert {r["verdict"] for r in rows} <= {"reproduced", "not reproduced", "inconclusive"}


def test_a_finished_dag_has_nothing_left_to_do(smoke_results):
    """Params are deterministic: a second invocation finds every output up to date."""
    from conftest import MIRROR, REPO

    proc = snakemake(REPO, smoke_results, MIRROR, "--dry-run", "--quiet", "rules")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "Nothing to be done" in proc.stdout + proc.stderr
