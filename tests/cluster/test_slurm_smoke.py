"""The cluster path on a real SLURM: part of the smoke grid through ``profiles/slurm``.

``tests/cluster/slurm-up.sh`` starts a one-node SLURM on this machine (the Debian packages,
installed on first use; munged, slurmctld and slurmd of its own, configured in a temporary
folder). Snakemake then runs, with the shipped profile and the SLURM executor plugin, the smoke
grid's ACP and SVI runs of Fig. 3a and the dataset's baselines: 4 compute jobs (ACP's search
chunk and training, SVI's training, the baselines), each submitted with ``sbatch``, and 2 short
rules (the dataset, ACP's search selection) run by Snakemake itself. The same targets run locally
and the two results directories must hold the same results, apart from timings
(``tests/compare_results.py --ignore-timing``). Then a job cancelled with ``scancel`` must be
resubmitted with twice the time limit, a job asking for a GPU, which this cluster does not have,
must be refused at once, and ``slurm-down.sh --purge`` must stop every daemon ``slurm-up.sh``
started and remove the packages it installed (with SLURM's commands installed but no cluster,
``noisyor-bench check-cluster`` would fail asking ``sinfo``; the check-cluster tests running beside
this module on another worker pass ``--no-sinfo`` or captured output, so they see neither).

The cluster has no accounting database, so there is no ``sacct``: job states come from
``squeue --states=all`` (finished jobs stay listed for an hour) and the job completion log, and
the run uses ``--slurm-status-command squeue`` (docs/cluster.md, "When something goes wrong")
and a 5 s first status check instead of the plugin's 40 s.

Skipped, with the reason, where the daemons cannot be started: not root, no ``apt-get`` for the
missing packages, packages not installable, a SLURM of the machine's own; also with
``NOISYOR_SLURM_TEST=0``. It takes about 5 minutes on 2 cores, package installation included.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from types import SimpleNamespace

import pytest

pytestmark = pytest.mark.slow

HERE = Path(__file__).resolve().parent
UP, DOWN = HERE / "slurm-up.sh", HERE / "slurm-down.sh"
DAEMONS = ("munged", "slurmctld", "slurmd", "slurmstepd")
TARGETS = (
    "runs/fig3a/syn-pattern/acp/n20/seed0/metrics.json",
    "runs/fig3a/syn-pattern/svi/n0/seed0/metrics.json",
    "baselines/syn-pattern.json",
)
SUBMITTED = Counter({"search_chunk": 1, "train_cell": 1, "train_cell_once": 1, "baselines": 1})
LOCAL = Counter({"make_dataset": 1, "search_select": 1})


def daemons() -> set[tuple[str, int]]:
    """The running (not zombie) processes of the SLURM and munge daemons, as (name, pid)."""
    found = set()
    for name in DAEMONS:
        out = subprocess.run(["pgrep", "-x", name], capture_output=True, text=True).stdout
        for pid in map(int, out.split()):
            try:
                state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
            except (OSError, IndexError):
                continue
            if state != "Z":
                found.add((name, pid))
    return found


def started_pids(cluster_dir: Path) -> dict[str, int]:
    """The daemons slurm-up.sh started (its pids file, kept by the fixture before slurm-down.sh)."""
    return {
        name: int(pid)
        for name, pid in (line.split() for line in cluster_dir.joinpath("pids").read_text().splitlines())
    }


def down(cluster) -> subprocess.CompletedProcess:
    """slurm-down.sh, removing the packages slurm-up.sh installed: the machine is left as found (with
    SLURM's commands installed, check-cluster would ask a `sinfo` that has no cluster)."""
    return subprocess.run(
        ["bash", str(DOWN), "--purge", str(cluster.dir)], capture_output=True, text=True, timeout=300
    )


@pytest.fixture(scope="module")
def slurm(tmp_path_factory):
    """A one-node SLURM, up for this module: its folder, pids and the environment that reaches it."""
    from conftest import MIRROR

    if os.environ.get("NOISYOR_SLURM_TEST") == "0":
        pytest.skip("real SLURM: NOISYOR_SLURM_TEST=0")
    if MIRROR is None:
        pytest.skip("real SLURM: raw-data mirror not found")
    if os.geteuid() != 0:
        pytest.skip("real SLURM: cannot start SLURM: not root (the daemons run as root)")
    before = daemons()
    cluster_dir = tmp_path_factory.mktemp("slurm")
    start = time.monotonic()
    proc = subprocess.run(["bash", str(UP), str(cluster_dir)], capture_output=True, text=True, timeout=600)
    if proc.returncode == 2:
        reason = proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else "slurm-up.sh exit 2"
        pytest.skip(f"real SLURM: {reason}")
    if proc.returncode != 0:
        pytest.fail(f"slurm-up.sh failed (exit {proc.returncode}):\n{proc.stdout}\n{proc.stderr[-4000:]}")
    env = dict(os.environ)
    env["SLURM_CONF"] = str(cluster_dir / "slurm.conf")
    cluster = SimpleNamespace(
        dir=cluster_dir,
        env=env,
        before=before,
        pids=started_pids(cluster_dir),
        up_seconds=time.monotonic() - start,
        up_output=proc.stdout,
    )
    yield cluster
    if (cluster_dir / "pids").exists() or (cluster_dir / "installed").exists():  # the last test did not run
        down(cluster)


# The shipped profile, with the job status from squeue (no accounting database here) and a 5 s
# first status check instead of the plugin's 40 s.
SLURM_OPTIONS = (
    "--workflow-profile",
    "profiles/slurm",
    "--slurm-status-command",
    "squeue",
    "--slurm-init-seconds-before-status-checks",
    "5",
)


def snakemake_argv(results: Path, targets, *options: str) -> list[str]:
    """Snakemake on the smoke grid into ``results``, building ``targets`` (paths under it)."""
    return [
        str(Path(sys.executable).parent / "snakemake"),
        *options,
        "--config",
        "grid=smoke",
        f"results_dir={results}",
        "--",
        *(str(results / t) for t in targets),
    ]


def snakemake(checkout: Path, env: dict, results: Path, *options: str) -> subprocess.CompletedProcess:
    cmd = snakemake_argv(results, TARGETS, *options)
    return subprocess.run(cmd, cwd=checkout, env=env, capture_output=True, text=True, timeout=900)


def failed_logs(checkout: Path) -> str:
    logs = sorted((checkout / ".snakemake" / "slurm_logs").glob("**/*.log"))
    return "\n".join(f"--- {p}\n{p.read_text()[-1500:]}" for p in logs if "Error" in p.read_text())


@pytest.fixture(scope="module")
def runs(slurm, tmp_path_factory):
    """The targets run through profiles/slurm on the cluster, then locally, in a copy of the checkout
    (the plugin's logs under .snakemake/ stay out of the working tree)."""
    from checkout_copy import checkout_env, copy_checkout
    from conftest import MIRROR, REPO

    base = tmp_path_factory.mktemp("slurm-runs")
    checkout = base / "repo"
    copy_checkout(REPO, checkout)
    env = {**checkout_env(checkout), "SLURM_CONF": slurm.env["SLURM_CONF"], "NOISYOR_RAW_DATA": str(MIRROR)}

    start = time.monotonic()
    cluster = snakemake(
        checkout,
        env,
        base / "results-slurm",
        *SLURM_OPTIONS,
    )
    cluster_seconds = time.monotonic() - start
    output = cluster.stdout + cluster.stderr
    if cluster.returncode != 0:
        pytest.fail(
            f"the SLURM run failed (exit {cluster.returncode}):\n{output[-5000:]}\n{failed_logs(checkout)}"
        )

    start = time.monotonic()
    local_env = {k: v for k, v in env.items() if k != "SLURM_CONF"}
    local = snakemake(checkout, local_env, base / "results-local", "--cores", "2")
    local_seconds = time.monotonic() - start
    if local.returncode != 0:
        pytest.fail(
            f"the local run failed (exit {local.returncode}):\n{(local.stdout + local.stderr)[-5000:]}"
        )

    run_id = re.search(r"SLURM run ID: (\S+)", output).group(1)
    jobs = subprocess.run(
        ["squeue", "--states=all", "--noheader", "--name", run_id, "--format=%i|%T|%k"],
        env=slurm.env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    print(
        f"slurm-up.sh {slurm.up_seconds:.0f} s, SLURM run {cluster_seconds:.0f} s, "
        f"local run {local_seconds:.0f} s\nsqueue --states=all --name {run_id}:\n{jobs}"
    )
    return SimpleNamespace(
        checkout=checkout,
        env=env,
        output=output,
        run_id=run_id,
        jobs=[line.split("|", 2) for line in jobs.splitlines()],
        results=base / "results-slurm",
        local=base / "results-local",
    )


def test_every_compute_job_is_one_completed_slurm_job(runs, slurm):
    """One SLURM job per compute job, each COMPLETED (squeue and the job completion log), and the
    jobs Snakemake submitted are exactly those."""
    submitted = dict(
        re.findall(
            r"Job \d+ has been submitted with SLURM jobid (\d+) \(log: [^)]*/rule_(\w+?)/", runs.output
        )
    )
    rules = Counter(re.findall(r"^rule (\w+):$", runs.output, flags=re.M))
    assert rules == SUBMITTED
    assert Counter(submitted.values()) == SUBMITTED
    assert sorted(job_id for job_id, _, _ in runs.jobs) == sorted(submitted)
    assert [state for _, state, _ in runs.jobs] == ["COMPLETED"] * len(runs.jobs)
    comments = [comment for _, _, comment in runs.jobs]
    assert len(set(comments)) == len(comments)
    assert Counter(c.split("_wildcards_")[0].removeprefix("rule_") for c in comments) == SUBMITTED
    completion = (slurm.dir / "jobcomp.log").read_text()
    for job_id in submitted:
        assert re.search(rf"^JobId={job_id} .*JobState=COMPLETED ", completion, flags=re.M), job_id


def test_short_rules_ran_locally(runs):
    """The dataset and the search selection (localrules) ran in Snakemake's process, not as jobs."""
    local = Counter(re.findall(r"^localrule (\w+):$", runs.output, flags=re.M))
    assert local == LOCAL
    assert not set(local) & {c.split("_wildcards_")[0].removeprefix("rule_") for _, _, c in runs.jobs}


def test_the_results_equal_a_local_run(runs, capsys):
    """Every file of the SLURM run equals the local run's, timings apart (0 differing files)."""
    from compare_results import compare, report

    result = compare(runs.local, runs.results, timing=True)
    report(runs.local, runs.results, result)
    printed = capsys.readouterr().out
    print(printed)
    assert result["same"] > 0
    assert not (result["diffs"] or result["only_a"] or result["only_b"]), printed
    for target in TARGETS:
        assert (runs.results / target).is_file(), target


def test_a_cancelled_job_is_resubmitted_with_doubled_limits(runs, slurm, tmp_path):
    """SVI's training cancelled with scancel while it runs: the plugin (squeue status) sees it fail,
    Snakemake resubmits it once (the profile's retries: 1) with twice the time limit, and the run
    completes."""
    results = tmp_path / "results"
    log = tmp_path / "snakemake.log"
    cmd = snakemake_argv(results, TARGETS[1:2], *SLURM_OPTIONS)
    squeue = ["squeue", "--noheader", "--states=all", "--format=%i|%T|%l|%j"]
    with log.open("w") as out:
        proc = subprocess.Popen(cmd, cwd=runs.checkout, env=runs.env, stdout=out, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                found = re.search(r"SLURM run ID: (\S+)", log.read_text())
                listed = subprocess.run(squeue, env=slurm.env, capture_output=True, text=True).stdout
                running = [
                    line.split("|")[0]
                    for line in listed.splitlines()
                    if found and line.endswith(f"|{found.group(1)}") and "|RUNNING|" in line
                ]
                if running:
                    break
                time.sleep(1)
            assert running, f"no running job of the run after 120 s:\n{log.read_text()[-3000:]}"
            subprocess.run(["scancel", running[0]], env=slurm.env, check=True)
            returncode = proc.wait(timeout=300)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    output = log.read_text()
    assert returncode == 0, output[-4000:]
    run_id = found.group(1)
    listed = subprocess.run(squeue, env=slurm.env, capture_output=True, text=True, check=True).stdout
    jobs = sorted(
        (line.split("|")[:3] for line in listed.splitlines() if line.endswith(f"|{run_id}")),
        key=lambda job: int(job[0]),
    )
    print(f"squeue --states=all --name {run_id}: {jobs}")
    assert [state for _, state, _ in jobs] == ["CANCELLED", "COMPLETED"], jobs
    assert jobs[0][0] == running[0]

    def minutes(limit: str) -> int:  # squeue's %l below a day: MM:SS or H:MM:SS
        h, m, _ = ([0] + [int(x) for x in limit.split(":")])[-3:]
        return 60 * h + m

    assert minutes(jobs[1][2]) >= 2 * minutes(jobs[0][2]), jobs
    assert (results / TARGETS[1]).is_file()


def test_a_gpu_job_on_a_cluster_without_gpus_is_refused_at_once(runs, slurm, tmp_path):
    """SVI's training asking for a GPU: sbatch rejects it with SLURM's message and the run exits 1
    within two minutes, instead of a job pending for ever."""
    results = tmp_path / "results"
    start = time.monotonic()
    gpu = ("--retries", "0", "--set-resources", "train_cell_once:gpu=1")
    cmd = snakemake_argv(results, TARGETS[1:2], *SLURM_OPTIONS, *gpu)
    proc = subprocess.run(cmd, cwd=runs.checkout, env=runs.env, capture_output=True, text=True, timeout=300)
    seconds = time.monotonic() - start
    output = proc.stdout + proc.stderr
    assert proc.returncode == 1, output[-3000:]
    assert seconds < 120, f"{seconds:.0f} s"
    message = re.search(r"sbatch: error: .*", output)
    assert message and re.search(r"gres|generic resource|node configuration", message.group(0), re.I), output[
        -3000:
    ]
    print(f"refused after {seconds:.0f} s: {message.group(0)}")


def test_slurm_down_stops_every_daemon_slurm_up_started(slurm, runs):
    """slurm-down.sh stops munged, slurmctld and slurmd (and no job step is left); the daemons that
    ran before the module (none on a CI machine) are untouched, and the packages slurm-up.sh
    installed are removed again."""
    assert {name for name, _ in daemons()} >= {"munged", "slurmctld", "slurmd"}
    installed = (slurm.dir / "installed").read_text().split() if (slurm.dir / "installed").exists() else []
    proc = down(slurm)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    time.sleep(1)
    after = daemons()
    print(f"daemons before slurm-up.sh: {sorted(slurm.before)}; after slurm-down.sh: {sorted(after)}")
    assert after <= slurm.before, proc.stdout
    assert not {pid for _, pid in after} & set(slurm.pids.values())
    assert not os.path.lexists("/run/slurm/conf") or os.readlink("/run/slurm/conf") != str(slurm.dir)
    if installed:
        print(f"packages removed: {' '.join(installed)}")
        assert shutil.which("sinfo") is None and shutil.which("slurmctld") is None
