"""NPMI topic coherence with Lau, Newman & Baldwin's (2014) conventions: padded windows,
boolean counts, unseen pairs scoring 0 -- checked against hand counts, a brute-force count
written from Lau's loop (``ComputeWordCount.py``), and tomotopy's NPMI where the conventions
agree."""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from noisyor_bench.data.corpora.preprocess import PreprocessOptions, Preprocessor
from noisyor_bench.evaluation.coherence import (
    VocabularyFirstPreprocessor,
    document_reference,
    text_reference,
    token_id_reference,
    top_word_ids,
    top_words,
    topic_coherence,
    wikipedia_reference,
)
from noisyor_bench.evaluation.pmi import (
    CooccurrenceTable,
    build_cooccurrence,
    build_cooccurrence_from_ids,
    score_topics,
    topic_npmi_details,
    window_matrix,
)
from noisyor_bench.infra.errors import ConfigError, DataError

VOCAB = ["apple", "banana", "cherry", "date"]


def plain_pre(stop: frozenset[str] = frozenset({"the"})) -> Preprocessor:
    return Preprocessor(PreprocessOptions(lemmatizer="none", stopwords="before"), stop, None)


def lau_counts(docs: list[list[int]], v: int, w: int) -> tuple[int, np.ndarray, dict[tuple[int, int], int]]:
    """Lau's loop, independently: for tail = 1 .. L + W - 1 the window is doc[max(0, tail - W):tail]."""
    n, uni, pair = 0, np.zeros(v, dtype=np.int64), {}
    for d in docs:
        if not d:
            continue
        for tail in range(1, len(d) + w):
            win = {x for x in d[max(0, tail - w) : tail] if x >= 0}
            n += 1
            for x in win:
                uni[x] += 1
            for a, b in itertools.combinations(sorted(win), 2):
                pair[(a, b)] = pair.get((a, b), 0) + 1
    return n, uni, pair


def test_padded_windows_by_hand() -> None:
    # "apple banana cherry" with W = 2 (padded): {apple} {apple banana} {banana cherry} {cherry}
    # -> N = L + W - 1 = 4; "date" alone: {date} {date} -> N = 6 in all.
    mat = window_matrix(np.array([0, 1, 2, 3]), np.array([3, 0, 1]), 2, padded=True)
    assert mat.tolist() == [[-1, 0], [0, 1], [1, 2], [2, -1], [-1, 3], [3, -1]]
    t = build_cooccurrence(["apple banana cherry", "", "date"], VOCAB, plain_pre(), window=2, padded=True)
    assert t.n_windows == 6
    assert [t.unigram_count(w) for w in VOCAB] == [2, 2, 2, 2]
    assert t.count("apple", "banana") == 1 and t.count("banana", "cherry") == 1
    assert t.count("apple", "cherry") == 0
    # unpadded, the same corpus has 2 + 1 windows (the PMI convention, unchanged)
    assert build_cooccurrence(["apple banana cherry", "date"], VOCAB, plain_pre(), window=2).n_windows == 3


def test_npmi_by_hand_with_the_zero_rule() -> None:
    # W = 3, padded.  Doc A "apple banana the cherry": the stop word keeps its slot
    # -> tokens [apple, banana, -, cherry], L = 4, windows (tail 1..6):
    #   {apple} {apple banana} {apple banana -} {banana - cherry} {- cherry} {cherry}
    # Doc B "date apple": {date} {date apple} {date apple} {apple}.   N = 6 + 4 = 10.
    # n(apple) = 3 + 3 = 6, n(banana) = 3, n(cherry) = 3, n(date) = 3
    # n(apple,banana) = 2, n(banana,cherry) = 1, n(apple,date) = 2, n(apple,cherry) = 0
    t = build_cooccurrence(
        ["apple banana the cherry", "date apple"],
        VOCAB,
        plain_pre(),
        window=3,
        padded=True,
        stopwords_occupy_positions=True,
    )
    assert t.n_windows == 10
    assert [t.unigram_count(w) for w in VOCAB] == [6, 3, 3, 3]
    assert (t.count("apple", "banana"), t.count("banana", "cherry"), t.count("apple", "date")) == (2, 1, 2)

    def npmi(nij: int, ni: int, nj: int, n: int = 10) -> float:
        return math.log10(nij * n / (ni * nj)) / -math.log10(nij / n)  # Lau's base-10 form

    assert t.npmi("apple", "banana") == pytest.approx(npmi(2, 6, 3))
    assert t.npmi("banana", "cherry") == pytest.approx(npmi(1, 3, 3))
    assert t.npmi("apple", "cherry") == 0.0  # never together: 0, not -1, not skipped
    d = topic_npmi_details(t, ["apple", "banana", "cherry"])
    assert (d.pairs_used, d.pairs_skipped) == (2, 1)
    assert d.value == pytest.approx((npmi(2, 6, 3) + npmi(1, 3, 3) + 0.0) / 3)
    # stop words removed before windowing instead: banana and cherry become neighbours
    u = build_cooccurrence(
        ["apple banana the cherry", "date apple"], VOCAB, plain_pre(), window=3, padded=True
    )
    assert u.n_windows == 9 and u.count("banana", "cherry") == 2


