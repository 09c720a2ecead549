"""A full disk (ENOSPC) while writing: every writer names the file it was writing, leaves no
partial file and keeps the previous content; the final message of the CLI still fits in a log
on a full disk.

Injected failures behave like the kernel: ``write`` raises ``OSError(ENOSPC)`` naming no file,
and ``torch.save`` given a path raises a ``RuntimeError`` ("unexpected pos").  The tests marked
``tmpfs`` fill a real small tmpfs instead (skipped where it cannot be mounted).
"""

from __future__ import annotations

import errno
import io
import json
import logging
import os
import pathlib
from pathlib import Path

import numpy as np
import pytest
import torch
from diskfull import fill, free_bytes, small_tmpfs

import noisyor_bench.infra.io as nio
from noisyor_bench.cli import _LogHandler, os_error_message
from noisyor_bench.infra.errors import LastWord

ENOSPC = OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))  # as write(2) reports it: no file name
TORCH_FULL = "[enforce fail at inline_container.cc:672] . unexpected pos 640 vs 534"


def full_after(nbytes: int):
    """A ``write`` that writes ``nbytes`` and then fails like a full disk."""

    def write(self, data, *args, **kwargs):
        with open(self, "wb") as fh:
            fh.write(bytes(data)[:nbytes])
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    return write


def assert_named_enospc(info: pytest.ExceptionInfo, target: Path) -> None:
    err = info.value
    assert isinstance(err, OSError) and err.errno == errno.ENOSPC
    assert err.filename == str(target) and err.filename2 is None
    assert os_error_message(err) == (
        f"{target}: No space left on device (ENOSPC); free some space and run the same command again"
    )


