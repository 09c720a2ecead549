# Stage 1: synthetic datasets (paper Section 4.1, Tables 2-3, Fig. 2).


rule make_dataset:
    input:
        raw=dataset_raw_inputs,
        verified=dataset_raw_stamps,
    output:
        npz=R("data/{name}.npz"),
        meta=R("data/{name}.json"),
    log:
        log_path("make_dataset", "{name}"),
    benchmark:
        benchmark_path("make_dataset", "{name}")
    wildcard_constraints:
        name="|".join(config["datasets"]),
    priority: UPSTREAM_PRIORITY
    conda:
        CONDA_ENV
    params:
        spec=lambda wildcards: json_param(config["datasets"][wildcards.name]),
        cache=lambda w: CACHE_DIR,
    shell:
        "noisyor-bench acp-make-dataset --name {wildcards.name} --spec {params.spec}"
        " --cache-dir {params.cache:q} --out {output.npz:q} > {log:q} 2>&1"


rule plot_patterns:
    input:
        npz=R("data/{name}.npz"),
        meta=R("data/{name}.json"),
    output:
        png=paper_report(
            R("figures/patterns_{name}.png"),
            "patterns",
            REPORT_DATASETS,
            "Fig. 2: generating patterns, {name}",
        ),
        pdf=R("figures/patterns_{name}.pdf"),
    log:
        log_path("plot_patterns", "{name}"),
    benchmark:
        benchmark_path("plot_patterns", "{name}")
    conda:
        CONDA_ENV
    shell:
        "noisyor-bench acp-plot-patterns --dataset {input.npz:q} --out-png {output.png:q} --out-pdf {output.pdf:q} > {log:q} 2>&1"


rule dataset_table:
    input:
        expand(R("data/{name}.npz"), name=ACP_GRID.get("datasets", [])),
    output:
        csv=R("tables/datasets.csv"),
        md=R("tables/datasets.md"),
    log:
        log_path("dataset_table", "all"),
    benchmark:
        benchmark_path("dataset_table", "all")
    conda:
        CONDA_ENV
    shell:
        "noisyor-bench acp-dataset-table {input:q} --out-csv {output.csv:q} --out-md {output.md:q} > {log:q} 2>&1"
