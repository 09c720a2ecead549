"""Device and thread selection: CUDA when present (one GPU per job), CPU otherwise."""

from __future__ import annotations

import os
from pathlib import Path

import torch

from noisyor_bench.infra.errors import ConfigError
from noisyor_bench.infra.gpulock import claim_gpu, release_gpu

#: Overrides the number of visible GPUs (tests; a machine where CUDA's count is wrong).
GPU_COUNT_ENV = "NOISYOR_GPU_COUNT"


def visible_gpu_count(override: int | None = None) -> int:
    """GPUs this process may use: ``override``, else ``$NOISYOR_GPU_COUNT``, else CUDA's count."""
    if override is not None:
        return int(override)
    env = os.environ.get(GPU_COUNT_ENV)
    if env:
        return int(env)
    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def pick_device(
    requested: str = "auto", *, gpu_count: int | None = None, lock_dir: str | os.PathLike[str] | None = None
) -> torch.device:
    """``auto`` picks CUDA when available; ``cpu`` and ``cuda:N`` are taken as given.

    ``cuda`` (or ``auto`` on a CUDA machine) with several visible GPUs claims a free one for
    this process (:func:`noisyor_bench.infra.gpulock.claim_gpu`) and returns ``cuda:<i>``: Snakemake
    counts GPUs (``resources: gpu=1``) but does not assign them, so concurrent jobs would all
    land on GPU 0.  The choice is made with ``cuda:<i>`` and ``torch.cuda.set_device`` rather
    than by setting ``CUDA_VISIBLE_DEVICES``, because the CUDA driver reads that variable once,
    at initialisation, which ``torch.cuda.is_available()`` has already triggered.
    ``gpu_count`` and ``lock_dir`` are injectable for tests without a GPU.
    """
    if requested == "auto":
        requested = "cuda" if torch.cuda.is_available() else "cpu"
    device = torch.device(requested)
    if device.type != "cuda" or device.index is not None:
        return device
    count = visible_gpu_count(gpu_count)
    if count <= 1:
        return device
    claim = claim_gpu(count, Path(lock_dir) if lock_dir is not None else None)
    # an injected count (tests) is a fake machine: its claims are not real CUDA devices, even
    # where CUDA is present (a one-GPU machine running the tests)
    if gpu_count is None and torch.cuda.is_available():
        real = torch.cuda.device_count()
        if claim.index >= real:
            release_gpu()
            raise ConfigError(
                f"{GPU_COUNT_ENV}={count} names more GPUs than torch sees ({real}); unset it or lower it"
            )
        torch.cuda.set_device(claim.index)  # implicit "cuda" tensors follow the claimed GPU
    return torch.device("cuda", claim.index)


def resolve_device(
    name: str, *, gpu_count: int | None = None, lock_dir: str | os.PathLike[str] | None = None
) -> torch.device:
    """``auto``/``cpu``/``cuda[:N]`` as a device; ConfigError for unknown or absent devices.

    The one device function of every paper's CUDA-capable job (ACP/AVI training and searches,
    APE encoder training, aviPAM): on a machine with several GPUs each job claims its own
    through :func:`pick_device`.  ``gpu_count``/``lock_dir``: a fake GPU machine for tests
    (``cuda`` is chosen and claimed, not checked against CUDA; ``auto`` still follows CUDA).
    """
    try:
        device = pick_device(name, gpu_count=gpu_count, lock_dir=lock_dir)
    except RuntimeError:
        raise ConfigError(
            f"device {name!r} is not a valid torch device; use auto, cpu, cuda or cuda:N"
        ) from None
    if device.type == "cuda" and not torch.cuda.is_available() and gpu_count is None:
        raise ConfigError(f"device {name!r} requested but CUDA is not available; use --device auto or cpu")
    if device.type not in ("cpu", "cuda"):
        raise ConfigError(f"device {name!r} is not supported; use auto, cpu, cuda or cuda:N")
    return device


def set_threads(threads: int | None) -> int:
    """Set torch's intra-op threads to the job's share (Snakemake ``threads:``)."""
    n = threads or int(os.environ.get("OMP_NUM_THREADS", "0") or 0) or torch.get_num_threads()
    torch.set_num_threads(max(1, n))
    return torch.get_num_threads()


def describe(device: torch.device) -> str:
    """Human-readable device name for provenance records."""
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    import platform

    return platform.processor() or platform.machine()
