"""Fault catalogue: a full disk ("Real disk full").

On a real full disk the jobs failed with torch's ``unexpected pos`` / ``basic_ios::clear``
RuntimeErrors, tracebacks, or an empty log.  Now every writer names the file it was writing
(``<path>: No space left on device (ENOSPC)``, exit 2, no traceback), the finished outputs
survive byte-identical, and the message reaches a log on a disk full to the last byte
(:class:`noisyor_bench.infra.errors.LastWord`).

The cases of :data:`CASES` inject the failure as the kernel reports it (``write`` raising
``OSError(ENOSPC)`` naming no file; torch's RuntimeError while the filesystem is full).  The two
``slow`` tests fill a real small tmpfs while the CLI runs as Snakemake runs it
(``noisyor-bench ... > log 2>&1``), then free the space and check that the rerun matches;
they are skipped where a tmpfs cannot be mounted.
"""

from __future__ import annotations

import errno
import os
import pathlib
import shlex
import shutil
import subprocess
import time
from pathlib import Path

import pytest
import torch
from diskfull import fill, free_bytes, small_tmpfs
from faultworld import FINISHED, RUN, Case, run_case, train_argv
from test_failures import CLI, checkpoint_epoch, comparable

import noisyor_bench.infra.io as nio
from noisyor_bench.cli import main

FULL = ("No space left on device (ENOSPC)", "free some space and run the same command again")
TORCH_FULL = "[enforce fail at inline_container.cc:672] . unexpected pos 640 vs 534"
OTHER = Path("elsewhere") / RUN  # another run directory of the same run


def enospc() -> OSError:
    return OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))  # as write(2) reports it: no file name


def torch_runtime_error(t: Path, m: pytest.MonkeyPatch) -> list[str]:
    """torch.save's own failure on a full disk (its C++ writer), while the filesystem is full."""

    def save(*args, **kwargs):
        raise RuntimeError(TORCH_FULL)

    m.setattr(torch, "save", save)
    m.setattr(nio, "filesystem_full", lambda directory, margin=1 << 20: True)
    return train_argv()


def torch_write_fails(t: Path, m: pytest.MonkeyPatch) -> list[str]:
    """The disk fills while torch.save writes the checkpoint: part written, then ENOSPC."""

    def save(obj, fh, *args, **kwargs):
        fh.write(b"PK\x03\x04 part of a checkpoint")
        raise enospc()

    m.setattr(torch, "save", save)
    return train_argv()


def write_fails(name: str, argv: list[str]):
    """The disk is full when the temporary file of output ``name`` is written."""

    def prepare(t: Path, m: pytest.MonkeyPatch) -> list[str]:
        real = pathlib.Path.write_bytes

        def write_bytes(self: Path, data: bytes) -> int:
            if self.name.startswith(f".{name}."):
                real(self, data[:10])
                raise enospc()
            return real(self, data)

        m.setattr(pathlib.Path, "write_bytes", write_bytes)
        return argv

    return prepare


def stdout_full(t: Path, m: pytest.MonkeyPatch) -> list[str]:
    """The log itself (stdout, redirected to the full disk) cannot be written."""

    class Full:
        def write(self, text: str) -> int:
            raise enospc()

        def flush(self) -> None:
            raise enospc()

    m.setattr("sys.stdout", Full())
    return train_argv(OTHER)


def table_argv() -> list[str]:
    return ["convergence-table", "--runs", str(RUN), "--out-csv", "t.csv", "--out-md", "t.md"]


def no_partial_files() -> None:
    left = [p for p in Path(".").rglob("*.tmp")]
    assert not left, f"temporary files left: {left}"


