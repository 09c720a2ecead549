"""Pointwise mutual information of topic words (paper Section 4.5, Table 5).

Paper: PMI(w_i, w_j) = log p(w_i, w_j) / (p(w_i) p(w_j)), "p(w_i, w_j) is the probability
that words w_i and w_j cooccur in a 5-word window in any WIKIPEDIA document".  Precisely,
as implemented here (Newman et al. 2009 / Palmetto-style boolean sliding windows):

* the reference corpus goes through the same :class:`~.preprocess.Preprocessor` as the
  topic corpus (tokenize, lemmatize, stop words) and stop words are removed *before*
  windowing, so a window holds ``W`` consecutive content words;
* a document of ``L >= W`` tokens has the ``L - W + 1`` windows ``[s, s + W)``; a document of
  ``1 <= L < W`` tokens is one window; an empty document none; windows never cross documents;
* ``N`` = number of windows, ``n_i`` = windows containing ``w_i`` (at least once),
  ``n_ij`` = windows containing both; ``p(w_i) = n_i / N``, ``p(w_i, w_j) = n_ij / N``, so
  ``PMI = ln(n_ij N / (n_i n_j))`` -- natural log;
* undefined PMIs: a pair never seen together (``n_ij = 0``) is skipped from a topic's average
  by default and counted in ``pairs_skipped``; with ``eps`` given, ``n_ij`` is replaced by
  ``n_ij + eps`` for every pair instead.  A pair with a word absent from the reference
  (``n_i = 0``) is always skipped.

Counting runs once per reference corpus into a :class:`CooccurrenceTable` restricted to a
vocabulary; scoring a model's topics then is a table look-up.

Options for the NPMI topic coherence of Lau, Newman & Baldwin (2014) (aviPAM; see
:mod:`noisyor_bench.evaluation.coherence` for the defaults that paper's code uses).  All off
by default, so the PMI above is unchanged:

* ``padded=True`` -- windows padded at both ends, as Lau's ``ComputeWordCount.py`` slides
  them: a document of ``L >= 1`` tokens has ``L + W - 1`` windows, window ``t`` (``t = 1 ..
  L + W - 1``) holding tokens ``[max(0, t - W), min(t, L))`` -- the ``W - 1`` partial windows
  at the start and at the end included, a document shorter than ``W`` included in
  ``L + W - 1`` windows.  An empty document has none (Lau's script would add ``W - 1`` empty
  windows for a blank line; they change ``N`` only);
* ``stopwords_occupy_positions=True`` -- stop words keep their slot in the window (as a
  word outside the vocabulary) instead of being removed before windowing: Lau windows the
  tokenised reference text as it is;
* ``measure="npmi"`` when scoring -- ``NPMI = ln(n_ij N / (n_i n_j)) / -ln(n_ij / N)``, and
  a pair with ``n_ij = 0`` (or a word with ``n_i = 0``) scores 0 and stays in the topic's
  average (Lau's ``calc_assoc``); ``n_ij = N`` (both words in every window) scores 1.
"""

from __future__ import annotations

import bz2
import gzip
import itertools
import json
import logging
import lzma
import math
import re
import tarfile
import time
import zipfile
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from noisyor_bench.data.corpora.preprocess import Preprocessor
from noisyor_bench.infra.errors import ConfigError, DataError
from noisyor_bench.infra.io import load_npz, write_npz_atomic

log = logging.getLogger(__name__)

WINDOW = 5
_DOC_RE = re.compile(r"<doc\b[^>]*>(.*?)</doc>", re.S)
_TAR_SUFFIXES = (".tar", ".tar.gz", ".tgz", ".tar.xz", ".txz", ".tar.bz2", ".tbz2")


# ---------------------------------------------------------------------------- reference text
def split_documents(text: str) -> list[str]:
    """WikiExtractor output (``<doc ...> ... </doc>`` blocks) -> the block bodies (title line
    included); any other text -> one document per non-empty line."""
    if "<doc " in text:
        return _DOC_RE.findall(text)
    return [line for line in text.splitlines() if line.strip()]


