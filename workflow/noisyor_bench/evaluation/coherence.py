"""Topic coherence as the aviPAM paper cites it (Lau, Newman & Baldwin 2014): NPMI of the
top-10 words of each topic, averaged over topics.

The counting and the NPMI rule live in :mod:`noisyor_bench.evaluation.pmi` (one window
counter for the project); this module fixes Lau's conventions (his ``topic_interpretability``
scripts) and builds the reference corpora:

* windows of 20 tokens (``ComputeWordCount.py``: ``window_size = 20``), padded at both ends
  (``L + W - 1`` windows per document), boolean (a word counts once per window);
* every token of the reference text occupies a window position (Lau windows the tokenised
  text; words outside the topics are placeholders), so stop words keep their slots;
* NPMI of a pair that never co-occurs (or with a word absent from the reference) is 0 and
  stays in the topic's mean over its 45 pairs; coherence = mean over topics.

Reference corpora (docs/avipam.md, "Coherence"):

* paper -- THE PRIMARY METRIC, the aviPAM paper's protocol: the aviPAM paper's LDA rows
  are AVITM's (Srivastava & Sutton 2017), scored with Lau's scripts over the 20 Newsgroups corpus
  itself (a topic of uuencoded junk scores 0.38 in AVITM's log, possible only inside 20NG).  Here:
  the raw 20news-bydate messages, train + test (18,846; raw key ``20news-bydate-text``), without
  their mail headers (:func:`~noisyor_bench.data.corpora.newsgroups.message_body`), tokenised with
  ``[a-z]+``, a token kept only when it maps to a vocabulary word (surface form, else its WordNet
  lemma: "scsi" -> "scsus" as in AVITM's vocabulary) and every other token dropped BEFORE
  windowing (:class:`VocabularyOnlyPreprocessor`): windows of 20 vocabulary tokens, as AVITM's
  word-id documents.  For the NIPS substitute the analogous reference is the substitute corpus's
  own text: its train + test abstracts as ordered vocabulary ids (``tokens_*`` of the corpus file,
  already vocabulary tokens only), the same windows (:func:`sequence_paper_reference`).
  Calibration (tests/evaluation/test_lau_npmi.py; Table 1's row "AVITM published topics"): AVITM's
  three published K = 50 topic sets score 0.234 / 0.221 / 0.234 here (Lau's scripts logged 0.251 /
  0.231 / 0.251; mean 0.230 vs 0.244), per-topic r 0.85 / 0.86 / 0.90 with AVITM's logged values.
  Other readings measured (whole messages with headers 0.225 mean; positions of other words
  kept 0.186; one line or sentence a document 0.14 / 0.20; train messages only 0.231) are no
  closer, so the remaining ~0.015 is AVITM's unpublished text preprocessing;
* external -- the mirror's Wikipedia slice (raw-input key ``wikipedia-slice``), tokenised with
  the project's ``[a-z]+`` tokenizer; a token counts as vocabulary word ``w`` if it *is*
  ``w``, otherwise if its lemma (WordNet, noun then verb) is ``w`` -- so a vocabulary holding
  both "window" and "windows" (20 Newsgroups' NVDM vocabulary does) counts each surface form;
* internal, ordered -- held-out documents as word-id sequences (:func:`token_id_reference`);
* internal, bag of words -- boolean document co-occurrence (:func:`document_reference`): the
  NVDM 20 Newsgroups files have no word order, so windows are impossible on them.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from noisyor_bench.data.corpora.preprocess import PreprocessOptions, Preprocessor, load_resources
from noisyor_bench.evaluation.pmi import (
    CooccurrenceTable,
    TopicScores,
    build_cooccurrence,
    build_cooccurrence_from_ids,
    document_cooccurrence,
    score_topics,
)
from noisyor_bench.infra.errors import DataError

log = logging.getLogger(__name__)

LAU_WINDOW = 20
LAU_TOP_N = 10
WIKIPEDIA_KEY = "wikipedia-slice"
MESSAGES_KEY = "20news-bydate-text"
#: the reference corpora of aviPAM's tables, the paper's protocol first (module docstring)
REFERENCES = ("paper", "external", "internal")


class VocabularyFirstPreprocessor(Preprocessor):
    """Tokens map to a vocabulary word by their surface form first, then by their lemma.

    No stop words are dropped (they occupy window positions and are never vocabulary words
    unless the vocabulary says so).
    """

    def __init__(self, vocabulary: Iterable[str], lemmatizer: str, lemmatize: Any) -> None:
        options = PreprocessOptions(lemmatizer=lemmatizer, stopwords="before")
        super().__init__(options, frozenset(), lemmatize)
        self._vocab = frozenset(vocabulary)

    def word(self, token: str) -> str | None:
        if token in self._vocab:
            return token
        return super().word(token)


class VocabularyOnlyPreprocessor(VocabularyFirstPreprocessor):
    """:class:`VocabularyFirstPreprocessor` that drops every token that is no vocabulary word,
    so windows hold vocabulary tokens only (the paper protocol's reference text)."""

    def word(self, token: str) -> str | None:
        out = super().word(token)
        return out if out in self._vocab else None


def reference_preprocessor(
    vocabulary: Iterable[str], nltk_dir: str | Path | None, lemmatizer: str = "noun-verb"
) -> VocabularyFirstPreprocessor:
    """The reference-text pipeline for a topic vocabulary (``lemmatizer="none"``: no NLTK)."""
    lemmatize = None
    if lemmatizer != "none":
        if nltk_dir is None:
            raise DataError(f"lemmatizer {lemmatizer!r} needs the NLTK data directory (nltk_data_dir())")
        lemmatize = load_resources(nltk_dir).lemmatize
    return VocabularyFirstPreprocessor(vocabulary, lemmatizer, lemmatize)


def _cache_matches(
    table: CooccurrenceTable, vocabulary: Sequence[str], window: int, meta: dict[str, Any]
) -> bool:
    return (
        table.vocabulary == list(vocabulary)
        and table.window == window
        and all(table.meta.get(k) == v for k, v in meta.items())
    )


def text_reference(
    reference: str | Path | Iterable[str],
    vocabulary: Sequence[str],
    raw_data_dir: str | Path | None,
    cache_dir: str | Path,
    label: str,
    window: int = LAU_WINDOW,
    lemmatizer: str = "noun-verb",
    cache_path: str | Path | None = None,
) -> CooccurrenceTable:
    """Lau-convention window counts of a text reference corpus for ``vocabulary``.

    ``reference``: a path (WikiExtractor dump, directory, text file; see
    :func:`~noisyor_bench.evaluation.pmi.iter_reference_documents`) or an iterable of
    document texts (e.g. the raw 20 Newsgroups test messages).  ``label`` names it in the
    table's meta; ``cache_path``: a ``.npz`` reused when it holds the same label, vocabulary,
    window and pipeline (else recounted and written atomically).
    """
    from noisyor_bench.data.corpora.preprocess import nltk_data_dir

    expect = {"padded_windows": True, "lemmatizer": lemmatizer, "vocabulary_first": True, "label": label}
    if cache_path is not None and Path(cache_path).is_file():
        cached = CooccurrenceTable.load(cache_path)
        if _cache_matches(cached, vocabulary, window, expect):
            log.info("co-occurrence counts reused from %s", cache_path)
            return cached
        log.info("co-occurrence cache %s was built for other settings: recounting", cache_path)
    nltk_dir = nltk_data_dir(raw_data_dir, cache_dir) if lemmatizer != "none" else None
    pre = reference_preprocessor(vocabulary, nltk_dir, lemmatizer)
    log.info(
        "counting %d-token windows (padded, Lau 2014) for %d words in %s", window, len(vocabulary), label
    )
    t0 = time.perf_counter()
    table = build_cooccurrence(
        reference, vocabulary, pre, window=window, padded=True, stopwords_occupy_positions=True
    )
    seconds = time.perf_counter() - t0
    table.meta.update({"lemmatizer": lemmatizer, "vocabulary_first": True, "label": label})
    log.info("%s co-occurrence counts: %d windows in %.1f s", label, table.n_windows, seconds)
    if cache_path is not None:
        table.save(cache_path)
    table.count_seconds = seconds
    return table


def wikipedia_reference(
    vocabulary: Sequence[str],
    raw_data_dir: str | Path | None,
    cache_dir: str | Path,
    window: int = LAU_WINDOW,
    lemmatizer: str = "noun-verb",
    cache_path: str | Path | None = None,
    reference: str | Path | Iterable[str] | None = None,
) -> CooccurrenceTable:
    """:func:`text_reference` on the mirror's Wikipedia slice (raw key ``wikipedia-slice``).

    ``reference`` overrides the slice (tests).  Counting the 9.3M-token slice takes
    about 30 s of CPU (docs/avipam.md).
    """
    from noisyor_bench.data.rawdata import fetch

    source = reference if reference is not None else fetch(WIKIPEDIA_KEY, raw_data_dir, cache_dir)
    return text_reference(
        source, vocabulary, raw_data_dir, cache_dir, WIKIPEDIA_KEY, window, lemmatizer, cache_path
    )


def corpus_text_reference(
    texts: Iterable[str],
    vocabulary: Sequence[str],
    nltk_dir: str | Path | None,
    label: str,
    lemmatizer: str = "noun-verb",
    window: int = LAU_WINDOW,
) -> CooccurrenceTable:
    """The paper protocol's counts over a corpus's own text: Lau's padded windows over the
    vocabulary tokens of each document (:class:`VocabularyOnlyPreprocessor`)."""
    if lemmatizer != "none" and nltk_dir is None:
        raise DataError(f"lemmatizer {lemmatizer!r} needs the NLTK data directory (nltk_data_dir())")
    lemmatize = load_resources(nltk_dir).lemmatize if nltk_dir is not None and lemmatizer != "none" else None
    pre = VocabularyOnlyPreprocessor(vocabulary, lemmatizer, lemmatize)
    t0 = time.perf_counter()
    table = build_cooccurrence(texts, vocabulary, pre, window=window, padded=True)
    table.meta.update(
        {"lemmatizer": lemmatizer, "vocabulary_tokens_only": True, "label": label, "protocol": "paper"}
    )
    table.count_seconds = time.perf_counter() - t0
    log.info("%s co-occurrence counts: %d windows in %.1f s", label, table.n_windows, table.count_seconds)
    return table


def newsgroups_paper_reference(
    vocabulary: Sequence[str],
    raw_data_dir: str | Path | None,
    cache_dir: str | Path,
    messages: str | Path | Iterable[str] | None = None,
) -> CooccurrenceTable:
    """The paper protocol's reference for 20 Newsgroups: :func:`corpus_text_reference` over the
    raw messages' bodies (raw key ``20news-bydate-text``; ``messages`` overrides: a path to such
    an archive or the texts).  About 40 s of CPU."""
    from noisyor_bench.data.corpora.newsgroups import read_messages
    from noisyor_bench.data.corpora.preprocess import nltk_data_dir
    from noisyor_bench.data.rawdata import fetch

    if messages is None:
        messages = fetch(MESSAGES_KEY, raw_data_dir, cache_dir)
    texts = read_messages(messages) if isinstance(messages, (str, Path)) else messages
    table = corpus_text_reference(
        texts, vocabulary, nltk_data_dir(raw_data_dir, cache_dir), "20news-bydate messages"
    )
    table.meta["reference"] = (
        "paper protocol: 20news-bydate train + test messages (no headers), vocabulary tokens only, "
        "20-token padded windows"
    )
    return table


def sequence_paper_reference(
    documents: Iterable[Sequence[int] | np.ndarray], vocabulary: Sequence[str], window: int = LAU_WINDOW
) -> CooccurrenceTable:
    """The paper protocol over ordered word-id documents (the NIPS substitute's train + test):
    positions outside the vocabulary (``-1``) are dropped before windowing."""
    kept = (np.asarray(d, dtype=np.int64)[np.asarray(d, dtype=np.int64) >= 0] for d in documents)
    table = build_cooccurrence_from_ids(kept, vocabulary, window=window, padded=True)
    table.meta.update({"vocabulary_tokens_only": True, "protocol": "paper"})
    return table


def token_id_reference(
    documents: Iterable[Sequence[int] | np.ndarray], vocabulary: Sequence[str], window: int = LAU_WINDOW
) -> CooccurrenceTable:
    """Internal reference from ordered documents (word ids, -1 = other word): Lau's windows."""
    return build_cooccurrence_from_ids(documents, vocabulary, window=window, padded=True)


def document_reference(counts: Any, vocabulary: Sequence[str]) -> CooccurrenceTable:
    """Internal reference from a bag-of-words matrix: document co-occurrence (window = doc)."""
    return document_cooccurrence(counts, vocabulary)


def top_word_ids(topic_word: np.ndarray, top_n: int = LAU_TOP_N) -> np.ndarray:
    """(K, top_n) int64 word ids of each row of a (K, V) topic-word matrix, most probable first
    (ties: lower id first)."""
    matrix = np.asarray(topic_word, dtype=np.float64)
    if matrix.ndim != 2:
        raise DataError(f"topic-word matrix has shape {matrix.shape}; expected (K, V)")
    return np.argsort(-matrix, axis=1, kind="stable")[:, :top_n].astype(np.int64)


def top_words(topic_word: np.ndarray, vocabulary: Sequence[str], top_n: int = LAU_TOP_N) -> list[list[str]]:
    """The ``top_n`` most probable words of each row of a (K, V) topic-word matrix (ties: lower id)."""
    matrix = np.asarray(topic_word)
    if matrix.ndim != 2 or matrix.shape[1] != len(vocabulary):
        raise DataError(f"topic-word matrix has shape {matrix.shape}; expected (K, {len(vocabulary)})")
    return [[vocabulary[i] for i in row] for row in top_word_ids(matrix, top_n)]


def topic_coherence(
    table: CooccurrenceTable, topic_word: np.ndarray, vocabulary: Sequence[str], top_n: int = LAU_TOP_N
) -> TopicScores:
    """NPMI coherence (Lau 2014) of every topic of a (K, V) matrix and their mean.

    ``vocabulary`` indexes the matrix's columns; the table must hold every top word.
    """
    return score_topics(table, top_words(topic_word, vocabulary, top_n), measure="npmi")
