"""The cluster path on a real SLURM: part of the smoke grid through ``profiles/slurm``.

``tests/cluster/slurm-up.sh`` starts a one-node SLURM on this machine (the Debian packages,
installed on first use; munged, slurmctld and slurmd of its own, configured in a temporary
folder). Snakemake then runs, with the shipped profile and the SLURM executor plugin, the smoke
grid's ACP and SVI runs of Fig. 3a and the dataset's baselines: 4 compute jobs (ACP's search
chunk and training, SVI's training, the baselines), each submitted with ``sbatch``, and 2 short
rules (the dataset, ACP's search selection) run by Snakemake itself. The same targets run locally
and the two results directories must hold the same results, apart from timings
(``tests/compare_results.py --ignore-timing``). Then a job cancelled with ``scancel`` must be
resubmitted with twice the time limit; a job killed by SLURM at its time limit (``TIMEOUT``: a
1-minute limit from the test-only floor ``NOISYOR_TEST_RUNTIME_FLOOR_MIN=1``, its processes
stopped) must be resubmitted with twice the limit and complete; a driver killed with SIGKILL must
be resumed by the operator's steps of docs/cluster.md (``--unlock``; the rerun refused while a job
of the dead driver is still queued; then every compute job COMPLETED once over both runs, the
results equal to the local run's); ``check-cluster`` against this cluster's ``sinfo`` (partition
``day``, MaxTime 24 h) must pass the smoke and quick grids in CPU-only mode, find no paper-grid
job whose limit exceeds 24 h and name those whose retry would; a seed's training split into
segment jobs (a segment, then the training job from its state) must equal one local job; a job
asking for a GPU, which this cluster does not have, must be refused at once; and ``slurm-down.sh --purge`` must stop every
daemon ``slurm-up.sh`` started and remove the packages it installed (with SLURM's commands installed but no cluster,
``noisyor-bench check-cluster`` would fail asking ``sinfo``; the check-cluster tests running beside
this module on another worker pass ``--no-sinfo`` or captured output, so they see neither).

The cluster has no accounting database, so there is no ``sacct``: job states come from
``squeue --states=all`` (finished jobs stay listed for an hour) and the job completion log, and
the run uses ``--slurm-status-command squeue`` (docs/cluster.md, "When something goes wrong")
and a 5 s first status check instead of the plugin's 40 s.

Skipped, with the reason, where the daemons cannot be started: not root, no ``apt-get`` for the
missing packages, packages not installable, a SLURM of the machine's own; also with
``NOISYOR_SLURM_TEST=0``. It takes about 9 minutes on 2 cores, package installation included (the
time-out test's job runs down its limit while the check-cluster and cancelled-job tests run).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
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


def squeue_jobs(env: dict, run_id: str) -> list[SimpleNamespace]:
    """Every job of one run that SLURM lists (finished ones too: MinJobAge is an hour), by job ID."""
    out = subprocess.run(
        ["squeue", "--noheader", "--states=all", f"--name={run_id}", "--format=%i|%T|%l|%M|%k"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    jobs = [
        SimpleNamespace(**dict(zip(("id", "state", "limit", "elapsed", "comment"), line.split("|", 4))))
        for line in out.splitlines()
    ]
    return sorted(jobs, key=lambda job: int(job.id))


def scontrol_time_limit(env: dict, job_id: str) -> str:
    """TimeLimit of ``scontrol show job`` (the limit SLURM enforces)."""
    out = subprocess.run(
        ["scontrol", "show", "job", job_id], env=env, capture_output=True, text=True, check=True
    ).stdout
    return re.search(r"\bTimeLimit=(\S+)", out).group(1)


def minutes(limit: str) -> float:
    from noisyor_bench.infra.slurm_partitions import parse_time_limit

    return parse_time_limit(limit)


def job_table(jobs) -> str:
    return "\n".join(
        f"  {j.id:>4} {j.state:<10} limit {j.limit:>8} ran {j.elapsed:>8} {j.comment}" for j in jobs
    )


def run_id_in(log: Path) -> str | None:
    found = re.search(r"SLURM run ID: (\S+)", log.read_text())
    return found.group(1) if found else None


def wait_until(what: str, seconds: float, probe, log: Path | None = None):
    """Poll ``probe`` every second until it returns something true; fail naming ``what``."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = probe()
        if value:
            return value
        time.sleep(1)
    tail = f":\n{log.read_text()[-3000:]}" if log else ""
    pytest.fail(f"{what}: not after {seconds:.0f} s{tail}")