CASES = [
    Case(
        "disk-full-torch-runtime-error",
        torch_runtime_error,
        2,
        (f"{RUN}.partial/checkpoint.pt: ", *FULL),
        keep=FINISHED,
        after=no_partial_files,
    ),
    Case(
        "disk-full-during-torch-save",
        torch_write_fails,
        2,
        (f"{RUN}.partial/checkpoint.pt: ", *FULL),
        keep=FINISHED,
        after=no_partial_files,
    ),
    Case(
        "disk-full-posterior-npz",
        write_fails("posterior_test.npz", train_argv()),
        2,
        (f"{RUN}.partial/posterior_test.npz: ", *FULL),
        keep=FINISHED,
        after=no_partial_files,
    ),
    Case(
        "disk-full-metrics-json",
        write_fails("metrics.json", train_argv()),
        2,
        (f"{RUN}.partial/metrics.json: ", *FULL),
        keep=FINISHED,
        after=no_partial_files,
    ),
    Case(
        "disk-full-table-csv",
        write_fails("t.csv", table_argv()),
        2,
        ("t.csv: ", *FULL),
        keep=FINISHED,
        after=lambda: (no_partial_files(), Path("t.csv").exists() and pytest.fail("t.csv written")),
    ),
    Case("disk-full-log", stdout_full, 2, ("error: writing output: ", *FULL)),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_fault(case, template, tmp_path, monkeypatch, capsys):
    run_case(case, template, tmp_path, monkeypatch, capsys)


# ---------------------------------------------------------------------------------- a real tmpfs
def in_shell(argv: list[str], log: Path, cwd: Path) -> subprocess.Popen:
    """The CLI as a Snakemake rule runs it: both streams redirected into the job's log."""
    command = f"exec {shlex.join([*CLI, *argv])} > {shlex.quote(str(log))} 2>&1"
    return subprocess.Popen(command, shell=True, cwd=cwd)


def check_log(log: Path, *words: str) -> None:
    text = log.read_text()
    assert "Traceback" not in text and "Logging error" not in text, text
    for word in words:
        assert word in text, f"{word!r} not in: {text}"


@pytest.mark.slow
def test_disk_fills_during_training_then_the_rerun_matches(
    template: Path, tmp_path: Path, monkeypatch
) -> None:
    """The results disk (a 1 MiB tmpfs) fills to the last byte while a rerun of a finished run
    trains: the job fails with the checkpoint's path and ENOSPC in its log, the finished run is
    intact, no temporary file is left; after freeing the space the same command finishes with
    the values of an undisturbed run."""
    argv = train_argv(RUN, "--max-epochs", "12", "--patience", "12")
    reference = tmp_path / "reference"
    shutil.copytree(template, reference, symlinks=True)
    monkeypatch.chdir(reference)
    assert main(argv) == 0

    with small_tmpfs(tmp_path / "disk", "1m") as disk:
        world = disk / "world"
        shutil.copytree(template, world, symlinks=True)
        before = {p: (world / p).read_bytes() for p in FINISHED}
        log = disk / "train.log"
        proc = in_shell(argv, log, world)
        try:
            deadline = time.monotonic() + 300
            while (checkpoint_epoch(world / f"{RUN}.partial/checkpoint.pt") or 0) < 1:
                assert proc.poll() is None, log.read_text()
                assert time.monotonic() < deadline
                time.sleep(0.01)
            filler = fill(disk)
            assert free_bytes(disk) == 0
        finally:
            code = proc.wait(timeout=300)
        assert code == 2, log.read_text()
        check_log(log, f"noisyor-bench acp-train: error: {RUN}", *FULL)
        for path, content in before.items():
            assert (world / path).read_bytes() == content, f"finished output changed: {path}"
        assert not list(world.rglob("*.tmp"))

        filler.unlink()
        monkeypatch.chdir(world)
        assert main(argv) == 0
        assert comparable(world / RUN) == comparable(reference / RUN)
        assert (world / RUN / "posterior_test.npz").read_bytes() == (
            reference / RUN / "posterior_test.npz"
        ).read_bytes()
        monkeypatch.chdir(tmp_path)


@pytest.mark.slow
def test_disk_full_to_the_last_byte_the_reason_still_reaches_the_log(
    template: Path, tmp_path: Path, monkeypatch
) -> None:
    """The disk is already full to the last byte when a table is written: nothing frees space
    (the temporary file got no block), so only the reserve taken at start lets the message into
    the log, which was empty otherwise.  The table from before survives; after freeing
    the space the rerun writes the same table."""
    argv = [
        "convergence-table",
        "--runs",
        f"@{tmp_path / 'runs.fifo'}",
        "--out-csv",
        "t.csv",
        "--out-md",
        "t.md",
    ]
    with small_tmpfs(tmp_path / "disk", "1m") as disk:
        world = disk / "world"
        shutil.copytree(template, world, symlinks=True)
        monkeypatch.chdir(world)
        ok = [*argv[:2], str(RUN), *argv[3:]]
        assert main(ok) == 0
        tables = {p: Path(p).read_bytes() for p in ("t.csv", "t.md")}

        os.mkfifo(tmp_path / "runs.fifo")
        log = disk / "table.log"
        proc = in_shell(argv, log, world)
        try:  # the CLI opens the list only after it took its reserve: wait for it to open the fifo
            deadline = time.monotonic() + 300
            while True:
                try:
                    fd = os.open(tmp_path / "runs.fifo", os.O_WRONLY | os.O_NONBLOCK)
                    break
                except OSError as err:
                    assert err.errno == errno.ENXIO and proc.poll() is None, log.read_text()
                    assert time.monotonic() < deadline
                    time.sleep(0.01)
            filler = fill(disk)
            assert free_bytes(disk) == 0
            os.write(fd, f"{RUN}\n".encode())
            os.close(fd)
        finally:
            code = proc.wait(timeout=300)
        assert code == 2, log.read_text()
        check_log(log, "noisyor-bench convergence-table: error: t.csv: ", *FULL)
        assert {p: Path(p).read_bytes() for p in tables} == tables
        assert not list(world.rglob("*.tmp"))

        filler.unlink()
        assert main(ok) == 0
        assert {p: Path(p).read_bytes() for p in tables} == tables
        monkeypatch.chdir(tmp_path)
