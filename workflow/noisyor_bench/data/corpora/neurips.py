"""NeurIPS titles 1987-2017 as binary bag-of-words vectors (paper Section 4.5).

Paper: "After word lemmatization, removing stop words, the 5 most common words and the words
with less than 5 occurrences in the whole corpus, we obtain a dataset with 7241 data points
and 1216 unique words. The average length of the paper title is 4.49 after preprocessing.
We use 1000 data points for validation, 1000 for testing, and the remaining ones for training."

Reading used here: the steps run in the paper's order (lemmatize, stop words, top 5, < 5);
"occurrences" are documents containing the word (the data are binary presence vectors);
titles left empty keep an all-zero row (the paper keeps 7,241 points).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from noisyor_bench.data.corpora.preprocess import (
    LEMMATIZERS,
    STOPWORD_STAGES,
    PreprocessOptions,
    Preprocessor,
    TextResources,
    binary_matrix,
    document_frequency,
    preprocessing_record,
    select_vocabulary,
    split_sizes,
    text_sidecar,
    token_frequency,
)
from noisyor_bench.infra.errors import DataError

NAME = "neurips-titles"
PAPER = {
    "documents": 7241,
    "vocabulary": 1216,
    "average_length": 4.49,
    "n_train": 5241,
    "n_val": 1000,
    "n_test": 1000,
}
MIN_COUNT = 5
DROP_TOP = 5
N_VAL = 1000
N_TEST = 1000
HEADER = ["id", "year", "title"]


@dataclass(frozen=True)
class Titles:
    ids: np.ndarray  # int64, the papers.nips.cc / Kaggle ids (4 appear twice, as in the Kaggle set)
    years: np.ndarray  # int64
    titles: list[str]


def read_titles(path: str | Path) -> Titles:
    """Parse ``id<TAB>year<TAB>title`` (with that header); malformed input is a DataError.

    Rows are kept as they are, duplicates included: the file holds 7,241 rows, the paper's
    count, and four ids (1026, 5151, 5921, 6263) occur twice with the same title.
    """
    p = Path(path)
    try:
        lines = p.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as err:
        raise DataError(f"NeurIPS titles file {p}: cannot be read ({err})") from None
    if not lines or lines[0].split("\t") != HEADER:
        raise DataError(f"NeurIPS titles file {p}: expected the header {'<TAB>'.join(HEADER)!r}")
    ids, years, titles = [], [], []
    for lineno, line in enumerate(lines[1:], start=2):
        parts = line.split("\t", 2)
        if len(parts) != 3 or not parts[0].isdigit() or not parts[1].isdigit():
            raise DataError(
                f"NeurIPS titles file {p}, line {lineno}: expected id<TAB>year<TAB>title, got {line[:80]!r}"
            )
        ids.append(int(parts[0]))
        years.append(int(parts[1]))
        titles.append(parts[2])
    return Titles(np.asarray(ids, dtype=np.int64), np.asarray(years, dtype=np.int64), titles)


def split_indices(n: int, n_val: int, n_test: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(train, val, test) row indices: a permutation from ``default_rng(seed)``, each part sorted."""
    if n_val + n_test >= n:
        raise DataError(f"cannot take {n_val} validation + {n_test} test documents out of {n}")
    perm = np.random.default_rng(seed).permutation(n)
    val, test, train = perm[:n_val], perm[n_val : n_val + n_test], perm[n_val + n_test :]
    return np.sort(train), np.sort(val), np.sort(test)


def corpus_counts(
    docs: Sequence[Sequence[str]],
    count: str = "document",
    min_count: int = MIN_COUNT,
    drop_top: int = DROP_TOP,
) -> dict[str, Any]:
    """Vocabulary and summary numbers of one preprocessing variant."""
    counts = document_frequency(docs) if count == "document" else token_frequency(docs)
    vocab, top = select_vocabulary(counts, min_count=min_count, drop_top=drop_top)
    keep = set(vocab)
    distinct = np.array([len(set(d) & keep) for d in docs], dtype=np.int64)
    tokens = np.array([sum(w in keep for w in d) for d in docs], dtype=np.int64)
    return {
        "vocabulary": vocab,
        "top_words": top,
        "D": len(vocab),
        "average_length": float(distinct.mean()) if len(docs) else 0.0,
        "average_tokens": float(tokens.mean()) if len(docs) else 0.0,
        "empty_documents": int((distinct == 0).sum()),
    }


