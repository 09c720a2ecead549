"""Atomic file output.

Every artifact is first written to a temporary file in the destination directory and then
renamed over the target, so an interrupted job never leaves a half-written file that a later
run would mistake for a finished one.  The one exception is a log (:func:`open_log`), written as
it goes so that it can be read while the run goes on and survives a kill; no later step reads it.
"""

from __future__ import annotations

import contextlib
import csv
import errno
import io
import json
import os
import shutil
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, TextIO

import numpy as np

from noisyor_bench.infra.errors import WRITE_ERRNOS


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a temporary path next to ``path``; rename it onto ``path`` on success.

    An OSError while the temporary file is written or renamed (a full disk: ENOSPC, a quota,
    an I/O error) is raised again naming ``path`` (:func:`_named_write_error`): the kernel's
    error from ``write`` names no file, and the temporary name means nothing to a user.  The
    temporary file is removed in every case, so a failure leaves no partial file."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        yield tmp
        # mkstemp creates 0600 files; give artifacts the usual permissions (0666 & ~umask).
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, target)
    except OSError as err:
        named = _named_write_error(err, tmp, target)
        if named is err:
            raise
        raise named from err
    finally:
        if tmp.exists():
            tmp.unlink()


def _named_write_error(err: OSError, tmp: Path, target: Path) -> OSError:
    """``err`` as an OSError naming ``target`` when it concerns the temporary file ``tmp``
    (it names ``tmp``, or no file and a storage errno); any other error (e.g. a missing source
    file of a copy) unchanged."""
    names = {str(err.filename), str(err.filename2)}
    about_tmp = str(tmp) in names or (
        err.filename is None and err.filename2 is None and err.errno in WRITE_ERRNOS
    )
    if not about_tmp or err.errno is None:
        return err
    return OSError(err.errno, err.strerror or os.strerror(err.errno), str(target))


def filesystem_full(directory: str | os.PathLike[str], margin: int = 1 << 20) -> bool:
    """Whether the filesystem of ``directory`` has less than ``margin`` bytes left for this
    process (``os.statvfs``: the blocks available to non-root users; root may use reserved ones)."""
    try:
        st = os.statvfs(directory)
    except OSError:
        return False
    blocks = st.f_bfree if os.geteuid() == 0 else st.f_bavail
    return blocks * st.f_frsize < margin


def save_torch_atomic(path: str | os.PathLike[str], obj: Any) -> None:
    """``torch.save(obj)`` onto ``path`` through a temporary file in its directory.

    ``torch.save`` given a *path* writes through its C++ stream, which reports a full disk as a
    ``RuntimeError`` (``unexpected pos``, ``basic_ios::clear``) naming no file.  Given a Python
    file object, as here, the OSError (ENOSPC) itself comes through and :func:`atomic_path` names
    ``path``; a RuntimeError while the filesystem is full is still turned into ENOSPC naming
    ``path``.  A failure never leaves a partial file."""
    import torch

    target = Path(path)
    with atomic_path(target) as tmp:
        try:
            with open(tmp, "wb") as fh:
                torch.save(obj, fh)
        except RuntimeError as err:
            if not filesystem_full(target.parent):
                raise
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(target)) from err


