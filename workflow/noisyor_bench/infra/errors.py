"""User-facing errors.

Anything a user can cause (a bad config value, a missing raw file, a corrupt input) raises
:class:`UserError` with a message that names the problem and how to fix it.  The CLI prints
such messages without a traceback; every other exception is a bug and keeps its traceback.
:class:`LastWord` keeps room for that message in a log on a full disk.
"""

import errno
import os
import stat
import tempfile
from typing import IO


class UserError(Exception):
    """An error caused by input the user controls (config, files, arguments)."""


class ConfigError(UserError):
    """A configuration value is missing, of the wrong type or out of range."""


class DataError(UserError):
    """A raw or derived data file is missing, corrupt or inconsistent."""


class NonFiniteLossError(UserError):
    """Training diverged (NaN/inf loss or parameters); usually a too-large learning rate.

    Defined here, not in :mod:`noisyor_bench.inference.training` (which re-exports it), so that
    steps that only read results (``acp-search-select``) can name it without importing torch."""


class Interrupted(KeyboardInterrupt):
    """Ctrl-C / SIGINT during work that can be resumed; the message says how (CLI exit 130)."""


WRITE_ERRNOS = frozenset(
    {errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO, errno.EROFS, errno.EACCES, errno.EPERM}
)
"""What writing a file fails with when the storage, not the code, is at fault (a full disk:
ENOSPC; a quota: EDQUOT; a read-only or unwritable location)."""


class LastWord:
    """Room for the final message on a full disk: a small reserve on the log's filesystem.

    Snakemake jobs run ``noisyor-bench ... > {log} 2>&1``.  When the disk fills, the message
    saying so cannot be written either, and the log stays empty.  If stderr is a regular file,
    this holds :data:`SIZE` bytes allocated in an unnamed temporary file in the log's directory
    (``O_TMPFILE``: nothing to clean up, even after SIGKILL); :meth:`release`, called just before
    the final message is printed, gives them back so that the message fits.  Best effort: where
    stderr is not a file, or nothing can be reserved, it does nothing.
    """

    SIZE = 64 * 1024

    def __init__(self, stream: IO[str] | None) -> None:
        self._reserve: IO[bytes] | None = None
        try:
            fd = stream.fileno() if stream is not None else -1
            if fd < 0 or not stat.S_ISREG(os.fstat(fd).st_mode):
                return
            log_dir = os.path.dirname(os.readlink(f"/proc/self/fd/{fd}"))
            reserve = tempfile.TemporaryFile(dir=log_dir)  # noqa: SIM115 -- held until release()
        except (OSError, ValueError, AttributeError):  # no fileno (captured), no /proc, gone
            return
        try:
            _allocate(reserve, self.SIZE)
        except OSError:  # the disk is already full: nothing to hold
            reserve.close()
            return
        self._reserve = reserve

    @property
    def held(self) -> bool:
        return self._reserve is not None

    def release(self) -> None:
        """Free the reserve (closing an unnamed file frees its blocks); idempotent."""
        if self._reserve is not None:
            self._reserve.close()
            self._reserve = None


def _allocate(fh: IO[bytes], size: int) -> None:
    """Allocate ``size`` bytes of ``fh`` on disk (``posix_fallocate``; zeros where unsupported)."""
    try:
        os.posix_fallocate(fh.fileno(), 0, size)
    except (AttributeError, OSError) as err:
        if isinstance(err, OSError) and err.errno not in (errno.EOPNOTSUPP, errno.EINVAL):
            raise
        fh.write(b"\0" * size)
        fh.flush()
        os.fsync(fh.fileno())


_NO_MEMORY_WORDS = ("failed to map segment", "cannot allocate memory", "out of memory", "bad_alloc")


def out_of_memory_message(err: BaseException) -> str | None:
    """One line for an exception that means the process ran out of memory, else None.

    Under a virtual-memory limit (``ulimit -v``) the failure takes many forms: ``MemoryError``,
    a ``SystemError`` from a C extension that could not allocate, an ``ImportError`` of a shared
    library that could not be mapped (``failed to map segment``), an ``OSError`` ENOMEM.  Each is
    the environment's limit, not a bug, so the CLI prints this line instead of a traceback.
    """
    text = str(err)
    if isinstance(err, OSError) and not isinstance(err, ImportError):
        matched = err.errno == errno.ENOMEM
    else:
        matched = isinstance(err, (MemoryError, SystemError)) or (
            isinstance(err, ImportError) and any(w in text.lower() for w in _NO_MEMORY_WORDS)
        )
    if not matched:
        return None
    detail = f"{type(err).__name__}: {text}" if text else type(err).__name__
    if len(detail) > 160:
        detail = detail[:157] + "..."
    limit = address_space_limit()
    where = (
        f"under the virtual-memory limit of {limit // 2**20} MiB (ulimit -v {limit // 1024}); "
        "raise it (ulimit -v unlimited)"
        if limit is not None
        else "free memory"
    )
    return f"out of memory ({detail}) {where} or run fewer jobs at once (--cores N), then run the same command again"


def address_space_limit() -> int | None:
    """This process's address-space limit in bytes (``ulimit -v``), or None when unlimited."""
    try:
        import resource

        soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    except (ImportError, OSError, ValueError):
        return None
    return None if soft == resource.RLIM_INFINITY else soft
