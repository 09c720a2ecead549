"""One text pipeline for the corpora and the PMI reference corpus.

Paper Section 4.5 / supplement 5.1: "word lemmatization, removing stop words, ... the words
with less than 5 occurrences".  The paper names no tokenizer or lemmatizer; the choices here
(documented in docs/text_corpora.md) are:

* normalise: lower-case, Unicode NFKD, drop what is not ASCII (so "Pólya" -> "polya");
* tokenize: the regular expression ``[a-z]+`` -- alphabetic runs; hyphens, digits and
  apostrophes split tokens ("multi-task" -> "multi", "task", as in the paper's Table 5).
  No punkt model is needed (it is not in the raw-data mirror);
* lemmatize: NLTK's ``WordNetLemmatizer`` (shortest WordNet lemma).  Without a POS tagger
  we try the noun reading and, if it leaves the word unchanged, the verb reading
  ("noun-verb": "networks" -> "network", "based" -> "base", "learning" -> "learn");
* stop words: NLTK's 179-word English list, removed before lemmatization (so "does" and
  "was" do not survive as the noun lemmas "doe"/"wa") and again after it ("being" -> "be").

NLTK is only ever pointed at a local directory of verified zips (:func:`nltk_data_dir`); it
never downloads anything.
"""

from __future__ import annotations

import functools
import re
import unicodedata
import warnings
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from noisyor_bench.infra.errors import ConfigError, DataError

TOKEN_PATTERN = r"[a-z]+"
LEMMATIZERS = ("noun-verb", "noun", "none")
STOPWORD_STAGES = ("both", "before", "after")
#: raw-data keys of the NLTK corpora and the directory name each has under corpora/
NLTK_KEYS = {"nltk-wordnet": "wordnet", "nltk-stopwords": "stopwords", "nltk-reuters": "reuters"}


@dataclass(frozen=True)
class PreprocessOptions:
    """The knobs of the pipeline; recorded in every sidecar so PMI can use the same ones."""

    lemmatizer: str = "noun-verb"
    stopwords: str = "both"
    token_pattern: str = TOKEN_PATTERN

    def __post_init__(self) -> None:
        if self.lemmatizer not in LEMMATIZERS:
            raise ConfigError(
                f"lemmatizer: {self.lemmatizer!r} is not allowed; allowed values: {list(LEMMATIZERS)}"
            )
        if self.stopwords not in STOPWORD_STAGES:
            raise ConfigError(
                f"stopwords: {self.stopwords!r} is not allowed; allowed values: {list(STOPWORD_STAGES)}"
            )
        try:
            re.compile(self.token_pattern)
        except re.error as err:
            raise ConfigError(
                f"token_pattern: {self.token_pattern!r} is not a regular expression ({err})"
            ) from None

    def to_dict(self) -> dict[str, str]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> PreprocessOptions:
        unknown = set(d) - {"lemmatizer", "stopwords", "token_pattern"}
        if unknown:
            raise ConfigError(f"preprocessing options: unknown keys {sorted(unknown)}")
        return cls(**dict(d))


# ---------------------------------------------------------------------------- NLTK resources
def nltk_data_dir(raw_data_dir: str | Path | None, cache_dir: str | Path) -> Path:
    """Fetch and verify the three NLTK zips; return the directory to put on ``nltk.data.path``.

    :func:`noisyor_bench.data.rawdata.fetch` stores every key at ``<base>/nltk_data/corpora/<name>.zip``
    (mirror or download cache), so the answer is that ``<base>/nltk_data``.
    """
    from noisyor_bench.data.rawdata import fetch

    roots = set()
    for key, name in NLTK_KEYS.items():
        path = fetch(key, raw_data_dir, cache_dir)
        if path.name != f"{name}.zip" or path.parent.name != "corpora":
            raise DataError(
                f"raw input {key!r} at {path} is not laid out as <dir>/corpora/{name}.zip (NLTK_DATA layout)"
            )
        roots.add(path.parent.parent)
    if len(roots) != 1:
        raise DataError(
            f"the NLTK zips were found in different directories {sorted(map(str, roots))}; put them in one"
        )
    return roots.pop()