def open_log(path: str | os.PathLike[str]) -> TextIO:
    """Open ``path`` (its directory created) for a log written as it goes, line by line.

    A log is the one file that is deliberately *not* written atomically: it must be readable
    while the run goes on and keep what was written when the run is killed.  It is no artifact:
    nothing downstream reads it as a finished output, so a partial log misleads no later run."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    return open(target, "w", encoding="utf-8")


def write_bytes_atomic(path: str | os.PathLike[str], data: bytes) -> None:
    with atomic_path(path) as tmp:
        tmp.write_bytes(data)


def copy_file_atomic(src: str | os.PathLike[str], dest: str | os.PathLike[str]) -> None:
    """Copy ``src`` onto ``dest`` (contents and modification time) through a temporary file."""
    with atomic_path(dest) as tmp:
        shutil.copy2(src, tmp)


def link_or_copy_atomic(src: str | os.PathLike[str], dest: str | os.PathLike[str]) -> None:
    """``dest`` as a hard link to ``src`` where the filesystem allows, else a copy, through a
    temporary name.  Why: a training's checkpoint (gigabytes for LB-CDI) is handed from one job
    to the next at no cost; it is safe because a checkpoint is only ever replaced
    (:func:`save_torch_atomic`), never rewritten in place."""
    with atomic_path(dest) as tmp:
        tmp.unlink()
        try:
            os.link(src, tmp)
        except OSError:
            shutil.copy2(src, tmp)


def write_text_atomic(path: str | os.PathLike[str], text: str) -> None:
    write_bytes_atomic(path, text.encode("utf-8"))


def write_csv_atomic(
    path: str | os.PathLike[str], rows: Sequence[Mapping[str, Any]], fieldnames: Sequence[str] | None = None
) -> None:
    """``rows`` as a CSV table with a header line (``\\n`` line ends).  Columns: ``fieldnames``
    (other keys of the rows are left out), by default the keys of the first row (then a row
    with another key is an error)."""
    buf = io.StringIO()
    columns = list(rows[0]) if fieldnames is None else list(fieldnames)
    extras = "raise" if fieldnames is None else "ignore"
    writer = csv.DictWriter(buf, fieldnames=columns, lineterminator="\n", extrasaction=extras)
    writer.writeheader()
    writer.writerows(rows)
    write_text_atomic(path, buf.getvalue())


def _json_default(obj: Any) -> Any:
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, Path):
        return str(obj)
    raise TypeError(f"not JSON serialisable: {type(obj).__name__}")


def to_json(obj: Any) -> str:
    """Stable JSON text (sorted keys, trailing newline) so equal content gives equal bytes."""
    return json.dumps(obj, indent=2, sort_keys=True, default=_json_default) + "\n"


def write_json_atomic(path: str | os.PathLike[str], obj: Any) -> None:
    write_text_atomic(path, to_json(obj))


def read_json(path: str | os.PathLike[str]) -> Any:
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)


def write_npz_atomic(path: str | os.PathLike[str], **arrays: np.ndarray) -> None:
    """Write an uncompressed-deterministic ``.npz``.

    ``np.savez_compressed`` stamps zip entries with the current time, which would make
    identical data give different bytes; we build the archive with a fixed timestamp.
    """
    import zipfile

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, mode="w", compression=zipfile.ZIP_DEFLATED) as zf:
        for name in sorted(arrays):
            arr_buf = io.BytesIO()
            np.lib.format.write_array(arr_buf, np.asarray(arrays[name]), allow_pickle=False)
            info = zipfile.ZipInfo(f"{name}.npy", date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            zf.writestr(info, arr_buf.getvalue())
    write_bytes_atomic(path, buf.getvalue())


def load_npz(path: str | os.PathLike[str]) -> dict[str, np.ndarray]:
    """Load every array of an ``.npz`` (no pickles) into a plain dict.

    The one loader of ``.npz`` files: anything that is not a readable archive of plain
    arrays is a :class:`~noisyor_bench.infra.errors.DataError` naming the file (never numpy's
    advice to allow pickles, which would be unsafe and wrong).
    """
    import zipfile

    from noisyor_bench.infra.errors import DataError

    with open(path, "rb") as fh:  # a missing/unreadable file: OSError naming it
        is_zip = zipfile.is_zipfile(fh)
    if not is_zip:
        raise DataError(f"{path} is not an npz archive (truncated, or another kind of file); rebuild it")
    try:
        with np.load(path, allow_pickle=False) as data:
            return {k: data[k] for k in data.files}
    except ValueError as err:  # object arrays: pickles are refused
        if "pickle" in str(err):
            raise DataError(
                f"{path} holds pickled (object) arrays, which are refused for safety; rebuild it"
            ) from None
        raise DataError(f"{path} is a corrupt npz archive: {err}") from None
    except (zipfile.BadZipFile, EOFError, OSError, KeyError) as err:
        if isinstance(err, OSError) and err.filename is not None:
            raise
        raise DataError(f"{path} is a corrupt npz archive: {err}") from None


LOCK_FILE = ".noisyor-bench.lock"


def lock_results_dir(results_dir: str | os.PathLike[str]) -> Any:
    """Hold an exclusive lock on ``results_dir`` for the life of this process; return the
    open lock file (keep a reference: closing it releases the lock).

    Snakemake locks the outputs of a *working directory*; two invocations from different
    working directories that write the same results directory would overwrite each other's
    outputs.  This lock (``fcntl.flock`` on ``<results_dir>/.noisyor-bench.lock``, released
    by the kernel when the process ends, even on SIGKILL) refuses the second one, naming the
    first.  :class:`~noisyor_bench.infra.errors.UserError` when another process holds it.
    """
    import fcntl

    from noisyor_bench.infra.errors import UserError

    root = Path(results_dir)
    root.mkdir(parents=True, exist_ok=True)
    path = root / LOCK_FILE
    held = _HELD_LOCKS.get(str(path.resolve()))
    if held is not None:  # taken at DAG-build time and again in onstart: one lock per process
        return held
    fh = open(path, "a+", encoding="utf-8")  # noqa: SIM115 -- held open on purpose
    try:
        fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        fh.seek(0)
        holder = fh.read().strip() or "another process"
        fh.close()
        raise UserError(
            f"results directory {root} is being written by another invocation ({holder}); wait for it to "
            f"finish, or choose another results_dir. The lock ({path}) is released when that process ends."
        ) from None
    fh.seek(0)
    fh.truncate()
    fh.write(f"pid {os.getpid()} on {os.uname().nodename}, working directory {os.getcwd()}\n")
    fh.flush()
    _HELD_LOCKS[str(path.resolve())] = fh
    return fh


_HELD_LOCKS: dict[str, Any] = {}
"""Locks this process holds, by resolved path (open files or directory descriptors): a second
``flock`` on a new open file of the same path would conflict with the process's own lock."""


