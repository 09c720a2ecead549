"""Text corpora: the shared pipeline (hand examples), vocabulary rules, splits, and the two
ingestions -- Reuters logic on a hand-made NLTK-layout corpus, both real corpora via the CLI
on the raw-data mirror (checked against counts taken independently from the raw files)."""

from __future__ import annotations

import json
import zipfile
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from noisyor_bench.data.corpora import neurips, reuters
from noisyor_bench.data.corpora.preprocess import (
    PreprocessOptions,
    Preprocessor,
    TextResources,
    binary_matrix,
    load_resources,
    select_vocabulary,
)
from noisyor_bench.infra.errors import ConfigError, DataError
from noisyor_bench.infra.io import load_npz

# -------------------------------------------------------------------- pipeline, no NLTK
FAKE_LEMMAS = {("does", "n"): "doe", ("being", "v"): "be", ("nets", "n"): "net", ("based", "v"): "base"}


def fake_lemmatize(word: str, pos: str) -> str:
    return FAKE_LEMMAS.get((word, pos), word)


def test_tokenizer() -> None:
    pre = Preprocessor(PreprocessOptions(lemmatizer="none"), set(), None)
    assert pre.raw_tokens("Multi-Task Learning: Pólya's 3D nets") == [
        "multi",
        "task",
        "learning",
        "polya",
        "s",
        "d",
        "nets",
    ]


@pytest.mark.parametrize(
    ("stage", "expected"),
    [
        ("before", ["net", "be", "base"]),  # 'does' goes before it becomes 'doe'; 'be' is never checked
        ("after", ["doe", "net", "base"]),  # 'does' -> 'doe' is no stop word; 'being' -> 'be' is
        ("both", ["net", "base"]),
    ],
)
def test_stopword_stages(stage: str, expected: list[str]) -> None:
    # stop words {does, be}; noun-verb: 'nets' -> 'net' (noun), 'based' -> 'based' (noun) -> 'base' (verb)
    pre = Preprocessor(
        PreprocessOptions(lemmatizer="noun-verb", stopwords=stage), {"does", "be"}, fake_lemmatize
    )
    assert pre.tokens("does nets being based") == expected


def test_options_are_validated() -> None:
    with pytest.raises(ConfigError, match="lemmatizer"):
        PreprocessOptions(lemmatizer="porter")
    with pytest.raises(ConfigError, match="stopwords"):
        PreprocessOptions(stopwords="never")


def test_select_vocabulary_by_hand() -> None:
    counts = {"a": 10, "b": 9, "c": 9, "d": 5, "e": 4, "f": 6}
    vocab, top = select_vocabulary(counts, min_count=5, drop_top=2)
    assert top == ["a", "b"]  # b and c tie at 9: alphabetical
    assert vocab == ["c", "d", "f"]  # e has 4 < 5
    # the two filters commute: rare words first, then the top 2 of what is left
    rare_first = {w: c for w, c in counts.items() if c >= 5}
    assert select_vocabulary(rare_first, min_count=0, drop_top=2)[0] == vocab


def test_binary_matrix_by_hand() -> None:
    x = binary_matrix([["b", "a", "b", "zz"], [], ["c"]], ["a", "b", "c"])
    assert x.dtype == np.uint8
    np.testing.assert_array_equal(x, [[1, 1, 0], [0, 0, 0], [0, 0, 1]])


def test_split_indices() -> None:
    tr, va, te = neurips.split_indices(50, 10, 7, seed=3)
    assert (tr.size, va.size, te.size) == (33, 10, 7)
    assert sorted(np.concatenate([tr, va, te]).tolist()) == list(range(50))
    again = neurips.split_indices(50, 10, 7, seed=3)
    assert all(np.array_equal(a, b) for a, b in zip((tr, va, te), again))
    assert not np.array_equal(va, neurips.split_indices(50, 10, 7, seed=4)[1])


# -------------------------------------------------------------------- Reuters logic, hand-made corpus
TOY = [  # (fileid, categories, text); bodies repeat 'gamma' so using a body would change the vocabulary
    ("training/1", "earn", "ALPHA BETA GAMMA\ngamma gamma gamma"),
    ("training/2", "acq", "ALPHA BETA\ngamma gamma"),
    ("training/3", "earn acq", "ALPHA GAMMA THE\ngamma"),
    ("training/4", "money-fx", "ALPHA\ngamma"),
    ("training/5", "earn", "ALPHA BETA\ngamma"),
    ("training/6", "grain", "BETA ZETA\n"),  # none of the three: dropped
    ("training/7", "earn grain", "BETA\n"),
    ("training/8", "earn", "BETA\n"),
    ("test/9", "earn", "DELTA\n"),
    ("test/10", "acq", "DELTA\n"),
    ("test/11", "money-fx", "DELTA BETA\n"),
    ("test/12", "earn", "DELTA\n"),
    ("test/13", "acq money-fx", "DELTA\n"),
]


