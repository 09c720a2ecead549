"""CLI: text corpora (NeurIPS titles, Reuters headlines), their training hyperparameters and PMI
co-occurrence counts (rules/acp_corpora.smk, rules/acp_training.smk: corpus_hparams).

``acp-ingest-neurips`` / ``acp-ingest-reuters`` write ``<out>.npz`` (binary x_*, ids_*; Reuters also
y_*), ``<out stem>.vocab.txt`` (column order) and ``<out stem>.json`` (counts beside the
paper's, preprocessing choices, seed, input checksums).  ``acp-pmi-counts`` counts a reference
corpus once into a co-occurrence table for the PMI of Table 5.
"""

from __future__ import annotations

import argparse
import logging
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from noisyor_bench.infra.errors import ConfigError, DataError
from noisyor_bench.infra.io import read_json, write_json_atomic, write_npz_atomic, write_text_atomic

log = logging.getLogger(__name__)

DEFAULT_CACHE = "results/raw"


def vocab_path(npz_path: str | Path) -> Path:
    """results/data/<name>.npz -> results/data/<name>.vocab.txt"""
    return Path(npz_path).with_suffix(".vocab.txt")


def sidecar_path(npz_path: str | Path) -> Path:
    return Path(npz_path).with_suffix(".json")


def _mirror(args: argparse.Namespace) -> Path | None:
    from noisyor_bench.data.rawdata import resolve_raw_data_dir

    return resolve_raw_data_dir(args.raw_data_dir)


def _input_record(key: str, path: Path) -> dict[str, str]:
    from noisyor_bench.infra.hashing import sha256_file_memo

    return {"key": key, "file": path.name, "sha256": sha256_file_memo(path), "path": str(path)}


def _provenance(
    kind: str,
    inputs: list[dict[str, Any]],
    out: str,
    outputs: list[Path],
    extra: Iterable[tuple[Path, str]] = (),
) -> dict[str, Any]:
    """The sidecar's provenance record: raw inputs (``_input_record``s) and other files read."""
    from noisyor_bench.data.rawdata import REGISTRY
    from noisyor_bench.infra import provenance

    base = Path(out).parent
    entries = [
        provenance.file_entry(r["path"], f"raw:{r['key']}", base, pinned_sha256=REGISTRY[r["key"]].sha256)
        if r.get("key") in REGISTRY
        else provenance.file_entry(r["path"], "reference", base)
        for r in inputs
        if r.get("path")
    ]
    entries += [provenance.file_entry(p, role, base) for p, role in extra]
    return provenance.artifact_record(kind, entries, outputs, base)


def _options(args: argparse.Namespace) -> Any:
    from noisyor_bench.data.corpora.preprocess import PreprocessOptions

    return PreprocessOptions(lemmatizer=args.lemmatizer, stopwords=args.stopwords)


def _nltk(args: argparse.Namespace, mirror: Path | None) -> tuple[Path, list[dict[str, str]]]:
    from noisyor_bench.data.corpora.preprocess import NLTK_KEYS, nltk_data_dir

    nltk_dir = nltk_data_dir(mirror, args.cache_dir)
    records = [_input_record(key, nltk_dir / "corpora" / f"{name}.zip") for key, name in NLTK_KEYS.items()]
    return nltk_dir, records


def _write_corpus(out: str, arrays: dict[str, Any], vocab: list[str], sidecar: dict[str, Any]) -> None:
    from noisyor_bench.data.corpora.preprocess import vocabulary_text

    write_npz_atomic(out, **arrays)
    write_text_atomic(vocab_path(out), vocabulary_text(vocab))
    sidecar["provenance"] = _provenance(
        "corpus", sidecar.get("inputs", []), out, [Path(out), vocab_path(out)]
    )
    write_json_atomic(sidecar_path(out), sidecar)


def cmd_ingest_neurips(args: argparse.Namespace) -> int:
    from noisyor_bench.data.corpora import neurips
    from noisyor_bench.data.corpora.preprocess import load_resources
    from noisyor_bench.data.rawdata import fetch

    mirror = _mirror(args)
    tsv = fetch("neurips-titles-tsv", mirror, args.cache_dir)
    nltk_dir, records = _nltk(args, mirror)
    titles = neurips.read_titles(tsv)
    arrays, vocab, sidecar = neurips.ingest_neurips(
        titles, load_resources(nltk_dir), args.seed, _options(args), with_variants=not args.no_variants
    )
    sidecar["inputs"] = [_input_record("neurips-titles-tsv", tsv)] + [
        r for r in records if r["key"] != "nltk-reuters"
    ]
    _write_corpus(args.out, arrays, vocab, sidecar)
    c = sidecar["counts"]
    log.info(
        "neurips-titles: %d titles, D=%d (paper %d), average length %.2f (paper %.2f) -> %s",
        c["documents"],
        c["vocabulary"],
        neurips.PAPER["vocabulary"],
        c["average_length"],
        neurips.PAPER["average_length"],
        args.out,
    )
    return 0


