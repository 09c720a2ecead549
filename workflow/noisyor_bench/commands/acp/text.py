"""CLI: the ACP paper's real-corpus tables, figures and claims (Table 5; supplement Figs. 3-6).

Each subcommand is named as the rule that runs it (rules/acp_text.smk) with the paper's
prefix (rule ``table5`` runs ``acp-table5``).  Training is
``noisyor-bench acp-train-cell --mode learning --latents K`` on the corpus; these
commands read the finished run directories (``--runs`` takes run directories or their
``metrics.json``, interchangeably; Snakemake passes explicit lists, never globs).
"""

from __future__ import annotations

import argparse
import logging

from noisyor_bench.commands.arguments import add_table_outputs
from noisyor_bench.infra.errors import ConfigError

log = logging.getLogger(__name__)


def cmd_topics_table(args: argparse.Namespace) -> int:
    from noisyor_bench.evaluation.pmi import CooccurrenceTable
    from noisyor_bench.reporting.acp.baselines import nelbo_baseline_markdown, read_baselines
    from noisyor_bench.reporting.acp.text_runs import collect_text_runs
    from noisyor_bench.reporting.acp.topics_table import read_vocabulary, table5_markdown, topics_table
    from noisyor_bench.reporting.tables import write_table

    if args.top_words < 2:
        raise ConfigError(f"--top-words must be >= 2 (PMI averages word pairs); got {args.top_words}")
    if args.best_topics < 1:
        raise ConfigError(f"--best-topics must be >= 1; got {args.best_topics}")
    cooc = CooccurrenceTable.load(args.cooccurrence)
    reference = str(cooc.meta.get("reference") or cooc.meta.get("reference_name") or args.cooccurrence)
    runs = collect_text_runs(args.runs)
    table = topics_table(runs, read_vocabulary(args.vocab), cooc, args.top_words, args.best_topics)
    note = nelbo_baseline_markdown(runs, read_baselines(args.baselines))
    write_table(table, args.out_csv, table5_markdown(table, args.best_topics, reference) + note, args.out_md)
    log.info("table5: %d runs, %d topic rows -> %s", table["run_dir"].nunique(), len(table), args.out_csv)
    return 0


def cmd_classify(args: argparse.Namespace) -> int:
    from noisyor_bench.infra.hashing import sha256_file
    from noisyor_bench.reporting.acp.classification import (
        baseline_em,
        classification_markdown,
        classification_table,
        load_labelled_test,
        summary,
    )
    from noisyor_bench.reporting.acp.figures_text import plot_classification
    from noisyor_bench.reporting.acp.text_runs import check_dataset, collect_text_runs
    from noisyor_bench.reporting.tables import write_table

    runs = collect_text_runs(args.runs)
    check_dataset(runs, sha256_file(args.dataset), args.dataset)
    x_test, y_test, _ = load_labelled_test(args.dataset)
    table = classification_table(runs, x_test, y_test, args.folds, args.seed, args.max_iter)
    write_table(table, args.out_csv, classification_markdown(table), args.out_md)
    plot_classification(summary(table), baseline_em(table), args.folds, args.out_png, args.out_pdf)
    log.info("classification: %d runs, baseline EM %.2f -> %s", len(runs), baseline_em(table), args.out_csv)
    return 0


def cmd_tsne(args: argparse.Namespace) -> int:
    from noisyor_bench.infra.hashing import sha256_file
    from noisyor_bench.reporting.acp.classification import load_labelled_test
    from noisyor_bench.reporting.acp.figures_text import plot_tsne
    from noisyor_bench.reporting.acp.text_runs import check_dataset, collect_text_runs
    from noisyor_bench.reporting.acp.tsne import tsne_panels, tsne_table
    from noisyor_bench.reporting.tables import write_table

    if args.perplexity <= 0:
        raise ConfigError(f"--perplexity must be > 0; got {args.perplexity}")
    if args.neighbors < 1:
        raise ConfigError(f"--neighbors must be >= 1; got {args.neighbors}")
    runs = collect_text_runs(args.runs)
    if runs["K"].nunique() != 1:
        raise ConfigError(f"--runs: one t-SNE figure shows one K; got K = {sorted(runs['K'].unique())}")
    check_dataset(runs, sha256_file(args.dataset), args.dataset)
    _, y_test, names = load_labelled_test(args.dataset)
    if args.threads < 1:
        raise ConfigError(f"--threads must be >= 1; got {args.threads}")
    panels = tsne_panels(runs, y_test, args.perplexity, args.seed, args.neighbors, args.threads)
    write_table(tsne_table(panels, runs, args.perplexity, args.seed, names), args.out_csv)
    plot_tsne(panels, names, args.out_png, args.out_pdf)
    log.info("tsne K=%d: %d panels -> %s", int(runs["K"].iloc[0]), len(panels), args.out_png)
    return 0


