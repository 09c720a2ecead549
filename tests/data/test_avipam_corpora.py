"""aviPAM corpora: 20 Newsgroups (NVDM form), the NIPS substitute, MNIST pixel documents."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from noisyor_bench.data.corpora import mnist_pixels, newsgroups, nips_abstracts
from noisyor_bench.data.corpora.bow import Corpus, load_corpus, save_corpus
from noisyor_bench.infra.errors import DataError

MIRROR = Path(os.environ.get("NOISYOR_RAW_DATA", "/nonexistent"))


def _write_20news(tmp_path: Path, train: str, test: str = "3 2:1\n") -> tuple[Path, Path, Path]:
    vocab = tmp_path / "vocab.new"
    vocab.write_text("_eos_ 0\nalpha 0\nbeta 0\ngamma 0\n")
    (tmp_path / "train.feat").write_text(train)
    (tmp_path / "test.feat").write_text(test)
    return tmp_path / "train.feat", tmp_path / "test.feat", vocab


def test_feat_counts_are_one_based_and_skip_empty_lines(tmp_path: Path) -> None:
    paths = _write_20news(tmp_path, "1 2:3 4:1\n7\n2 3:2 2:1\n")
    train, test, vocab = newsgroups.read_newsgroups(*paths)
    assert vocab == ["_eos_", "alpha", "beta", "gamma"]
    # "7" alone is an empty document and is skipped; id 2 -> column 1 ("alpha")
    np.testing.assert_array_equal(train.counts.toarray(), [[0, 3, 0, 1], [0, 1, 2, 0]])
    np.testing.assert_array_equal(train.labels, [1, 2])
    assert test.counts.shape == (1, 4)


def test_eos_must_never_occur(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="_eos_"):
        newsgroups.read_newsgroups(*_write_20news(tmp_path, "1 1:2 2:1\n"))


def test_bad_id_is_a_data_error(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="outside"):
        newsgroups.read_newsgroups(*_write_20news(tmp_path, "1 9:2\n"))


@pytest.mark.skipif(not (MIRROR / "20news/train.feat").is_file(), reason="needs the raw-data mirror")
def test_mirror_20news_matches_the_documented_counts() -> None:
    d = MIRROR / "20news"
    train, test, vocab = newsgroups.read_newsgroups(d / "train.feat", d / "test.feat", d / "vocab.new")
    assert train.counts.shape == (11258, 1995)
    assert test.counts.shape == (7487, 1995)
    assert int(train.counts.sum()) == 991493 and int(test.counts.sum()) == 629312
    assert vocab[0] == "_eos_" and int(train.counts[:, 0].sum()) == 0


def _abstracts(n: int) -> nips_abstracts.Abstracts:
    words = ["model", "network", "learning", "data", "graph", "kernel", "bayes", "noise"]
    rng = np.random.default_rng(0)
    texts = [" ".join(rng.choice(words, size=12)) for _ in range(n)]
    return nips_abstracts.Abstracts(np.arange(n), np.full(n, 2000), texts)


def test_nips_substitute_is_reproducible_by_seed() -> None:
    a = _abstracts(40)
    one = nips_abstracts.build(a, str.split, seed=3, n_train=20, n_test=10, min_count=2)
    two = nips_abstracts.build(a, str.split, seed=3, n_train=20, n_test=10, min_count=2)
    other = nips_abstracts.build(a, str.split, seed=4, n_train=20, n_test=10, min_count=2)
    np.testing.assert_array_equal(one["ids_train"], two["ids_train"])
    assert (one["train"] != two["train"]).nnz == 0
    assert not np.array_equal(one["ids_train"], other["ids_train"])
    assert not set(one["ids_train"]) & set(one["ids_test"])  # held-out documents are disjoint
    # ordered held-out tokens add up to the held-out counts
    assert int(one["lengths_test"].sum()) == int(one["test"].sum())


def test_nips_vocabulary_counts_training_tokens_only() -> None:
    train_docs = [["a", "a", "b"], ["a", "c"]]
    assert nips_abstracts.vocabulary(train_docs, min_count=2) == ["a"]


def test_read_abstracts_skips_missing_and_repeated_ids(tmp_path: Path) -> None:
    p = tmp_path / "papers.csv"
    p.write_text(
        "id,year,title,authors,pdf_name,abstract\n"
        "1,2000,t,a,p,First abstract\n2,2001,t,a,p,Abstract Missing\n1,2000,t,a,p,Dup\n3,2002,t,a,p,\n"
        '4,2003,t,a,p,"Fourth, with comma"\n'
    )
    a = nips_abstracts.read_abstracts(p)
    assert list(a.ids) == [1, 4] and a.texts[1] == "Fourth, with comma"


def test_mnist_pixel_counts_hand_computed() -> None:
    img = np.zeros((1, 2, 2), dtype=np.uint8)
    img[0] = [[0, 255], [128, 31]]  # 128/255*4 = 2.008 -> 2; 31/255*4 = 0.486 -> 0
    np.testing.assert_array_equal(mnist_pixels.pixel_counts(img, levels=4).toarray(), [[0, 4, 2, 0]])
    assert mnist_pixels.pixel_vocabulary((2, 2)) == ["p0_0", "p0_1", "p1_0", "p1_1"]


def test_corpus_round_trip(tmp_path: Path) -> None:
    import scipy.sparse as sp

    c = Corpus(
        sp.csr_matrix(np.array([[1, 0], [2, 3]])),
        sp.csr_matrix(np.array([[0, 1]])),
        ["x", "y"],
        {"tokens_test": np.array([1], dtype=np.int32), "lengths_test": np.array([1])},
    )
    save_corpus(tmp_path / "c.npz", c)
    back = load_corpus(tmp_path / "c.npz")
    np.testing.assert_array_equal(back.train.toarray(), [[1, 0], [2, 3]])
    assert back.vocab == ["x", "y"] and back.sequences("test") is not None and back.sequences("train") is None