@pytest.fixture
def toy_reuters(tmp_path: Path) -> Path:
    (tmp_path / "corpora").mkdir()
    with zipfile.ZipFile(tmp_path / "corpora" / "reuters.zip", "w") as zf:
        zf.writestr("reuters/cats.txt", "".join(f"{f} {c}\n" for f, c, _ in TOY))
        for f, _, text in TOY:
            zf.writestr(f"reuters/{f}", text)
    return tmp_path


def test_reuters_logic_on_toy_corpus(toy_reuters: Path) -> None:
    heads = reuters.read_headlines(reuters.reuters_reader(toy_reuters))
    selected = [f for f, c, _ in TOY if set(c.split()) & {"earn", "acq", "money-fx"}]
    assert sorted(heads.fileids) == sorted(selected)
    assert heads.headlines[heads.fileids.index("training/3")] == "ALPHA GAMMA THE"
    res = TextResources(nltk_dir=toy_reuters, lemmatize=fake_lemmatize, stopwords=frozenset({"the"}))
    arrays, vocab, side = reuters.ingest_reuters(heads, res, seed=0, val_fraction=0.25, with_variants=False)
    # training headlines: alpha in 1,2,3,4,5 (5 docs); beta in 1,2,5,7,8 (5); gamma in 1,3 (2);
    # delta only in the 5 test documents -> excluded when counting on the training split
    assert vocab == ["alpha", "beta"]
    assert side["counts"]["documents_in_several_of_the_three"] == 2
    assert side["counts"]["documents_with_other_categories_too"] == 1
    # 7 training documents: round(0.25 * 7) = 2 validation, 5 training
    assert (arrays["x_train"].shape, arrays["x_val"].shape, arrays["x_test"].shape) == (
        (5, 2),
        (2, 2),
        (5, 2),
    )
    assert sorted(arrays["ids_train"].tolist() + arrays["ids_val"].tolist()) == sorted(
        f for f in selected if f.startswith("training/")
    )
    assert sorted(arrays["ids_test"].tolist()) == sorted(f for f in selected if f.startswith("test/"))
    rows = {f: i for i, f in enumerate(arrays["ids_test"].tolist())}
    np.testing.assert_array_equal(arrays["y_test"][rows["test/13"]], [0, 1, 1])  # order earn, acq, money-fx
    np.testing.assert_array_equal(arrays["x_test"][rows["test/11"]], [0, 1])
    np.testing.assert_array_equal(arrays["x_test"][rows["test/9"]], [0, 0])  # empty rows are kept
    _, vocab_all, _ = reuters.ingest_reuters(heads, res, seed=0, scope="all", with_variants=False)
    assert vocab_all == ["alpha", "beta", "delta"]


# -------------------------------------------------------------------- real corpora via the CLI
def _run(args: list[str]) -> None:
    from noisyor_bench.cli import main

    assert main(args) == 0


@pytest.fixture(scope="module")
def neurips_out(tmp_path_factory: pytest.TempPathFactory, mirror: Path) -> Path:
    out = tmp_path_factory.mktemp("neurips") / "neurips-titles.npz"
    _run(
        [
            "acp-ingest-neurips",
            "--raw-data-dir",
            str(mirror),
            "--seed",
            "0",
            "--no-variants",
            "--out",
            str(out),
        ]
    )
    return out


def test_missing_or_malformed_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from noisyor_bench.cli import main

    (tmp_path / "empty").mkdir()
    rc = main(
        ["acp-ingest-neurips", "--raw-data-dir", str(tmp_path / "empty"), "--out", str(tmp_path / "n.npz")]
    )
    err = capsys.readouterr().err
    assert rc == 2 and "nips_titles_1987_2017.tsv" in err and str(tmp_path / "empty") in err
    (tmp_path / "bad.tsv").write_text("id,year,title\n1,1987,x\n")
    with pytest.raises(DataError, match="expected the header"):
        neurips.read_titles(tmp_path / "bad.tsv")
    (tmp_path / "bad.tsv").write_text("id\tyear\ttitle\n1\t1987\n")
    with pytest.raises(DataError, match="line 2"):
        neurips.read_titles(tmp_path / "bad.tsv")


