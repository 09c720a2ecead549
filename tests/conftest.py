"""Shared fixtures: the raw-data mirror, the repository root, deterministic torch."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch

REPO = Path(__file__).resolve().parents[1]


def _mirror() -> Path | None:
    env = os.environ.get("NOISYOR_RAW_DATA")
    for candidate in (env, REPO.parent / "shared" / "data"):
        if candidate and (Path(candidate) / "README.md").exists():
            return Path(candidate)
    return None


MIRROR = _mirror()


@pytest.fixture(autouse=True)
def _single_thread_torch():
    """Tests run in parallel (pytest-xdist); one torch thread each avoids oversubscription."""
    torch.set_num_threads(1)
    yield


@pytest.fixture
def repo() -> Path:
    return REPO


@pytest.fixture
def mirror() -> Path:
    """The raw-data mirror (../shared/data or $NOISYOR_RAW_DATA); CI always has it."""
    if MIRROR is None:
        if os.environ.get("CI"):
            pytest.fail("CI needs the raw-data mirror at ../shared/data or $NOISYOR_RAW_DATA")
        pytest.skip("raw-data mirror not found (set NOISYOR_RAW_DATA)")
    return MIRROR