def find_corpus(nltk_dir: Path, name: str) -> Any:
    """NLTK's path pointer to corpora/<name> inside ``nltk_dir`` (zip or unpacked), nowhere else."""
    import nltk

    zipped, unpacked = nltk_dir / "corpora" / f"{name}.zip", nltk_dir / "corpora" / name
    if not zipped.is_file() and not unpacked.is_dir():
        raise DataError(
            f"NLTK corpus {name!r} not found: looked for {zipped} and {unpacked}. Supply a raw-data mirror "
            f"(--raw-data-dir / $NOISYOR_RAW_DATA) holding nltk_data/corpora/{name}.zip, see the mirror README."
        )
    # NLTK only reads files below a directory on nltk.data.path (its path sandbox).
    if str(nltk_dir) not in nltk.data.path:
        nltk.data.path.insert(0, str(nltk_dir))
    resource = f"corpora/{name}.zip/{name}/" if zipped.is_file() else f"corpora/{name}/"
    try:
        return nltk.data.find(resource, paths=[str(nltk_dir)])
    except (LookupError, OSError, ValueError) as err:
        raise DataError(f"NLTK could not open {resource} in {nltk_dir}: {str(err).strip()[:300]}") from None


class _WordNetLemmatizer:
    """NLTK's ``WordNetLemmatizer.lemmatize`` bound to an explicit WordNet reader.

    NLTK's class reads the global ``nltk.corpus.wordnet``; binding the reader keeps the
    verified copy in use whatever else is on ``nltk.data.path``.
    """

    def __init__(self, reader: Any) -> None:
        from nltk.stem import WordNetLemmatizer

        class Bound(WordNetLemmatizer):
            def _morphy(self, form: str, pos: str, check_exceptions: bool = True) -> list[str]:
                return reader._morphy(form, pos, check_exceptions)

        self._impl = Bound()

    def __call__(self, word: str, pos: str = "n") -> str:
        return self._impl.lemmatize(word, pos)


@dataclass(frozen=True)
class TextResources:
    """The verified NLTK pieces the pipeline needs."""

    nltk_dir: Path
    lemmatize: Callable[[str, str], str] = field(repr=False)
    stopwords: frozenset[str] = field(repr=False)


def _wordnet_reader(root: Any) -> Any:
    """NLTK's WordNet reader without the WordNet-version synset map it builds on start-up.

    That map (``map_wn``: every sense key of index.sense, ~5 s) serves only the multilingual
    OMW functions; ``_morphy`` -- all the lemmatizer uses -- reads the index and exception
    files alone.
    """
    from nltk.corpus.reader.wordnet import WordNetCorpusReader

    class MorphyWordNet(WordNetCorpusReader):
        def map_wn(self, version: str = "wordnet") -> None:
            return None

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "multilingual functions are not available": not used
        return MorphyWordNet(root, None)


@functools.lru_cache(maxsize=4)
def _load_resources(nltk_dir: str) -> TextResources:
    from nltk.corpus.reader import StopwordsCorpusReader

    d = Path(nltk_dir)
    wordnet = _wordnet_reader(find_corpus(d, "wordnet"))
    reader = StopwordsCorpusReader(find_corpus(d, "stopwords"), r"(?!README|\.).*", encoding="utf8")
    if "english" not in reader.fileids():
        raise DataError(f"{d}/corpora/stopwords: no 'english' list (found {reader.fileids()[:5]})")
    stop = frozenset(reader.words("english"))
    return TextResources(nltk_dir=d, lemmatize=_WordNetLemmatizer(wordnet), stopwords=stop)


def load_resources(nltk_dir: str | Path) -> TextResources:
    """WordNet lemmatizer and English stop words from ``nltk_dir`` (cached per directory)."""
    return _load_resources(str(Path(nltk_dir).resolve()))


# ---------------------------------------------------------------------------- the pipeline
_NON_ASCII = re.compile(r"[^\x00-\x7f]")


def normalize_text(text: str) -> str:
    """Lower-case, NFKD, drop non-ASCII (accents become their base letter)."""
    text = unicodedata.normalize("NFKD", text.lower())
    return text.encode("ascii", "ignore").decode("ascii")


