"""MNIST test digits as pixel-count documents: the STAND-IN for Omniglot (aviPAM Figs. 1-2).

The paper shows topics of a 3-PAM / MoLDA trained on Omniglot images as 28x28 images; the mirror
has no Omniglot, so the MNIST test digits (10,000 images, 28x28) stand in, labelled so everywhere.
An image becomes a document over a 784-word vocabulary (word ``p<row>_<col>`` = one pixel): the
count of pixel ``j`` is ``round(intensity_j / 255 * levels)`` (default ``levels`` = 4, so a
full-ink pixel is 4 tokens and a blank pixel none). A topic is then a distribution over pixels and
is shown as an image.  Split: a permutation of the 10,000 digits by ``default_rng(seed)``; the
first ``n_train`` are training documents, the next ``n_test`` held out.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from noisyor_bench.infra.errors import DataError

NAME = "mnist"
LABEL = "MNIST test digits (stand-in for Omniglot)"
LEVELS = 4
IMAGE_SHAPE = (28, 28)


def pixel_vocabulary(shape: tuple[int, int] = IMAGE_SHAPE) -> list[str]:
    """``p<row>_<col>`` in row-major order (the column order of the count matrix)."""
    return [f"p{r}_{c}" for r in range(shape[0]) for c in range(shape[1])]


def pixel_counts(images: np.ndarray, levels: int = LEVELS) -> sp.csr_matrix:
    """(N, H*W) CSR int32 counts ``round(pixel / 255 * levels)`` of uint8 images (N, H, W)."""
    if images.ndim != 3 or images.dtype != np.uint8:
        raise DataError(
            f"MNIST pixel documents: expected uint8 images (N, H, W), got {images.dtype} {images.shape}"
        )
    if levels < 1:
        raise DataError(f"MNIST pixel documents: levels must be >= 1, got {levels}")
    counts = np.rint(images.reshape(len(images), -1).astype(np.float64) / 255.0 * levels).astype(np.int32)
    return sp.csr_matrix(counts)


def split(n_docs: int, n_train: int, n_test: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(train, test) image indices from a seeded permutation (disjoint)."""
    if n_train + n_test > n_docs:
        raise DataError(f"MNIST pixel documents: {n_train} + {n_test} images requested, {n_docs} available")
    perm = np.random.default_rng(seed).permutation(n_docs)
    return perm[:n_train], perm[n_train : n_train + n_test]