def freeze(env: dict, job_id: str) -> list[int]:
    """SIGSTOP every process of a running job (``scontrol listpids``), three passes, so that a child
    started while the first pass ran is stopped too; the job then makes no progress until SLURM
    kills it at its time limit. Returns the pids, each checked stopped."""
    pids: set[int] = set()
    for _ in range(3):
        out = subprocess.run(["scontrol", "listpids", job_id], env=env, capture_output=True, text=True).stdout
        for pid in (int(line.split()[0]) for line in out.splitlines()[1:] if line.split()):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGSTOP)
                pids.add(pid)
        time.sleep(0.5)
    states = {}
    for pid in pids:
        with contextlib.suppress(OSError):
            states[pid] = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    assert pids and set(states.values()) <= {"T", "t"}, f"job {job_id}: processes not all stopped: {states}"
    return sorted(pids)


@pytest.fixture(scope="module")
def timed_out(runs, slurm, tmp_path_factory):
    """SVI's training started through profiles/slurm with a 1-minute limit (the test-only floor
    NOISYOR_TEST_RUNTIME_FLOOR_MIN=1; its estimate is seconds) and, once it runs, its processes
    stopped, so that SLURM kills it at the limit. Returned as soon as the job is stopped: the
    check-cluster test requests it first, and its dry runs and the cancelled-job test (one job, on
    the node's other CPU; another results directory) take their two minutes while SLURM's clock
    runs down (about 90 s) and the plugin's status checks, further apart each time, notice; the
    time-out test then waits for the driver."""
    from noisyor_bench.experiments.costs import RUNTIME_FLOOR_ENV

    tmp = tmp_path_factory.mktemp("timeout")
    results, log = tmp / "results", tmp / "snakemake.log"
    env = {**runs.env, RUNTIME_FLOOR_ENV: "1"}
    cmd = snakemake_argv(results, TARGETS[1:2], *SLURM_OPTIONS)
    out = log.open("w")
    proc = subprocess.Popen(cmd, cwd=runs.checkout, env=env, stdout=out, stderr=subprocess.STDOUT)
    try:

        def running():
            run_id = run_id_in(log)
            jobs = squeue_jobs(slurm.env, run_id) if run_id else []
            return next(((run_id, j.id) for j in jobs if j.state == "RUNNING"), None)

        run_id, frozen = wait_until("a running job of the run", 180, running, log)
        pids = freeze(slurm.env, frozen)
        yield SimpleNamespace(proc=proc, log=log, results=results, run_id=run_id, frozen=frozen, pids=pids)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        out.close()


