"""CLI: the aviPAM paper -- corpora, runs, NPMI references, tables, figures, claims.

``avipam-data`` writes ``results/data/avipam-<corpus>.npz`` (:mod:`noisyor_bench.data.corpora.bow`
layout) with a ``.json`` sidecar (counts, choices, raw inputs' checksums); ``avipam-run`` one run
directory (:mod:`noisyor_bench.experiments.avipam.runs`); the reporting subcommands read run
directories (rules/avipam.smk).
"""

from __future__ import annotations

import argparse
import logging
from pathlib import Path
from typing import Any

from noisyor_bench.commands.arguments import add_table_outputs, json_argument
from noisyor_bench.infra.errors import ConfigError
from noisyor_bench.infra.io import write_json_atomic

log = logging.getLogger(__name__)


def cmd_data(args: argparse.Namespace) -> int:
    from noisyor_bench.data.corpora.avipam_corpora import CorpusOptions, build
    from noisyor_bench.data.corpora.bow import save_corpus
    from noisyor_bench.infra import provenance

    options = CorpusOptions(
        args.raw_data_dir, args.cache_dir, args.seed, args.n_train, args.n_test, args.min_count, args.levels
    )
    corpus, summary, inputs = build(args.corpus, options)
    save_corpus(args.out, corpus)
    out = Path(args.out)
    summary.update(
        corpus=args.corpus,
        train_documents=int(corpus.train.shape[0]),
        test_documents=int(corpus.test.shape[0]),
        vocabulary=len(corpus.vocab),
        train_tokens=int(corpus.train.sum()),
        test_tokens=int(corpus.test.sum()),
    )
    entries = [provenance.file_entry(r["path"], f"raw:{r['key']}", out.parent) for r in inputs]
    summary["provenance"] = provenance.artifact_record("dataset", entries, [out], out.parent)
    write_json_atomic(out.with_suffix(".json"), summary)
    log.info(
        "avipam-data %s: %d train / %d test documents, %d words -> %s",
        args.corpus,
        summary["train_documents"],
        summary["test_documents"],
        summary["vocabulary"],
        out,
    )
    return 0


def _check_run(args: argparse.Namespace, settings: dict[str, Any]) -> None:
    """Every label of a run against the files and the settings before the fit: the
    seed, the experiment, the corpus file's kind and own name, the method the settings fit."""
    from noisyor_bench.data.labels import check_choice, check_label, check_seed, require_kind
    from noisyor_bench.experiments.avipam.cells import CORPORA, EXPERIMENTS, check_run_settings

    check_seed(args.seed)
    check_choice(args.experiment, EXPERIMENTS, "--experiment")
    check_choice(args.corpus, CORPORA, "--corpus")
    require_kind(args.corpus_file, "bow-corpus", "--corpus-file")
    check_label(args.corpus_file, args.corpus, "corpus", "--corpus", what="corpus")
    check_run_settings(args.experiment, args.method, settings)


def cmd_run(args: argparse.Namespace) -> int:
    from noisyor_bench.experiments.avipam.runs import execute

    settings = json_argument(args.settings, "--settings")
    if not isinstance(settings, dict) or "method" not in settings:
        raise ConfigError("--settings: expected a JSON object with 'method'")
    _check_run(args, settings)
    cell = {"experiment": args.experiment, "corpus": args.corpus, "method": args.method}
    execute(args.corpus_file, cell, settings, args.seed, args.out_dir)
    return 0


# How the Wikipedia slice is mapped onto each corpus's vocabulary (evaluation.coherence): the NVDM
# 20 Newsgroups words are surface forms (surface first, WordNet lemma as fallback); the NIPS
# substitute's vocabulary is lemmatised by the project's pipeline (noun-verb lemmas).
EXTERNAL_LEMMATIZER = {"20news": "noun-verb", "nips": "noun-verb"}


