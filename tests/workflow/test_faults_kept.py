"""Fault catalogue: finished results kept until their replacement exists, under Snakemake too.

A rerun of a finished run stopped mid-fit, results dated ahead of the clock, a second invocation
(console, ``compare``, ``--report``) while another one writes the results directory: nothing
finished is deleted or overwritten, and each refusal is one line naming what to do
(docs/faults.md).  The Snakemake cases run the smoke grid on a toy dataset, one training job.
"""

from __future__ import annotations

import io
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from conftest import REPO
from faultworld import smoke_snakemake
from toydata import write_toy_dataset

from noisyor_bench.cli import main
from noisyor_bench.infra.hashing import sha256_file_memo
from noisyor_bench.infra.io import write_json_atomic
from noisyor_bench.infra.results_lock import LOCKED_LINE

RUN = "runs/fig5/syn-random-1/svi/n10/seed0"
RUN_FILES = ("metrics.json", "posterior_test.npz", "curve.csv")


def _toy_dataset(results: Path) -> None:
    """results/data/syn-random-1.npz as a toy dataset with the sidecar acp-make-dataset writes
    (a training job of seconds instead of minutes)."""
    npz = write_toy_dataset(results / "data" / "syn-random-1.npz")
    sidecar = {
        "provenance": {"outputs": [{"path": str(npz), "relpath": npz.name, "sha256": sha256_file_memo(npz)}]}
    }
    write_json_atomic(npz.with_suffix(".json"), sidecar)


def _holder(results: Path, cwd: Path) -> subprocess.Popen[str]:
    """Another invocation holding the results lock (as a running Snakemake does)."""
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import time; from noisyor_bench.infra.io import lock_results_dir; "
            f"f = lock_results_dir({str(results)!r}); print('locked', flush=True); time.sleep(120)",
        ],
        cwd=cwd,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO / "workflow")},
    )
    assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
    return holder


def _checkpoint_written(partial: Path) -> bool:
    return (
        any(p.name == "checkpoint.pt" and p.stat().st_size > 0 for p in partial.rglob("*"))
        if partial.is_dir()
        else False
    )


def _stop_rerun_after_first_checkpoint(tmp_path: Path, cmd: list[str], signum: int) -> int:
    """Run ``cmd`` (a Snakemake rerun of RUN) and send ``signum`` to it and its job once the job
    has written its first checkpoint; the exit status."""
    env = {**os.environ, "PYTHONPATH": str(REPO / "workflow")}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"  # the job's noisyor-bench
    partial = tmp_path / "results" / f"{RUN}.partial"
    shutil.rmtree(partial, ignore_errors=True)  # an earlier attempt's checkpoint is no sign
    with open(tmp_path / "rerun.log", "w") as log:
        proc = subprocess.Popen(
            cmd, cwd=tmp_path, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        )  # fmt: skip
        try:
            deadline = time.monotonic() + 300
            while not _checkpoint_written(partial):
                assert proc.poll() is None, (tmp_path / "rerun.log").read_text()[-3000:]
                assert time.monotonic() < deadline
                time.sleep(0.1)
            os.killpg(proc.pid, signum)  # Snakemake and its job
        finally:
            proc.wait(timeout=120)
    return proc.returncode


@pytest.mark.slow
def test_rerun_killed_after_its_first_checkpoint_keeps_the_finished_run(tmp_path: Path) -> None:
    """A forced rerun (longer budget) of a finished run, stopped after its first checkpoint by
    Ctrl-C, then by SIGKILL (Snakemake and its job killed: nothing restores anything): the finished
    run's files are byte-identical each time, and the next invocation plans the run again (an
    interrupted replacement is no result). Before, Snakemake removed them when the job started."""
    results = tmp_path / "results"
    _toy_dataset(results)
    target = f"results/{RUN}/metrics.json"
    built = smoke_snakemake(tmp_path, "results", None, target)
    assert built.returncode == 0, built.stderr[-3000:]
    finished = {f: (results / RUN / f).read_bytes() for f in RUN_FILES}
    longer = tmp_path / "longer.yaml"
    cfg = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    cfg["grids"]["smoke"]["acp"]["budget"].update(max_epochs=5000, patience=5000)
    longer.write_text(yaml.safe_dump(cfg))
    cmd = [
        sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "Snakefile"), "--directory", str(tmp_path),
        "--configfile", str(longer), "--cores", "1",
        "--config", "results_dir=results", "grid=smoke", "--force", "--", target,
    ]  # fmt: skip
    for signum in (signal.SIGINT, signal.SIGKILL):
        code = _stop_rerun_after_first_checkpoint(tmp_path, cmd, signum)
        assert code != 0, signum
        for name, content in finished.items():
            path = results / RUN / name
            assert path.is_file() and path.read_bytes() == content, (
                f"{signum!r}: finished output lost: {path}"
            )
        again = smoke_snakemake(tmp_path, "results", None, "--dry-run", target)
        assert again.returncode == 0, again.stderr[-3000:]
        assert "Nothing to be done" not in again.stdout + again.stderr, signum