def test_check_cluster_against_the_live_partitions(slurm, timed_out, tmp_path):
    """check-cluster asking this cluster's sinfo, with the profile's partition filled in as day
    (MaxTime 24 h, no GPUs): the smoke and quick grids pass in CPU-only mode; the paper grid with
    gpus_per_job 0 has no job whose limit exceeds 24 h, its note names those whose retry would
    (expected sets computed here from the cost model), and it fails for exactly the jobs above
    the node's memory and those no
    measurement of their method family prices. Run in this checkout, as the other check-cluster tests: the copy of the
    ``runs`` fixture lacks reference/, whose measured runs size the paper grid's search chunks.
    ``timed_out`` only starts the time-out test's job, whose limit runs down meanwhile."""
    from conftest import MIRROR, REPO

    from noisyor_bench.experiments import costs, papers
    from noisyor_bench.experiments.config import load_config
    from noisyor_bench.infra.slurm_partitions import SINFO_COMMAND, parse_sinfo

    profile = tmp_path / "slurm-day"
    profile.mkdir()
    shipped = (REPO / "profiles" / "slurm" / "config.yaml").read_text()
    assert '  # slurm_partition: "cpu"\n' in shipped
    (profile / "config.yaml").write_text(
        shipped.replace('  # slurm_partition: "cpu"\n', '  slurm_partition: "day"\n')
    )
    sinfo = subprocess.run(SINFO_COMMAND, env=slurm.env, capture_output=True, text=True, check=True).stdout
    day = parse_sinfo(sinfo)["day"]
    assert day.max_minutes == 24 * 60 and not day.has_gpus, sinfo
    env = {**slurm.env, "NOISYOR_RAW_DATA": str(MIRROR)}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env.pop(costs.RUNTIME_FLOOR_ENV, None)

    def check_cluster(*config: str) -> subprocess.CompletedProcess:
        cmd = [sys.executable, "-m", "noisyor_bench", "check-cluster", "--profile", str(profile)]
        cmd += ["--max-problems", "1000", "--config", *config]
        return subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=600)

    print(f"sinfo: {sinfo.strip()}")
    partitions_line = f"day (MaxTime 24.0 h, no GPUs, {day.largest_memory()} MB)"
    for grid in ("smoke", "quick"):
        proc = check_cluster(f"grid={grid}")
        print(f"--- check-cluster --config grid={grid}\n{proc.stdout}")
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
        assert "CPU-only mode (the grid's gpus_per_job is 0)" in proc.stdout
        assert "partitions (sinfo): " in proc.stdout and partitions_line in proc.stdout
        assert "check-cluster: OK" in proc.stdout

    proc = check_cluster("grid=paper", 'grids={"paper": {"gpus_per_job": 0}}')
    print(f"--- check-cluster --config grid=paper (gpus_per_job 0)\n{proc.stdout}")
    assert "CPU-only mode (the grid's gpus_per_job is 0)" in proc.stdout and partitions_line in proc.stdout
    cfg = load_config(REPO / "config" / "config.yaml", {"grid": "paper"})
    selected = [p.id for p in papers.selected(cfg["papers"])]
    estimates = costs.estimate_jobs(cfg, costs.load_references(REPO, cfg.get("job_seconds")), selected)
    unmeasured = {f"{e.rule} {e.job}" for e in estimates if not e.measured}  # refused: no limit to trust
    limit = {f"{e.rule} {e.job}": costs.runtime_minutes(e.cpu_seconds) for e in estimates if e.measured}
    memory = {f"{e.rule} {e.job}": costs.mem_mb(e.mem_mb) for e in estimates}
    over = {name for name, m in limit.items() if m > 24 * 60}
    retry_over = {name for name, m in limit.items() if m <= 24 * 60 < 2 * m}
    too_big = {name for name, mb in memory.items() if mb > day.largest_memory()}
    # search chunks, per-seed trainings and training segments keep every job under a day
    assert not over, sorted(over)
    assert retry_over, "the paper grid has no job near 24 h: this test needs another partition"
    assert proc.returncode == (1 if too_big or unmeasured or over else 0), (
        proc.stdout[-3000:] + proc.stderr[-2000:]
    )
    out = proc.stdout
    named = set(
        re.findall(r"^  \S+ (\S+): runtime limit [\d.]+ h > partition day MaxTime 24\.0 h", out, re.M)
    )  # by job: per-seed trainings are rule train_cell_seed in the DAG
    assert named == {name.split(" ", 1)[1] for name in over}, (
        f"named {sorted(named)}, expected {sorted(over)}"
    )
    note = re.search(r"^note: (\d+) job\(s\) whose retry \(time limit doubled\).*?: (.*)$", out, re.M)
    assert note, out[-3000:]
    named_retry = {
        name.split(" ", 1)[1] for name in note.group(2).split(", ")
    }  # per-seed jobs: train_cell_seed
    assert named_retry == {name.split(" ", 1)[1] for name in retry_over}, note.group(0)
    assert int(note.group(1)) == len(retry_over), note.group(0)
    named_mem = set(re.findall(r"^  (\S+ \S+): mem_mb \d+ > the largest node of partition day", out, re.M))
    # by job: the DAG's rule (ape_train_segment, train_cell_seed) is not the cost model's benchmark rule
    assert {n.split(" ", 1)[1] for n in named_mem} == {n.split(" ", 1)[1] for n in too_big}, (
        f"named {sorted(named_mem)}, expected {sorted(too_big)}"
    )
    named_unmeasured = set(re.findall(r"^  (\S+ \S+): not measured \(", out, re.M))
    assert named_unmeasured == unmeasured, f"named {sorted(named_unmeasured)}, expected {sorted(unmeasured)}"
    failed = re.search(r"check-cluster: FAILED, (\d+) problem", out)
    assert (int(failed.group(1)) if failed else 0) == len(too_big) + len(unmeasured) + len(over), out[-3000:]
    assert "has no GPU" not in out and "requests a GPU" not in out


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