def cmd_ingest_reuters(args: argparse.Namespace) -> int:
    from noisyor_bench.data.corpora import reuters
    from noisyor_bench.data.corpora.preprocess import load_resources

    mirror = _mirror(args)
    nltk_dir, records = _nltk(args, mirror)
    heads = reuters.read_headlines(reuters.reuters_reader(nltk_dir))
    arrays, vocab, sidecar = reuters.ingest_reuters(
        heads,
        load_resources(nltk_dir),
        args.seed,
        _options(args),
        val_fraction=args.val_fraction,
        scope=args.vocab_scope,
        with_variants=not args.no_variants,
    )
    sidecar["inputs"] = records
    _write_corpus(args.out, arrays, vocab, sidecar)
    c = sidecar["counts"]
    log.info(
        "reuters: %d documents (%d train / %d val / %d test), D=%d (paper %d) -> %s",
        c["documents"],
        c["n_train"],
        c["n_val"],
        c["n_test"],
        c["vocabulary"],
        reuters.PAPER["vocabulary"],
        args.out,
    )
    return 0


def _corpus_sidecar(vocab_file: str | Path) -> Path:
    """<name>.vocab.txt -> <name>.json (the corpus sidecar)."""
    return Path(vocab_file).with_name(Path(vocab_file).name.removesuffix(".vocab.txt") + ".json")


def _corpus_options(vocab_files: list[str]) -> dict[str, str] | None:
    """The preprocessing options recorded beside each vocabulary; they must agree."""
    found: dict[str, dict[str, str]] = {}
    for v in vocab_files:
        side = _corpus_sidecar(v)
        if side.exists():
            pre = read_json(side).get("preprocessing", {})
            found[v] = {k: pre[k] for k in ("lemmatizer", "stopwords", "token_pattern") if k in pre}
    distinct = {tuple(sorted(o.items())) for o in found.values()}
    if len(distinct) > 1:
        raise ConfigError(
            f"--vocab: the corpora were preprocessed differently ({found}); count PMI for each separately"
        )
    return next(iter(found.values())) if found else None


def cmd_pmi_counts(args: argparse.Namespace) -> int:
    from noisyor_bench.data.corpora.preprocess import (
        PreprocessOptions,
        Preprocessor,
        load_resources,
        read_vocabulary,
    )
    from noisyor_bench.data.rawdata import REGISTRY, fetch
    from noisyor_bench.evaluation.pmi import build_cooccurrence

    mirror = _mirror(args)
    if args.reference in REGISTRY:
        reference, ref_record = fetch(args.reference, mirror, args.cache_dir), {"key": args.reference}
    else:
        reference, ref_record = Path(args.reference), {"key": None}
        if not reference.exists():
            raise DataError(
                f"--reference {args.reference!r}: neither a raw-input key (e.g. 'wikipedia-slice') nor an existing "
                "file or directory; give a WikiExtractor dump (.tar.xz, directory or file) or a plain-text file "
                "(one document per line)"
            )
    if reference.is_file():
        from noisyor_bench.infra.hashing import sha256_file

        ref_record["sha256"] = sha256_file(reference)
    ref_record["file"] = reference.name
    ref_record["path"] = str(reference)
    recorded = _corpus_options(args.vocab)
    options = PreprocessOptions.from_dict(recorded) if recorded else _options(args)
    if recorded is None:
        log.warning("no corpus sidecar beside %s: using the command-line preprocessing options", args.vocab)
    else:
        log.info("preprocessing as recorded in the corpus sidecar(s): %s", recorded)
    vocab = sorted({w for v in args.vocab for w in read_vocabulary(v)})
    nltk_dir, records = _nltk(args, mirror)
    pre = Preprocessor.from_resources(load_resources(nltk_dir), options)
    t0 = time.perf_counter()
    table = build_cooccurrence(reference, vocab, pre, window=args.window)
    seconds = time.perf_counter() - t0
    table.meta["reference_sha256"] = ref_record.get("sha256")
    table.save(args.out)
    absent = [w for w, n in zip(table.vocabulary, table.unigram) if n == 0]
    inputs = [ref_record] + [r for r in records if r["key"] != "nltk-reuters"]
    read = [(Path(v), "--vocab") for v in args.vocab]
    read += [(p, "corpus-sidecar") for v in args.vocab if (p := _corpus_sidecar(v)).is_file()]
    write_json_atomic(
        sidecar_path(args.out),
        {
            "provenance": _provenance("pmi", inputs, args.out, [Path(args.out)], read),
            **table.meta,
            "vocabulary_files": [Path(v).name for v in args.vocab],
            "vocabulary_size": len(vocab),
            "n_windows": table.n_windows,
            "n_pairs_seen": int(table.pair_count.size),
            "words_absent_from_reference": absent,
            "count_seconds": round(seconds, 1),
            "inputs": inputs,
        },
    )
    log.info(
        "PMI counts: %d windows, %d pairs seen, %d of %d words absent from the reference, %.1f s -> %s",
        table.n_windows,
        table.pair_count.size,
        len(absent),
        len(vocab),
        seconds,
        args.out,
    )
    return 0


