"""PMI of topic words (paper Sec. 4.5, Table 5): window counts checked against hand counts
and a brute-force set-based count; storage round trip; CLI on a tiny reference corpus."""

from __future__ import annotations

import gzip
import io
import itertools
import json
import math
import tarfile
from pathlib import Path

import numpy as np
import pytest

from noisyor_bench.data.corpora.preprocess import PreprocessOptions, Preprocessor
from noisyor_bench.evaluation.pmi import (
    CooccurrenceTable,
    build_cooccurrence,
    count_windows,
    iter_reference_documents,
    model_topics,
    score_topics,
    split_documents,
    topic_pmi,
    topic_pmi_details,
    window_matrix,
)
from noisyor_bench.infra.errors import ConfigError, DataError

VOCAB = ["apple", "banana", "cherry", "date"]  # "egg" is a word outside the vocabulary

# Documents, one per line.  After removing the stop words {the, of} (before windowing):
#   A: apple banana cherry egg apple date   (L = 6)
#   B: banana banana                        (L = 2 < window: one window)
#   C: (empty)                              (no window)
#   D: date apple                           (L = 2: one window)
CORPUS = ["apple banana the cherry egg apple date", "banana banana", "the of", "date apple"]


def plain_pre() -> Preprocessor:
    """No lemmatizer, stop words {the, of}: every count below can be done by hand."""
    return Preprocessor(PreprocessOptions(lemmatizer="none", stopwords="before"), {"the", "of"}, None)


def test_hand_counts_window_3() -> None:
    # Windows of size 3:  A: {apple banana cherry} {banana cherry egg} {cherry egg apple}
    # {egg apple date};  B: {banana};  D: {date apple}.  N = 4 + 1 + 1 = 6.
    # n(apple)=4 (A1 A3 A4 D), n(banana)=3 (A1 A2 B), n(cherry)=3 (A1 A2 A3), n(date)=2 (A4 D)
    # n(apple,banana)=1 (A1), n(apple,cherry)=2 (A1 A3), n(apple,date)=2 (A4 D),
    # n(banana,cherry)=2 (A1 A2), n(banana,date)=0 (windows never cross A -> B), n(cherry,date)=0.
    t = build_cooccurrence(CORPUS, VOCAB, plain_pre(), window=3)
    assert t.n_windows == 6
    assert [t.unigram_count(w) for w in VOCAB] == [4, 3, 3, 2]
    expected = {
        ("apple", "banana"): 1,
        ("apple", "cherry"): 2,
        ("apple", "date"): 2,
        ("banana", "cherry"): 2,
        ("banana", "date"): 0,
        ("cherry", "date"): 0,
    }
    for (a, b), n in expected.items():
        assert t.count(a, b) == n and t.count(b, a) == n
    # natural log: PMI = ln(n_ij N / (n_i n_j))
    assert t.pmi("apple", "cherry") == pytest.approx(math.log(2 * 6 / (4 * 3)))  # = 0
    assert t.pmi("apple", "date") == pytest.approx(math.log(1.5))
    assert t.pmi("banana", "cherry") == pytest.approx(math.log(4 / 3))
    assert t.pmi("apple", "banana") == pytest.approx(math.log(0.5))
    assert t.pmi("banana", "date") is None
    assert (
        t.meta["documents"] == 4
        and t.meta["empty_documents"] == 1
        and t.meta["tokens_after_preprocessing"] == 10
    )


def test_hand_counts_window_5() -> None:
    # Windows of size 5: A: {apple banana cherry egg apple} {banana cherry egg apple date};
    # B: {banana}; D: {date apple}.  N = 4.
    t = build_cooccurrence(CORPUS, VOCAB, plain_pre(), window=5)
    assert t.n_windows == 4
    assert [t.unigram_count(w) for w in VOCAB] == [3, 3, 2, 2]
    assert [t.count(a, b) for a, b in itertools.combinations(VOCAB, 2)] == [2, 2, 2, 2, 1, 1]
    assert t.pmi("cherry", "date") == pytest.approx(math.log(1 * 4 / (2 * 2)))


def test_topic_pmi_skip_and_eps() -> None:
    t = build_cooccurrence(CORPUS, VOCAB, plain_pre(), window=3)
    # [apple, banana, cherry]: ln(1/2), ln(1), ln(4/3) -> mean ln(2/3)/3
    assert topic_pmi(t, ["apple", "banana", "cherry"]) == pytest.approx(math.log(2 / 3) / 3)
    # [banana, cherry, date]: two unseen pairs are skipped by default ...
    d = topic_pmi_details(t, ["banana", "cherry", "date"])
    assert (d.pairs_used, d.pairs_skipped) == (1, 2)
    assert d.value == pytest.approx(math.log(4 / 3))
    # ... or smoothed with n_ij + eps for every pair: ln(2.5*6/9), ln(0.5*6/6), ln(0.5*6/6)
    d = topic_pmi_details(t, ["banana", "cherry", "date"], eps=0.5)
    assert (d.pairs_used, d.pairs_skipped) == (3, 0)
    assert d.value == pytest.approx((math.log(15 / 9) + 2 * math.log(0.5)) / 3)


