"""The cluster path without a cluster: Snakemake's ``cluster-generic`` executor over the smoke grid.

Every job goes through a submit command, as on SLURM: Snakemake writes a jobscript and hands
it to the command, which here records the submission (counter, rule, wildcards, jobscript) in a
log, starts the jobscript in the background like a scheduler would and prints a fake job id.
Completion is detected from the marker files the jobscript touches on a shared file system
(cluster-generic needs no status command then).  This proves that every job runs from its
jobscript alone, in a fresh process, with nothing shared with the submitting Snakemake but
the file system and the environment.

To keep CI on 2 cores well under 30 minutes, the DAG is a subset of the smoke grid: the
targets ``tables/fig3a.md`` and ``figures/fig3b.png`` (paper Fig. 3, 10 jobs: the dataset, the
random searches, training of all five methods, a table and a figure).  Each job starts its own
Snakemake process, so this takes about as long as the full smoke DAG's share of those jobs plus
a few seconds per job.  The workflow runs in a copy of the repository, so the executor's
jobscripts and markers (under .snakemake/) stay out of the working tree.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from checkout_copy import checkout_env

pytestmark = pytest.mark.slow

SUBMIT = r"""#!/usr/bin/env bash
# fake_submit.sh LOG RULE WILDCARDS JOBSCRIPT: record the submission, run the jobscript in the
# background like a batch scheduler, print a job id.
set -euo pipefail
log=$1 rule=$2 wildcards=$3 jobscript=$4
n=$(flock "$log.lock" bash -c 'n=$(( $(cat "$0" 2>/dev/null | wc -l) + 1 )); echo "$n $1 $2 $(basename "$3")" >> "$0"; echo $n' \
    "$log" "$rule" "$wildcards" "$jobscript")
nohup bash "$jobscript" > "$log.job$n.out" 2>&1 < /dev/null &
echo "fake-$n"
"""

IGNORE = shutil.ignore_patterns(
    ".git", ".venv", "results", ".snakemake", "__pycache__", "*.egg-info", ".pytest_cache"
)


@pytest.fixture(scope="module")
def cluster_run(tmp_path_factory):
    from conftest import MIRROR, REPO

    if MIRROR is None:
        pytest.skip("raw-data mirror not found")
    base = tmp_path_factory.mktemp("cluster")
    work = base / "repo"
    shutil.copytree(REPO, work, ignore=IGNORE, symlinks=True)
    submit = base / "fake_submit.sh"
    submit.write_text(SUBMIT)
    log = base / "submissions.log"
    results = base / "results"
    env = checkout_env(work)  # the copy's package: a job refuses another checkout's
    env["NOISYOR_RAW_DATA"] = str(MIRROR)
    cmd = [
        str(Path(sys.executable).parent / "snakemake"),
        "--executor",
        "cluster-generic",
        "--cluster-generic-submit-cmd",
        f"bash {submit} {log} {{rule}} '{{wildcards}}'",
        "--jobs",
        "2",
        "--latency-wait",
        "10",
        "--config",
        "grid=smoke",
        f"results_dir={results}",
        "--",
        str(results / "tables" / "fig3a.md"),
        str(results / "figures" / "fig3b.png"),
    ]
    proc = subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True, timeout=1800)
    if proc.returncode != 0:
        outs = "\n".join(
            f"--- {p}\n{p.read_text()[-1500:]}" for p in sorted(base.glob("submissions.log.job*.out"))
        )
        pytest.fail(f"cluster DAG failed:\n{proc.stderr[-4000:]}\n{outs}")
    submissions = [line.split(" ", 3) for line in log.read_text().splitlines()]
    return results, submissions, proc.stdout + proc.stderr


def test_the_dag_finishes_with_its_outputs(cluster_run):
    results, _, _ = cluster_run
    for rel in ("tables/fig3a.md", "tables/fig3a.csv", "figures/fig3b.png"):
        path = results / rel
        assert path.is_file() and path.stat().st_size > 0, rel


def test_every_job_went_through_the_submit_command(cluster_run):
    """Each search and training job of Fig. 3a's grid was submitted once; the short rules (dataset,
    search selection, table, figure) ran locally (localrules from the cost model)."""
    from conftest import REPO

    from noisyor_bench.experiments.acp import grid
    from noisyor_bench.experiments.config import load_config

    results, submissions, output = cluster_run
    counters = [int(n) for n, *_ in submissions]
    assert counters == list(range(1, len(submissions) + 1))
    submitted = [(rule, wildcards) for _, rule, wildcards, _ in submissions]
    assert len(submitted) == len(set(submitted)) == 8  # baselines, 2 search chunks, 5 trainings
    local = {"make_dataset", "search_select", "table_fig3a", "figure_fig3b"}
    assert not local & {rule for rule, _ in submitted}

    cfg = load_config(REPO / "config" / "config.yaml", {"grid": "smoke"})
    cells = grid.cells(cfg, "fig3a")

    def wildcards(text: str) -> frozenset[tuple[str, str]]:
        return frozenset(tuple(item.split("=", 1)) for item in text.split(",") if item)

    def cell_wildcards(c: grid.Cell) -> frozenset[tuple[str, str]]:
        return wildcards(f"experiment={c.experiment},dataset={c.dataset},method={c.method},n={c.n_train}")

    # train_cell_once: the deterministic cells (SVI/LB-CDI/UB-CDI in inference mode), one seed
    trained = [wildcards(w) for rule, w in submitted if rule in ("train_cell", "train_cell_once")]
    assert set(trained) == {cell_wildcards(c) for c in cells} and len(trained) == len(cells)
    searched = [wildcards(w) - {("chunk", "0")} for rule, w in submitted if rule == "search_chunk"]
    assert set(searched) == {cell_wildcards(c) for c in cells if grid.n_draws(cfg, c) > 1}
    for c in cells:
        assert (results / "runs" / c.path / "seed0" / "metrics.json").is_file(), c.path
    assert output.count("with external jobid 'fake-") == len(submissions)
