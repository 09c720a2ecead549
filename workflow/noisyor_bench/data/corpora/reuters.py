"""Reuters-21578 (NLTK, ApteMod) headlines of the three largest categories (supplement 5.1).

Supplement: "we retain the top 3 categories, namely acq, earn and money-fx. Each document is
represented by its headline. We lemmatize the words, remove stop words, and remove words with
less than 5 occurrences. We obtain a final corpus of 839 unique words and 7030 documents,
including 5048 for training and 1982 for test."

Readings used here: a document is kept if its categories include any of the three (multi-
label; that gives exactly 7,030 = 5,048 + 1,982); the headline is the first line of the raw
file, lower-cased by the shared pipeline; "occurrences" are documents containing the word,
counted on the corpus's training split only (the paper does not say; this reading gives 833
words vs the paper's 839, counting on the whole corpus gives ~1,100 -- and it keeps the test
documents out of the vocabulary choice).  A validation split is carved out of the training
documents with a fixed seed for early stopping.
"""

from __future__ import annotations

import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from noisyor_bench.data.corpora.preprocess import (
    LEMMATIZERS,
    PreprocessOptions,
    Preprocessor,
    TextResources,
    binary_matrix,
    document_frequency,
    find_corpus,
    preprocessing_record,
    select_vocabulary,
    split_sizes,
    text_sidecar,
    token_frequency,
)
from noisyor_bench.infra.errors import DataError

NAME = "reuters"
CATEGORIES = ("earn", "acq", "money-fx")  # column order of y_*
PAPER = {"documents": 7030, "vocabulary": 839, "n_train": 5048, "n_test": 1982}
MIN_COUNT = 5
VAL_FRACTION = 0.1
VOCAB_SCOPES = ("train", "all")


@dataclass(frozen=True)
class Headlines:
    fileids: list[str]  # "training/123" / "test/14826"
    headlines: list[str]
    labels: np.ndarray  # uint8 (N, len(CATEGORIES))
    n_categories: np.ndarray  # int64 (N,): all categories of the document (of 90)


def reuters_reader(nltk_dir: str | Path) -> Any:
    """NLTK's reuters reader exactly as ``nltk.corpus.reuters`` defines it, on ``nltk_dir``."""
    from nltk.corpus.reader import CategorizedPlaintextCorpusReader

    root = find_corpus(Path(nltk_dir).resolve(), "reuters")
    try:
        return CategorizedPlaintextCorpusReader(
            root, r"(training|test).*", cat_file="cats.txt", encoding="ISO-8859-2"
        )
    except (OSError, ValueError) as err:
        raise DataError(f"{nltk_dir}/corpora/reuters: not a valid NLTK reuters corpus ({err})") from None


def headline(raw: str) -> str:
    """The headline: the first line of a Reuters document."""
    return raw.split("\n", 1)[0].strip()


def raw_texts(reader: Any, fileids: Sequence[str]) -> list[str]:
    """``reader.raw(f)`` for each fileid, in one pass over the zip when the corpus is zipped.

    Same bytes and decoding (the reader's encoding) as NLTK's ``raw``; NLTK opens each file
    through its path checks (~1 ms per file, ~9 s for 7,030 files), a single ZipFile does not.
    """
    from nltk.data import ZipFilePathPointer

    root = reader.root
    if not isinstance(root, ZipFilePathPointer):
        return [reader.raw(f) for f in fileids]
    try:
        with zipfile.ZipFile(root.zipfile.filename) as zf:
            return [zf.read(root.entry + f).decode(reader.encoding(f) or "utf-8") for f in fileids]
    except (OSError, KeyError, zipfile.BadZipFile, UnicodeDecodeError) as err:
        raise DataError(f"{root.zipfile.filename}: cannot read the reuters documents ({err})") from None


def read_headlines(reader: Any, categories: Sequence[str] = CATEGORIES) -> Headlines:
    """Documents with at least one of ``categories``, in NLTK's fileid order."""
    missing = [c for c in categories if c not in reader.categories()]
    if missing:
        raise DataError(f"reuters corpus has no categories {missing}; is it the NLTK ApteMod corpus?")
    wanted = set(categories)
    fileids, labels, ncat = [], [], []
    for fid in reader.fileids():
        cats = set(reader.categories(fid))
        if not cats & wanted:
            continue
        fileids.append(fid)
        labels.append([c in cats for c in categories])
        ncat.append(len(cats))
    heads = [headline(t) for t in raw_texts(reader, fileids)]
    return Headlines(
        fileids,
        heads,
        np.asarray(labels, dtype=np.uint8).reshape(-1, len(categories)),
        np.asarray(ncat, dtype=np.int64),
    )


def vocabulary_for(
    docs: Sequence[Sequence[str]], is_train: np.ndarray, scope: str, count: str = "document"
) -> list[str]:
    """Words with >= MIN_COUNT occurrences in the training split (``scope='train'``) or everywhere."""
    if scope not in VOCAB_SCOPES:
        raise DataError(f"vocabulary scope {scope!r}: allowed values {list(VOCAB_SCOPES)}")
    chosen = [d for d, t in zip(docs, is_train) if t or scope == "all"]
    counts = document_frequency(chosen) if count == "document" else token_frequency(chosen)
    return select_vocabulary(counts, min_count=MIN_COUNT)[0]