def _common(p: argparse.ArgumentParser) -> None:
    from noisyor_bench.data.corpora.preprocess import LEMMATIZERS, STOPWORD_STAGES

    p.add_argument(
        "--raw-data-dir", help="raw-data mirror (default: $NOISYOR_RAW_DATA, else download into --cache-dir)"
    )
    p.add_argument("--cache-dir", default=DEFAULT_CACHE, help="where downloaded raw inputs are kept")
    p.add_argument(
        "--lemmatizer",
        choices=LEMMATIZERS,
        default=LEMMATIZERS[0],
        help="WordNet lemmatization (default: %(default)s)",
    )
    p.add_argument(
        "--stopwords",
        choices=STOPWORD_STAGES,
        default=STOPWORD_STAGES[0],
        help="remove stop words before/after lemmatization or both (default: %(default)s)",
    )


def cmd_corpus_hparams(args: argparse.Namespace) -> int:
    from noisyor_bench.experiments.acp.corpus_hparams import hparams_record
    from noisyor_bench.infra import provenance
    from noisyor_bench.infra.io import write_json_atomic

    record = hparams_record(args.dataset)
    record["provenance"] = provenance.artifact_record(
        "hparams",
        [provenance.file_entry(args.dataset, "dataset", Path(args.out).parent)],
        [],
        Path(args.out).parent,
    )
    write_json_atomic(args.out, record)
    log.info("corpus hyperparameters for %s: %s -> %s", args.dataset, record["hparams"], args.out)
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "acp-ingest-neurips", help="NeurIPS titles 1987-2017 -> binary bag of words (paper Sec. 4.5)"
    )
    _common(p)
    p.add_argument("--seed", type=int, default=0, help="seed of the 1000/1000/rest split")
    p.add_argument(
        "--no-variants", action="store_true", help="skip the preprocessing-variant counts in the sidecar"
    )
    p.add_argument(
        "--out", required=True, help="output .npz (the .vocab.txt and .json are written beside it)"
    )
    p.set_defaults(func=cmd_ingest_neurips)

    p = sub.add_parser(
        "acp-ingest-reuters",
        help="Reuters headlines of earn/acq/money-fx -> binary bag of words (supplement 5.1)",
    )
    _common(p)
    p.add_argument("--seed", type=int, default=0, help="seed of the validation carve-out")
    p.add_argument(
        "--val-fraction",
        type=float,
        default=0.1,
        help="share of the training documents held out for validation",
    )
    p.add_argument(
        "--vocab-scope", choices=("train", "all"), default="train", help="documents counted for the >= 5 rule"
    )
    p.add_argument(
        "--no-variants", action="store_true", help="skip the preprocessing-variant counts in the sidecar"
    )
    p.add_argument(
        "--out", required=True, help="output .npz (the .vocab.txt and .json are written beside it)"
    )
    p.set_defaults(func=cmd_ingest_reuters)

    p = sub.add_parser(
        "acp-pmi-counts", help="window co-occurrence counts of a reference corpus for PMI (Table 5)"
    )
    _common(p)
    p.add_argument(
        "--reference",
        default="wikipedia-slice",
        help="a raw-input key (default: %(default)s) or a path: WikiExtractor .tar.xz/directory/file, or plain text with one document per line",
    )
    p.add_argument(
        "--vocab", nargs="+", required=True, help="<name>.vocab.txt file(s); the table covers their union"
    )
    p.add_argument(
        "--window", type=int, default=5, help="sliding-window size in words (default: %(default)s)"
    )
    p.add_argument("--out", required=True, help="output .npz (a .json summary is written beside it)")
    p.set_defaults(func=cmd_pmi_counts)

    p = sub.add_parser(
        "acp-corpus-hparams",
        help="AVI/ACP hyperparameters for a text corpus (init scaled to D; for acp-train-cell --best)",
    )
    p.add_argument("--dataset", required=True, help="corpus .npz (x_train)")
    p.add_argument("--out", required=True, help="JSON with 'hparams' (read by acp-train-cell --best)")
    p.set_defaults(func=cmd_corpus_hparams)
