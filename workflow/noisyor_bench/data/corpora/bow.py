"""Bag-of-words corpora in one ``.npz`` layout (aviPAM's ``results/data/avipam-<name>.npz``).

Keys: ``<split>_data``, ``<split>_indices``, ``<split>_indptr``, ``<split>_shape`` (the CSR parts
of the documents x vocabulary count matrix, int32 counts) for split in {train, test};
``vocab`` (unicode array, column order); optional ``tokens_<split>`` / ``lengths_<split>``
(ordered word ids of each document, for sliding-window NPMI) and any other plain arrays
(labels, ids). Loading never unpickles (:func:`noisyor_bench.infra.io.load_npz`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from noisyor_bench.infra.errors import DataError
from noisyor_bench.infra.io import load_npz, write_npz_atomic

SPLITS = ("train", "test")


@dataclass(frozen=True)
class Corpus:
    """Train and test count matrices over one vocabulary, plus the extra arrays of the file."""

    train: sp.csr_matrix
    test: sp.csr_matrix
    vocab: list[str]
    extra: dict[str, np.ndarray] = field(default_factory=dict)

    def sequences(self, split: str) -> tuple[np.ndarray, np.ndarray] | None:
        """(flat ordered word ids, lengths) of a split, or None for a bag of words only."""
        if f"tokens_{split}" not in self.extra:
            return None
        return self.extra[f"tokens_{split}"], self.extra[f"lengths_{split}"]


def csr_arrays(prefix: str, matrix: sp.csr_matrix) -> dict[str, np.ndarray]:
    m = sp.csr_matrix(matrix)
    return {
        f"{prefix}_data": m.data.astype(np.int32),
        f"{prefix}_indices": m.indices.astype(np.int32),
        f"{prefix}_indptr": m.indptr.astype(np.int64),
        f"{prefix}_shape": np.asarray(m.shape, dtype=np.int64),
    }


def save_corpus(path: str | os.PathLike[str], corpus: Corpus) -> None:
    if corpus.train.shape[1] != len(corpus.vocab) or corpus.test.shape[1] != len(corpus.vocab):
        raise DataError(f"{path}: count matrices and vocabulary ({len(corpus.vocab)} words) disagree")
    arrays = {**csr_arrays("train", corpus.train), **csr_arrays("test", corpus.test)}
    arrays["vocab"] = np.asarray(corpus.vocab, dtype=np.str_)
    write_npz_atomic(path, **arrays, **corpus.extra)


def load_corpus(path: str | os.PathLike[str]) -> Corpus:
    arrays = load_npz(path)
    try:
        mats = {
            s: sp.csr_matrix(
                (arrays.pop(f"{s}_data"), arrays.pop(f"{s}_indices"), arrays.pop(f"{s}_indptr")),
                shape=tuple(int(x) for x in arrays.pop(f"{s}_shape")),
            )
            for s in SPLITS
        }
        vocab = [str(w) for w in arrays.pop("vocab")]
    except KeyError as err:
        raise DataError(
            f"{path}: not an aviPAM corpus file (missing {err}); rebuild it with avipam-data"
        ) from None
    return Corpus(train=mats["train"], test=mats["test"], vocab=vocab, extra=arrays)
