# Stage: real-corpus experiments -- paper Section 4.5 (Table 5, topic model on NeurIPS titles)
# and supplement Section 5.1 (Fig. 3 Reuters classification, Figs. 4-6 t-SNE). The grid is
# profiles.<p>.text (noisyor_bench.experiments.grid.corpora); one train job per (experiment, corpus, method,
# N_train) cell runs all seeds (noisyor-bench train-cell --latents K, learning mode).
REPORT_TOPICS = "Table 5: topics (NeurIPS titles)"  # subcategories of REPORT_TEXT
REPORT_CLASSIFICATION = "Supplement 5.1: Reuters classification"
REPORT_TSNE = "Supplement 5.1: t-SNE"


# The generic synthetic train_cell rule's output pattern also matches text run directories; its
# input functions fail for text experiments, and this makes the choice explicit.
ruleorder: train_text_cell > train_cell


rule text_hparams:
    input:
        dataset=R("data/{dataset}.npz"),
    output:
        R("hparams/text/{dataset}.json"),
    log:
        log_path("text_hparams", "{dataset}"),
    benchmark:
        benchmark_path("text_hparams", "{dataset}")
    wildcard_constraints:
        dataset="neurips-titles|reuters",
    conda:
        CONDA_ENV
    shell:
        "noisyor-bench text-hparams --dataset {input.dataset} --out {output} > {log} 2>&1"


rule train_text_cell:
    input:
        dataset=R("data/{dataset}.npz"),
        hparams=R("hparams/text/{dataset}.json"),
    output:
        text_run_files("{experiment}", "{dataset}", "{method}", "{n}"),
    log:
        log_path("train_text_cell", "{experiment}/{dataset}/{method}/n{n}"),
    benchmark:
        benchmark_path("train_text_cell", "{experiment}/{dataset}/{method}/n{n}")
    wildcard_constraints:
        experiment="table5|classification-K[0-9]+",
        dataset="neurips-titles|reuters",
        method="avi|acp",
    conda:
        CONDA_ENV
    threads: THREADS
    resources:
        gpu=GPUS_PER_JOB,
    params:
        latents=lambda w: corpus_grid.experiment_latents(config, w.experiment),
        seeds=" ".join(str(s) for s in TEXT_SEEDS),
        budget=json_param(corpus_grid.budget(config)),
        evaluation=json_param(grid.evaluation(config)),
        device=DEVICE,
        results=lambda w, output: output[0].rsplit("/runs/", 1)[0],
    shell:
        "noisyor-bench train-cell --dataset {input.dataset} --dataset-name {wildcards.dataset}"
        " --experiment {wildcards.experiment} --method {wildcards.method} --mode learning"
        " --n-train {wildcards.n} --seeds {params.seeds} --latents {params.latents} --best {input.hparams}"
        " --budget {params.budget} --evaluation {params.evaluation} --device {params.device}"
        " --threads {threads} --results-dir {params.results} > {log} 2>&1"


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
        "noisyor-bench topics-table --runs {params.runs} --vocab {input.vocab} --cooccurrence {input.cooccurrence}"
        " --top-words {params.top_words} --best-topics {params.best_topics} --baselines {input.baselines}"
        " --out-csv {output.csv} --out-md {output.md} > {log} 2>&1"


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
        "noisyor-bench classify --runs {params.runs} --dataset {input.dataset} --folds {params.folds}"
        " --seed {params.seed} --out-csv {output.csv} --out-md {output.md} --out-png {output.png}"
        " --out-pdf {output.pdf} > {log} 2>&1"


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
    conda:
        CONDA_ENV
    threads: 1  # the t-SNE map depends on the thread count: fixed for reproducibility
    params:
        runs=lambda w, input: list_param(f for f in input.runs if f.endswith("metrics.json")),
        perplexity=lambda w: TEXT["tsne"]["perplexity"],
        seed=TEXT_SEEDS[0],
    shell:
        "noisyor-bench tsne --runs {params.runs} --dataset {input.dataset} --perplexity {params.perplexity}"
        " --seed {params.seed} --threads {threads} --out-png {output.png} --out-pdf {output.pdf}"
        " --out-csv {output.csv} > {log} 2>&1"


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
        "noisyor-bench tsne-table --tables {input} --out-csv {output.csv} --out-md {output.md} > {log} 2>&1"


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
        "noisyor-bench claims-text --tables {input} --best-topics {params.best_topics}"
        " --out-csv {output.csv} --out-md {output.md} > {log} 2>&1"
