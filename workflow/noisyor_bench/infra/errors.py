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
