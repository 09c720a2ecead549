"""The one sha256 of the workflow (noisyor_bench.infra.hashing) against hashlib and FIPS vectors."""

from __future__ import annotations

import hashlib
import io
import os
from pathlib import Path

from noisyor_bench.infra.hashing import sha256_bytes, sha256_file, sha256_file_memo, sha256_stream


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_sha256_file_known_vector_and_multichunk(tmp_path: Path) -> None:
    small = tmp_path / "abc"
    small.write_bytes(b"abc")
    # FIPS 180-2 test vector.
    assert sha256_file(small) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    big = tmp_path / "big"
    data = os.urandom(1) * 10 + bytes(range(256)) * 10_000  # > 1 MiB chunk
    big.write_bytes(data)
    assert sha256_file(big) == _sha(data)


def test_bytes_stream_and_memo_agree(tmp_path: Path) -> None:
    data = bytes(range(256)) * 5000
    path = tmp_path / "f"
    path.write_bytes(data)
    assert sha256_bytes(data) == sha256_stream(io.BytesIO(data)) == sha256_file(path) == _sha(data)
    assert sha256_file_memo(path) == _sha(data)
    path.write_bytes(data + b"x")  # a rewrite (new size) is re-hashed
    assert sha256_file_memo(path) == _sha(data + b"x")
