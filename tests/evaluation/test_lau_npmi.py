"""The aviPAM paper's coherence protocol: Lau et al.'s NPMI over a corpus's own text,
vocabulary tokens only -- checked against hand counts of a toy corpus, against a transliteration
of Lau's ``topic_interpretability`` scripts (``ComputeWordCount.py`` + ``ComputeObservedCoherence.py``,
string keys, log base 10) on a small text, and, with the raw-data mirror, the calibration row:
AVITM's published K = 50 topics scored over the 20 Newsgroups messages land within 0.02 of the
0.244 that Lau's scripts printed for them."""

from __future__ import annotations

import itertools
import math
import random
import tarfile
from pathlib import Path

import numpy as np
import pytest

from noisyor_bench.data import avitm_topics
from noisyor_bench.data.corpora import newsgroups
from noisyor_bench.evaluation.coherence import (
    corpus_text_reference,
    newsgroups_paper_reference,
    sequence_paper_reference,
    text_reference,
)
from noisyor_bench.evaluation.pmi import score_topics
from noisyor_bench.infra.errors import DataError

VOCAB = ["apple", "berry", "cherry", "date"]


def paper_table(texts: list[str], window: int = 3):
    return corpus_text_reference(texts, VOCAB, None, "toy", lemmatizer="none", window=window)


# ----------------------------------------------------------------- hand-computed toy corpus
def test_vocabulary_only_windows_and_zero_rule_by_hand() -> None:
    """Doc 1 "apple x berry apple y cherry" keeps [a, b, a, c]; with W = 3 its L + W - 1 = 6 padded
    windows are {a} {a,b} {a,b} {a,b,c} {a,c} {c}; doc 2 "berry cherry" has 4: {b} {b,c} {b,c} {c}.
    So N = 10, n_a = 5, n_b = 6, n_c = 6, n_ab = 3, n_ac = 2, n_bc = 3, and "date" never occurs."""
    table = paper_table(["apple xylophone berry apple yak cherry", "berry, cherry!"])
    assert table.n_windows == 10
    assert [table.unigram_count(w) for w in VOCAB] == [5, 6, 6, 0]
    assert (
        table.count("apple", "berry"),
        table.count("apple", "cherry"),
        table.count("berry", "cherry"),
    ) == (
        3,
        2,
        3,
    )
    assert table.count("apple", "date") == 0
    # NPMI = ln(n_ij N / (n_i n_j)) / -ln(n_ij / N)
    assert table.npmi("apple", "berry") == pytest.approx(0.0, abs=1e-15)  # 3 * 10 / (5 * 6) = 1
    assert table.npmi("apple", "cherry") == pytest.approx(math.log(20 / 30) / -math.log(2 / 10), rel=1e-12)
    assert table.npmi("berry", "cherry") == pytest.approx(math.log(30 / 36) / -math.log(3 / 10), rel=1e-12)
    # the zero rule: pairs with the unseen "date" score 0 and stay in the mean over the 6 pairs
    scores = score_topics(table, [VOCAB], measure="npmi")
    expected = (math.log(20 / 30) / math.log(5) + math.log(30 / 36) / math.log(10 / 3)) / 6
    assert scores.per_topic[0] == pytest.approx(expected, rel=1e-12)
    assert scores.pairs_skipped == [3] and scores.pairs_used == [3]


def test_dropping_other_words_differs_from_keeping_their_positions() -> None:
    """The protocol windows vocabulary tokens only: "apple x x x berry" has the pair inside a
    window of 3 here, while Lau on the raw text (placeholders keep their slots) never sees it."""
    from noisyor_bench.evaluation.coherence import reference_preprocessor
    from noisyor_bench.evaluation.pmi import build_cooccurrence

    text = ["apple xa xb xc berry"]
    assert paper_table(text).count("apple", "berry") == 2  # windows {a,b} at t = 2, 3
    kept = build_cooccurrence(
        text,
        VOCAB,
        reference_preprocessor(VOCAB, None, "none"),
        window=3,
        padded=True,
        stopwords_occupy_positions=True,
    )
    assert kept.count("apple", "berry") == 0