def cmd_npmi_counts(args: argparse.Namespace) -> int:
    """Reference co-occurrence counts of one corpus's vocabulary (Lau 2014 conventions)."""
    from noisyor_bench.data.corpora.bow import load_corpus
    from noisyor_bench.data.rawdata import resolve_raw_data_dir
    from noisyor_bench.evaluation import coherence

    corpus = load_corpus(args.corpus_file)
    if args.reference == "paper":  # the paper's protocol: the corpus's own text
        table = _paper_reference(args, corpus)
    elif args.reference == "external":
        reference: Any = args.wiki
        if args.max_docs:  # the first N pages only (smoke grid)
            import itertools

            from noisyor_bench.data.rawdata import fetch
            from noisyor_bench.evaluation.pmi import iter_reference_documents

            path = args.wiki or fetch(
                "wikipedia-slice", resolve_raw_data_dir(args.raw_data_dir), args.cache_dir
            )
            reference = list(itertools.islice(iter_reference_documents(path), args.max_docs))
        table = coherence.wikipedia_reference(
            corpus.vocab,
            resolve_raw_data_dir(args.raw_data_dir),
            args.cache_dir,
            lemmatizer=EXTERNAL_LEMMATIZER.get(args.corpus, "noun-verb"),
            reference=reference,
        )
        table.meta["reference"] = "external: Wikipedia slice, 20-token padded windows" + (
            f" (first {args.max_docs} pages)" if args.max_docs else ""
        )
    else:
        seqs = corpus.sequences("test")
        if seqs is not None:  # ordered held-out text: Lau's windows
            flat, lengths = seqs
            docs = [flat[a:b] for a, b in zip(np_cumsum0(lengths)[:-1], np_cumsum0(lengths)[1:], strict=True)]
            table = coherence.token_id_reference(docs, corpus.vocab)
            table.meta["reference"] = "internal: held-out documents, 20-token padded windows"
        else:  # bag of words only (NVDM 20 Newsgroups): boolean document co-occurrence
            table = coherence.document_reference(corpus.test, corpus.vocab)
            table.meta["reference"] = "internal: held-out documents, document co-occurrence (no word order)"
    table.meta["corpus"] = args.corpus
    table.save(args.out)
    log.info(
        "avipam-npmi-counts %s %s: %d windows -> %s", args.corpus, args.reference, table.n_windows, args.out
    )
    return 0


def _paper_reference(args: argparse.Namespace, corpus: Any) -> Any:
    """The paper protocol's counts (evaluation.coherence): 20 Newsgroups over its raw messages,
    the NIPS substitute over its own train + test abstracts (ordered vocabulary ids)."""
    from noisyor_bench.data.rawdata import resolve_raw_data_dir
    from noisyor_bench.evaluation import coherence

    if args.corpus == "20news":
        messages: Any = args.messages
        if args.max_docs:  # the first N messages only (smoke grid)
            from noisyor_bench.data.corpora.newsgroups import read_messages
            from noisyor_bench.data.rawdata import fetch

            path = messages or fetch(
                coherence.MESSAGES_KEY, resolve_raw_data_dir(args.raw_data_dir), args.cache_dir
            )
            messages = read_messages(path)[: args.max_docs]
        table = coherence.newsgroups_paper_reference(
            corpus.vocab, resolve_raw_data_dir(args.raw_data_dir), args.cache_dir, messages
        )
        if args.max_docs:
            table.meta["reference"] += f" (first {args.max_docs} messages)"
        return table
    docs = []
    for split in ("train", "test"):
        seqs = corpus.sequences(split)
        if seqs is None:
            raise ConfigError(
                f"avipam-npmi-counts --reference paper: {args.corpus_file} has no ordered {split} tokens "
                f"(tokens_{split}); rebuild it with avipam-data"
            )
        flat, lengths = seqs
        bounds = np_cumsum0(lengths)
        docs += [flat[a:b] for a, b in zip(bounds[:-1], bounds[1:], strict=True)]
    table = coherence.sequence_paper_reference(docs, corpus.vocab)
    table.meta["reference"] = (
        "paper protocol: the corpus's train + test documents, vocabulary tokens only, 20-token padded windows"
    )
    return table