def _open_text(path: Path) -> str:
    opener = {".gz": gzip.open, ".xz": lzma.open, ".bz2": bz2.open}.get(path.suffix, open)
    with opener(path, "rb") as fh:
        return fh.read().decode("utf-8", errors="replace")


def iter_reference_documents(path: str | Path) -> Iterator[str]:
    """Documents of a reference corpus: a tar archive or a directory of WikiExtractor files
    (every regular file), or a single WikiExtractor / plain-text file (optionally .gz/.xz/.bz2)."""
    p = Path(path)
    if not p.exists():
        raise DataError(
            f"PMI reference corpus {p}: not found (give a WikiExtractor dump, a directory or a text file)"
        )
    try:
        if p.is_dir():
            for f in sorted(q for q in p.rglob("*") if q.is_file()):
                yield from split_documents(_open_text(f))
        elif p.name.endswith(_TAR_SUFFIXES):
            with tarfile.open(p, "r:*") as tf:
                for member in tf:
                    if member.isfile():
                        fh = tf.extractfile(member)
                        assert fh is not None
                        yield from split_documents(fh.read().decode("utf-8", errors="replace"))
        else:
            yield from split_documents(_open_text(p))
    except (OSError, EOFError, tarfile.TarError, lzma.LZMAError, zipfile.BadZipFile) as err:
        raise DataError(f"PMI reference corpus {p}: cannot be read ({err})") from None


# ---------------------------------------------------------------------------- counting
def pad_documents(tokens: np.ndarray, lengths: np.ndarray, window: int) -> tuple[np.ndarray, np.ndarray]:
    """(tokens, lengths) with ``window - 1`` placeholders (-1) before and after every non-empty
    document: its full windows are then exactly Lau's ``L + W - 1`` padded windows."""
    lengths = np.asarray(lengths, dtype=np.int64)
    lengths = lengths[lengths > 0]
    pad = window - 1
    new_lengths = lengths + 2 * pad
    out = np.full(int(new_lengths.sum()), -1, dtype=np.int64)
    new_starts = np.concatenate([[0], np.cumsum(new_lengths)[:-1]]).astype(np.int64)
    old_starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
    doc_of = np.repeat(np.arange(lengths.size), lengths)
    offset = np.arange(doc_of.size) - old_starts[doc_of]
    out[new_starts[doc_of] + pad + offset] = np.asarray(tokens, dtype=np.int64)[: doc_of.size]
    return out, new_lengths


def n_windows_of(lengths: np.ndarray, window: int, padded: bool = False) -> int:
    """Number of windows of documents of these lengths (empty documents have none)."""
    lengths = np.asarray(lengths, dtype=np.int64)
    lengths = lengths[lengths > 0]
    if padded:
        return int((lengths + window - 1).sum())
    return int(np.maximum(1, lengths - window + 1).sum())


def window_matrix(tokens: np.ndarray, lengths: np.ndarray, window: int, padded: bool = False) -> np.ndarray:
    """All windows of a batch of documents as rows of ids (-1 = no vocabulary word).

    ``tokens`` is the concatenation of the documents' token ids (``-1`` for words outside
    the vocabulary) and ``lengths`` their lengths; zero-length documents have no window.
    ``padded``: Lau's ``L + W - 1`` windows per document (module docstring).
    """
    if padded:
        tokens, lengths = pad_documents(tokens, lengths, window)
    lengths = np.asarray(lengths, dtype=np.int64)
    lengths = lengths[lengths > 0]
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
    n_win = np.maximum(1, lengths - window + 1)
    doc_of = np.repeat(np.arange(lengths.size), n_win)
    first = np.concatenate([[0], np.cumsum(n_win)[:-1]]).astype(np.int64)
    s = starts[doc_of] + (np.arange(doc_of.size) - first[doc_of])
    padded = np.concatenate([tokens.astype(np.int64), np.full(window - 1, -1, dtype=np.int64)])
    offsets = np.arange(window)
    mat = padded[s[:, None] + offsets[None, :]]
    mat[offsets[None, :] >= lengths[doc_of][:, None]] = -1  # short documents: one padded window
    return mat


#: pair keys are counted with a dense bincount when V * V stays below this (else np.unique)
_DENSE_PAIR_LIMIT = 1 << 24


