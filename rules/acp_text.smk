# Stage: the ACP paper's real-corpus tables, figures and claims -- Section 4.5 (Table 5, topic
# model on NeurIPS titles) and supplement Section 5.1 (Fig. 3 Reuters classification, Figs. 4-6
# t-SNE), from the runs of rule train_cell_corpus (rules/acp_training.smk). The grid is
# grids.<g>.text (noisyor_bench.experiments.acp.grid.corpora). Each rule is named after its
# step; the command it runs carries the paper's prefix (rule table5 runs `noisyor-bench acp-table5`).


rule table5:
    input:
        runs=text_cell_files(
            corpus_grid.cells(config, corpus_grid.TOPICS_EXPERIMENT), ("metrics.json", "posterior_test.npz")
        ),
        vocab=R("data/neurips-titles.vocab.txt"),
        cooccurrence=R("pmi/cooccurrence.npz"),
        baselines=R("baselines/neurips-titles.json"),
    output:
        csv=R("tables/table5.csv"),
        md=R("tables/table5.md"),
    log:
        log_path("table5", "table5"),
    benchmark:
        benchmark_path("table5", "table5")
    conda:
        CONDA_ENV
    params:
        runs=lambda w, input: list_param(f for f in input.runs if f.endswith("metrics.json")),
        top_words=lambda w: TEXT["topics"]["top_words"],
        best_topics=lambda w: TEXT["topics"]["best_topics"],
    shell:
        "noisyor-bench acp-table5 --runs {params.runs} --vocab {input.vocab:q} --cooccurrence {input.cooccurrence:q}"
        " --top-words {params.top_words} --best-topics {params.best_topics} --baselines {input.baselines:q}"
        " --out-csv {output.csv:q} --out-md {output.md:q} > {log:q} 2>&1"


rule classification:
    input:
        runs=text_cell_files(classification_cells(), ("metrics.json", "posterior_test.npz")),
        dataset=R("data/reuters.npz"),
    output:
        csv=R("tables/classification.csv"),
        md=R("tables/classification.md"),
        png=paper_report(
            R("figures/classification.png"),
            "classification",
            REPORT_TEXT,
            "Supp. Fig. 3: exact match vs N_train",
            REPORT_CLASSIFICATION,
        ),
        pdf=R("figures/classification.pdf"),
    log:
        log_path("classification", "classification"),
    benchmark:
        benchmark_path("classification", "classification")
    conda:
        CONDA_ENV
    params:
        runs=lambda w, input: list_param(f for f in input.runs if f.endswith("metrics.json")),
        folds=lambda w: TEXT["classification"]["folds"],
        seed=TEXT_SEEDS[0],
    shell:
        "noisyor-bench acp-classification --runs {params.runs} --dataset {input.dataset:q} --folds {params.folds}"
        " --seed {params.seed} --out-csv {output.csv:q} --out-md {output.md:q} --out-png {output.png:q}"
        " --out-pdf {output.pdf:q} > {log:q} 2>&1"


rule tsne:
    input:
        runs=lambda w: tsne_files(w.K),
        dataset=R("data/reuters.npz"),
    output:
        png=paper_report(
            R("figures/tsne_K{K}.png"), "tsne", REPORT_TEXT, "Supp. Figs. 4-6: t-SNE, K = {K}", REPORT_TSNE
        ),
        pdf=R("figures/tsne_K{K}.pdf"),
        csv=R("tables/tsne_K{K}.csv"),
    log:
        log_path("tsne", "K{K}"),
    benchmark:
        benchmark_path("tsne", "K{K}")
    wildcard_constraints:
        K="[0-9]+",
    priority: measured_priority("tsne", "K{K}")
    conda:
        CONDA_ENV
    threads: 1  # the t-SNE map depends on the thread count: fixed for reproducibility
    params:
        runs=lambda w, input: list_param(f for f in input.runs if f.endswith("metrics.json")),
        perplexity=lambda w: TEXT["tsne"]["perplexity"],
        seed=TEXT_SEEDS[0],
    shell:
        "noisyor-bench acp-tsne --runs {params.runs} --dataset {input.dataset:q} --perplexity {params.perplexity}"
        " --seed {params.seed} --threads {threads} --out-png {output.png:q} --out-pdf {output.pdf:q}"
        " --out-csv {output.csv:q} > {log:q} 2>&1"


rule tsne_table:
    input:
        tsne_tables(),
    output:
        csv=R("tables/tsne.csv"),
        md=R("tables/tsne.md"),
    log:
        log_path("tsne_table", "tsne"),
    benchmark:
        benchmark_path("tsne_table", "tsne")
    conda:
        CONDA_ENV
    shell:
        "noisyor-bench acp-tsne-table --tables {input:q} --out-csv {output.csv:q} --out-md {output.md:q} > {log:q} 2>&1"


rule claims_text:
    input:
        text_tables(),
    output:
        csv=R("tables/claims_text.csv"),
        md=R("tables/claims_text.md"),
    log:
        log_path("claims_text", "claims"),
    benchmark:
        benchmark_path("claims_text", "claims")
    conda:
        CONDA_ENV
    params:
        best_topics=lambda w: (TEXT.get("topics") or {}).get("best_topics", 4),
    shell:
        "noisyor-bench acp-claims-text --tables {input:q} --best-topics {params.best_topics}"
        " --out-csv {output.csv:q} --out-md {output.md:q} > {log:q} 2>&1"
