"""aviPAM's bag-of-words corpora built from their raw inputs: 20 Newsgroups, the NIPS substitute,
MNIST pixel documents.

Why here, below the CLI: ``avipam-data`` writes a corpus file from them, and a calibration slice
of an aviPAM run (:mod:`noisyor_bench.experiments.avipam.slices`) builds the same corpus in a
temporary folder, so both read the documents one way.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: Where downloaded raw inputs are kept by default.
DEFAULT_CACHE = "results/raw"


@dataclass(frozen=True)
class CorpusOptions:
    """How a corpus is built: the raw-data mirror and cache, and the corpus's own choices
    (``avipam-data``'s options; a grid's ``corpora.avipam-<corpus>`` entry)."""

    raw_data_dir: str | None = None
    cache_dir: str = DEFAULT_CACHE
    seed: int = 0
    n_train: int = 1500
    n_test: int = 1000
    min_count: int = 5
    levels: int = 4


def _raw(args: CorpusOptions, key: str) -> Path:
    from noisyor_bench.data.rawdata import fetch, resolve_raw_data_dir

    return fetch(key, resolve_raw_data_dir(args.raw_data_dir), args.cache_dir)


def _input(key: str, path: Path) -> dict[str, str]:
    from noisyor_bench.infra.hashing import sha256_file_memo

    return {"key": key, "path": str(path), "sha256": sha256_file_memo(path)}


def build_20news(args: CorpusOptions) -> tuple[Any, dict[str, Any], list[dict[str, str]]]:
    from noisyor_bench.data.corpora import newsgroups
    from noisyor_bench.data.corpora.bow import Corpus

    keys = ("20news-train-feat", "20news-test-feat", "20news-vocab")
    paths = [_raw(args, k) for k in keys]
    train, test, vocab = newsgroups.read_newsgroups(*paths)
    corpus = Corpus(
        train.counts, test.counts, vocab, {"labels_train": train.labels, "labels_test": test.labels}
    )
    summary = {
        "label": "20 Newsgroups (NVDM/AVITM bag of words)",
        "expected": newsgroups.EXPECTED,
        "eos_column": "column 0 (_eos_) kept, never occurs",
    }
    return corpus, summary, [_input(k, p) for k, p in zip(keys, paths, strict=True)]


def build_nips(args: CorpusOptions) -> tuple[Any, dict[str, Any], list[dict[str, str]]]:
    from noisyor_bench.data.corpora import nips_abstracts
    from noisyor_bench.data.corpora.bow import Corpus
    from noisyor_bench.data.corpora.preprocess import (
        NLTK_KEYS,
        PreprocessOptions,
        Preprocessor,
        load_resources,
        nltk_data_dir,
    )
    from noisyor_bench.data.rawdata import resolve_raw_data_dir

    csv_path = _raw(args, "neurips-papers-csv")
    mirror = resolve_raw_data_dir(args.raw_data_dir)
    nltk_dir = nltk_data_dir(mirror, args.cache_dir)
    options = PreprocessOptions()
    pre = Preprocessor.from_resources(load_resources(nltk_dir), options)
    abstracts = nips_abstracts.read_abstracts(csv_path)
    built = nips_abstracts.build(
        abstracts,
        pre.tokens,
        seed=args.seed,
        n_train=args.n_train,
        n_test=args.n_test,
        min_count=args.min_count,
    )
    extra = {
        k: built[k]
        for k in ("ids_train", "ids_test", "tokens_train", "lengths_train", "tokens_test", "lengths_test")
    }
    corpus = Corpus(built["train"], built["test"], built["vocab"], extra)
    summary = {
        "label": nips_abstracts.LABEL,
        "paper": nips_abstracts.PAPER,
        "abstracts_available": len(abstracts.texts),
        "seed": args.seed,
        "min_count": args.min_count,
        "preprocessing": options.to_dict(),
    }
    inputs = [_input("neurips-papers-csv", csv_path)]
    inputs += [
        _input(k, nltk_dir / "corpora" / f"{name}.zip")
        for k, name in NLTK_KEYS.items()
        if k != "nltk-reuters"
    ]
    return corpus, summary, inputs


def build_mnist(args: CorpusOptions) -> tuple[Any, dict[str, Any], list[dict[str, str]]]:
    from noisyor_bench.data.corpora import mnist_pixels
    from noisyor_bench.data.corpora.bow import Corpus
    from noisyor_bench.data.synthetic.mnist import load_idx

    images_path, labels_path = _raw(args, "mnist-test-images"), _raw(args, "mnist-test-labels")
    images, labels = load_idx(images_path), load_idx(labels_path)
    train_idx, test_idx = mnist_pixels.split(len(images), args.n_train, args.n_test, args.seed)
    counts = mnist_pixels.pixel_counts(images, levels=args.levels)
    corpus = Corpus(
        counts[train_idx],
        counts[test_idx],
        mnist_pixels.pixel_vocabulary(),
        {
            "labels_train": labels[train_idx].astype("int64"),
            "labels_test": labels[test_idx].astype("int64"),
            "image_shape": __import__("numpy").asarray(mnist_pixels.IMAGE_SHAPE),
        },
    )
    summary = {"label": mnist_pixels.LABEL, "levels": args.levels, "seed": args.seed}
    return (
        corpus,
        summary,
        [_input("mnist-test-images", images_path), _input("mnist-test-labels", labels_path)],
    )


BUILDERS = {"20news": build_20news, "nips": build_nips, "mnist": build_mnist}


def build(corpus: str, options: CorpusOptions) -> tuple[Any, dict[str, Any], list[dict[str, str]]]:
    """(the :class:`~noisyor_bench.data.corpora.bow.Corpus`, its summary, its raw inputs with
    their sha256) of ``corpus``."""
    from noisyor_bench.infra.errors import ConfigError

    if corpus not in BUILDERS:
        raise ConfigError(f"unknown aviPAM corpus {corpus!r}; allowed values: {sorted(BUILDERS)}")
    return BUILDERS[corpus](options)


__all__ = ["BUILDERS", "DEFAULT_CACHE", "CorpusOptions", "build", "build_20news", "build_mnist", "build_nips"]
