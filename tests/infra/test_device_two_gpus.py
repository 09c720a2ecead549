"""Every paper's CUDA-capable job goes through the one GPU picker: on a fake two-GPU
machine (CUDA unavailable, the lock's GPU count injected, a private lock directory), two
concurrent jobs of each paper get cuda:0 and cuda:1, and a third waits until one of them ends.

Each job is a separate process calling the device function its command calls, as concurrent
Snakemake jobs on one node would; the claims are real ``flock``s.
"""

from __future__ import annotations

import os
import select
import subprocess
import sys
from pathlib import Path

import pytest

from noisyor_bench.infra import device as infra_device

# The device call of each paper's training command, as the command makes it, for `--device cuda`
# (the paper grid's `auto` on a CUDA machine); without CUDA, `auto` is the CPU whatever the count.
WORKER = """
import sys
paper, count, lock_dir = sys.argv[1], int(sys.argv[2]), sys.argv[3]
fake = {"gpu_count": count, "lock_dir": lock_dir}
if paper == "acp":  # acp-train, acp-train-cell, acp-search: experiments.acp.runs
    from noisyor_bench.experiments.acp.runs import resolve_device
    dev = resolve_device("cuda", **fake)
elif paper == "ape":  # APE encoder training: experiments.ape.train.train_run
    from noisyor_bench.experiments.ape.train import resolve_device
    dev = resolve_device("cuda", **fake)
else:  # aviPAM amortized runs: experiments.avipam.methods.fit_avipam_cell
    from noisyor_bench.experiments.avipam.methods import avipam_device
    dev = avipam_device({"device": "cuda"}, **fake)
print(dev, flush=True)
sys.stdin.readline()  # hold the GPU until the test says go
"""
PAPERS = ("acp", "ape", "avipam")


class Job:
    """One job of ``paper`` that claims a GPU of ``count`` and holds it until :meth:`finish`."""

    def __init__(self, paper: str, lock_dir: Path, count: int = 2):
        env = {**os.environ, "CUDA_VISIBLE_DEVICES": ""}  # CUDA unavailable, whatever the machine
        env.pop("NOISYOR_GPU_COUNT", None)
        self.proc = subprocess.Popen(
            [sys.executable, "-c", WORKER, paper, str(count), str(lock_dir)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )

    def device(self, timeout: float) -> str | None:
        """The device the job printed, or None if it printed nothing within ``timeout`` s."""
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        if not ready:
            return None
        line = self.proc.stdout.readline().strip()
        if not line:
            raise AssertionError(f"job failed: {self.proc.stderr.read()}")
        return line

    def finish(self) -> None:
        self.proc.communicate("go\n", timeout=60)
        assert self.proc.returncode == 0

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=30)


@pytest.mark.parametrize("paper", PAPERS)
def test_concurrent_jobs_of_each_paper_get_different_gpus(tmp_path: Path, paper: str) -> None:
    lock_dir = tmp_path / "locks"
    jobs = [Job(paper, lock_dir), Job(paper, lock_dir)]
    try:
        first, second = (job.device(timeout=120) for job in jobs)
        assert {first, second} == {"cuda:0", "cuda:1"}
        third = Job(paper, lock_dir)
        jobs.append(third)
        # Both GPUs are held: the third job waits for one (the lock's rule), it does not share.
        assert third.device(timeout=3) is None
        freed = jobs[0]
        freed.finish()
        assert third.device(timeout=120) == first
        jobs[1].finish()
        third.finish()
    finally:
        for job in jobs:
            job.kill()


def test_every_paper_uses_the_one_picker() -> None:
    """No private device function is left: the commands' names are infra.device's."""
    from noisyor_bench.experiments.acp import runs as acp_runs
    from noisyor_bench.experiments.ape import train as ape_train

    assert acp_runs.resolve_device is infra_device.resolve_device
    assert ape_train.resolve_device is infra_device.resolve_device


def test_without_fake_gpus_the_cpu_machine_stays_on_cpu() -> None:
    """The injection is what makes GPUs appear: on this CPU machine every paper's default is the CPU."""
    from noisyor_bench.experiments.avipam.methods import avipam_device

    if infra_device.torch.cuda.is_available():
        pytest.skip("a CUDA machine: auto picks a GPU there")
    assert str(infra_device.resolve_device("auto")) == "cpu"
    assert str(avipam_device({})) == "cpu"
    assert str(avipam_device({"device": "auto"})) == "cpu"