def cmd_tsne_table(args: argparse.Namespace) -> int:
    import pandas as pd

    from noisyor_bench.reporting.acp.tsne import tsne_markdown
    from noisyor_bench.reporting.tables import read_table, write_table

    table = pd.concat([read_table(p) for p in args.tables], ignore_index=True)
    table = table.sort_values(["K", "n_train", "method", "seed"], ascending=[True, False, True, True])
    write_table(table.reset_index(drop=True), args.out_csv, tsne_markdown(table), args.out_md)
    return 0


def cmd_claims_text(args: argparse.Namespace) -> int:
    from noisyor_bench.reporting.acp.text_claims import text_claims
    from noisyor_bench.reporting.claims import write_claims
    from noisyor_bench.reporting.tables import read_tables

    claims = text_claims(read_tables(args.tables), best_topics=args.best_topics)
    write_claims(
        claims,
        args.out_csv,
        args.out_md,
        title="Claims of the paper (real corpora: Section 4.5, supplement Section 5.1)",
    )
    for c in claims:
        log.info("%-50s %s", c.claim_id, c.verdict)
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "acp-table5",
        help="Table 5: top words and PMI of the learned topics (NeurIPS titles)",
    )
    p.add_argument("--runs", nargs="+", required=True, help="table5 run directories or metrics.json files")
    p.add_argument("--vocab", required=True, help="corpus vocabulary (results/data/neurips-titles.vocab.txt)")
    p.add_argument(
        "--cooccurrence", required=True, help="PMI co-occurrence table (results/pmi/cooccurrence.npz)"
    )
    p.add_argument("--top-words", type=int, default=10, help="words per topic (the paper: 10)")
    p.add_argument("--best-topics", type=int, default=4, help="topics shown per model (the paper: 4)")
    p.add_argument(
        "--baselines",
        nargs="*",
        default=[],
        help="results/baselines/neurips-titles.json (noisyor-bench acp-baselines): NELBO vs baseline note",
    )
    add_table_outputs(p)
    p.set_defaults(func=cmd_topics_table)

    p = sub.add_parser(
        "acp-classification",
        help="supplement Fig. 3: EM of a linear classifier on test posteriors (CV on test)",
    )
    p.add_argument(
        "--runs", nargs="+", required=True, help="classification run directories or metrics.json files"
    )
    p.add_argument("--dataset", required=True, help="labelled corpus (results/data/reuters.npz)")
    p.add_argument(
        "--folds", type=int, default=5, help="cross-validation folds on the test set (the paper: 5)"
    )
    p.add_argument(
        "--seed", type=int, default=0, help="seed of the shuffled folds (same folds for every run)"
    )
    p.add_argument("--max-iter", type=int, default=1000, help="logistic-regression iterations")
    add_table_outputs(p)
    p.add_argument("--out-png", required=True)
    p.add_argument("--out-pdf", required=True)
    p.set_defaults(func=cmd_classify)

    p = sub.add_parser(
        "acp-tsne", help="supplement Figs. 4-6: t-SNE of test posteriors for one K, with k-NN accuracy"
    )
    p.add_argument("--runs", nargs="+", required=True, help="runs of one K (rows: method, columns: N_train)")
    p.add_argument("--dataset", required=True, help="labelled corpus (results/data/reuters.npz)")
    p.add_argument("--perplexity", type=float, default=30.0, help="t-SNE perplexity (default 30)")
    p.add_argument("--seed", type=int, default=0, help="t-SNE random_state")
    p.add_argument("--neighbors", type=int, default=5, help="k of the k-NN accuracy companion")
    p.add_argument(
        "--threads", type=int, default=1, help="OpenMP threads of t-SNE (the map depends on it; default 1)"
    )
    p.add_argument("--out-png", required=True)
    p.add_argument("--out-pdf", required=True)
    p.add_argument("--out-csv", required=True)
    p.set_defaults(func=cmd_tsne)

    p = sub.add_parser("acp-tsne-table", help="merge the per-K t-SNE tables into one table (CSV + Markdown)")
    p.add_argument("--tables", nargs="+", required=True, help="per-K t-SNE tables (tables/tsne_K<K>.csv)")
    add_table_outputs(p)
    p.set_defaults(func=cmd_tsne_table)

    p = sub.add_parser(
        "acp-claims-text", help="verdicts of the paper's real-corpus claims from the text tables"
    )
    p.add_argument("--tables", nargs="+", required=True, help="table5.csv, classification.csv, tsne.csv")
    p.add_argument(
        "--best-topics", type=int, default=4, help="topics compared rank by rank (Table 5 shows 4)"
    )
    add_table_outputs(p)
    p.set_defaults(func=cmd_claims_text)
