"""A real full disk for tests: a small tmpfs mounted on a test's directory, and a filler.

Mounting needs root (or a mount namespace); where it is refused the test is skipped, saying so.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest


@contextlib.contextmanager
def small_tmpfs(where: Path, size: str = "1m") -> Iterator[Path]:
    """``where`` with a tmpfs of ``size`` mounted on it for the block; unmounted afterwards."""
    where.mkdir(parents=True, exist_ok=True)
    try:
        mount = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)],
            capture_output=True,
            text=True,
        )
    except OSError as err:  # no mount command
        pytest.skip(f"cannot mount a small tmpfs here: {err}")
    if mount.returncode != 0:
        pytest.skip(
            f"cannot mount a small tmpfs here (needs root): {mount.stderr.strip() or mount.returncode}"
        )
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


@contextlib.contextmanager
def read_only_view(source: Path, where: Path) -> Iterator[Path]:
    """``source`` bind-mounted read-only on ``where`` for the block (root, whom file modes do not
    stop, cannot write there either); skipped where mounting is refused."""
    where.mkdir(parents=True, exist_ok=True)
    try:
        bind = subprocess.run(["mount", "--bind", str(source), str(where)], capture_output=True, text=True)
    except OSError as err:  # no mount command
        pytest.skip(f"cannot bind-mount here: {err}")
    if bind.returncode != 0:
        pytest.skip(f"cannot bind-mount here (needs root): {bind.stderr.strip() or bind.returncode}")
    try:
        ro = subprocess.run(["mount", "-o", "remount,ro,bind", str(where)], capture_output=True, text=True)
        if ro.returncode != 0:
            pytest.skip(f"cannot make a bind mount read-only here: {ro.stderr.strip() or ro.returncode}")
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def free_bytes(directory: Path) -> int:
    st = os.statvfs(directory)
    return st.f_bfree * st.f_frsize


def fill(directory: Path, leave: int = 0, name: str = "filler") -> Path:
    """Fill the filesystem of ``directory`` until only ``leave`` bytes (rounded down to pages)
    are free, with the file ``directory/name``; returns that file (delete it to free the space)."""
    path = directory / name
    with open(path, "ab", buffering=0) as fh:  # unbuffered: nothing left to flush at close
        while free_bytes(directory) > leave:
            try:
                fh.write(b"\0" * min(1 << 20, free_bytes(directory) - leave))
            except OSError:
                break
    return path
