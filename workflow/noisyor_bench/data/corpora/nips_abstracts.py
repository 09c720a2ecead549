"""NeurIPS abstracts: the SUBSTITUTE for the aviPAM paper's UCI NIPS bag of words (Tables 3-4).

The paper used the UCI "NIPS full papers" bag of words (1,500 papers, 12,419 words); no reachable
copy exists. The substitute, a documented and seeded choice:

* documents: the abstracts of ``neurips/nips_papers_1987_2019.csv`` that have one (not empty, not
  "Abstract Missing"), each paper id once (four ids repeat; the first row is kept);
* split: a permutation from ``numpy.random.default_rng(seed)`` of those abstracts; its first
  1,500 are the training documents (the paper's corpus size), the next ``n_test`` (default 1,000)
  the held-out documents of the internal NPMI reference; the rest are not used;
* the project's preprocessing (:mod:`noisyor_bench.data.corpora.preprocess`: lower case, ``[a-z]+``
  tokens, NLTK stop words removed before and after WordNet lemmatisation, noun then verb lemma),
  then the UCI NIPS rule: words occurring fewer than ``min_count`` times (tokens, default 5) in the
  *training* documents are dropped. The vocabulary is therefore far smaller than 12,419 (abstracts
  are ~100 tokens, full papers ~thousands): recorded in the sidecar and results/README.md.

Every result on these data is labelled "NIPS substitute (NeurIPS abstracts)".
"""

from __future__ import annotations

import csv
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from noisyor_bench.infra.errors import DataError

NAME = "nips"
LABEL = "NIPS substitute (NeurIPS abstracts)"
PAPER = {"documents": 1500, "vocabulary": 12419}
N_TRAIN = 1500
N_TEST = 1000
MIN_COUNT = 5
MISSING = "Abstract Missing"


@dataclass(frozen=True)
class Abstracts:
    ids: np.ndarray  # int64 paper ids
    years: np.ndarray  # int64
    texts: list[str]


def read_abstracts(path: str | Path) -> Abstracts:
    """Papers with an abstract, one per id (first occurrence), in file order."""
    p = Path(path)
    try:
        with p.open(encoding="utf-8", newline="") as fh:
            reader = csv.DictReader(fh)
            if not reader.fieldnames or not {"id", "year", "abstract"} <= set(reader.fieldnames):
                raise DataError(f"NeurIPS papers file {p}: expected columns id, year, abstract")
            ids, years, texts, seen = [], [], [], set()
            for row in reader:
                text = (row.get("abstract") or "").strip()
                if not text or text == MISSING or row["id"] in seen:
                    continue
                seen.add(row["id"])
                ids.append(int(row["id"]))
                years.append(int(row["year"]))
                texts.append(text)
    except (OSError, UnicodeDecodeError, csv.Error, ValueError) as err:
        raise DataError(f"NeurIPS papers file {p}: cannot be read ({err})") from None
    return Abstracts(np.asarray(ids, dtype=np.int64), np.asarray(years, dtype=np.int64), texts)


def split(n_docs: int, n_train: int, n_test: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(train, test) row indices: the first ``n_train`` / next ``n_test`` of a seeded permutation."""
    if n_train + n_test > n_docs:
        raise DataError(f"cannot take {n_train} training + {n_test} held-out abstracts out of {n_docs}")
    perm = np.random.default_rng(seed).permutation(n_docs)
    return perm[:n_train], perm[n_train : n_train + n_test]


def vocabulary(train_docs: Sequence[Sequence[str]], min_count: int) -> list[str]:
    """Words with at least ``min_count`` tokens in the training documents, sorted."""
    counts = Counter(w for d in train_docs for w in d)
    return sorted(w for w, c in counts.items() if c >= min_count)


def count_matrix(docs: Sequence[Sequence[str]], vocab: Sequence[str]) -> sp.csr_matrix:
    """CSR int32 (documents x vocabulary) token counts; words outside ``vocab`` are dropped."""
    index = {w: i for i, w in enumerate(vocab)}
    rows, cols = [], []
    for n, doc in enumerate(docs):
        ids = [index[w] for w in doc if w in index]
        rows += [n] * len(ids)
        cols += ids
    data = np.ones(len(rows), dtype=np.int32)
    m = sp.csr_matrix(
        (data, (np.asarray(rows, dtype=np.int64), np.asarray(cols, dtype=np.int64))), (len(docs), len(vocab))
    )
    m.sum_duplicates()
    return m


def token_sequences(docs: Sequence[Sequence[str]], vocab: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """The documents as ordered vocabulary ids (flat int32) and their lengths, for window NPMI.

    Out-of-vocabulary tokens are dropped (the remaining words keep their order).
    """
    index = {w: i for i, w in enumerate(vocab)}
    seqs = [[index[w] for w in d if w in index] for d in docs]
    flat = np.asarray([i for s in seqs for i in s], dtype=np.int32)
    return flat, np.asarray([len(s) for s in seqs], dtype=np.int64)


def build(
    abstracts: Abstracts,
    tokenize: Callable[[str], list[str]],
    seed: int,
    n_train: int = N_TRAIN,
    n_test: int = N_TEST,
    min_count: int = MIN_COUNT,
) -> dict[str, object]:
    """The substitute corpus: counts, ordered held-out tokens, vocabulary and the ids used."""
    train_idx, test_idx = split(len(abstracts.texts), n_train, n_test, seed)
    train_docs = [tokenize(abstracts.texts[i]) for i in train_idx]
    test_docs = [tokenize(abstracts.texts[i]) for i in test_idx]
    vocab = vocabulary(train_docs, min_count)
    if not vocab:
        raise DataError(f"NIPS substitute: no word occurs {min_count} times in the training abstracts")
    test_tokens, test_lengths = token_sequences(test_docs, vocab)
    train_tokens, train_lengths = token_sequences(train_docs, vocab)
    return {
        "train": count_matrix(train_docs, vocab),
        "test": count_matrix(test_docs, vocab),
        "vocab": vocab,
        "ids_train": abstracts.ids[train_idx],
        "ids_test": abstracts.ids[test_idx],
        "tokens_train": train_tokens,
        "lengths_train": train_lengths,
        "tokens_test": test_tokens,
        "lengths_test": test_lengths,
    }
