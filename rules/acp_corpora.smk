# Stage: real corpora (paper Section 4.5, supplement Section 5.1): ingestion and the cached
# co-occurrence counts of the PMI reference corpus. Each rule is named after its step; the
# command it runs carries the paper's prefix (rule pmi_counts runs `noisyor-bench acp-pmi-counts`).


rule ingest_neurips:
    input:
        raw=raw_inputs("nltk-wordnet", "nltk-stopwords", "neurips-titles-tsv"),
        verified=raw_stamps("nltk-wordnet", "nltk-stopwords", "neurips-titles-tsv"),
    output:
        npz=R("data/neurips-titles.npz"),
        vocab=R("data/neurips-titles.vocab.txt"),
        meta=R("data/neurips-titles.json"),
    log:
        log_path("ingest_neurips", "neurips-titles"),
    benchmark:
        benchmark_path("ingest_neurips", "neurips-titles")
    priority: UPSTREAM_PRIORITY
    conda:
        CONDA_ENV
    params:
        corpus=config["corpora"]["neurips-titles"],
        cache=lambda w: CACHE_DIR,
    shell:
        "noisyor-bench acp-ingest-neurips --cache-dir {params.cache:q} --seed {params.corpus[seed]}"
        " --lemmatizer {params.corpus[lemmatizer]} --stopwords {params.corpus[stopwords]}"
        " --out {output.npz:q} > {log:q} 2>&1"


rule ingest_reuters:
    input:
        raw=raw_inputs("nltk-wordnet", "nltk-stopwords", "nltk-reuters"),
        verified=raw_stamps("nltk-wordnet", "nltk-stopwords", "nltk-reuters"),
    output:
        npz=R("data/reuters.npz"),
        vocab=R("data/reuters.vocab.txt"),
        meta=R("data/reuters.json"),
    log:
        log_path("ingest_reuters", "reuters"),
    benchmark:
        benchmark_path("ingest_reuters", "reuters")
    priority: UPSTREAM_PRIORITY
    conda:
        CONDA_ENV
    params:
        corpus=config["corpora"]["reuters"],
        cache=lambda w: CACHE_DIR,
    shell:
        "noisyor-bench acp-ingest-reuters --cache-dir {params.cache:q} --seed {params.corpus[seed]}"
        " --val-fraction {params.corpus[val_fraction]} --vocab-scope {params.corpus[vocab_scope]}"
        " --out {output.npz:q} > {log:q} 2>&1"


rule pmi_counts:
    input:
        raw=pmi_reference_input(),
        verified=pmi_reference_stamps(),
        vocab=R("data/neurips-titles.vocab.txt"),
        meta=R("data/neurips-titles.json"),
    output:
        R("pmi/cooccurrence.npz"),
    log:
        log_path("pmi_counts", "cooccurrence"),
    benchmark:
        benchmark_path("pmi_counts", "cooccurrence")
    conda:
        CONDA_ENV
    params:
        pmi=config["pmi"],
        cache=lambda w: CACHE_DIR,
    shell:
        "noisyor-bench acp-pmi-counts --cache-dir {params.cache:q} --reference {params.pmi[reference]}"
        " --window {params.pmi[window]} --vocab {input.vocab:q} --out {output:q} > {log:q} 2>&1"