def only(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


WRITERS = {
    "npz": lambda p: nio.write_npz_atomic(p, x=np.arange(1000.0)),
    "csv": lambda p: nio.write_csv_atomic(p, [{"a": i, "b": i * i} for i in range(200)]),
    "json": lambda p: nio.write_json_atomic(p, {"values": list(range(500))}),
    "text": lambda p: nio.write_text_atomic(p, "x" * 5000),
}


@pytest.mark.parametrize("kind", sorted(WRITERS))
def test_writer_enospc_names_the_file_and_keeps_the_old_one(kind, tmp_path, monkeypatch):
    target = tmp_path / f"out.{kind}"
    target.write_bytes(b"the finished output")
    monkeypatch.setattr(pathlib.Path, "write_bytes", full_after(100))
    with pytest.raises(OSError) as info:
        WRITERS[kind](target)
    assert_named_enospc(info, target)
    assert target.read_bytes() == b"the finished output"
    assert only(tmp_path) == [target.name]  # no temporary file left


def test_a_missing_source_of_a_copy_keeps_its_own_name(tmp_path):
    with pytest.raises(FileNotFoundError) as info:
        nio.copy_file_atomic(tmp_path / "absent", tmp_path / "dest")
    assert info.value.filename == str(tmp_path / "absent")
    assert only(tmp_path) == []


def test_torch_save_enospc_from_the_file_names_the_checkpoint(tmp_path, monkeypatch):
    """torch.save writes through our file object: the OSError of its write comes through."""
    target = tmp_path / "checkpoint.pt"
    torch.save({"w": torch.ones(3)}, target)
    before = target.read_bytes()

    def save(obj, fh, *args, **kwargs):
        fh.write(b"PK\x03\x04 part of a zip")
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(torch, "save", save)
    with pytest.raises(OSError) as info:
        nio.save_torch_atomic(target, {"w": torch.zeros(3)})
    assert_named_enospc(info, target)
    assert target.read_bytes() == before and only(tmp_path) == ["checkpoint.pt"]


def test_torch_save_runtime_error_on_a_full_disk_is_enospc(tmp_path, monkeypatch):
    target = tmp_path / "checkpoint.pt"

    def save(obj, fh, *args, **kwargs):
        raise RuntimeError(TORCH_FULL)

    monkeypatch.setattr(torch, "save", save)
    monkeypatch.setattr(nio, "filesystem_full", lambda directory, margin=1 << 20: True)
    with pytest.raises(OSError) as info:
        nio.save_torch_atomic(target, {"w": torch.zeros(3)})
    assert_named_enospc(info, target)
    assert isinstance(info.value.__cause__, RuntimeError)
    assert only(tmp_path) == []


def test_torch_runtime_error_with_space_left_stays_a_bug(tmp_path, monkeypatch):
    def save(obj, fh, *args, **kwargs):
        raise RuntimeError("something else")

    monkeypatch.setattr(torch, "save", save)
    with pytest.raises(RuntimeError, match="something else"):
        nio.save_torch_atomic(tmp_path / "c.pt", {})
    assert only(tmp_path) == []


def test_save_torch_atomic_gives_the_same_bytes_under_any_name(tmp_path):
    """Through a file object torch names the archive's root ``archive/``, not after the (random)
    temporary file: equal checkpoints are equal bytes, and they load back."""
    obj = {"w": torch.arange(6.0).reshape(2, 3), "step": 7}
    nio.save_torch_atomic(tmp_path / "a.pt", obj)
    nio.save_torch_atomic(tmp_path / "sub" / "encoder.pt", obj)
    assert (tmp_path / "a.pt").read_bytes() == (tmp_path / "sub" / "encoder.pt").read_bytes()
    back = torch.load(tmp_path / "a.pt", weights_only=True)
    assert torch.equal(back["w"], obj["w"]) and back["step"] == 7


def test_os_error_without_a_file_is_reported_as_writing_output():
    assert os_error_message(ENOSPC) == (
        "writing output: No space left on device (ENOSPC); free some space and run the same command again"
    )


# ---------------------------------------------------------------------------------- logs
def test_a_log_line_that_cannot_be_written_is_dropped_quietly(capsys):
    class Full(io.StringIO):
        def write(self, s):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    handler = _LogHandler(Full())
    handler.emit(logging.LogRecord("x", logging.INFO, __file__, 1, "epoch %d", (3,), None))
    assert capsys.readouterr().err == ""
    # any other failure of a log line is a bug and is still shown
    handler = _LogHandler(io.StringIO())
    handler.emit(logging.LogRecord("x", logging.INFO, __file__, 1, "epoch %d", ("three",), None))
    assert "--- Logging error ---" in capsys.readouterr().err


def test_no_reserve_where_stderr_is_not_a_file(tmp_path):
    assert not LastWord(io.StringIO()).held
    assert not LastWord(None).held
    r, w = os.pipe()
    with os.fdopen(r) as rf, os.fdopen(w, "w") as wf:
        assert not LastWord(wf).held
        del rf
    with open(tmp_path / "log", "w") as log:
        last_word = LastWord(log)
        assert last_word.held
        last_word.release()
        last_word.release()  # idempotent
        assert not last_word.held
    assert only(tmp_path) == ["log"]  # the reserve has no name


# ---------------------------------------------------------------------------------- a real full tmpfs
@pytest.fixture
def disk(tmp_path):
    with small_tmpfs(tmp_path / "disk", "512k") as where:
        yield where


def test_reserve_lets_the_final_message_reach_a_log_on_a_full_disk(disk):
    """The log's disk fills to the last byte while the command runs: without the reserve the
    message is lost (the logs were once empty); after releasing it, it is written."""
    with open(disk / "job.log", "w") as log:
        last_word = LastWord(log)
        assert last_word.held
        fill(disk)
        assert free_bytes(disk) == 0
        with pytest.raises(OSError) as info:
            os.write(log.fileno(), b"x" * 100)
        assert info.value.errno == errno.ENOSPC
        last_word.release()
        log.write("noisyor-bench acp-train: error: x.pt: No space left on device (ENOSPC)\n")
        log.flush()
    assert (disk / "job.log").read_text().endswith("(ENOSPC)\n")


@pytest.mark.parametrize("kind", ["torch", *sorted(WRITERS)])
def test_real_full_disk(kind, disk):
    target = disk / f"out.{kind}"
    target.write_bytes(b"finished")
    fill(disk)
    with pytest.raises(OSError) as info:
        if kind == "torch":
            nio.save_torch_atomic(target, {"w": torch.zeros(5000)})
        else:
            WRITERS[kind](target)
    assert_named_enospc(info, target)
    assert target.read_bytes() == b"finished"
    assert only(disk) == ["filler", target.name]
    (disk / "filler").unlink()
    if kind == "torch":
        nio.save_torch_atomic(target, {"w": torch.zeros(5000)})
        assert torch.equal(torch.load(target, weights_only=True)["w"], torch.zeros(5000))
    else:
        WRITERS[kind](target)
        assert kind != "json" or json.loads(target.read_text()) == {"values": list(range(500))}