def test_word_absent_from_reference_and_unknown_word() -> None:
    t = build_cooccurrence(CORPUS, VOCAB + ["fig"], plain_pre(), window=3)
    assert t.unigram_count("fig") == 0
    assert t.pmi("fig", "apple") is None and t.pmi("fig", "apple", eps=1.0) is None
    assert math.isnan(topic_pmi(t, ["fig", "date"]))
    with pytest.raises(DataError, match="'kiwi' is not in the co-occurrence table"):
        t.pmi("kiwi", "apple")
    with pytest.raises(ValueError, match="distinct"):
        topic_pmi(t, ["apple", "apple"])


def _brute_force(docs: list[list[int]], v: int, w: int) -> tuple[int, np.ndarray, dict[tuple[int, int], int]]:
    """Independent count: explicit Python sets per window."""
    n, uni, pair = 0, np.zeros(v, dtype=np.int64), {}
    for d in docs:
        if not d:
            continue
        for s in range(max(1, len(d) - w + 1)):
            win = {x for x in d[s : s + w] if x >= 0}
            n += 1
            for x in win:
                uni[x] += 1
            for a, b in itertools.combinations(sorted(win), 2):
                pair[(a, b)] = pair.get((a, b), 0) + 1
    return n, uni, pair


@pytest.mark.parametrize("window", [2, 3, 5])
def test_matches_brute_force_on_random_corpus(window: int) -> None:
    rng = np.random.default_rng(7)
    words = ["ant", "bee", "cat", "dog", "eel", "fox", "gnu"]  # gnu stays outside the vocabulary
    vocab = words[:6]
    texts = [" ".join(rng.choice(words + ["the"], size=rng.integers(0, 13))) for _ in range(60)]
    docs = [[words.index(x) if x != "gnu" else -1 for x in t.split() if x != "the"] for t in texts]
    n, uni, pair = _brute_force(docs, len(vocab), window)
    # chunk_tokens=7 forces many flushes and merges of partial counts
    t = build_cooccurrence(texts, vocab, plain_pre(), window=window, chunk_tokens=7)
    assert t.n_windows == n
    np.testing.assert_array_equal(t.unigram, uni)
    got = {(int(i), int(j)): int(c) for i, j, c in zip(t.pair_i, t.pair_j, t.pair_count)}
    assert got == pair


def test_window_matrix_edges() -> None:
    # lengths 5 (== window: one window), 4 (< window: one padded window), 0 (none), 6 (two)
    tokens = np.array([0, 1, 2, 3, 4] + [5, 6, 7, 8] + [9, 10, 11, 12, 13, 14])
    mat = window_matrix(tokens, np.array([5, 4, 0, 6]), 5)
    expected = [[0, 1, 2, 3, 4], [5, 6, 7, 8, -1], [9, 10, 11, 12, 13], [10, 11, 12, 13, 14]]
    np.testing.assert_array_equal(mat, expected)
    # a repeated word counts once per window
    uni, keys, counts = count_windows(np.array([[1, 1, 0, -1, 1]]), 2)
    assert uni.tolist() == [1, 1] and keys.tolist() == [0 * 2 + 1] and counts.tolist() == [1]


def test_reference_formats(tmp_path: Path) -> None:
    wiki = '<doc id="1" url="?curid=1" title="A">\nA\n\napple banana\n</doc>\n<doc id="2" title="B">\ncherry\n</doc>\n'
    assert [d.split() for d in split_documents(wiki)] == [["A", "apple", "banana"], ["cherry"]]
    assert split_documents("apple\n\n  \nbanana cherry\n") == ["apple", "banana cherry"]
    (tmp_path / "dir" / "AA").mkdir(parents=True)
    (tmp_path / "dir" / "AA" / "wiki_00").write_text(wiki)
    (tmp_path / "dir" / "AA" / "wiki_01").write_text(wiki)
    assert len(list(iter_reference_documents(tmp_path / "dir"))) == 4
    with tarfile.open(tmp_path / "w.tar.xz", "w:xz") as tf:
        info = tarfile.TarInfo("text/AA/wiki_00")
        info.size = len(wiki.encode())
        tf.addfile(info, io.BytesIO(wiki.encode()))
    assert len(list(iter_reference_documents(tmp_path / "w.tar.xz"))) == 2
    (tmp_path / "plain.txt.gz").write_bytes(gzip.compress(b"apple banana\ncherry\n"))
    assert list(iter_reference_documents(tmp_path / "plain.txt.gz")) == ["apple banana", "cherry"]
    with pytest.raises(DataError, match="not found"):
        list(iter_reference_documents(tmp_path / "nope.txt"))
    with pytest.raises(ConfigError, match="window"):
        build_cooccurrence(["apple"], VOCAB, plain_pre(), window=1)