def test_a_job_killed_at_its_time_limit_is_retried_with_twice_the_limit(timed_out, slurm):
    """The stopped job (fixture timed_out): SLURM kills it at its limit (TIMEOUT), the plugin
    reports the failure, Snakemake resubmits it once (retries: 1) with the cost model's second
    attempt, twice the limit (squeue and scontrol), and the run completes."""
    from noisyor_bench.experiments.costs import RUNTIME_FLOOR_ENV

    run = timed_out
    try:
        returncode = run.proc.wait(timeout=480)
    except subprocess.TimeoutExpired:
        pytest.fail(f"the run did not end within 8 min:\n{run.log.read_text()[-4000:]}")
    output = run.log.read_text()
    jobs = squeue_jobs(slurm.env, run.run_id)
    limits = {j.id: scontrol_time_limit(slurm.env, j.id) for j in jobs}
    print(
        f"job {run.frozen} stopped (pids {run.pids}); squeue --states=all --name {run.run_id}:\n"
        f"{job_table(jobs)}\nscontrol show job TimeLimit: {limits}"
    )
    assert returncode == 0, output[-4000:]
    assert [j.state for j in jobs] == ["TIMEOUT", "COMPLETED"], job_table(jobs)
    first, retry = jobs
    assert first.id == run.frozen
    assert minutes(first.limit) == minutes(limits[first.id]) == 1, job_table(jobs)
    assert minutes(first.elapsed) >= 1, f"killed before its limit: {job_table(jobs)}"
    assert minutes(retry.limit) == minutes(limits[retry.id]) >= 2 * minutes(first.limit), job_table(jobs)
    assert first.comment == retry.comment
    assert f"SLURM-job '{run.frozen}' failed, SLURM status is: 'TIMEOUT'" in output, output[-4000:]
    assert f"{RUNTIME_FLOOR_ENV}=1: every compute job's wall-time floor is 1 min" in output
    assert (run.results / TARGETS[1]).is_file()


