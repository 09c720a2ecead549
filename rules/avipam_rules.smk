# Stage: the aviPAM paper (docs/avipam.md): corpora, one run per method x corpus x sizes x
# seed, NPMI reference counts, Tables 1-4, the collapse study (Figs. 2-3) and the claims. The grid
# is grids.<g>.avipam (noisyor_bench.experiments.avipam.cells). Each rule is named as the
# noisyor-bench command it runs (`-` -> `_`), except claims_avipam, which runs avipam-claims.
for _t in AVIPAM_TABLES:
    table_view(
        R(f"tables/avipam_{_t}.csv"),
        "avipam_tables",
        REPORT_AVIPAM,
        f"aviPAM {_t.replace('table', 'Table ')}",
    )
table_view(R("tables/avipam_collapse.csv"), "avipam_collapse", REPORT_AVIPAM, "aviPAM collapse study (table)")
table_view(R("tables/claims_avipam.csv"), "claims", REPORT_CLAIMS, "aviPAM: verdict per claim (table)")


rule avipam_data:
    input:
        raw=lambda w: raw_inputs(*AVIPAM_RAW[w.corpus]),
        verified=lambda w: raw_stamps(*AVIPAM_RAW[w.corpus]),
    output:
        npz=R("data/avipam-{corpus}.npz"),
        meta=R("data/avipam-{corpus}.json"),
    log:
        log_path("avipam_data", "{corpus}"),
    benchmark:
        benchmark_path("avipam_data", "{corpus}")
    wildcard_constraints:
        corpus="20news|nips|mnist",
    priority: UPSTREAM_PRIORITY
    conda:
        CONDA_ENV
    params:
        cache=lambda w: CACHE_DIR,
        args=avipam_data_args,
    shell:
        "noisyor-bench avipam-data --corpus {wildcards.corpus} --cache-dir {params.cache:q}"
        " {params.args} --out {output.npz:q} > {log:q} 2>&1"


rule avipam_npmi_counts:
    input:
        corpus=R("data/avipam-{corpus}.npz"),
        reference=avipam_npmi_raw,
        verified=avipam_npmi_stamps,
    output:
        R("avipam/npmi/{corpus}-{reference}.npz"),
    log:
        log_path("avipam_npmi_counts", "{corpus}-{reference}"),
    benchmark:
        benchmark_path("avipam_npmi_counts", "{corpus}-{reference}")
    wildcard_constraints:
        corpus="20news|nips",
        reference="paper|external|internal",
    priority: measured_priority("avipam_npmi_counts", "{corpus}-{reference}")
    conda:
        CONDA_ENV
    params:
        cache=lambda w: CACHE_DIR,
        # the reference's file when it is an input (download mode, a user's PMI corpus); a
        # mirror's file the command reads from $NOISYOR_RAW_DATA
        wiki=lambda w, input: (
            ""
            if not input.reference
            else f"--{'wiki' if w.reference == 'external' else 'messages'} {shlex.quote(str(input.reference))}"
        ),
        max_docs=lambda w: (
            f"--max-docs {AVIPAM[f'npmi_{w.reference}_max_docs']}"
            if w.reference in ("external", "paper") and AVIPAM.get(f"npmi_{w.reference}_max_docs")
            else ""
        ),
    shell:
        "noisyor-bench avipam-npmi-counts --corpus-file {input.corpus:q} --corpus {wildcards.corpus}"
        " --reference {wildcards.reference} {params.wiki} {params.max_docs} --cache-dir {params.cache:q}"
        " --out {output:q} > {log:q} 2>&1"