class Preprocessor:
    """text -> list of final word forms, with a per-type cache (a corpus has few types)."""

    def __init__(
        self,
        options: PreprocessOptions,
        stopwords: Iterable[str],
        lemmatize: Callable[[str, str], str] | None,
    ) -> None:
        if options.lemmatizer != "none" and lemmatize is None:
            raise ValueError(f"lemmatizer {options.lemmatizer!r} needs a lemmatize function")
        self.options = options
        self.stopwords = frozenset(stopwords)
        self._lemmatize = lemmatize
        self._token = re.compile(options.token_pattern)
        self._cache: dict[str, str | None] = {}

    @classmethod
    def from_resources(
        cls, resources: TextResources, options: PreprocessOptions | None = None
    ) -> Preprocessor:
        return cls(options or PreprocessOptions(), resources.stopwords, resources.lemmatize)

    def raw_tokens(self, text: str) -> list[str]:
        return self._token.findall(normalize_text(text))

    def lemma(self, word: str) -> str:
        mode = self.options.lemmatizer
        if mode == "none":
            return word
        assert self._lemmatize is not None
        out = self._lemmatize(word, "n")
        if mode == "noun-verb" and out == word:
            out = self._lemmatize(word, "v")
        return out

    def word(self, token: str) -> str | None:
        """Final form of one raw token, or None if it is a stop word (before or after)."""
        if token in self._cache:
            return self._cache[token]
        stage = self.options.stopwords
        out: str | None
        if stage in ("before", "both") and token in self.stopwords:
            out = None
        else:
            out = self.lemma(token)
            if stage in ("after", "both") and out in self.stopwords:
                out = None
        self._cache[token] = out
        return out

    def tokens(self, text: str) -> list[str]:
        """The document as a list of final word forms, in order (duplicates kept)."""
        return [w for w in map(self.word, self.raw_tokens(text)) if w is not None]


# ---------------------------------------------------------------------------- vocabulary
def document_frequency(docs: Iterable[Sequence[str]]) -> Counter[str]:
    """Number of documents containing each word (the 'occurrences' of binary data)."""
    return Counter(w for d in docs for w in set(d))


def token_frequency(docs: Iterable[Sequence[str]]) -> Counter[str]:
    return Counter(w for d in docs for w in d)


def most_common(counts: Mapping[str, int], n: int) -> list[str]:
    """The ``n`` most frequent words; ties broken alphabetically so the result is unique."""
    return [w for w, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:n]]


def select_vocabulary(
    counts: Mapping[str, int], min_count: int, drop_top: int = 0
) -> tuple[list[str], list[str]]:
    """(vocabulary sorted alphabetically, the dropped top words).

    Words with ``count < min_count`` go, and so do the ``drop_top`` most frequent ones.
    The two filters commute: both are decided on the same fixed counts.
    """
    top = most_common(counts, drop_top) if drop_top else []
    banned = set(top)
    vocab = sorted(w for w, c in counts.items() if c >= min_count and w not in banned)
    return vocab, top


def binary_matrix(docs: Sequence[Sequence[str]], vocabulary: Sequence[str]) -> np.ndarray:
    """uint8 (N, D) presence matrix; words outside ``vocabulary`` are ignored."""
    index = {w: i for i, w in enumerate(vocabulary)}
    x = np.zeros((len(docs), len(vocabulary)), dtype=np.uint8)
    for n, doc in enumerate(docs):
        cols = [index[w] for w in doc if w in index]
        x[n, cols] = 1
    return x


def read_vocabulary(path: str | Path) -> list[str]:
    """A ``<name>.vocab.txt`` file: one word per line, in column order."""
    p = Path(path)
    try:
        words = p.read_text(encoding="utf-8").split("\n")
    except OSError as err:
        raise DataError(
            f"vocabulary file {p}: cannot be read ({err.strerror}); build it with acp-ingest-neurips/acp-ingest-reuters"
        ) from None
    words = [w for w in words if w]
    if not words or len(set(words)) != len(words):
        raise DataError(f"vocabulary file {p}: empty or has duplicate words")
    return words


def split_sizes(train: np.ndarray, val: np.ndarray, test: np.ndarray) -> dict[str, int]:
    """``n_train``, ``n_val``, ``n_test`` of a corpus's row split (sidecar keys)."""
    return {"n_train": int(train.size), "n_val": int(val.size), "n_test": int(test.size)}


def text_sidecar(
    name: str, vocabulary: Sequence[str], splits: Mapping[str, int], seed: int, **fields: Any
) -> dict[str, Any]:
    """The sidecar of a binary text corpus: what every one records (name, kind, D, split sizes,
    seed), then ``fields``, the corpus's own entries."""
    return {"name": name, "kind": "text", "D": len(vocabulary), **splits, "seed": seed, **fields}


def preprocessing_record(options: PreprocessOptions, **fields: Any) -> dict[str, Any]:
    """The sidecar's ``preprocessing`` entry: ``options`` and the implementation of the
    pipeline, then ``fields`` (what the corpus adds or states differently)."""
    return {
        **options.to_dict(),
        "normalize": "lower-case, NFKD, non-ASCII dropped",
        "lemmatizer_impl": "nltk WordNetLemmatizer.lemmatize (shortest lemma); noun-verb = noun, then verb if unchanged",
        "stopword_list": "nltk stopwords 'english'",
        **fields,
    }


def vocabulary_text(vocabulary: Sequence[str]) -> str:
    return "".join(f"{w}\n" for w in vocabulary)
