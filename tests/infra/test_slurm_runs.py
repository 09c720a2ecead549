"""The SLURM driver's check for jobs an earlier, dead driver left behind
(noisyor_bench.infra.slurm_runs), against a stand-in ``squeue`` that prints a fixed job list.
The real scheduler: tests/cluster/test_slurm_smoke.py (a killed driver resumed)."""

from __future__ import annotations

import stat
from pathlib import Path

from noisyor_bench.infra.slurm_runs import RECORD_FILE, guard, recorded_runs, run_id_from_logs

DEAD, OTHER, NEW = "dead-run-1", "other-run", "new-run-2"


def fake_squeue(tmp_path: Path, listing: str, status: int = 0) -> str:
    """An executable that records its arguments and prints ``listing`` (squeue's %i|%T|%j|%k)."""
    script = tmp_path / "squeue"
    (tmp_path / "listing").write_text(listing)
    script.write_text(
        "#!/bin/sh\n"
        f'echo "$@" >> "{tmp_path}/args"\n'
        f'cat "{tmp_path}/listing"\n'
        + (f'echo "squeue: error: Unable to contact slurm controller" >&2\nexit {status}\n' if status else "")
    )
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return str(script)


def snakemake_log(tmp_path: Path, run_id: str) -> str:
    log = tmp_path / "run.snakemake.log"
    log.write_text(f"Building DAG of jobs...\nSLURM run ID: {run_id}\nUsing shell: /usr/bin/bash\n")
    return str(log)


def test_the_first_run_records_its_id_and_asks_no_squeue(tmp_path):
    squeue = fake_squeue(tmp_path, "")
    assert guard(tmp_path, [snakemake_log(tmp_path, NEW)], squeue) == (None, None)
    assert recorded_runs(tmp_path) == [NEW]
    assert not (tmp_path / "args").exists()


def test_a_run_is_refused_while_a_recorded_run_has_a_job_queued(tmp_path):
    guard(tmp_path, snakemake_log(tmp_path, DEAD), fake_squeue(tmp_path, ""))
    squeue = fake_squeue(
        tmp_path,
        f"17|PENDING|{DEAD}|rule_train_cell_wildcards_fig3a_syn-pattern_acp_20\n"
        f"18|RUNNING|{OTHER}|rule_baselines_wildcards_syn-pattern\n",  # not a run of this record
    )
    error, warning = guard(tmp_path, snakemake_log(tmp_path, NEW), squeue)
    assert warning is None and error is not None
    assert error.startswith(f"1 SLURM job(s) submitted by an earlier Snakemake driver of {tmp_path}")
    assert f"  17 PENDING rule_train_cell_wildcards_fig3a_syn-pattern_acp_20 (run {DEAD})" in error
    assert OTHER not in error and " 18 " not in error
    assert f"squeue --name {DEAD}" in error and f"scancel --name {DEAD}" in error
    assert f"--name={DEAD}" in (tmp_path / "args").read_text()
    assert recorded_runs(tmp_path) == [DEAD]  # unchanged: the next try checks the same run


def test_once_the_jobs_have_ended_the_record_names_the_new_run_alone(tmp_path):
    guard(tmp_path, snakemake_log(tmp_path, DEAD), fake_squeue(tmp_path, ""))
    assert guard(tmp_path, snakemake_log(tmp_path, NEW), fake_squeue(tmp_path, "")) == (None, None)
    assert recorded_runs(tmp_path) == [NEW]
    line = (tmp_path / RECORD_FILE).read_text().splitlines()[1].split("\t")
    assert line[0] == NEW and line[1].isdigit() and len(line) == 5


def test_squeue_failing_warns_and_keeps_the_unchecked_runs(tmp_path):
    guard(tmp_path, snakemake_log(tmp_path, DEAD), fake_squeue(tmp_path, ""))
    error, warning = guard(tmp_path, snakemake_log(tmp_path, NEW), fake_squeue(tmp_path, "", status=1))
    assert error is None
    assert "could not ask squeue" in warning and "Unable to contact slurm controller" in warning
    assert recorded_runs(tmp_path) == [DEAD, NEW]


def test_run_id_from_the_log_files(tmp_path):
    log = snakemake_log(tmp_path, NEW)
    assert run_id_from_logs(log) == NEW
    assert run_id_from_logs([str(tmp_path / "missing.log"), log]) == NEW
    (tmp_path / "plain.log").write_text("Building DAG of jobs...\n")
    assert run_id_from_logs([str(tmp_path / "plain.log")]) is None
    assert run_id_from_logs(None) is None
    error, warning = guard(tmp_path, [str(tmp_path / "plain.log")], fake_squeue(tmp_path, ""))
    assert error is None and "no 'SLURM run ID'" in warning and recorded_runs(tmp_path) == []
