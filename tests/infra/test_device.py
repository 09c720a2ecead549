"""GPU assignment on one machine: concurrent jobs claim distinct GPUs, released GPUs are reused.

No GPU is needed: the GPU count is injected and the claims are real ``flock``s taken by
separate processes, as concurrent Snakemake jobs would take them.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from noisyor_bench.infra import gpulock
from noisyor_bench.infra.device import pick_device

WORKER = """
import sys
from noisyor_bench.infra.device import pick_device
print(pick_device(sys.argv[1], gpu_count=int(sys.argv[2]), lock_dir=sys.argv[3]), flush=True)
sys.stdin.readline()  # hold the GPU until the test says go
"""


class Job:
    """A process that claims a GPU and holds it until :meth:`finish`."""

    def __init__(
        self, lock_dir: Path, count: int, requested: str = "cuda", env: dict[str, str] | None = None
    ):
        self.proc = subprocess.Popen(
            [sys.executable, "-c", WORKER, requested, str(count), str(lock_dir)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, **(env or {})},
        )
        line = self.proc.stdout.readline().strip()
        if not line:
            raise AssertionError(f"worker failed: {self.proc.stderr.read()}")
        self.device = line

    def finish(self) -> None:
        self.proc.communicate("go\n", timeout=30)
        assert self.proc.returncode == 0


@pytest.fixture
def lock_dir(tmp_path: Path):
    yield tmp_path / "locks"
    gpulock.release_gpu()


def test_concurrent_jobs_get_distinct_gpus_and_a_released_gpu_is_reused(lock_dir):
    a, b = Job(lock_dir, 3), Job(lock_dir, 3)
    assert {a.device, b.device} == {"cuda:0", "cuda:1"}
    c = Job(lock_dir, 3)
    assert c.device == "cuda:2"
    first = a if a.device == "cuda:0" else b
    first.finish()
    d = Job(lock_dir, 3)
    assert d.device == "cuda:0"
    for job in (a, b, c, d):
        if job is not first:
            job.finish()


def test_a_killed_job_frees_its_gpu(lock_dir):
    a, b = Job(lock_dir, 2), Job(lock_dir, 2)
    a.proc.send_signal(signal.SIGKILL)
    a.proc.wait(timeout=30)
    c = Job(lock_dir, 2)
    assert c.device == a.device
    b.finish()
    c.finish()


def test_when_every_gpu_is_claimed_a_job_waits_instead_of_sharing(lock_dir):
    a, b = Job(lock_dir, 2), Job(lock_dir, 2)
    with pytest.raises(TimeoutError, match="all 2 GPUs"):
        gpulock.claim_gpu(2, lock_dir, timeout=0.3, poll_seconds=0.05)
    b.finish()
    claim = gpulock.claim_gpu(2, lock_dir, timeout=5, poll_seconds=0.05)
    assert f"cuda:{claim.index}" == b.device
    a.finish()


def test_one_process_keeps_one_gpu_across_calls(lock_dir):
    first = pick_device("cuda", gpu_count=4, lock_dir=lock_dir)
    assert first == torch.device("cuda", 0)
    assert pick_device("cuda", gpu_count=4, lock_dir=lock_dir) == first
    assert gpulock.held_claim().lock_path.exists()


def test_lock_files_are_named_by_the_visible_device_ids(lock_dir):
    job = Job(lock_dir, 2, env={"CUDA_VISIBLE_DEVICES": "5,7"})
    assert job.device == "cuda:0"
    names = [p.name for p in lock_dir.iterdir()]
    assert len(names) == 1 and names[0].endswith("-gpu-5.lock")
    job.finish()


@pytest.mark.parametrize("requested, count", [("cuda", 1), ("cuda:1", 4), ("cpu", 4)])
def test_no_claim_without_a_choice_to_make(lock_dir, requested, count):
    """One GPU, an explicit index or the CPU: nothing to assign, no lock taken."""
    assert pick_device(requested, gpu_count=count, lock_dir=lock_dir) == torch.device(requested)
    assert gpulock.held_claim() is None
    assert not lock_dir.exists()


def test_auto_without_cuda_is_the_cpu(lock_dir):
    if torch.cuda.is_available():
        pytest.skip("CUDA present")
    assert pick_device("auto", gpu_count=4, lock_dir=lock_dir) == torch.device("cpu")
    assert gpulock.held_claim() is None


def test_default_lock_dir_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv(gpulock.LOCK_DIR_ENV, str(tmp_path / "x"))
    assert gpulock.default_lock_dir() == tmp_path / "x"
    monkeypatch.delenv(gpulock.LOCK_DIR_ENV)
    assert gpulock.default_lock_dir().name == "noisyor-bench-gpu-locks"