def count_windows(mat: np.ndarray, vocab_size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(unigram window counts (V,), pair keys i*V+j with i<j, their window counts).

    A word repeated inside a window counts once (boolean windows).  Rows are grouped by how
    many distinct words they hold, so the work is the number of pairs present, not
    ``W (W - 1) / 2`` column pairs per window (windows of 20 are mostly placeholders).
    """
    mat = mat[(mat >= 0).any(axis=1)]
    mat = np.sort(mat, axis=1)
    dup = np.zeros(mat.shape, dtype=bool)
    dup[:, 1:] = mat[:, 1:] == mat[:, :-1]
    mat[dup] = -1
    mat.sort(axis=1)  # placeholders first: a row's distinct words are its last ``c`` entries
    valid = mat >= 0
    unigram = np.bincount(mat[valid], minlength=vocab_size).astype(np.int64)
    n_valid = valid.sum(axis=1)
    width = mat.shape[1]
    keys = []
    for c in range(2, width + 1):
        rows = mat[n_valid == c, width - c :]
        if rows.shape[0] == 0:
            continue
        for a, b in itertools.combinations(range(c), 2):
            keys.append(rows[:, a] * vocab_size + rows[:, b])
    all_keys = np.concatenate(keys) if keys else np.zeros(0, dtype=np.int64)
    if vocab_size * vocab_size <= _DENSE_PAIR_LIMIT:
        dense = np.bincount(all_keys, minlength=vocab_size * vocab_size)
        uniq = np.flatnonzero(dense).astype(np.int64)
        return unigram, uniq, dense[uniq].astype(np.int64)
    uniq, counts = np.unique(all_keys, return_counts=True)
    return unigram, uniq, counts.astype(np.int64)


def _merge(parts: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    if not parts:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    keys = np.concatenate([k for k, _ in parts])
    counts = np.concatenate([c for _, c in parts])
    uniq, inverse = np.unique(keys, return_inverse=True)
    return uniq, np.bincount(inverse, weights=counts, minlength=uniq.size).astype(np.int64)


@dataclass
class CooccurrenceTable:
    """Window counts of a reference corpus, restricted to ``vocabulary``.

    ``pair_i < pair_j`` index ``vocabulary``; pairs never seen together are absent.
    """

    vocabulary: list[str]
    window: int
    n_windows: int
    unigram: np.ndarray
    pair_i: np.ndarray
    pair_j: np.ndarray
    pair_count: np.ndarray
    meta: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.count_seconds: float | None = None
        self.index = {w: i for i, w in enumerate(self.vocabulary)}
        if len(self.index) != len(self.vocabulary):
            raise DataError("co-occurrence table: duplicate words in the vocabulary")
        v = len(self.vocabulary)
        keys = self.pair_i.astype(np.int64) * v + self.pair_j.astype(np.int64)
        order = np.argsort(keys, kind="stable")
        self._keys, self._counts = keys[order], self.pair_count[order]

    def _id(self, word: str) -> int:
        try:
            return self.index[word]
        except KeyError:
            raise DataError(
                f"word {word!r} is not in the co-occurrence table's vocabulary ({len(self.vocabulary)} words); "
                "rebuild the table with 'noisyor-bench acp-pmi-counts --vocab' including it"
            ) from None

    def unigram_count(self, word: str) -> int:
        return int(self.unigram[self._id(word)])

    def count(self, w1: str, w2: str) -> int:
        """Windows containing both words (``w1 != w2``)."""
        i, j = sorted((self._id(w1), self._id(w2)))
        if i == j:
            raise ValueError(f"PMI of a word with itself ({w1!r}) is not defined here")
        key = i * len(self.vocabulary) + j
        pos = int(np.searchsorted(self._keys, key))
        return int(self._counts[pos]) if pos < self._keys.size and self._keys[pos] == key else 0

    def pmi(self, w1: str, w2: str, eps: float | None = None) -> float | None:
        """ln(n_ij N / (n_i n_j)); None when undefined (see the module docstring)."""
        n_ij = self.count(w1, w2)
        n_i, n_j = self.unigram_count(w1), self.unigram_count(w2)
        if n_i == 0 or n_j == 0:
            return None
        if eps is not None:
            n_ij_eff = n_ij + eps
        elif n_ij == 0:
            return None
        else:
            n_ij_eff = n_ij
        return math.log(n_ij_eff) + math.log(self.n_windows) - math.log(n_i) - math.log(n_j)

    def npmi(self, w1: str, w2: str) -> float:
        """Lau et al.'s NPMI: ``ln(n_ij N / (n_i n_j)) / -ln(n_ij / N)``; 0 when ``n_ij``,
        ``n_i`` or ``n_j`` is 0 (the pair still counts in a topic's average); 1 when
        ``n_ij = N`` (the limit of perfect co-occurrence; Lau's script divides by zero there).
        The logarithm's base cancels."""
        n_ij = self.count(w1, w2)
        n_i, n_j = self.unigram_count(w1), self.unigram_count(w2)
        if n_ij == 0 or n_i == 0 or n_j == 0:
            return 0.0
        if n_ij >= self.n_windows:
            return 1.0
        pmi = math.log(n_ij) + math.log(self.n_windows) - math.log(n_i) - math.log(n_j)
        return pmi / (math.log(self.n_windows) - math.log(n_ij))

    # ---------------------------------------------------------------- storage
    def save(self, path: str | Path) -> None:
        write_npz_atomic(
            path,
            vocabulary=np.asarray(self.vocabulary, dtype=str),
            window=np.int64(self.window),
            n_windows=np.int64(self.n_windows),
            unigram=self.unigram.astype(np.int64),
            pair_i=self.pair_i.astype(np.int32),
            pair_j=self.pair_j.astype(np.int32),
            pair_count=self.pair_count.astype(np.int64),
            meta_json=np.asarray(json.dumps(self.meta, sort_keys=True, default=str)),
        )

    @classmethod
    def load(cls, path: str | Path) -> CooccurrenceTable:
        p = Path(path)
        try:
            data = load_npz(p)
            return cls(
                vocabulary=[str(w) for w in data["vocabulary"]],
                window=int(data["window"]),
                n_windows=int(data["n_windows"]),
                unigram=data["unigram"].astype(np.int64),
                pair_i=data["pair_i"].astype(np.int64),
                pair_j=data["pair_j"].astype(np.int64),
                pair_count=data["pair_count"].astype(np.int64),
                meta=json.loads(str(data["meta_json"])),
            )
        except FileNotFoundError:
            raise DataError(
                f"co-occurrence table {p}: not found; build it with 'noisyor-bench acp-pmi-counts'"
            ) from None
        except (DataError, OSError, KeyError, ValueError, zipfile.BadZipFile) as err:
            raise DataError(
                f"co-occurrence table {p}: not a valid table ({err}); rebuild it with 'noisyor-bench acp-pmi-counts'"
            ) from None


_DROPPED = -2


class _TokenCodes(dict):  # type: ignore[type-arg]
    """raw token -> -2 (stop word, dropped), -1 (kept, outside the vocabulary) or the word id.

    A dict with ``__missing__`` so the hot loop is a C-level ``map(dict.__getitem__, ...)``
    and the pipeline runs once per distinct raw token.
    """

    def __init__(self, preprocessor: Preprocessor, index: dict[str, int]) -> None:
        super().__init__()
        self._pre, self._index = preprocessor, index

    def __missing__(self, token: str) -> int:
        w = self._pre.word(token)
        code = _DROPPED if w is None else self._index.get(w, -1)
        self[token] = code
        return code


def build_cooccurrence(
    reference_path: str | Path | Iterable[str],
    vocabulary: Sequence[str],
    preprocessor: Preprocessor,
    window: int = WINDOW,
    chunk_tokens: int = 2_000_000,
    padded: bool = False,
    stopwords_occupy_positions: bool = False,
    progress_every_tokens: int = 2_000_000,
) -> CooccurrenceTable:
    """Count windows of the reference corpus (a path, or an iterable of document texts).

    ``padded`` and ``stopwords_occupy_positions``: Lau's conventions (module docstring); off,
    the counts (and the saved table's bytes) are those of the PMI above.
    """
    if window < 2:
        raise ConfigError(f"window: must be >= 2 words, got {window}")
    vocab = list(vocabulary)
    index = {w: i for i, w in enumerate(vocab)}
    if len(index) != len(vocab):
        raise DataError("PMI vocabulary has duplicate words")
    v = len(vocab)
    docs = (
        iter_reference_documents(reference_path)
        if isinstance(reference_path, (str, Path))
        else reference_path
    )
    codes = _TokenCodes(preprocessor, index)
    t0 = time.perf_counter()
    unigram = np.zeros(v, dtype=np.int64)
    parts: list[tuple[np.ndarray, np.ndarray]] = []
    n_windows = n_docs = n_tokens = n_empty = 0
    buf: list[int] = []  # codes of the raw tokens of the pending documents
    raw_lengths: list[int] = []
    next_report = [progress_every_tokens]

    def flush() -> None:
        nonlocal n_windows, n_tokens, n_empty
        if not raw_lengths:
            return
        arr = np.asarray(buf, dtype=np.int64)
        if stopwords_occupy_positions:
            arr[arr == _DROPPED] = -1  # a stop word keeps its slot, as a word outside the vocabulary
        keep = arr != _DROPPED  # otherwise stop words leave no gap: removed before windowing
        doc = np.repeat(np.arange(len(raw_lengths)), raw_lengths)
        lens = np.bincount(doc[keep], minlength=len(raw_lengths)).astype(np.int64)
        n_tokens += int(lens.sum())
        n_empty += int((lens == 0).sum())
        n_windows += n_windows_of(lens, window, padded)
        uni, keys, counts = count_windows(window_matrix(arr[keep], lens, window, padded), v)
        unigram[:] += uni
        parts.append((keys, counts))
        if len(parts) > 8:
            parts[:] = [_merge(parts)]
        buf.clear()
        raw_lengths.clear()
        if n_tokens >= next_report[0]:
            next_report[0] = n_tokens + progress_every_tokens
            log.info(
                "co-occurrence counts: %d documents, %d tokens, %d windows so far (%.0f s)",
                n_docs,
                n_tokens,
                n_windows,
                time.perf_counter() - t0,
            )

    get = codes.__getitem__
    for text in docs:
        c = list(map(get, preprocessor.raw_tokens(text)))
        n_docs += 1
        buf.extend(c)
        raw_lengths.append(len(c))
        if len(buf) >= chunk_tokens:
            flush()
    flush()
    keys, counts = _merge(parts)
    seconds = time.perf_counter() - t0
    meta = {
        "reference": Path(reference_path).name if isinstance(reference_path, (str, Path)) else "<iterable>",
        "documents": n_docs,
        "empty_documents": n_empty,
        "tokens_after_preprocessing": n_tokens,
        "window": window,
        "preprocessing": preprocessor.options.to_dict(),
        "stopwords_removed_before_windowing": not stopwords_occupy_positions,
    }
    if padded:  # recorded only when on: the PMI tables' bytes stay as they were
        meta["padded_windows"] = True
    log.info(
        "PMI counts: %d documents, %d tokens, %d windows, %d pairs in %.1f s",
        n_docs,
        n_tokens,
        n_windows,
        keys.size,
        seconds,
    )
    table = CooccurrenceTable(
        vocabulary=vocab,
        window=window,
        n_windows=n_windows,
        unigram=unigram,
        pair_i=keys // max(v, 1),
        pair_j=keys % max(v, 1),
        pair_count=counts,
        meta=meta,
    )
    table.count_seconds = seconds  # not saved: the .npz stays byte-identical across runs
    return table


def _table_from_counts(
    vocab: list[str],
    window: int,
    n_windows: int,
    unigram: np.ndarray,
    keys: np.ndarray,
    counts: np.ndarray,
    meta: dict[str, Any],
) -> CooccurrenceTable:
    v = max(len(vocab), 1)
    return CooccurrenceTable(
        vocabulary=vocab,
        window=window,
        n_windows=n_windows,
        unigram=unigram,
        pair_i=keys // v,
        pair_j=keys % v,
        pair_count=counts,
        meta=meta,
    )


def build_cooccurrence_from_ids(
    documents: Iterable[Sequence[int] | np.ndarray],
    vocabulary: Sequence[str],
    window: int,
    padded: bool = False,
    chunk_tokens: int = 2_000_000,
) -> CooccurrenceTable:
    """Window counts of documents given as word-id sequences (ids index ``vocabulary``; ``-1``
    is a position holding a word outside it).  Same windows and conventions as
    :func:`build_cooccurrence`; for an internal reference corpus (held-out documents in order)."""
    if window < 2:
        raise ConfigError(f"window: must be >= 2 words, got {window}")
    vocab = list(vocabulary)
    if len(set(vocab)) != len(vocab):
        raise DataError("co-occurrence vocabulary has duplicate words")
    v = len(vocab)
    unigram = np.zeros(v, dtype=np.int64)
    parts: list[tuple[np.ndarray, np.ndarray]] = []
    n_windows = n_docs = n_tokens = 0
    buf: list[np.ndarray] = []
    lengths: list[int] = []

    def flush() -> None:
        nonlocal n_windows
        if not lengths:
            return
        arr = np.concatenate(buf) if buf else np.zeros(0, dtype=np.int64)
        lens = np.asarray(lengths, dtype=np.int64)
        n_windows += n_windows_of(lens, window, padded)
        uni, keys, counts = count_windows(window_matrix(arr, lens, window, padded), v)
        unigram[:] += uni
        parts.append((keys, counts))
        if len(parts) > 8:
            parts[:] = [_merge(parts)]
        buf.clear()
        lengths.clear()

    pending = 0
    for doc in documents:
        ids = np.asarray(doc, dtype=np.int64).ravel()
        if ids.size and (ids.min() < -1 or ids.max() >= v):
            raise DataError(
                f"document {n_docs}: word ids must lie in [-1, {v}); got {ids.min()}..{ids.max()}"
            )
        n_docs += 1
        n_tokens += int(ids.size)
        buf.append(ids)
        lengths.append(int(ids.size))
        pending += int(ids.size)
        if pending >= chunk_tokens:
            flush()
            pending = 0
    flush()
    keys, counts = _merge(parts)
    meta: dict[str, Any] = {
        "reference": "<token ids>",
        "documents": n_docs,
        "tokens": n_tokens,
        "window": window,
    }
    if padded:
        meta["padded_windows"] = True
    return _table_from_counts(vocab, window, n_windows, unigram, keys, counts, meta)


def document_cooccurrence(counts: Any, vocabulary: Sequence[str]) -> CooccurrenceTable:
    """Boolean *document* co-occurrence of a bag-of-words corpus (D x V counts, dense or
    scipy sparse): every non-empty document is one window (Lau's ``window_size = 0``), so
    ``N`` = non-empty documents, ``n_i`` = documents holding word i, ``n_ij`` = holding both.
    The only internal reference a corpus without word order allows.  ``window`` is 0."""
    import scipy.sparse as sp

    x = sp.csr_matrix(counts)
    vocab = list(vocabulary)
    if x.shape[1] != len(vocab):
        raise DataError(f"counts have {x.shape[1]} columns but the vocabulary has {len(vocab)} words")
    if x.nnz and x.data.min() < 0:
        raise DataError("counts must be non-negative")
    x.eliminate_zeros()
    b = (x > 0).astype(np.int64).tocsr()
    nonempty = int((b.getnnz(axis=1) > 0).sum())
    unigram = np.asarray(b.sum(axis=0)).ravel().astype(np.int64)
    co = sp.triu(b.T @ b, k=1).tocoo()
    v = max(len(vocab), 1)
    keys = co.row.astype(np.int64) * v + co.col.astype(np.int64)
    order = np.argsort(keys, kind="stable")
    meta: dict[str, Any] = {
        "reference": "<document co-occurrence>",
        "documents": int(x.shape[0]),
        "window": 0,
    }
    return _table_from_counts(vocab, 0, nonempty, unigram, keys[order], co.data.astype(np.int64)[order], meta)


# ---------------------------------------------------------------------------- topics
@dataclass(frozen=True)
class TopicPMI:
    value: float  # mean PMI over the defined pairs; nan if none is defined
    pairs_used: int
    pairs_skipped: int


def topic_pmi_details(table: CooccurrenceTable, words: Sequence[str], eps: float | None = None) -> TopicPMI:
    """Average pairwise PMI of a topic's words, with how many pairs were (un)defined."""
    if len(set(words)) != len(words):
        raise ValueError(f"topic words must be distinct: {list(words)}")
    values = [table.pmi(a, b, eps) for a, b in itertools.combinations(words, 2)]
    used = [x for x in values if x is not None]
    return TopicPMI(float(np.mean(used)) if used else math.nan, len(used), len(values) - len(used))


def topic_npmi_details(table: CooccurrenceTable, words: Sequence[str]) -> TopicPMI:
    """Lau's topic coherence: the mean NPMI over all pairs of the topic's words, a pair never
    seen together scoring 0.  ``pairs_used`` = pairs seen together, ``pairs_skipped`` = pairs
    scored 0 by that rule (they are *in* the mean)."""
    if len(set(words)) != len(words):
        raise ValueError(f"topic words must be distinct: {list(words)}")
    pairs = list(itertools.combinations(words, 2))
    if not pairs:
        return TopicPMI(math.nan, 0, 0)
    values = [table.npmi(a, b) for a, b in pairs]
    seen = sum(1 for a, b in pairs if table.count(a, b) > 0)
    return TopicPMI(float(np.mean(values)), seen, len(pairs) - seen)


def topic_pmi(table: CooccurrenceTable, words: Sequence[str], eps: float | None = None) -> float:
    """Average pairwise PMI of a topic's top words (nan if no pair is defined)."""
    return topic_pmi_details(table, words, eps).value


def model_topics(theta: np.ndarray, vocabulary: Sequence[str], top_n: int = 10) -> list[list[str]]:
    """Top words per latent variable: the largest theta_ik = p(x_i = 1 | z_k) (paper Sec. 4.5).

    ``theta`` is (D, K); ties go to the lower word index.
    """
    theta = np.asarray(theta)
    if theta.ndim != 2 or theta.shape[0] != len(vocabulary):
        raise DataError(
            f"theta has shape {theta.shape}; expected ({len(vocabulary)}, K) to match the vocabulary"
        )
    return [
        [vocabulary[i] for i in np.argsort(-theta[:, k], kind="stable")[:top_n]]
        for k in range(theta.shape[1])
    ]


@dataclass(frozen=True)
class TopicScores:
    per_topic: list[float]
    pairs_used: list[int]
    pairs_skipped: list[int]
    mean: float  # mean over topics whose PMI is defined

    def best(self, n: int = 4) -> list[int]:
        """Indices of the ``n`` topics with the highest PMI (Table 5 shows the best 4)."""
        vals = np.array([-np.inf if math.isnan(x) else x for x in self.per_topic])
        return [int(i) for i in np.argsort(-vals, kind="stable")[:n]]


MEASURES = ("pmi", "npmi")


def score_topics(
    table: CooccurrenceTable,
    topics: Sequence[Sequence[str]],
    eps: float | None = None,
    measure: str = "pmi",
) -> TopicScores:
    """Per-topic average pairwise PMI (or Lau's NPMI, ``measure="npmi"``) and their mean
    across topics."""
    if measure not in MEASURES:
        raise ConfigError(f"measure: {measure!r} is not allowed; allowed values: {list(MEASURES)}")
    if measure == "npmi":
        if eps is not None:
            raise ConfigError("eps: NPMI scores unseen pairs 0 (Lau et al. 2014); no smoothing eps applies")
        details = [topic_npmi_details(table, t) for t in topics]
    else:
        details = [topic_pmi_details(table, t, eps) for t in topics]
    vals = [d.value for d in details]
    defined = [x for x in vals if not math.isnan(x)]
    return TopicScores(
        per_topic=vals,
        pairs_used=[d.pairs_used for d in details],
        pairs_skipped=[d.pairs_skipped for d in details],
        mean=float(np.mean(defined)) if defined else math.nan,
    )
