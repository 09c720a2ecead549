"""sha256, the one digest of the workflow: files, streams and byte strings.

Raw inputs are verified by it (``data.rawdata``), datasets are identified by it in every
run's ``metrics.json`` (``dataset_sha256``), and provenance records list it for every input
and output.  Files are read in 1 MiB chunks (constant memory).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import BinaryIO

CHUNK_BYTES = 1 << 20

_MEMO: dict[tuple[str, int, int, int], str] = {}


def sha256_bytes(data: bytes) -> str:
    """Hex sha256 of ``data``."""
    return hashlib.sha256(data).hexdigest()


def sha256_stream(fh: BinaryIO) -> str:
    """Hex sha256 of everything left in the binary stream ``fh`` (read in chunks)."""
    h = hashlib.sha256()
    for chunk in iter(lambda: fh.read(CHUNK_BYTES), b""):
        h.update(chunk)
    return h.hexdigest()


def sha256_file(path: str | os.PathLike[str]) -> str:
    """Hex sha256 of a file, read in 1 MiB chunks (constant memory); always reads the file."""
    with open(path, "rb") as fh:
        return sha256_stream(fh)


def sha256_file_memo(path: str | os.PathLike[str]) -> str:
    """:func:`sha256_file` memoised on (path, size, mtime, inode): a rewrite is re-hashed.

    For provenance records, which digest the same inputs many times in one process."""
    p = Path(path)
    st = p.stat()
    key = (str(p.resolve()), st.st_size, st.st_mtime_ns, st.st_ino)
    if key not in _MEMO:
        _MEMO[key] = sha256_file(p)
    return _MEMO[key]


__all__ = ["CHUNK_BYTES", "sha256_bytes", "sha256_file", "sha256_file_memo", "sha256_stream"]