def test_neurips_real(neurips_out: Path, mirror: Path) -> None:
    a = load_npz(neurips_out)
    side = json.loads(neurips_out.with_suffix(".json").read_text())
    vocab = neurips_out.with_suffix(".vocab.txt").read_text().split()
    d = len(vocab)
    assert {k: a[k].shape for k in ("x_train", "x_val", "x_test")} == {
        "x_train": (5241, d),
        "x_val": (1000, d),
        "x_test": (1000, d),
    }
    assert all(a[k].dtype == np.uint8 for k in ("x_train", "x_val", "x_test"))
    rows = np.concatenate([a["rows_train"], a["rows_val"], a["rows_test"]])
    assert sorted(rows.tolist()) == list(range(7241))
    x = np.zeros((7241, d), dtype=np.uint8)
    for s in ("train", "val", "test"):
        x[a[f"rows_{s}"]] = a[f"x_{s}"]
    # independent reading of the TSV: ids line up with rows
    lines = (mirror / "neurips" / "nips_titles_1987_2017.tsv").read_text(encoding="utf-8").splitlines()[1:]
    tsv_ids = np.array([int(line.split("\t")[0]) for line in lines])
    for s in ("train", "val", "test"):
        np.testing.assert_array_equal(a[f"ids_{s}"], tsv_ids[a[f"rows_{s}"]])
    # the rules, checked on the matrix: every word is in >= 5 titles; the dropped top words are
    # more frequent than any kept word; average length = mean row sum
    assert x.sum(axis=0).min() >= 5
    assert side["counts"]["average_length"] == pytest.approx(x.sum(axis=1).mean(), abs=1e-4)
    # title 1, "Self-Organization of Associative Database and Its Applications": its row holds
    # exactly the vocabulary words among {self, organization, associative, database, application}
    row = x[int(np.flatnonzero(tsv_ids == 1)[0])]
    assert {vocab[i] for i in np.flatnonzero(row)} == {
        "self",
        "organization",
        "associative",
        "database",
        "application",
    } & set(vocab)
    assert {"application", "database"} <= set(vocab)
    assert side["preprocessing"]["dropped_top_words"] == ["learn", "model", "network", "neural", "use"]
    # counts reported in docs/text_corpora.md (paper: 7241, 1216, 4.49)
    assert (side["counts"]["documents"], d, round(side["counts"]["average_length"], 2)) == (7241, 1294, 4.93)
    readme = (mirror / "README.md").read_text()
    assert all(r["sha256"] in readme for r in side["inputs"])


def test_neurips_vocabulary_recount(neurips_out: Path, mirror: Path) -> None:
    """Recount the selection from the preprocessed titles with a plain Counter."""
    res = load_resources(mirror / "nltk_data")
    pre = Preprocessor.from_resources(res)
    titles = neurips.read_titles(mirror / "neurips" / "nips_titles_1987_2017.tsv").titles
    df = Counter(w for t in titles for w in set(pre.tokens(t)))
    top5 = [w for w, _ in sorted(df.items(), key=lambda kv: (-kv[1], kv[0]))[:5]]
    expected = sorted(w for w, c in df.items() if c >= 5 and w not in top5)
    assert neurips_out.with_suffix(".vocab.txt").read_text().split() == expected
    rows = neurips.variant_counts(titles[:400], res)
    assert len(rows) == 18 and {r["lemmatizer"] for r in rows} == {"noun-verb", "noun", "none"}


@pytest.fixture(scope="module")
def reuters_out(tmp_path_factory: pytest.TempPathFactory, mirror: Path) -> Path:
    out = tmp_path_factory.mktemp("reuters") / "reuters.npz"
    _run(
        [
            "acp-ingest-reuters",
            "--raw-data-dir",
            str(mirror),
            "--seed",
            "0",
            "--no-variants",
            "--out",
            str(out),
        ]
    )
    return out


def test_reuters_real(reuters_out: Path, mirror: Path) -> None:
    a = load_npz(reuters_out)
    side = json.loads(reuters_out.with_suffix(".json").read_text())
    # independent: cats.txt read straight from the zip
    with zipfile.ZipFile(mirror / "nltk_data" / "corpora" / "reuters.zip") as zf:
        cats = dict(line.split(" ", 1) for line in zf.read("reuters/cats.txt").decode("latin-1").splitlines())
    top = ["earn", "acq", "money-fx"]
    labels = {f: [int(c in cs.split()) for c in top] for f, cs in cats.items() if set(cs.split()) & set(top)}
    assert len(labels) == 7030  # paper: 7030
    train_ids = a["ids_train"].tolist() + a["ids_val"].tolist()
    assert (
        sorted(train_ids) == sorted(f for f in labels if f.startswith("training/")) and len(train_ids) == 5048
    )
    assert (
        sorted(a["ids_test"].tolist()) == sorted(f for f in labels if f.startswith("test/"))
        and len(a["ids_test"]) == 1982
    )
    assert (len(a["ids_val"]), len(a["ids_train"])) == (505, 4543)
    for s in ("train", "val", "test"):
        np.testing.assert_array_equal(a[f"y_{s}"], [labels[f] for f in a[f"ids_{s}"].tolist()])
    assert a["label_names"].tolist() == top
    y = np.concatenate([a["y_train"], a["y_val"], a["y_test"]])
    assert y.sum(axis=0).tolist() == [3964, 2369, 717]  # mirror README
    # the >= 5 rule holds on the original training split, where it was counted
    x_orig_train = np.concatenate([a["x_train"], a["x_val"]])
    assert x_orig_train.sum(axis=0).min() >= 5
    assert side["D"] == a["x_train"].shape[1] == 833  # paper: 839; see docs/text_corpora.md


def test_reuters_fast_read_equals_nltk_raw(mirror: Path) -> None:
    reader = reuters.reuters_reader(mirror / "nltk_data")
    sample = reader.fileids()[::97]
    assert reuters.raw_texts(reader, sample) == [reader.raw(f) for f in sample]
