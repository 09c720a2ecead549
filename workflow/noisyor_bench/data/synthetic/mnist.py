"""MNIST digits as noisy-OR weight patterns (MULTI-MNIST, paper Section 4.1, Fig. 2b).

The paper reshapes "the patterns depicted in Fig. 2b" -- one image per digit -- into the
columns of theta but does not say which images or how they were binarised.  Our rule:

* **binarise** each test image at ``pixel / 255 > threshold`` (default 0.8, see
  :data:`DEFAULT_THRESHOLD`);
* **exemplar** of digit d = the *Jaccard medoid* of the binarised test images labelled d:
  the image minimising the summed Jaccard distance ``1 - |a & b| / |a | b|`` to all other
  images of that digit, ties to the lowest index.  The medoid is the most central real
  image, so the pattern is a typical handwriting of the digit rather than an accident of
  file order (the first "5" and "8" of the test set are malformed); Jaccard (not Hamming)
  distance is scale-free, so the choice is not biased towards thin digits.
"""

from __future__ import annotations

import gzip
import os
import struct
import zlib

import numpy as np

from noisyor_bench.infra.errors import DataError

#: Binarisation threshold on pixel/255.  With the Jaccard-medoid exemplars, mu = 0.2,
#: p = 0.8 and a 1% leak, it gives an expected sparsity of 80.24% (paper Table 2: 80.3%);
#: it keeps the stroke cores and drops the anti-aliased rims.
DEFAULT_THRESHOLD = 0.8
IMAGE_SHAPE = (28, 28)

# IDX element types (third magic byte) -> big-endian numpy dtype.
_IDX_DTYPES = {0x08: ">u1", 0x09: ">i1", 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}


def _read_maybe_gzip(path: str | os.PathLike[str]) -> bytes:
    with open(path, "rb") as fh:
        raw = fh.read()
    if raw[:2] != b"\x1f\x8b":
        return raw
    try:
        return gzip.decompress(raw)
    except (OSError, EOFError, zlib.error) as err:
        raise DataError(f"{path}: corrupt gzip stream ({err})") from None


def load_idx(path: str | os.PathLike[str]) -> np.ndarray:
    """Read an IDX file (gzipped or not) into an array of its declared dtype and shape.

    IDX (LeCun's MNIST format): magic ``0x00 0x00 <type> <ndim>``, ndim big-endian uint32
    dimensions, then the row-major data.  Raises :class:`DataError` on a bad magic number,
    unknown type, or a payload whose length does not match the header.
    """
    data = _read_maybe_gzip(path)
    if len(data) < 4 or data[0] != 0 or data[1] != 0:
        raise DataError(f"{path}: not an IDX file (magic {data[:4].hex() or 'missing'})")
    type_code, ndim = data[2], data[3]
    if type_code not in _IDX_DTYPES:
        raise DataError(f"{path}: unknown IDX element type 0x{type_code:02x}")
    if ndim == 0 or len(data) < 4 + 4 * ndim:
        raise DataError(f"{path}: truncated IDX header ({ndim} dimensions)")
    dims = struct.unpack(f">{ndim}I", data[4 : 4 + 4 * ndim])
    dtype = np.dtype(_IDX_DTYPES[type_code])
    expected = int(np.prod(dims, dtype=np.int64)) * dtype.itemsize
    payload = data[4 + 4 * ndim :]
    if len(payload) != expected:
        raise DataError(f"{path}: IDX payload has {len(payload)} bytes, header {dims} needs {expected}")
    return np.frombuffer(payload, dtype=dtype).reshape(dims).astype(dtype.newbyteorder("="))


def jaccard_medoid(binary: np.ndarray) -> int:
    """Row index of the medoid of 0/1 rows under the Jaccard distance (ties: lowest index).

    Intersections come from one float64 matrix product (exact for counts < 2**53); two empty
    rows have distance 0.
    """
    b = np.asarray(binary, dtype=np.float64)
    inter = b @ b.T
    size = b.sum(axis=1)
    union = size[:, None] + size[None, :] - inter
    dist = np.where(union > 0, 1.0 - inter / np.where(union > 0, union, 1.0), 0.0)
    return int(np.argmin(dist.sum(axis=1)))


def mnist_digit_patterns(
    images_path: str | os.PathLike[str],
    labels_path: str | os.PathLike[str],
    threshold: float = DEFAULT_THRESHOLD,
) -> tuple[np.ndarray, list[int]]:
    """``(patterns (784, 10) uint8, exemplar indices)``: one binarised exemplar per digit 0..9.

    Column d is the Jaccard medoid (module docstring) of the test images of digit d,
    binarised at ``pixel / 255 > threshold``; ``indices[d]`` is its 0-based index in the file.
    """
    if not 0.0 <= float(threshold) < 1.0:
        raise ValueError(f"threshold must be in [0, 1), got {threshold!r}")
    images = load_idx(images_path)
    labels = load_idx(labels_path)
    if images.ndim != 3 or images.shape[1:] != IMAGE_SHAPE or images.dtype != np.uint8:
        raise DataError(
            f"{images_path}: expected uint8 images of shape (N, 28, 28), got {images.dtype} {images.shape}"
        )
    if labels.shape != images.shape[:1]:
        raise DataError(
            f"{labels_path}: {labels.shape[0] if labels.ndim else '?'} labels for {images.shape[0]} images"
        )
    binary = images.reshape(images.shape[0], -1).astype(np.float64) / 255.0 > float(threshold)
    patterns = np.zeros((binary.shape[1], 10), dtype=np.uint8)
    indices: list[int] = []
    for digit in range(10):
        rows = np.flatnonzero(labels == digit)
        if rows.size == 0:
            raise DataError(f"{labels_path}: no image of digit {digit}")
        idx = int(rows[jaccard_medoid(binary[rows])])
        indices.append(idx)
        patterns[:, digit] = binary[idx]
    return patterns, indices
