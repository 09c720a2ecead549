# Stage: the report's runtime section. `snakemake --report results/report.zip` (make report)
# collects every output marked with paper_report() (common.smk); this rule adds the compute of
# the run, from the files of the rules' `benchmark:` directives.


# Benchmark files are not declared outputs, so no input can name them: the rule takes every
# other artifact as input (it runs when all jobs have written their benchmark file, and again
# whenever one of them reran) and reads the benchmark directory.
rule runtime_table:
    input:
        all_targets(),
    output:
        csv=paper_report(R("tables/runtime.csv"), "runtime", REPORT_RUNTIME, "Runtime per rule (table)"),
        md=R("tables/runtime.md"),
        jobs=paper_report(R("tables/runtime_jobs.csv"), "runtime", REPORT_RUNTIME, "Runtime per job (table)"),
        png=paper_report(R("figures/runtime.png"), "runtime_figure", REPORT_RUNTIME, "Runtime per rule (figure)"),
    params:
        benchmarks=R("benchmarks"),
    conda:
        CONDA_ENV
    log:
        log_path("runtime_table", "runtime"),
    shell:
        "noisyor-bench runtime-table --benchmarks {params.benchmarks} --out-csv {output.csv} --out-md {output.md}"
        " --out-jobs-csv {output.jobs} --out-png {output.png} > {log} 2>&1"
