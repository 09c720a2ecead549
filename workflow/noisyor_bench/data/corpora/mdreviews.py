"""Multi-domain product reviews (Blitzer et al. 2007) as preprocessed by the APE authors.

**A subset.**  The raw-data mirror holds the authors' own count matrices of their validation
and test splits (792 + 793 = 1,585 documents over a 7,729-word vocabulary; raw keys
``mdreviews-valid``, ``mdreviews-test``, ``mdreviews-vocab``).  The paper modelled its 6,343-
document training split, which is not available anywhere reachable: every number on this
corpus comes from 1,585 of the ~7,900 documents of that preprocessing.

Vocabulary: the ``n_words`` (3,000) most frequent words, counted over the 1,585 documents (the
authors counted over their training split with ``np.argpartition``, whose order among equal
counts is arbitrary; here ties are broken by the original word index, and the kept columns keep
their original order).  Documents left empty by the restriction are dropped (counted in the
sidecar).  The test topic matrices (collapsed-Gibbs LDA, K = 30) are fitted in
:mod:`noisyor_bench.experiments.ape.datasets` (the inference layer is above this one).
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from noisyor_bench.infra.errors import DataError

RAW_KEYS = {"valid": "mdreviews-valid", "test": "mdreviews-test", "vocab": "mdreviews-vocab"}
SPLITS = ("valid", "test")
PAPER = {"documents": 6343, "vocabulary": 3000, "topics": 30, "corpus_documents": 7928}
SUBSET_NOTE = (
    "product reviews: a subset, 1,585 of the ~7,900 documents of the authors' preprocessing "
    "(their validation and test splits; the paper's 6,343-document training split is unavailable)"
)


def read_csr(path: str | os.PathLike[str]) -> sp.csr_matrix:
    """A CSR count matrix saved as plain arrays (``data``, ``indices``, ``indptr``, ``shape``)."""
    try:
        with np.load(path, allow_pickle=False) as z:
            missing = {"data", "indices", "indptr", "shape"} - set(z.files)
            if missing:
                raise DataError(f"{path}: not a CSR count matrix (lacks {sorted(missing)})")
            matrix = sp.csr_matrix(
                (z["data"], z["indices"], z["indptr"]), shape=tuple(int(s) for s in z["shape"])
            )
    except (OSError, ValueError) as err:
        raise DataError(f"{path}: unreadable count matrix ({err})") from None
    if matrix.nnz and (matrix.data.min() < 0 or not np.all(np.mod(matrix.data, 1) == 0)):
        raise DataError(f"{path}: counts must be non-negative integers")
    return matrix


def read_vocabulary(path: str | os.PathLike[str]) -> list[str]:
    words = Path(path).read_text(encoding="utf-8").splitlines()
    if not words or any(not w.strip() for w in words):
        raise DataError(f"{path}: expected one non-empty word a line")
    return [w.strip() for w in words]


def most_frequent(counts: sp.csr_matrix, n_words: int) -> np.ndarray:
    """Column indices of the ``n_words`` largest column totals, ties by index, in index order."""
    totals = np.asarray(counts.sum(axis=0)).ravel()
    if not 1 <= n_words <= totals.size:
        raise DataError(f"vocabulary size {n_words} not in [1, {totals.size}]")
    order = np.lexsort((np.arange(totals.size), -totals))  # descending count, then ascending index
    return np.sort(order[:n_words])


def build_reviews(
    splits: dict[str, sp.csr_matrix], vocabulary: list[str], n_words: int
) -> tuple[np.ndarray, list[str], np.ndarray, dict[str, int]]:
    """(counts (D, n_words) int64, kept words, split label per document, counts for the sidecar)."""
    for name, matrix in splits.items():
        if matrix.shape[1] != len(vocabulary):
            raise DataError(
                f"mdreviews {name}: {matrix.shape[1]} columns but the vocabulary has {len(vocabulary)} words"
            )
    stacked = sp.vstack([splits[s] for s in SPLITS]).tocsr()
    labels = np.concatenate([np.full(splits[s].shape[0], s) for s in SPLITS])
    columns = most_frequent(stacked, n_words)
    restricted = np.asarray(stacked[:, columns].todense(), dtype=np.int64)
    nonempty = restricted.sum(axis=1) > 0
    stats = {
        "documents_read": int(stacked.shape[0]),
        "documents": int(nonempty.sum()),
        "dropped_empty": int((~nonempty).sum()),
        "vocabulary_read": len(vocabulary),
        "vocabulary": int(n_words),
        "tokens_read": int(stacked.sum()),
        "tokens": int(restricted.sum()),
    }
    return restricted[nonempty], [vocabulary[c] for c in columns], labels[nonempty], stats
