"""The ACP paper's CLI subcommands (datasets, corpora, training, evaluation, aggregation)."""
