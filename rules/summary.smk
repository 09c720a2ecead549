# Stage: summaries over every experiment of the grid (any paper): the merged claim verdicts
# and the convergence tables. Each rule is named as the noisyor-bench subcommand it runs.


# This run's claims, every stage's table merged (tables/claims_run.csv): one source of the
# headline verdicts (claims_evidence below).
rule claims_merge:
    input:
        claim_tables(),
    output:
        csv=R("tables/claims_run.csv"),
        md=R("tables/claims_run.md"),
    log:
        log_path("claims_merge", "claims"),
    benchmark:
        benchmark_path("claims_merge", "claims")
    conda:
        CONDA_ENV
    shell:
        "noisyor-bench claims-merge --claims {input:q} --out-csv {output.csv:q} --out-md {output.md:q} > {log:q} 2>&1"


# The headline verdict per claim (tables/claims.csv, read by every page and the console): the
# strongest source that decides it, among this run's claims and every published reference of the
# selected papers (config key reference_dir), each reference re-judged from its tables by today's
# claim code; every source's verdict in tables/claims_sources.csv; the speed claims' wall-clock
# times (they differ between runs of one commit, so claims.csv leaves them out) in
# tables/claims_timing.csv. The references' tables are inputs, so a new reference rejudges;
# their folders are those of the tables. A run of some papers keeps the other papers' rows of the
# three tables from their last run (--keep-other-papers: the outputs are update(), in place while
# the job runs; reporting.kept_claims), so every paper's answer stays.
rule claims_evidence:
    input:
        run=R("tables/claims_run.csv"),
        reference=REFERENCE_TABLES,
    output:
        csv=R("tables/claims.csv"),
        md=R("tables/claims.md"),
        sources=R("tables/claims_sources.csv"),
        timing=R("tables/claims_timing.csv"),
    log:
        log_path("claims_evidence", "claims"),
    benchmark:
        benchmark_path("claims_evidence", "claims")
    conda:
        CONDA_ENV
    params:
        grid=config["grid"],
        papers=" ".join(SELECTED),
        # the folders, as the compare step passes them: a published table's own provenance names
        # runs that were never published, so the tables are inputs (a new reference reruns this)
        # but not arguments
        reference=lambda w: " ".join(shlex.quote(str(d)) for d in REFERENCE_DIRS),
        # today's datasets: a reference made on another draw of one answers nothing for it
        datasets=lambda w: json_param(config.get("datasets") or {}),
    shell:
        "noisyor-bench claims-evidence --claims {input.run:q} --reference {params.reference} --datasets {params.datasets}"
        " --grid {params.grid:q} --papers {params.papers} --keep-other-papers --out-csv {output.csv:q} --out-md {output.md:q}"
        " --out-sources-csv {output.sources:q} --out-timing {output.timing:q} > {log:q} 2>&1"


# Convergence: did each run converge (metrics.json `converged`, `convergence`), per
# experiment, and the summary over all experiments (learning-mode share).
rule convergence_table:
    input:
        lambda w: convergence_run_files(w.experiment),
    output:
        csv=R("tables/convergence_{experiment}.csv"),
        md=R("tables/convergence_{experiment}.md"),
    log:
        log_path("convergence_table", "{experiment}"),
    benchmark:
        benchmark_path("convergence_table", "{experiment}")
    conda:
        CONDA_ENV
    params:
        runs=lambda w, input: list_param(input),
    shell:
        "noisyor-bench convergence-table --runs {params.runs} --out-csv {output.csv:q} --out-md {output.md:q} > {log:q} 2>&1"


rule convergence_summary:
    input:
        convergence_tables(),
    output:
        csv=R("tables/convergence.csv"),
        md=R("tables/convergence.md"),
    log:
        log_path("convergence_summary", "convergence"),
    benchmark:
        benchmark_path("convergence_summary", "convergence")
    conda:
        CONDA_ENV
    shell:
        "noisyor-bench convergence-summary --tables {input:q} --out-csv {output.csv:q} --out-md {output.md:q} > {log:q} 2>&1"


# This run against the published references (config key reference_dir): which cells of
# every table agree within their 95% intervals, which differ, which are missing here, and which
# claims got the same verdict. The reference's tables are inputs, so a new reference reruns it.
rule compare:
    input:
        ours=sorted({t for t in result_targets() if t.startswith(R("tables/")) and t.endswith(".csv")}),
        reference=REFERENCE_TABLES,
        # the references' verdicts, judged once by the evidence step
        sources=R("tables/claims_sources.csv"),
    output:
        csv=R("tables/comparison.csv"),
        md=R("tables/comparison.md"),
    log:
        log_path("compare", "reference"),
    benchmark:
        benchmark_path("compare", "reference")
    conda:
        CONDA_ENV
    params:
        results=lambda w, output: output.csv.rsplit("/tables/", 1)[0],
        reference=lambda w: " ".join(shlex.quote(str(d)) for d in REFERENCE_DIRS),
    shell:
        "noisyor-bench compare --results {params.results:q} --reference {params.reference}"
        " --sources {input.sources:q}"
        " --out-csv {output.csv:q} --out-md {output.md:q} > {log:q} 2>&1"