rule avipam_run:
    input:
        corpus=R("data/avipam-{corpus}.npz"),
    output:
        metrics=RUN("avipam-{aexp}", "{corpus}", "{amethod}", "{n}", seed="{seed}", file="metrics.json"),
        topics=RUN("avipam-{aexp}", "{corpus}", "{amethod}", "{n}", seed="{seed}", file="topics.npz"),
        curve=RUN("avipam-{aexp}", "{corpus}", "{amethod}", "{n}", seed="{seed}", file="curve.csv"),
    log:
        log_path("avipam_run", "{aexp}-{corpus}-{amethod}-n{n}-seed{seed}"),
    benchmark:
        benchmark_path("avipam_run", "{aexp}-{corpus}-{amethod}-n{n}-seed{seed}")
    wildcard_constraints:
        aexp="small|large|collapse",
        corpus="20news|nips|mnist",
        amethod="[a-z0-9.-]+",
        seed="[0-9]+",
    priority: measured_priority("avipam_run", "{aexp}-{corpus}-{amethod}-n{n}-seed{seed}")
    conda:
        CONDA_ENV
    threads: int(AVIPAM.get("threads", 1))
    resources:
        **compute_resources("avipam_run", "{aexp}-{corpus}-{amethod}-n{n}-seed{seed}"),
    params:
        settings=avipam_settings,
        out=lambda w, output: str(Path(output.metrics).parent),
    shell:
        "noisyor-bench avipam-run --corpus-file {input.corpus:q} --experiment {wildcards.aexp}"
        " --corpus {wildcards.corpus} --method {wildcards.amethod} --seed {wildcards.seed}"
        " --settings {params.settings} --out-dir {params.out:q} > {log:q} 2>&1"


rule avipam_tables:
    input:
        runs=avipam_table_runs(),
        npmi=avipam_npmi_inputs(avipam_table_corpora()),
        corpora=[R(f"data/avipam-{c}.npz") for c in avipam_table_corpora()],
    output:
        **{f"{t}_{ext}": R(f"tables/avipam_{t}.{ext}") for t in AVIPAM_TABLES for ext in ("csv", "md")},
        runs=R("tables/avipam_npmi_runs.csv"),
    log:
        log_path("avipam_tables", "tables"),
    benchmark:
        benchmark_path("avipam_tables", "tables")
    conda:
        CONDA_ENV
    params:
        runs=lambda w, input: list_param(f for f in input.runs if f.endswith("metrics.json")),
        npmi=lambda w, input: list_param(input.npmi),
        out=lambda w, output: str(Path(output.runs).parent),
        grid=config["grid"],
    shell:
        "noisyor-bench avipam-tables --runs {params.runs} --npmi {params.npmi} --grid {params.grid}"
        " --out-dir {params.out:q} --out-runs {output.runs:q} > {log:q} 2>&1"


rule avipam_collapse:
    input:
        runs=avipam_collapse_runs(),
        npmi=avipam_npmi_inputs(avipam_collapse_corpora()),
        corpora=[R(f"data/avipam-{c}.npz") for c in avipam_collapse_corpora()],
    output:
        csv=R("tables/avipam_collapse.csv"),
        md=R("tables/avipam_collapse.md"),
        png=paper_report(
            R("figures/avipam_collapse.png"),
            "avipam_collapse",
            REPORT_AVIPAM,
            "aviPAM Fig. 3 / Sec. 4.1: collapse vs learning rate",
        ),
        topics=paper_report(
            R("figures/avipam_fig2_topics.png"),
            "avipam_topics",
            REPORT_AVIPAM,
            "aviPAM Fig. 2: topics as images (MNIST stand-in)",
        ),
    log:
        log_path("avipam_collapse", "collapse"),
    benchmark:
        benchmark_path("avipam_collapse", "collapse")
    conda:
        CONDA_ENV
    params:
        runs=lambda w, input: list_param(f for f in input.runs if f.endswith("metrics.json")),
        npmi=lambda w, input: list_param(input.npmi),
        corpora=lambda w, input: list_param(input.corpora),
        grid=config["grid"],
    shell:
        "noisyor-bench avipam-collapse --runs {params.runs} --npmi {params.npmi} --corpora {params.corpora}"
        " --grid {params.grid} --out-csv {output.csv:q} --out-md {output.md:q} --out-png {output.png:q}"
        " --out-topics {output.topics:q} > {log:q} 2>&1"


rule claims_avipam:
    input:
        avipam_claim_inputs(),
    output:
        csv=R("tables/claims_avipam.csv"),
        md=R("tables/claims_avipam.md"),
    log:
        log_path("claims_avipam", "claims"),
    benchmark:
        benchmark_path("claims_avipam", "claims")
    conda:
        CONDA_ENV
    shell:
        "noisyor-bench avipam-claims --tables {input:q} --out-csv {output.csv:q} --out-md {output.md:q} > {log:q} 2>&1"
