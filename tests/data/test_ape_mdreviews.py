"""The APE authors' product reviews: the 3,000 most frequent words, counts preserved, and the
collapsed-Gibbs LDA test models reproducible per seed."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from noisyor_bench.data.corpora import mdreviews
from noisyor_bench.infra.errors import DataError


def test_most_frequent_breaks_ties_by_index_and_keeps_column_order():
    counts = sp.csr_matrix(np.array([[5, 1, 3, 3, 0], [0, 1, 0, 0, 9]]))
    # totals 5, 2, 3, 3, 9 -> top 3: 9 (col 4), 5 (col 0), 3 (col 2 before col 3)
    np.testing.assert_array_equal(mdreviews.most_frequent(counts, 3), [0, 2, 4])
    with pytest.raises(DataError):
        mdreviews.most_frequent(counts, 6)


def test_build_reviews_restricts_counts_and_drops_empty_documents():
    valid = sp.csr_matrix(np.array([[2, 0, 1], [0, 1, 0]]))
    test = sp.csr_matrix(np.array([[1, 0, 4]]))
    counts, words, split, stats = mdreviews.build_reviews({"valid": valid, "test": test}, ["a", "b", "c"], 2)
    np.testing.assert_array_equal(counts, [[2, 1], [1, 4]])  # word "b" dropped: its document is empty
    assert words == ["a", "c"] and list(split) == ["valid", "test"]
    assert stats["dropped_empty"] == 1 and stats["tokens"] == 8 and stats["tokens_read"] == 9


@pytest.mark.slow
def test_the_mirror_corpus(mirror):
    splits = {s: mdreviews.read_csr(mirror / "mdreviews" / f"X_csr_{s}.npz") for s in mdreviews.SPLITS}
    vocab = mdreviews.read_vocabulary(mirror / "mdreviews" / "vocab.txt")
    counts, words, split, stats = mdreviews.build_reviews(splits, vocab, 3000)
    assert counts.shape == (1585, 3000) and len(words) == 3000 == len(set(words))
    assert stats["documents_read"] == 1585 and stats["tokens_read"] == 134_406  # the mirror README's counts
    # counts preserved: each kept column equals the original column of that word
    both = sp.vstack([splits["valid"], splits["test"]]).toarray()
    index = {w: i for i, w in enumerate(vocab)}
    for j in (0, 1234, 2999):
        np.testing.assert_array_equal(counts[:, j], both[:, index[words[j]]])
    # the kept words are the most frequent: every dropped word is at most as frequent as every kept one
    totals = both.sum(0)
    kept = np.array([index[w] for w in words])
    dropped = np.setdiff1d(np.arange(len(vocab)), kept)
    assert totals[kept].min() >= totals[dropped].max()
    assert (split == "valid").sum() == 792


def test_read_csr_rejects_a_file_without_csr_arrays(tmp_path):
    path = tmp_path / "bad.npz"
    np.savez(path, data=np.ones(2))
    with pytest.raises(DataError, match="CSR"):
        mdreviews.read_csr(path)
