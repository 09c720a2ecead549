# Stage 1: synthetic datasets (paper Section 4.1, Tables 2-3, Fig. 2).


def dataset_raw_inputs(wildcards):
    """Raw files a dataset is built from (for provenance and rerun triggers)."""
    from noisyor_bench.rawdata import dataset_raw_keys, expected_location

    spec = config["datasets"][wildcards.name]
    return [expected_location(key, RAW_DATA_DIR, R("raw")) for key in dataset_raw_keys(spec)]


rule make_dataset:
    input:
        dataset_raw_inputs,
    output:
        npz=R("data/{name}.npz"),
        meta=R("data/{name}.json"),
    params:
        spec=lambda wildcards: json_param(config["datasets"][wildcards.name]),
    conda:
        CONDA_ENV
    log:
        log_path("make_dataset", "{name}"),
    benchmark:
        benchmark_path("make_dataset", "{name}")
    wildcard_constraints:
        name="|".join(config["datasets"]),
    shell:
        "{CLI} make-dataset --name {wildcards.name} --spec {params.spec} {RAW_ARG}"
        " --cache-dir {RESULTS}/raw --out {output.npz} > {log} 2>&1"


rule plot_patterns:
    input:
        npz=R("data/{name}.npz"),
        meta=R("data/{name}.json"),
    output:
        png=report(
            R("figures/patterns_{name}.png"),
            caption="../docs/captions/patterns.rst",
            category="4.1 Synthetic datasets",
            labels={"dataset": "{name}", "figure": "Fig. 2 (generating patterns)"},
        ),
        pdf=R("figures/patterns_{name}.pdf"),
    conda:
        CONDA_ENV
    log:
        log_path("plot_patterns", "{name}"),
    benchmark:
        benchmark_path("plot_patterns", "{name}")
    shell:
        "{CLI} plot-patterns --dataset {input.npz} --out-png {output.png} --out-pdf {output.pdf} > {log} 2>&1"


rule dataset_table:
    input:
        expand(R("data/{name}.npz"), name=PROFILE["datasets"]),
    output:
        csv=report(
            R("tables/datasets.csv"),
            caption="../docs/captions/datasets_table.rst",
            category="4.1 Synthetic datasets",
            labels={"table": "Tables 2-3 (dataset parameters and sparsity)"},
        ),
        md=R("tables/datasets.md"),
    conda:
        CONDA_ENV
    log:
        log_path("dataset_table", "all"),
    benchmark:
        benchmark_path("dataset_table", "all")
    shell:
        "{CLI} dataset-table {input} --out-csv {output.csv} --out-md {output.md} > {log} 2>&1"