def test_a_killed_driver_is_resumed_without_running_a_job_twice(runs, slurm, tmp_path):
    """The Snakemake driver SIGKILLed (its whole process group) once one job has completed and
    another is still queued or running, then the operator's steps of docs/cluster.md: the rerun
    stops at Snakemake's lock (--unlock), then at the driver's own check while a job of the dead
    driver has not ended (held or suspended here, so that it is still there), then, once it has
    ended, completes. Every compute job COMPLETED exactly once in SLURM's list over both runs (none
    submitted again, none lost), and the results equal the local run's."""
    from compare_results import compare, report

    results, log = tmp_path / "results", tmp_path / "driver.log"
    cmd = snakemake_argv(results, TARGETS, *SLURM_OPTIONS)
    with log.open("w") as out:
        proc = subprocess.Popen(
            cmd, cwd=runs.checkout, env=runs.env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
        try:

            def paused():
                """A live job of the run held (PENDING) or suspended (RUNNING) once another COMPLETED."""
                run_id = run_id_in(log)
                jobs = squeue_jobs(slurm.env, run_id) if run_id else []
                if not any(j.state == "COMPLETED" for j in jobs):
                    return None
                for job in jobs:
                    verb = {"PENDING": "hold", "RUNNING": "suspend"}.get(job.state)
                    if verb and subprocess.run(["scontrol", verb, job.id], env=slurm.env).returncode == 0:
                        return run_id, job.id, verb
                return None

            run_id, kept, verb = wait_until("a completed and a paused job of the driver", 300, paused, log)
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()

    def group_gone() -> bool:
        try:
            os.killpg(proc.pid, 0)
        except ProcessLookupError:
            return True
        return False

    wait_until(f"the driver's process group {proc.pid} gone after SIGKILL", 30, group_gone)
    at_kill = squeue_jobs(slurm.env, run_id)
    print(f"driver killed; its jobs (job {kept}: scontrol {verb}):\n{job_table(at_kill)}")

    def rerun(*extra: str) -> subprocess.CompletedProcess:
        argv = snakemake_argv(results, TARGETS, *SLURM_OPTIONS, *extra)
        return subprocess.run(
            argv, cwd=runs.checkout, env=runs.env, capture_output=True, text=True, timeout=600
        )

    locked = rerun()
    assert locked.returncode == 1 and "--unlock" in locked.stderr + locked.stdout, locked.stderr[-3000:]
    unlock = rerun("--unlock")
    assert unlock.returncode == 0, unlock.stderr[-3000:]
    refused = rerun()
    said = refused.stdout + refused.stderr
    assert refused.returncode == 1, said[-4000:]
    assert re.search(rf"SLURM job\(s\) submitted by an earlier Snakemake driver .*{run_id}", said), said[
        -4000:
    ]
    assert re.search(rf"^  {kept} (PENDING|SUSPENDED) ", said, re.M), said[-4000:]
    assert "has been submitted with SLURM jobid" not in said
    print(re.search(r"Error: \d+ SLURM job.*?then rerun[^\n]*", said, re.S).group(0))

    subprocess.run(["scontrol", "release" if verb == "hold" else "resume", kept], env=slurm.env, check=True)
    live = ["squeue", "--noheader", f"--name={run_id}", "--format=%i"]
    wait_until(
        f"the dead driver's jobs ended (squeue --name {run_id})",
        300,
        lambda: (
            not subprocess.run(live, env=slurm.env, capture_output=True, text=True, check=True).stdout.strip()
        ),
    )
    final = rerun()
    assert final.returncode == 0, (final.stdout + final.stderr)[-5000:] + failed_logs(runs.checkout)
    rerun_id = re.search(r"SLURM run ID: (\S+)", final.stdout + final.stderr).group(1)
    dead, resumed = squeue_jobs(slurm.env, run_id), squeue_jobs(slurm.env, rerun_id)
    print(f"dead driver {run_id}:\n{job_table(dead)}\nrerun {rerun_id}:\n{job_table(resumed)}")

    def rule_of(job) -> str:
        return job.comment.split("_wildcards_")[0].removeprefix("rule_")

    both = dead + resumed
    assert [j.state for j in both] == ["COMPLETED"] * len(both), job_table(both)
    completed = Counter(j.comment for j in both)
    assert max(completed.values()) == 1, f"a job COMPLETED twice: {completed}"
    assert Counter(rule_of(j) for j in both) == SUBMITTED, job_table(both)
    assert resumed and not {j.comment for j in resumed} & {j.comment for j in dead}

    result = compare(runs.local, results, timing=True)
    report(runs.local, results, result)
    assert result["same"] > 0 and not (result["diffs"] or result["only_a"] or result["only_b"]), result


def test_a_seed_trained_as_segment_jobs_on_slurm_equals_one_local_job(runs, slurm, tmp_path):
    """The cell of ``segmented_grid``: each seed's training as two SLURM jobs (train_segment, then
    train_cell_seed from its state, handed over on the shared file system and removed once read)
    writes the metrics the cell's one local job writes, timings, provenance and the resume flag
    apart."""
    from segmented_grid import CELL, NOT_COMPARED, ONE_JOB, SEGMENTED

    targets = [f"runs/{CELL}/seed{s}/metrics.json" for s in (0, 1)]
    metrics = {}
    for name, overlay, options in (("slurm", SEGMENTED, SLURM_OPTIONS), ("local", ONE_JOB, ("--cores", "2"))):
        extra = tmp_path / f"{name}.yaml"
        extra.write_text(overlay)
        results = tmp_path / f"results-{name}"
        env = runs.env if name == "slurm" else {k: v for k, v in runs.env.items() if k != "SLURM_CONF"}
        configs = ("--configfile", str(runs.checkout / "config" / "config.yaml"), str(extra))
        cmd = snakemake_argv(results, targets, *options, *configs)
        proc = subprocess.run(cmd, cwd=runs.checkout, env=env, capture_output=True, text=True, timeout=900)
        output = proc.stdout + proc.stderr
        assert proc.returncode == 0, output[-5000:] + failed_logs(runs.checkout)
        metrics[name] = [json.loads((results / t).read_text()) for t in targets]
        if name == "slurm":
            submitted = Counter(
                re.findall(
                    r"Job \d+ has been submitted with SLURM jobid \d+ \(log: [^)]*/rule_(\w+?)/", output
                )
            )
            assert submitted == Counter({"train_segment": 2, "train_cell_seed": 2}), output[-3000:]
            run_id = run_id_in_output(output)
            states = [job.state for job in squeue_jobs(slurm.env, run_id)]
            assert states == ["COMPLETED"] * 4, states
            assert not list((results / "segments").rglob("*.pt*"))  # temporary: removed once read
    for split, whole in zip(metrics["slurm"], metrics["local"], strict=True):
        assert split["resumed"] and not whole["resumed"]
        assert {k: v for k, v in split.items() if k not in NOT_COMPARED} == {
            k: v for k, v in whole.items() if k not in NOT_COMPARED
        }


def run_id_in_output(output: str) -> str:
    found = re.search(r"SLURM run ID: (\S+)", output)
    assert found, output[-3000:]
    return found.group(1)


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
