"""One GPU per job on a multi-GPU machine, by an exclusive lock file per GPU.

Snakemake's ``resources: gpu=1`` only *counts* GPUs (at most ``--resources gpu=N`` such jobs
run at once); it does not say which GPU a job should use, so every job would pick GPU 0.  Each
job therefore claims the lowest-numbered free GPU by taking an exclusive ``fcntl.flock`` on a
lock file of that GPU and holds it until the process exits.  The kernel releases a flock when
its holder dies (even by SIGKILL), so a crashed job never leaves a GPU claimed.

No torch and no CUDA here: the claim logic is testable on any machine with an injected GPU
count.  Lock files are named by host and by the GPU's id as the job sees it in
``CUDA_VISIBLE_DEVICES`` (the physical index when unset), so jobs whose visible sets overlap
still exclude each other, and a lock directory on a shared file system does not make
different nodes block one another.
"""

from __future__ import annotations

import fcntl
import logging
import os
import re
import socket
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)

#: Directory of the per-GPU lock files (default: ``<system temp dir>/noisyor-bench-gpu-locks``).
LOCK_DIR_ENV = "NOISYOR_GPU_LOCK_DIR"


@dataclass(frozen=True)
class GpuClaim:
    """A GPU this process holds: ``index`` among the visible devices (``cuda:<index>``)."""

    index: int
    gpu_id: str
    lock_path: Path
    fd: int


_HELD: GpuClaim | None = None


def default_lock_dir() -> Path:
    """``$NOISYOR_GPU_LOCK_DIR``, else a directory under the system temp dir (machine-local)."""
    env = os.environ.get(LOCK_DIR_ENV)
    return Path(env) if env else Path(tempfile.gettempdir()) / "noisyor-bench-gpu-locks"


def visible_gpu_ids(count: int) -> list[str]:
    """Ids of the ``count`` visible GPUs: entries of ``CUDA_VISIBLE_DEVICES`` when it lists them."""
    listed = [s.strip() for s in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if s.strip()]
    return listed[:count] if len(listed) >= count else [str(i) for i in range(count)]


def _lock_path(lock_dir: Path, gpu_id: str) -> Path:
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", f"{socket.gethostname()}-gpu-{gpu_id}")
    return lock_dir / f"{safe}.lock"


def _ensure_dir(lock_dir: Path) -> None:
    """Create the lock directory writable for everyone (sticky, like /tmp) so users share GPUs fairly."""
    if not lock_dir.is_dir():
        lock_dir.mkdir(parents=True, exist_ok=True)
        try:
            lock_dir.chmod(0o1777)
        except OSError:  # someone else's directory, or a file system without modes
            pass


def _try_lock(path: Path) -> int | None:
    """An fd holding an exclusive flock on ``path``, or None when another process holds it."""
    # O_RDONLY suffices for flock and works on lock files another user created (mode 0644).
    fd = os.open(path, os.O_RDONLY | os.O_CREAT | os.O_CLOEXEC, 0o666)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    return fd


def claim_gpu(
    count: int, lock_dir: Path | None = None, timeout: float | None = None, poll_seconds: float = 0.5
) -> GpuClaim:
    """Claim the lowest-numbered free GPU of ``count`` for the rest of this process's life.

    A second call returns the same claim (a job's seeds and search draws share one GPU).  When
    every GPU is held by other jobs -- more GPU jobs than GPUs, e.g. ``--cores 8`` without
    ``--resources gpu=N`` -- wait for one rather than share: two trainings on one GPU can run
    out of its memory.  ``timeout`` (seconds, None = wait as long as it takes) raises
    TimeoutError.
    """
    global _HELD
    if _HELD is not None:
        return _HELD
    if count < 1:
        raise ValueError(f"cannot claim a GPU out of {count}")
    lock_dir = default_lock_dir() if lock_dir is None else Path(lock_dir)
    _ensure_dir(lock_dir)
    ids = visible_gpu_ids(count)
    start = time.monotonic()
    warned = False
    while True:
        for index, gpu_id in enumerate(ids):
            path = _lock_path(lock_dir, gpu_id)
            fd = _try_lock(path)
            if fd is not None:
                _HELD = GpuClaim(index, gpu_id, path, fd)
                log.info("claimed GPU %d (id %s, lock %s)", index, gpu_id, path)
                return _HELD
        waited = time.monotonic() - start
        if timeout is not None and waited >= timeout:
            raise TimeoutError(f"all {count} GPUs stayed claimed for {waited:.1f} s (locks in {lock_dir})")
        if not warned:
            log.warning(
                "all %d GPUs are claimed by other jobs (locks in %s); waiting for one", count, lock_dir
            )
            warned = True
        time.sleep(poll_seconds)


def held_claim() -> GpuClaim | None:
    """The GPU this process holds, if any (for provenance)."""
    return _HELD


def release_gpu() -> None:
    """Give the GPU back before the process ends (tests; a job simply exits)."""
    global _HELD
    if _HELD is not None:
        os.close(_HELD.fd)  # closing the only fd of the open file drops the flock
        _HELD = None
