"""20 Newsgroups as bags of words in the NVDM/AVITM form (aviPAM paper, Tables 1-2).

The aviPAM paper's 20 Newsgroups ("12,000 documents, 2,000 words") is the preprocessed corpus of
Miao et al. (2016) that AVITM (Srivastava & Sutton 2017) trained on; the mirror holds it as
``train.feat`` / ``test.feat`` (one document a line: ``label id:count id:count ...``, ids
1-based into ``vocab.new``) and ``vocab.new`` (1,995 lines ``word 0``).

Reading used here:

* word id ``i`` (1-based) is column ``i - 1`` of the count matrix, so the columns follow
  ``vocab.new`` line by line. Line 1 is ``_eos_`` (NVDM's end-of-sentence token); it never
  occurs in a document, and it is *kept* as an always-zero column so column indices equal the
  AVITM vocabulary's (:func:`read_newsgroups` checks that it is never used).
* the leading label (the newsgroup, 1..20) is kept as ``labels_*``.
* lines without any ``id:count`` pair are skipped (the mirror has none; AVITM drops empty
  documents too). The result: 11,258 training and 7,487 test documents.
"""

from __future__ import annotations

import re
import tarfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from noisyor_bench.infra.errors import DataError

NAME = "20news"
EXPECTED = {"train_documents": 11258, "test_documents": 7487, "vocabulary": 1995, "train_tokens": 991493}
EOS = "_eos_"
#: members of the raw 20news-bydate archive (raw key ``20news-bydate-text``) that are messages
MESSAGE_MEMBER = re.compile(r"20news-bydate-(train|test)/[^/]+/[0-9]+")
#: the blank line that ends a message's header; the mirror's train files hold tabs for newlines,
#: so a blank line there is two tabs
_HEADER_END = re.compile(r"\n[ \t]*\n|\t\t")


@dataclass(frozen=True)
class BagOfWords:
    """One split: ``counts`` (documents x vocabulary, CSR int32) and the documents' labels."""

    counts: sp.csr_matrix
    labels: np.ndarray  # int64


def read_vocab(path: str | Path) -> list[str]:
    """``vocab.new``: one ``word count`` a line; returns the words in line order."""
    p = Path(path)
    try:
        lines = p.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as err:
        raise DataError(f"20 Newsgroups vocabulary {p}: cannot be read ({err})") from None
    words = []
    for lineno, line in enumerate(lines, start=1):
        parts = line.split()
        if not parts:
            raise DataError(f"20 Newsgroups vocabulary {p}, line {lineno}: empty line")
        words.append(parts[0])
    if len(set(words)) != len(words):
        raise DataError(f"20 Newsgroups vocabulary {p}: repeated words")
    return words


def read_feat(path: str | Path, vocab_size: int) -> BagOfWords:
    """A ``.feat`` file as a CSR count matrix (module docstring for the conventions)."""
    p = Path(path)
    rows, cols, vals, labels = [], [], [], []
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise DataError(f"20 Newsgroups file {p}: cannot be read ({err})") from None
    doc = 0
    for lineno, line in enumerate(text.splitlines(), start=1):
        parts = line.split()
        if len(parts) < 2:
            continue  # an empty document
        try:
            label = int(parts[0])
            pairs = [tuple(int(x) for x in item.split(":")) for item in parts[1:]]
        except ValueError:
            raise DataError(f"20 Newsgroups file {p}, line {lineno}: expected 'label id:count ...'") from None
        for word_id, count in pairs:
            if not 1 <= word_id <= vocab_size or count < 1:
                raise DataError(
                    f"20 Newsgroups file {p}, line {lineno}: id {word_id} outside 1..{vocab_size} or count {count} < 1"
                )
            rows.append(doc)
            cols.append(word_id - 1)
            vals.append(count)
        labels.append(label)
        doc += 1
    counts = sp.csr_matrix(
        (np.asarray(vals, dtype=np.int32), (np.asarray(rows), np.asarray(cols))), shape=(doc, vocab_size)
    )
    counts.sum_duplicates()
    return BagOfWords(counts=counts, labels=np.asarray(labels, dtype=np.int64))


def read_newsgroups(
    train_path: str | Path, test_path: str | Path, vocab_path: str | Path
) -> tuple[BagOfWords, BagOfWords, list[str]]:
    """(train, test, vocabulary); :class:`DataError` if ``_eos_`` is used or the files disagree."""
    vocab = read_vocab(vocab_path)
    train = read_feat(train_path, len(vocab))
    test = read_feat(test_path, len(vocab))
    if vocab and vocab[0] == EOS:
        used = int(train.counts[:, 0].sum() + test.counts[:, 0].sum())
        if used:
            raise DataError(f"20 Newsgroups: {EOS} (id 1) occurs {used} times; the NVDM files never use it")
    return train, test, vocab


def message_body(text: str) -> str:
    """A raw message without its mail header (``From:`` ... ``Lines:``): the text after the first
    blank line (:data:`_HEADER_END`), or all of it when there is none.  The NVDM/AVITM documents
    have no headers: "subject" is in 5.6% of their training documents, "organization" in 2.7%."""
    match = _HEADER_END.search(text)
    return text[match.end() :] if match else text


def read_messages(path: str | Path) -> list[str]:
    """The bodies (:func:`message_body`) of every message of the raw 20news-bydate archive, train
    then test, in member-name order (latin-1: a few messages are not UTF-8)."""
    p = Path(path)
    bodies: list[tuple[str, str]] = []
    try:
        with tarfile.open(p, "r:*") as tf:
            for member in tf:
                if member.isfile() and MESSAGE_MEMBER.fullmatch(member.name):
                    fh = tf.extractfile(member)
                    assert fh is not None
                    bodies.append((member.name, message_body(fh.read().decode("latin-1"))))
    except (OSError, EOFError, tarfile.TarError) as err:
        raise DataError(f"20 Newsgroups messages {p}: cannot be read ({err})") from None
    if not bodies:
        raise DataError(f"20 Newsgroups messages {p}: no member matches {MESSAGE_MEMBER.pattern!r}")
    bodies.sort(key=lambda nb: (not nb[0].startswith("20news-bydate-train"), nb[0]))
    return [body for _, body in bodies]