def test_save_load_round_trip(tmp_path: Path) -> None:
    t = build_cooccurrence(CORPUS, VOCAB, plain_pre(), window=3)
    t.save(tmp_path / "c.npz")
    u = CooccurrenceTable.load(tmp_path / "c.npz")
    assert u.vocabulary == VOCAB and u.window == 3 and u.n_windows == 6 and u.meta == t.meta
    for a, b in itertools.combinations(VOCAB, 2):
        assert u.count(a, b) == t.count(a, b) and u.pmi(a, b) == t.pmi(a, b)
    t.save(tmp_path / "d.npz")  # deterministic bytes
    assert (tmp_path / "c.npz").read_bytes() == (tmp_path / "d.npz").read_bytes()
    (tmp_path / "bad.npz").write_bytes(b"not a zip")
    with pytest.raises(DataError, match="not a valid table"):
        CooccurrenceTable.load(tmp_path / "bad.npz")
    with pytest.raises(DataError, match="not found"):
        CooccurrenceTable.load(tmp_path / "missing.npz")


def test_model_topics_and_scores() -> None:
    theta = np.array([[0.9, 0.1], [0.2, 0.8], [0.2, 0.7], [0.5, 0.0]])  # (D=4, K=2)
    topics = model_topics(theta, VOCAB, top_n=3)
    assert topics == [["apple", "date", "banana"], ["banana", "cherry", "apple"]]  # tie -> lower index
    with pytest.raises(DataError, match="shape"):
        model_topics(theta.T, VOCAB)
    t = build_cooccurrence(CORPUS, VOCAB, plain_pre(), window=3)
    s = score_topics(t, [["apple", "banana", "cherry"], ["banana", "cherry", "date"], ["cherry", "date"]])
    assert s.per_topic[0] == pytest.approx(math.log(2 / 3) / 3)
    assert s.per_topic[1] == pytest.approx(math.log(4 / 3))
    assert math.isnan(s.per_topic[2]) and s.pairs_skipped == [0, 2, 1]
    assert s.mean == pytest.approx((math.log(2 / 3) / 3 + math.log(4 / 3)) / 2)  # undefined topic left out
    assert s.best(2) == [1, 0]


def test_cli_pmi_counts_uses_corpus_preprocessing(tmp_path: Path, mirror: Path) -> None:
    """End to end with the real NLTK pipeline on a tiny reference: 'Networks' -> 'network',
    'based' -> 'base' (noun-verb, read from the corpus sidecar), stop words gone before windowing."""
    from noisyor_bench.cli import main

    (tmp_path / "toy.vocab.txt").write_text("base\nkernel\nnetwork\n")
    (tmp_path / "toy.json").write_text(
        json.dumps(
            {"preprocessing": {"lemmatizer": "noun-verb", "stopwords": "both", "token_pattern": "[a-z]+"}}
        )
    )
    # after preprocessing: [network, kernel, base] and [kernel, network, alpha, beta, base, gamma]
    # -> windows of 3: {network kernel base}; {kernel network alpha} {network alpha beta}
    # {alpha beta base} {beta base gamma}
    (tmp_path / "ref.txt").write_text(
        "The Networks of the kernels based\nkernel networks alpha beta based gamma\n"
    )
    out = tmp_path / "pmi" / "cooc.npz"
    rc = main(
        [
            "acp-pmi-counts",
            "--reference",
            str(tmp_path / "ref.txt"),
            "--vocab",
            str(tmp_path / "toy.vocab.txt"),
            "--raw-data-dir",
            str(mirror),
            "--cache-dir",
            str(tmp_path / "raw"),
            "--window",
            "3",
            "--out",
            str(out),
        ]
    )
    assert rc == 0
    t = CooccurrenceTable.load(out)
    assert t.n_windows == 5
    assert [t.unigram_count(w) for w in ["base", "kernel", "network"]] == [3, 2, 3]
    assert (
        t.count("kernel", "network") == 2
        and t.count("base", "network") == 1
        and t.count("base", "kernel") == 1
    )
    side = json.loads(out.with_suffix(".json").read_text())
    assert side["preprocessing"]["lemmatizer"] == "noun-verb" and side["n_windows"] == 5


def test_cli_pmi_counts_missing_reference(
    tmp_path: Path, mirror: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from noisyor_bench.cli import main

    (tmp_path / "toy.vocab.txt").write_text("kernel\n")
    rc = main(
        [
            "acp-pmi-counts",
            "--reference",
            str(tmp_path / "nowhere.tar.xz"),
            "--vocab",
            str(tmp_path / "toy.vocab.txt"),
            "--raw-data-dir",
            str(mirror),
            "--out",
            str(tmp_path / "c.npz"),
        ]
    )
    assert rc == 2
    assert "nowhere.tar.xz" in capsys.readouterr().err