def variant_counts(heads: Headlines, resources: TextResources) -> list[dict[str, Any]]:
    """Vocabulary size per (lemmatizer, count scope, count unit); stop words removed before and after."""
    is_train = np.array([f.startswith("training/") for f in heads.fileids])
    rows = []
    for lem in LEMMATIZERS:
        pre = Preprocessor.from_resources(resources, PreprocessOptions(lemmatizer=lem))
        docs = [pre.tokens(h) for h in heads.headlines]
        for scope in VOCAB_SCOPES:
            for count in ("document", "token"):
                vocab = set(vocabulary_for(docs, is_train, scope, count))
                lengths = np.array([len(set(d) & vocab) for d in docs])
                rows.append(
                    {
                        "lemmatizer": lem,
                        "scope": scope,
                        "count": count,
                        "D": len(vocab),
                        "average_length": round(float(lengths.mean()), 4),
                        "empty_documents": int((lengths == 0).sum()),
                    }
                )
    return rows


def ingest_reuters(
    heads: Headlines,
    resources: TextResources,
    seed: int,
    options: PreprocessOptions | None = None,
    val_fraction: float = VAL_FRACTION,
    scope: str = "train",
    with_variants: bool = True,
) -> tuple[dict[str, np.ndarray], list[str], dict[str, Any]]:
    """(arrays for the .npz, vocabulary in column order, sidecar dict)."""
    if not 0.0 <= val_fraction < 1.0:
        raise DataError(f"val_fraction must lie in [0, 1), got {val_fraction}")
    options = options or PreprocessOptions()
    pre = Preprocessor.from_resources(resources, options)
    docs = [pre.tokens(h) for h in heads.headlines]
    is_train = np.array([f.startswith("training/") for f in heads.fileids])
    is_test = np.array([f.startswith("test/") for f in heads.fileids])
    if not (is_train ^ is_test).all():
        raise DataError("reuters: every fileid must start with 'training/' or 'test/'")
    vocab = vocabulary_for(docs, is_train, scope)
    x = binary_matrix(docs, vocab)

    orig_train = np.flatnonzero(is_train)
    n_val = int(round(val_fraction * orig_train.size))
    perm = np.random.default_rng(seed).permutation(orig_train.size)
    val = np.sort(orig_train[perm[:n_val]])
    train = np.sort(orig_train[perm[n_val:]])
    test = np.flatnonzero(is_test)
    ids = np.asarray(heads.fileids, dtype=str)
    arrays = {
        "x_train": x[train],
        "x_val": x[val],
        "x_test": x[test],
        "y_train": heads.labels[train],
        "y_val": heads.labels[val],
        "y_test": heads.labels[test],
        "ids_train": ids[train],
        "ids_val": ids[val],
        "ids_test": ids[test],
        "label_names": np.asarray(CATEGORIES, dtype=str),
    }
    lengths = x.sum(axis=1)
    splits = split_sizes(train, val, test)
    counts = {
        "documents": len(docs),
        "vocabulary": len(vocab),
        "n_original_train": int(orig_train.size),
        "n_original_test": int(test.size),
        **splits,
        "average_length": round(float(lengths.mean()), 4),
        "empty_documents": int((lengths == 0).sum()),
        "documents_per_category": {c: int(heads.labels[:, j].sum()) for j, c in enumerate(CATEGORIES)},
        "documents_in_several_of_the_three": int((heads.labels.sum(axis=1) > 1).sum()),
        "documents_with_other_categories_too": int((heads.n_categories > heads.labels.sum(axis=1)).sum()),
    }
    sidecar = text_sidecar(
        NAME,
        vocab,
        splits,
        seed,
        label_names=list(CATEGORIES),
        counts=counts,
        paper=PAPER,
        preprocessing=preprocessing_record(
            options,
            document="headline = first line of the raw file (upper-case in the source; lower-cased)",
            selection="fileids whose categories include any of earn, acq, money-fx (multi-label targets)",
            normalize="lower-case, NFKD, non-ASCII dropped; HTML entities kept as in the source ('&lt;' -> token 'lt')",
            min_count=MIN_COUNT,
            drop_top=0,
            count="document",
            count_scope=(
                "original training split (5,048 documents, validation included); test documents take no part in "
                "choosing the vocabulary"
                if scope == "train"
                else "whole corpus (training + test): unsupervised, labels unused, but test words shape the vocabulary"
            ),
            empty_documents="kept as all-zero rows",
        ),
        split={
            "original": "NLTK fileids 'training/*' vs 'test/*' (ApteMod); x_train + x_val = original training split, x_test = original test split",
            "validation": f"round({val_fraction} * {orig_train.size}) = {n_val} original-training documents drawn by np.random.default_rng(seed).permutation; each part sorted by fileid order",
            "val_fraction": val_fraction,
        },
    )
    if with_variants:
        sidecar["variants"] = variant_counts(heads, resources)
    return arrays, vocab, sidecar