def test_npmi_edge_rules() -> None:
    t = CooccurrenceTable(
        vocabulary=["a", "b", "c"],
        window=20,
        n_windows=4,
        unigram=np.array([4, 4, 0]),
        pair_i=np.array([0]),
        pair_j=np.array([1]),
        pair_count=np.array([4]),
    )
    assert t.npmi("a", "b") == 1.0  # n_ij = N: the limit of perfect co-occurrence
    assert t.npmi("a", "c") == 0.0  # word absent from the reference
    s = score_topics(t, [["a", "b", "c"], ["a"]], measure="npmi")
    assert s.per_topic[0] == pytest.approx(1 / 3) and math.isnan(s.per_topic[1])
    assert s.mean == pytest.approx(1 / 3)
    with pytest.raises(ConfigError, match="measure"):
        score_topics(t, [["a", "b"]], measure="cv")
    with pytest.raises(ConfigError, match="eps"):
        score_topics(t, [["a", "b"]], eps=1.0, measure="npmi")


@pytest.mark.parametrize("window", [2, 3, 5, 20])
def test_padded_counts_match_lau_loop(window: int) -> None:
    rng = np.random.default_rng(11)
    words = ["ant", "bee", "cat", "dog", "eel", "fox", "gnu"]  # gnu: outside the vocabulary
    vocab = words[:6]
    texts = [" ".join(rng.choice(words, size=rng.integers(0, 30))) for _ in range(50)]
    docs = [[words.index(x) if x != "gnu" else -1 for x in t.split()] for t in texts]
    n, uni, pair = lau_counts(docs, len(vocab), window)
    t = build_cooccurrence(texts, vocab, plain_pre(frozenset()), window=window, padded=True, chunk_tokens=11)
    assert t.n_windows == n
    np.testing.assert_array_equal(t.unigram, uni)
    assert {(int(i), int(j)): int(c) for i, j, c in zip(t.pair_i, t.pair_j, t.pair_count)} == pair
    # the same counts from word-id sequences (an internal, ordered reference corpus)
    u = build_cooccurrence_from_ids(docs, vocab, window=window, padded=True, chunk_tokens=13)
    assert u.n_windows == n
    np.testing.assert_array_equal(u.unigram, uni)
    assert {(int(i), int(j)): int(c) for i, j, c in zip(u.pair_i, u.pair_j, u.pair_count)} == pair


def test_document_cooccurrence_by_hand() -> None:
    counts = np.array([[2, 1, 0], [0, 3, 1], [1, 1, 1], [0, 0, 0]])  # last document empty
    t = document_reference(sp.csr_matrix(counts), ["a", "b", "c"])
    assert t.window == 0 and t.n_windows == 3
    assert t.unigram.tolist() == [2, 3, 2]
    assert (t.count("a", "b"), t.count("a", "c"), t.count("b", "c")) == (2, 1, 2)
    assert t.npmi("a", "b") == pytest.approx(math.log(2 * 3 / (2 * 3)) / -math.log(2 / 3))
    with pytest.raises(DataError, match="columns"):
        document_reference(counts, ["a", "b"])


def test_top_words_and_topic_coherence() -> None:
    beta = np.array([[0.5, 0.3, 0.2, 0.0], [0.0, 0.1, 0.4, 0.5]])
    assert top_words(beta, VOCAB, 2) == [["apple", "banana"], ["date", "cherry"]]
    t = token_id_reference([[0, 1, -1, 2], [3, 0]], VOCAB, window=3)
    s = topic_coherence(t, beta, VOCAB, top_n=3)
    assert s.per_topic[0] == pytest.approx(topic_npmi_details(t, ["apple", "banana", "cherry"]).value)
    with pytest.raises(DataError, match="shape"):
        top_words(beta.T, VOCAB)
    with pytest.raises(DataError, match="word ids"):
        token_id_reference([[0, 7]], VOCAB)


def test_top_word_ids_order_by_probability_ties_to_the_lower_id() -> None:
    beta = np.array([[0.1, 0.4, 0.1, 0.4], [0.7, 0.1, 0.1, 0.1]], dtype=np.float32)
    ids = top_word_ids(beta, 3)
    assert ids.dtype == np.int64 and ids.tolist() == [[1, 3, 0], [0, 1, 2]]
    with pytest.raises(DataError, match="shape"):
        top_word_ids(beta[0])