def test_sequence_reference_drops_out_of_vocabulary_positions() -> None:
    """The NIPS analogue: ordered ids with -1 for other words, the -1s dropped before windowing:
    the same counts as the toy text above."""
    table = sequence_paper_reference([[0, -1, 1, 0, -1, 2], [1, 2]], VOCAB, window=3)
    assert table.n_windows == 10
    assert [int(x) for x in table.unigram] == [5, 6, 6, 0]
    assert table.count("apple", "cherry") == 2 and table.count("berry", "cherry") == 3


# ----------------------------------------------------------------- Lau's scripts, transliterated
def lau_coherence(lines: list[str], topics: list[list[str]], window: int) -> list[float]:
    """ComputeWordCount.py then ComputeObservedCoherence.py (metric npmi, top 10), line by line:
    words outside the topics are index 0, window ``words[max(0, tail - W):tail]`` for tail in
    1 .. L + W - 1, a word (and a pair of related topic words) counted once per window, log10,
    0 for a pair with a zero count, the mean over a topic's pairs."""
    topic_words = {w for t in topics for w in t}
    related = {w: {u for t in topics if w in t for u in t if u != w} for w in topic_words}
    count: dict[str, int] = {}
    total = 0
    for line in lines:
        words = line.split()
        num_windows = len(words) + window - 1
        total += num_windows
        for tail in range(1, num_windows + 1):
            in_window = sorted({w for w in words[max(0, tail - window) : tail] if w in topic_words})
            for w in in_window:
                count[w] = count.get(w, 0) + 1
            for w1, w2 in itertools.combinations(in_window, 2):
                if w2 in related[w1]:
                    key = f"{w1}|{w2}"
                    count[key] = count.get(key, 0) + 1

    def assoc(w1: str, w2: str) -> float:
        both = count.get(f"{w1}|{w2}", count.get(f"{w2}|{w1}", 0))
        c1, c2 = count.get(w1, 0), count.get(w2, 0)
        if c1 == 0 or c2 == 0 or both == 0:
            return 0.0
        return math.log(both * total / (c1 * c2), 10) / -math.log(both / total, 10)

    return [float(np.mean([assoc(a, b) for a, b in itertools.combinations(t, 2)])) for t in topics]


def random_text(seed: int, n_docs: int = 40) -> list[str]:
    rng = random.Random(seed)
    words = [*VOCAB, "elder", "fig", "grape", "other", "stuff", "noise"]
    weights = [5, 4, 3, 1, 2, 2, 1, 6, 6, 6]
    return [" ".join(rng.choices(words, weights, k=rng.randint(1, 60))) for _ in range(n_docs)]


@pytest.mark.parametrize("seed", [0, 1])
def test_protocol_equals_lau_on_the_vocabulary_token_text(seed: int) -> None:
    """Lau's scripts run on the text reduced to its vocabulary tokens (AVITM's word-id documents)
    give the protocol's per-topic NPMI exactly (up to float rounding)."""
    vocab = [*VOCAB, "elder", "fig", "grape"]
    # documents without a vocabulary token are left out: Lau's loop would give such a blank line
    # W - 1 empty windows (N only), the protocol none (evaluation.pmi's docstring)
    texts = [t for t in random_text(seed) if any(w in vocab for w in t.split())]
    topics = [["apple", "berry", "cherry", "elder"], ["date", "fig", "grape", "apple", "berry"]]
    table = corpus_text_reference(texts, vocab, None, "toy", lemmatizer="none", window=7)
    ours = score_topics(table, topics, measure="npmi").per_topic
    reduced = [" ".join(w for w in t.split() if w in vocab) for t in texts]
    assert ours == pytest.approx(lau_coherence(reduced, topics, 7), rel=1e-9, abs=1e-12)
    # and Lau on the raw text (other words keep their slots) is the positions-kept reference
    kept = text_reference(texts, vocab, None, "", "toy", window=7, lemmatizer="none")
    assert score_topics(kept, topics, measure="npmi").per_topic == pytest.approx(
        lau_coherence(texts, topics, 7), rel=1e-9, abs=1e-12
    )
    assert ours != pytest.approx(score_topics(kept, topics, measure="npmi").per_topic)


