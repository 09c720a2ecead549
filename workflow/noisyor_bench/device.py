"""Device and thread selection: CUDA when present, CPU otherwise."""

from __future__ import annotations

import os

import torch


def pick_device(requested: str = "auto") -> torch.device:
    """``auto`` picks CUDA when available; ``cpu``/``cuda``/``cuda:N`` are taken as given."""
    if requested == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(requested)


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