def np_cumsum0(lengths: Any) -> Any:
    import numpy as np

    return np.concatenate([[0], np.cumsum(np.asarray(lengths, dtype=np.int64))])


def cmd_tables(args: argparse.Namespace) -> int:
    """Tables 1-4 (tables/avipam_table<i>.csv|md) and the per-run NPMI scores."""
    from noisyor_bench.infra.provenance import note_output
    from noisyor_bench.reporting.avipam import tables as avt
    from noisyor_bench.reporting.tables import write_table

    refs = avt.read_references(args.npmi)
    runs = avt.score_runs(args.runs, refs)
    paper = avt.paper_numbers()
    out = Path(args.out_dir)
    for name in avt.TABLES:
        table = avt.build_table(runs, name, paper, args.grid)
        write_table(
            table,
            out / f"avipam_{name}.csv",
            avt.markdown(table, name, paper, args.grid),
            out / f"avipam_{name}.md",
        )
        note_output(out / f"avipam_{name}.csv")  # provenance sidecars, as for --out-* files
        note_output(out / f"avipam_{name}.md")
    write_table(runs.assign(artifact="avipam-npmi-runs"), args.out_runs)
    log.info("avipam-tables: %d runs scored -> %s", len(runs), out)
    return 0


def cmd_collapse(args: argparse.Namespace) -> int:
    """The collapse study's table and figures."""
    from noisyor_bench.reporting.avipam import collapse
    from noisyor_bench.reporting.avipam.tables import read_references
    from noisyor_bench.reporting.tables import write_table

    runs = collapse.collect(args.runs, read_references(args.npmi))
    table = collapse.build_table(runs)
    write_table(table, args.out_csv, collapse.markdown(table, args.grid), args.out_md)
    collapse.plot_study(runs, args.out_png)
    corpora = {Path(p).stem.removeprefix("avipam-"): Path(p) for p in args.corpora}
    collapse.plot_topic_images(runs, corpora, args.out_topics)
    return 0