# ----------------------------------------------------------------- 20 Newsgroups messages
def test_message_body_drops_the_header_also_in_tab_mangled_files() -> None:
    assert (
        newsgroups.message_body("From: a@b\nSubject: cars\nLines: 2\n\nthe body\n\nmore")
        == "the body\n\nmore"
    )
    assert (
        newsgroups.message_body("From: a@b\tSubject: cars\tLines: 2\t\tthe body\t\tmore")
        == "the body\t\tmore"
    )
    assert newsgroups.message_body("no header at all") == "no header at all"


def test_read_messages_train_then_test(tmp_path: Path) -> None:
    import io

    path = tmp_path / "m.tar.xz"
    with tarfile.open(path, "w:xz") as tf:
        for name, text in [
            ("20news-bydate-test/sci.space/3", "Subject: x\n\nmoon"),
            ("20news-bydate-train/sci.space/9", "Subject: y\n\nrocket"),
            ("20news-bydate-train/README", "not a message"),
        ]:
            data = text.encode("latin-1")
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    assert newsgroups.read_messages(path) == ["rocket", "moon"]
    empty = tmp_path / "e.tar.xz"
    with tarfile.open(empty, "w:xz"):
        pass
    with pytest.raises(DataError, match="no member matches"):
        newsgroups.read_messages(empty)


# ----------------------------------------------------------------- the calibration row (a)
def test_published_topics_file_is_avitms() -> None:
    source, runs = avitm_topics.load()
    assert source["commit"] == "6066f5581c236b84ff0b7b56496d8823ebff752a"
    assert [len(r.words) for r in runs] == [50, 50, 50]
    assert all(len(t) == 10 and len(set(t)) == 10 for r in runs for t in r.words)
    # the printed per-topic values (2 decimals) average to the logged run averages
    for r in runs:
        assert np.mean(r.logged_npmi) == pytest.approx(r.logged_average, abs=0.005)
    assert np.mean([r.logged_average for r in runs]) == pytest.approx(0.244, abs=0.0005)


def test_topic_matrix_keeps_the_published_order() -> None:
    from noisyor_bench.evaluation.coherence import top_words

    words = [["cherry", "apple", "date"], ["berry", "date", "apple"]]
    matrix = avitm_topics.topic_matrix(words, VOCAB)
    assert np.allclose(matrix.sum(axis=1), 1.0)
    assert top_words(matrix, VOCAB, 3) == words
    with pytest.raises(DataError, match="not in the corpus vocabulary"):
        avitm_topics.topic_matrix([["kiwi"]], VOCAB)


def test_avitm_published_topics_score_0244_under_the_protocol(mirror: Path, tmp_path: Path) -> None:
    """Calibration row (a): the product's protocol on AVITM's own topics gives Lau's number for
    them within 0.02 (mean of the three runs), and per topic it tracks AVITM's log (r > 0.8)."""
    vocab = newsgroups.read_vocab(mirror / "20news" / "vocab.new")
    table = newsgroups_paper_reference(vocab, mirror, tmp_path)
    _, runs = avitm_topics.load()
    means = []
    for r in runs:
        scores = score_topics(table, r.words, measure="npmi")
        means.append(scores.mean)
        assert np.corrcoef(scores.per_topic, r.logged_npmi)[0, 1] > 0.8
    assert np.mean(means) == pytest.approx(0.244, abs=0.02)