def test_vocabulary_first_tokens() -> None:
    """Surface form first, lemma second: "windows" stays (a vocabulary word), "wrote" ->
    "write", "cats" -> "cat"; the stop word "the" keeps its slot.  A stand-in lemmatiser keeps
    the test independent of WordNet (the real one is exercised by test_pmi's CLI test)."""
    lemmas = {("wrote", "v"): "write", ("windows", "n"): "window", ("cats", "n"): "cat"}
    pre = VocabularyFirstPreprocessor(
        ["window", "windows", "write", "cat"], "noun-verb", lambda w, pos: lemmas.get((w, pos), w)
    )
    assert [pre.word(t) for t in ["windows", "wrote", "cats", "the"]] == ["windows", "write", "cat", "the"]
    vocab = ["window", "windows", "write"]
    # tokens: [he, write, the, windows] and [a, window]; W = 2 padded: 5 + 3 = 8 windows
    t = build_cooccurrence(
        ["He wrote the windows", "a window"],
        vocab,
        pre,
        window=2,
        padded=True,
        stopwords_occupy_positions=True,
    )
    assert t.n_windows == 8
    assert [t.unigram_count(w) for w in vocab] == [2, 2, 2]
    assert t.count("windows", "write") == 0  # "the" sits between them


def test_reference_cache(tmp_path: Path) -> None:
    """The .npz cache is reused only for the same reference, vocabulary, window and pipeline."""
    vocab = ["a", "b", "c"]
    cache = tmp_path / "c.npz"
    kw = {"window": 2, "lemmatizer": "none", "cache_path": cache}
    t = wikipedia_reference(vocab, None, tmp_path / "raw", reference=["a b the c", "c"], **kw)
    assert t.n_windows == 5 + 2 and cache.is_file() and t.meta["label"] == "wikipedia-slice"
    again = wikipedia_reference(vocab, None, tmp_path / "raw", reference=["x"], **kw)
    assert again.n_windows == 7  # reused, not recounted from ["x"]
    other = wikipedia_reference(vocab[:2], None, tmp_path / "raw", reference=["x"], **kw)
    assert other.n_windows == 2  # other vocabulary: recounted ("x": L + W - 1 = 2 windows)
    news = text_reference(["x y"], vocab[:2], None, tmp_path / "raw", label="20news-test", **kw)
    assert news.n_windows == 3 and news.meta["label"] == "20news-test"  # other reference: recounted
    wider = text_reference(
        ["x"], vocab[:2], None, tmp_path / "raw", label="20news-test", **{**kw, "window": 3}
    )
    assert wider.n_windows == 3  # other window: recounted


def test_npmi_agrees_with_tomotopy_where_conventions_agree() -> None:
    """tomotopy's c_npmi (Röder et al.'s sliding windows, NPMI with eps = 1e-12 inside the
    logs) on a corpus whose documents are shorter than the window: each document is then one
    window in both conventions (unpadded), and on pairs that co-occur eps is negligible."""
    tp_coherence = pytest.importorskip("tomotopy.coherence")
    import tomotopy as tp

    rng = np.random.default_rng(5)
    words = ["ant", "bee", "cat", "dog", "eel", "fox"]
    docs = [list(rng.choice(words, size=rng.integers(1, 8))) for _ in range(40)]
    corpus = tp.utils.Corpus()
    for d in docs:
        corpus.add_doc(words=d)
    co = tp_coherence.Coherence(corpus, coherence="c_npmi", window_size=10, targets=words)
    ours = build_cooccurrence([" ".join(d) for d in docs], words, plain_pre(frozenset()), window=10)
    checked = 0
    for a, b in itertools.combinations(words, 2):
        if ours.count(a, b) > 0:
            assert ours.npmi(a, b) == pytest.approx(co.get_score(words=[a, b]), abs=1e-9)
            checked += 1
    assert checked >= 10
    # document-level estimation on a bag-of-words corpus: the same numbers
    counts = np.array([[d.count(w) for w in words] for d in docs])
    dt = document_reference(counts, words)
    for a, b in itertools.combinations(words, 2):
        if dt.count(a, b) > 0:
            assert dt.npmi(a, b) == pytest.approx(ours.npmi(a, b))


def test_sparse_pair_counting_path_gives_the_same_counts(monkeypatch: pytest.MonkeyPatch) -> None:
    """Large vocabularies count pair keys with np.unique instead of a dense bincount."""
    import noisyor_bench.evaluation.pmi as pmi

    rng = np.random.default_rng(2)
    docs = [list(rng.integers(-1, 6, size=rng.integers(0, 25))) for _ in range(30)]
    vocab = ["a", "b", "c", "d", "e", "f"]
    dense = build_cooccurrence_from_ids(docs, vocab, window=20, padded=True)
    monkeypatch.setattr(pmi, "_DENSE_PAIR_LIMIT", 0)
    sparse = build_cooccurrence_from_ids(docs, vocab, window=20, padded=True)
    n, uni, pair = lau_counts([list(d) for d in docs], 6, 20)
    for t in (dense, sparse):
        assert t.n_windows == n
        np.testing.assert_array_equal(t.unigram, uni)
        assert {(int(i), int(j)): int(c) for i, j, c in zip(t.pair_i, t.pair_j, t.pair_count)} == pair