def variant_counts(titles: Sequence[str], resources: TextResources) -> list[dict[str, Any]]:
    """Counts under every (lemmatizer, stop-word stage, count unit) combination.

    Removing words < 5 before or after the top 5 gives the same vocabulary (both filters
    read the same counts), so that order is not a variant.
    """
    rows = []
    for lem in LEMMATIZERS:
        for stage in STOPWORD_STAGES:
            opts = PreprocessOptions(lemmatizer=lem, stopwords=stage)
            pre = Preprocessor.from_resources(resources, opts)
            docs = [pre.tokens(t) for t in titles]
            for count in ("document", "token"):
                c = corpus_counts(docs, count=count)
                rows.append(
                    {
                        "lemmatizer": lem,
                        "stopwords": stage,
                        "count": count,
                        "D": c["D"],
                        "average_length": round(c["average_length"], 4),
                        "empty_documents": c["empty_documents"],
                        "top_words": c["top_words"],
                    }
                )
    return rows


def ingest_neurips(
    titles: Titles,
    resources: TextResources,
    seed: int,
    options: PreprocessOptions | None = None,
    count: str = "document",
    with_variants: bool = True,
) -> tuple[dict[str, np.ndarray], list[str], dict[str, Any]]:
    """(arrays for the .npz, vocabulary in column order, sidecar dict).

    ``rows_*`` are 0-based data-row numbers of the TSV (unique), ``ids_*`` the paper ids.
    """
    options = options or PreprocessOptions()
    pre = Preprocessor.from_resources(resources, options)
    docs = [pre.tokens(t) for t in titles.titles]
    main = corpus_counts(docs, count=count)
    other = corpus_counts(docs, count="token" if count == "document" else "document")
    vocab = main["vocabulary"]
    x = binary_matrix(docs, vocab)
    train, val, test = split_indices(len(docs), N_VAL, N_TEST, seed)
    arrays = {
        "x_train": x[train],
        "x_val": x[val],
        "x_test": x[test],
        "ids_train": titles.ids[train],
        "ids_val": titles.ids[val],
        "ids_test": titles.ids[test],
        "rows_train": train,
        "rows_val": val,
        "rows_test": test,
    }
    splits = split_sizes(train, val, test)
    counts = {
        "documents": len(docs),
        "vocabulary": len(vocab),
        "average_length": round(main["average_length"], 4),
        "average_tokens": round(main["average_tokens"], 4),
        "empty_documents": main["empty_documents"],
        **splits,
        "duplicated_ids": sorted(int(i) for i, c in Counter(titles.ids.tolist()).items() if c > 1),
        "years": [int(titles.years.min()), int(titles.years.max())] if len(docs) else None,
    }
    sidecar = text_sidecar(
        NAME,
        vocab,
        splits,
        seed,
        counts=counts,
        counts_if_token_occurrences={
            "vocabulary": other["D"],
            "average_length": round(other["average_length"], 4),
            "empty_documents": other["empty_documents"],
        },
        paper=PAPER,
        preprocessing=preprocessing_record(
            options,
            order="tokenize, stop words/lemmatize (see stopwords), drop top 5, drop < 5",
            min_count=MIN_COUNT,
            drop_top=DROP_TOP,
            dropped_top_words=main["top_words"],
            count=count,
            count_scope="whole corpus (all 7,241 titles), as the paper says",
            empty_titles="kept as all-zero rows",
            binary="x[n, i] = 1 iff word i occurs in title n",
        ),
        split={
            "method": "np.random.default_rng(seed).permutation(N): first 1000 validation, next 1000 test, rest training; each part sorted by row",
            "n_val": N_VAL,
            "n_test": N_TEST,
        },
    )
    if with_variants:
        sidecar["variants"] = variant_counts(titles.titles, resources)
    return arrays, vocab, sidecar