def lock_run_partial(work: str | os.PathLike[str]) -> None:
    """Create the run working directory ``work`` (``<run>.partial``) if needed and hold its
    one-writer lock until :func:`release_run_partial` or the end of this process.

    A job orphaned when its Snakemake was killed keeps writing its ``.partial``; a rerun of the
    same run must neither share nor delete it.  The lock is ``fcntl.flock`` on the directory
    itself (so nothing is added to it or beside it; its writer must empty it rather than remove
    it), released by the kernel when the holder ends, even on SIGKILL.
    :class:`~noisyor_bench.infra.errors.UserError` naming the holder's pid when another process
    holds it.  Taking it again in the same process is a no-op.
    """
    import fcntl

    from noisyor_bench.infra.errors import UserError

    work = Path(work)
    work.mkdir(parents=True, exist_ok=True)
    key = str(work.resolve())
    if key in _HELD_LOCKS:
        return
    fd = os.open(work, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = _flock_holder(fd)
        os.close(fd)
        who = f"pid {holder}" if holder else "another process"
        kill = f"kill {holder}" if holder else "kill it"
        raise UserError(
            f"{work} is being written by another process ({who}), e.g. a job left running when its "
            f"Snakemake was killed; wait for it to end (or end it: {kill}), then run the same command again"
        ) from None
    _HELD_LOCKS[key] = fd


def _flock_holder(fd: int) -> int | None:
    """The pid holding a ``flock`` on the file open as ``fd``, from ``/proc/locks`` (Linux)."""
    st = os.fstat(fd)
    inode = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    try:
        lines = Path("/proc/locks").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        fields = line.split()
        if len(fields) >= 6 and fields[1] == "FLOCK" and fields[5] == inode and fields[4].isdigit():
            return int(fields[4])
    return None


def release_run_partial(work: str | os.PathLike[str]) -> None:
    """Release the lock :func:`lock_run_partial` took on ``work`` (also after ``work`` was renamed:
    pass the path it was locked under)."""
    fd = _HELD_LOCKS.pop(str(Path(work).resolve()), None)
    if fd is not None:
        os.close(fd)