def cmd_claims(args: argparse.Namespace) -> int:
    from noisyor_bench.infra.provenance import cpu_model
    from noisyor_bench.reporting.avipam.claims import check_all
    from noisyor_bench.reporting.avipam.judge import hardware_note
    from noisyor_bench.reporting.claims import write_claims
    from noisyor_bench.reporting.tables import read_tables

    tables = read_tables(args.tables) if args.tables else {}
    hardware = hardware_note(cpu_model())
    claims = check_all(tables, hardware)
    write_claims(claims, args.out_csv, args.out_md, title="aviPAM: claims of the paper and verdicts")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    from noisyor_bench.data.corpora.avipam_corpora import BUILDERS, DEFAULT_CACHE

    p = sub.add_parser("avipam-data", help="aviPAM corpora: 20news, NIPS substitute, MNIST pixel documents")
    p.add_argument("--corpus", choices=sorted(BUILDERS), required=True, help="which corpus to build")
    p.add_argument("--raw-data-dir", help="raw-data mirror (default: $NOISYOR_RAW_DATA, else download)")
    p.add_argument("--cache-dir", default=DEFAULT_CACHE, help="where downloaded raw inputs are kept")
    p.add_argument("--seed", type=int, default=0, help="split seed (nips, mnist)")
    p.add_argument("--n-train", type=int, default=1500, help="training documents (nips, mnist)")
    p.add_argument("--n-test", type=int, default=1000, help="held-out documents (nips, mnist)")
    p.add_argument("--min-count", type=int, default=5, help="nips: minimum training token count of a word")
    p.add_argument("--levels", type=int, default=4, help="mnist: tokens of a full-ink pixel")
    p.add_argument("--out", required=True, help="output .npz (a .json summary is written beside it)")
    p.set_defaults(func=cmd_data)

    p = sub.add_parser("avipam-run", help="one aviPAM run (method x corpus x sizes x seed) -> run directory")
    p.add_argument("--corpus-file", required=True, help="results/data/avipam-<corpus>.npz")
    p.add_argument("--experiment", required=True, help="small | large | collapse")
    p.add_argument("--corpus", required=True, help="corpus name (20news, nips, mnist)")
    p.add_argument("--method", required=True, help="method (or <variant>-lr<lr> in the collapse study)")
    p.add_argument("--seed", type=int, required=True, help="run seed (initialisation, sampling)")
    p.add_argument("--settings", required=True, help="JSON (or @file) of the cell's settings")
    p.add_argument("--out-dir", required=True)
    p.set_defaults(func=cmd_run)

    p = sub.add_parser(
        "avipam-npmi-counts", help="NPMI reference counts of an aviPAM corpus (external / internal)"
    )
    p.add_argument("--corpus-file", required=True, help="results/data/avipam-<corpus>.npz")
    p.add_argument("--corpus", required=True, help="20news | nips")
    p.add_argument(
        "--reference",
        choices=("paper", "external", "internal"),
        required=True,
        help="paper: the paper's protocol, the corpus's own text (20news: the raw messages); "
        "external: the Wikipedia slice; internal: the held-out documents",
    )
    p.add_argument(
        "--messages",
        help="--reference paper, 20news: the raw messages (default: the raw input 20news-bydate-text)",
    )
    p.add_argument("--wiki", help="the Wikipedia slice (default: the raw input wikipedia-slice)")
    p.add_argument(
        "--max-docs",
        type=int,
        default=None,
        help="count only the first N Wikipedia pages (external) or 20 Newsgroups messages (paper) (smoke)",
    )
    p.add_argument("--raw-data-dir", help="raw-data mirror (default: $NOISYOR_RAW_DATA, else download)")
    p.add_argument(
        "--cache-dir", default=DEFAULT_CACHE, help="where downloaded raw inputs and counts are kept"
    )
    p.add_argument("--out", required=True, help="output .npz (evaluation.pmi.CooccurrenceTable)")
    p.set_defaults(func=cmd_npmi_counts)

    p = sub.add_parser(
        "avipam-tables", help="aviPAM Tables 1-4 (NPMI, training minutes) from run directories"
    )
    p.add_argument(
        "--runs", nargs="+", required=True, help="metrics.json of every table run (@FILE: one a line)"
    )
    p.add_argument(
        "--npmi", nargs="+", required=True, help="NPMI reference counts <corpus>-<external|internal>.npz"
    )
    p.add_argument("--grid", default="", help="grid name for the captions")
    p.add_argument("--out-dir", required=True, help="directory of tables/avipam_table<i>.csv|md")
    p.add_argument("--out-runs", required=True, help="per-run NPMI scores (CSV)")
    p.set_defaults(func=cmd_tables)

    p = sub.add_parser("avipam-collapse", help="aviPAM collapse study: table, figure, topics as images")
    p.add_argument(
        "--runs",
        nargs="+",
        required=True,
        help="metrics.json of every collapse-study run (@FILE: one a line)",
    )
    p.add_argument(
        "--npmi", nargs="*", default=[], help="NPMI reference counts <corpus>-<external|internal>.npz"
    )
    p.add_argument("--corpora", nargs="*", default=[], help="results/data/avipam-<corpus>.npz (image shape)")
    p.add_argument("--grid", default="", help="grid name for the captions")
    add_table_outputs(p)
    p.add_argument("--out-png", required=True)
    p.add_argument("--out-topics", required=True, help="Fig. 2: topics as images (PNG)")
    p.set_defaults(func=cmd_collapse)

    p = sub.add_parser("avipam-claims", help="aviPAM claims with verdicts (tables/claims_avipam.csv|md)")
    p.add_argument(
        "--tables", nargs="*", default=[], help="the aviPAM tables (CSV) the claims are checked on"
    )
    add_table_outputs(p)
    p.set_defaults(func=cmd_claims)