@pytest.mark.slow
def test_consumer_failing_on_a_damaged_input_keeps_its_finished_table(tmp_path: Path) -> None:
    """A table job whose input is damaged (here every dataset's sidecar lacks what
    acp-dataset-table reads) fails; the finished table it would have replaced is byte-identical
    afterwards, and the next invocation plans the job again (before, Snakemake had deleted the
    finished recovery, ablation and aviPAM tables when their jobs started)."""
    from test_fault_catalogue import _fake_dataset

    results = tmp_path / "results"
    for name in ("syn-pattern", "multi-mnist", "syn-random-1", "syn-random-7"):  # the smoke grid's
        _fake_dataset(results, name)
    tables = results / "tables"
    tables.mkdir()
    finished = {
        tables / "datasets.csv": b"name,n_train\nsyn-pattern,100\n",
        tables / "datasets.md": b"| x |\n",
    }
    earlier = time.time() - 3600
    for path, content in finished.items():
        path.write_bytes(content)
        os.utime(path, (earlier, earlier))  # older than the datasets: the job is planned
    target = "results/tables/datasets.csv"
    done = smoke_snakemake(tmp_path, "results", None, "--allowed-rules=dataset_table", "--retries=0", target)
    assert done.returncode == 1, (done.stdout + done.stderr)[-3000:]
    log = (results / "logs" / "dataset_table" / "all.log").read_text()
    assert "is corrupt (not an acp-make-dataset sidecar)" in log, log
    for path, content in finished.items():
        assert path.read_bytes() == content, f"finished output lost or changed: {path}"
    again = smoke_snakemake(tmp_path, "results", None, "--allowed-rules=dataset_table", "--dry-run", target)
    assert again.returncode == 0 and "Nothing to be done" not in again.stdout + again.stderr


@pytest.mark.slow
def test_results_dated_ahead_of_the_clock_are_refused_before_anything_is_deleted(tmp_path: Path) -> None:
    """A results directory whose files are dated a day ahead (a copy from a machine with a wrong
    clock): refused when the DAG is built, naming the newest such file and how to reset the
    times; every file is kept byte-identical (Snakemake's clock check would fail every job after
    it ran and delete its fresh outputs)."""
    results = tmp_path / "results"
    _toy_dataset(results)
    run = results / RUN
    run.mkdir(parents=True)
    for name in RUN_FILES:
        (run / name).write_text(name)
    ahead = time.time() + 86400
    os.utime(run / "curve.csv", (ahead, ahead))
    kept = {p: p.read_bytes() for p in results.rglob("*") if p.is_file()}
    done = smoke_snakemake(tmp_path, "results", None, "--forcerun", f"results/{RUN}/metrics.json")
    assert done.returncode == 1, done.stderr[-3000:]
    assert (
        f"results/{RUN}/curve.csv is dated" in done.stderr
        and "hours ahead of this machine's clock" in done.stderr
    )
    assert "find 'results' -newermt now -exec touch" in done.stderr and "Traceback" not in done.stderr
    for path, content in kept.items():
        assert path.read_bytes() == content, f"{path} was removed or changed"
    assert not (results / "logs").exists()  # no job started


@pytest.mark.slow
def test_report_is_refused_while_another_invocation_writes_the_results(tmp_path: Path) -> None:
    results = tmp_path / "results"
    holder = _holder(results, tmp_path)
    try:
        done = smoke_snakemake(tmp_path, results, None, f"--report={tmp_path / 'report.zip'}")
    finally:
        holder.kill()
        holder.wait()
    assert done.returncode == 1
    assert "is being written by another invocation" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "report.zip").exists()


def test_compare_is_refused_while_another_invocation_writes_the_results(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    results = tmp_path / "results"
    (results / "tables").mkdir(parents=True)
    (results / "tables" / "comparison.csv").write_text("kept\n")
    holder = _holder(results, tmp_path)
    try:
        code = main(
            [
                "compare",
                "--results",
                str(results),
                "--reference",
                str(REPO / "reference" / "paper-synpattern"),
            ]
        )
    finally:
        holder.kill()
        holder.wait()
    err = capsys.readouterr().err
    assert code == 2, err
    assert "is being written by another invocation" in err and "Traceback" not in err
    assert (results / "tables" / "comparison.csv").read_text() == "kept\n"


def _console(
    log: Path, text: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> str:
    monkeypatch.setattr(sys, "stdin", io.StringIO(text))
    assert main(["console", "--log", str(log), "--repo", str(REPO)]) == 0
    return capsys.readouterr().out


def test_refused_second_invocation_leaves_the_first_log_intact(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The console of a second `make reproduce`, refused because the first one holds the results
    lock, never opens the first one's log (before, it truncated it: the first run's log then began
    with NUL bytes); it prints the refusal instead. A later invocation that takes the lock appends."""
    log = tmp_path / "results" / "logs" / "snakemake.log"
    log.parent.mkdir(parents=True)
    first = "Building DAG of jobs...\nfirst run's line\n"
    log.write_text(first)
    with open(log, "a") as writer:  # the first run still writing
        refusal = "Building DAG of jobs...\nError: results directory results is being written by another invocation\n"
        out = _console(log, refusal, monkeypatch, capsys)
        writer.write("first run goes on\n")
    assert log.read_bytes() == (first + "first run goes on\n").encode()
    assert "is being written by another invocation" in out and "not added to" in out
    later = f"Building DAG of jobs...\n{LOCKED_LINE}results (pid 1)\nlater line\n"
    _console(log, later, monkeypatch, capsys)
    assert log.read_text() == first + "first run goes on\n" + later
