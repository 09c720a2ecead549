# Stage: the ACP paper's tables, figures and claim verdicts of the synthetic experiments
# (Sections 4.2-4.4, Figs. 3-5, Table 4, supplement Figs. 1-2), from the run directories.
# Each rule is named after its step; the command it runs carries the paper's prefix
# (rule table4 runs `noisyor-bench acp-table4`).


rule baselines:
    # Reference scores of one dataset for the NELBO tables: independent Bernoulli per N_train
    # of the grid's cells (also on the runs' nll_test rows), true model's -log p(x) (exact or
    # AIS) beside it on the same rows; docs/baselines.md.
    input:
        R("data/{dataset}.npz"),
    output:
        R("baselines/{dataset}.json"),
    log:
        log_path("baselines", "{dataset}"),
    benchmark:
        benchmark_path("baselines", "{dataset}")
    wildcard_constraints:
        dataset="|".join([*config["datasets"], "neurips-titles"]),
    priority: measured_priority("baselines", "{dataset}")
    conda:
        CONDA_ENV
    threads: 1
    resources:
        **compute_resources("baselines", "{dataset}"),
    params:
        n_train=lambda w: " ".join(str(n) for n in baseline_n_train(w.dataset)),
        samples=lambda w: grid.evaluation(config)["samples"],
        opts=lambda w: grid.baseline_settings(config),
        nll=lambda w: json_param(grid.baseline_settings(config)["nll"]),
        run_nll=lambda w: (
            f"--run-nll {json_param(grid.evaluation(config)['nll'])}"
            if grid.evaluation(config).get("nll") is not None
            else ""
        ),
        bounds=lambda w: "" if grid.baseline_settings(config)["bounds"] else "--no-bounds",
    shell:
        "noisyor-bench acp-baselines --dataset {input:q} --dataset-name {wildcards.dataset} --n-train {params.n_train}"
        " --samples {params.samples} --max-rows {params.opts[max_rows]} --iw-samples {params.opts[iw_samples]}"
        " --max-rounds {params.opts[max_rounds]} --nll {params.nll} {params.run_nll} {params.bounds}"
        " --threads {threads} --out-json {output:q} > {log:q} 2>&1"


rule table_fig3a:
    input:
        runs=experiment_files("fig3a"),
        baselines=baseline_files("fig3a"),
    output:
        csv=R("tables/fig3a.csv"),
        md=R("tables/fig3a.md"),
    log:
        log_path("table_fig3a", "fig3a"),
    benchmark:
        benchmark_path("table_fig3a", "fig3a")
    conda:
        CONDA_ENV
    params:
        runs=lambda w, input: list_param(input.runs),
    shell:
        "noisyor-bench acp-table-fig3a --runs {params.runs} --baselines {input.baselines:q}"
        " --out-csv {output.csv:q} --out-md {output.md:q} > {log:q} 2>&1"


rule calibration:
    # The calibration panel of every synthetic dataset of the grid's experiments (truth, best
    # mean-field NELBO, near-exact and MAP F1/EM, independent entropy) and the paper's rows
    # flagged against it, with the degradation curve; docs/baselines.md, "Calibration".
    input:
        datasets=[R(f"data/{ds}.npz") for ds in calibration_datasets()],
        # the truth's estimate where K is beyond enumeration; generator variants (variant_of) have
        # no cells, so no baselines job: they are enumerable
        baselines=[
            R(f"baselines/{ds}.json")
            for ds in calibration_datasets()
            if not config["datasets"][ds].get("variant_of")
        ],
    output:
        csv=R("tables/acp_calibration.csv"),
        md=R("tables/acp_calibration.md"),
        rows=R("tables/acp_calibration_rows.csv"),
        curve=R("tables/acp_calibration_curve.csv"),
    log:
        log_path("calibration", "all"),
    benchmark:
        benchmark_path("calibration", "all")
    conda:
        CONDA_ENV
    threads: 1
    params:
        truth=lambda w: (
            f" --truth-nll {json_param(truth)}" if (truth := grid.calibration_truth_nll(config)) else ""
        ),
    shell:
        "noisyor-bench acp-calibration --datasets {input.datasets:q} --baselines {input.baselines:q} --threads {threads}"
        " --out-csv {output.csv:q} --out-md {output.md:q} --out-rows-csv {output.rows:q}"
        " --out-curve-csv {output.curve:q}{params.truth} > {log:q} 2>&1"


rule figure_fig3a_sensitivity:
    input:
        runs=sensitivity_runs(),
        dataset=R("data/syn-pattern.npz"),
    output:
        csv=R("tables/fig3a_sensitivity.csv"),
        md=R("tables/fig3a_sensitivity.md"),
        png=paper_report(
            R("figures/fig3a_sensitivity.png"),
            "fig3a_sensitivity",
            REPORT_INFERENCE,
            "Fig. 3a sensitivity: SVI/LB-CDI vs per-datapoint steps",
        ),
        pdf=R("figures/fig3a_sensitivity.pdf"),
    log:
        log_path("figure_fig3a_sensitivity", "fig3a"),
    benchmark:
        benchmark_path("figure_fig3a_sensitivity", "fig3a")
    conda:
        CONDA_ENV
    threads: THREADS
    shell:
        "noisyor-bench acp-figure-fig3a-sensitivity --runs {input.runs:q} --dataset {input.dataset:q} --threads {threads}"
        " --out-csv {output.csv:q} --out-md {output.md:q} --out-png {output.png:q} --out-pdf {output.pdf:q} > {log:q} 2>&1"


rule figure_fig3b:
    input:
        experiment_files("fig3a", ("metrics.json", "curve.csv"), methods=("ub-cdi",)),
    output:
        png=paper_report(R("figures/fig3b.png"), "fig3b", REPORT_INFERENCE, "Fig. 3b: UB-CDI learning curve"),
        pdf=R("figures/fig3b.pdf"),
        csv=R("tables/fig3b.csv"),
        md=R("tables/fig3b.md"),
    log:
        log_path("figure_fig3b", "fig3b"),
    benchmark:
        benchmark_path("figure_fig3b", "fig3b")
    conda:
        CONDA_ENV
    params:
        runs=lambda w, input: list_param(f for f in input if f.endswith("metrics.json")),
    shell:
        "noisyor-bench acp-figure-fig3b --runs {params.runs} --out-png {output.png:q} --out-pdf {output.pdf:q}"
        " --out-csv {output.csv:q} --out-md {output.md:q} > {log:q} 2>&1"


rule figure_patterns:
    input:
        # the experiment's runs and its sensitivity rows' (experiments with recovery_of, e.g. K = 2 x K_true)
        runs=lambda w: [
            f
            for e in grid.recovery_experiments(config, w.experiment)
            for f in experiment_files(e, ("metrics.json", "posterior_test.npz"))
        ],
        dataset=lambda w: [R(f"data/{ds}.npz") for ds in recovery_datasets(w.experiment)],
        baselines=lambda w: baseline_files(w.experiment),
    output:
        png=paper_report(
            R("figures/{experiment}_patterns.png"), "patterns_learned", REPORT_RECOVERY, recovery_artifact
        ),
        pdf=R("figures/{experiment}_patterns.pdf"),
        csv=R("tables/{experiment}_recovery.csv"),
        md=R("tables/{experiment}_recovery.md"),
    log:
        log_path("figure_patterns", "{experiment}"),
    benchmark:
        benchmark_path("figure_patterns", "{experiment}")
    wildcard_constraints:
        experiment="fig4|suppfig2",
    conda:
        CONDA_ENV
    params:
        runs=lambda w, input: list_param(f for f in input.runs if f.endswith("metrics.json")),
    shell:
        "noisyor-bench acp-figure-patterns --runs {params.runs} --dataset {input.dataset:q} --baselines {input.baselines:q}"
        " --out-png {output.png:q} --out-pdf {output.pdf:q} --out-csv {output.csv:q} --out-md {output.md:q} > {log:q} 2>&1"


rule figure_fig5:
    input:
        runs=experiment_files("fig5"),
        datasets=experiment_datasets("fig5"),
        baselines=baseline_files("fig5"),
    output:
        png=paper_report(
            R("figures/fig5.png"), "fig5", REPORT_GENERATIVE, "Fig. 5: NELBO vs N_train, SYN-RANDOM 1-6"
        ),
        pdf=R("figures/fig5.pdf"),
        csv=R("tables/fig5.csv"),
        md=R("tables/fig5.md"),
    log:
        log_path("figure_fig5", "fig5"),
    benchmark:
        benchmark_path("figure_fig5", "fig5")
    conda:
        CONDA_ENV
    params:
        runs=lambda w, input: list_param(input.runs),
    shell:
        "noisyor-bench acp-figure-fig5 --runs {params.runs} --datasets {input.datasets:q} --baselines {input.baselines:q}"
        " --out-png {output.png:q}"
        " --out-pdf {output.pdf:q} --out-csv {output.csv:q} --out-md {output.md:q} > {log:q} 2>&1"


rule table4:
    input:
        runs=experiment_files("table4"),
        baselines=baseline_files("table4"),
    output:
        csv=R("tables/table4.csv"),
        md=R("tables/table4.md"),
    log:
        log_path("table4", "table4"),
    benchmark:
        benchmark_path("table4", "table4")
    conda:
        CONDA_ENV
    params:
        runs=lambda w, input: list_param(input.runs),
        missing=" ".join(f"--missing-reason {shlex.quote(item)}" for item in missing_reasons("table4")),
    shell:
        "noisyor-bench acp-table4 --runs {params.runs} --baselines {input.baselines:q} {params.missing}"
        " --out-csv {output.csv:q} --out-md {output.md:q} > {log:q} 2>&1"


rule ablation_table:
    input:
        runs=ablation_files(),
        datasets=sorted({R(f"data/{ds}.npz") for _, ds, _ in ablation_cells()}),
    output:
        csv=R("tables/ablation_acp_sg.csv"),
        md=R("tables/ablation_acp_sg.md"),
    log:
        log_path("ablation_table", "ablation_acp_sg"),
    benchmark:
        benchmark_path("ablation_table", "ablation_acp_sg")
    conda:
        CONDA_ENV
    params:
        runs=lambda w, input: list_param(f for f in input.runs if f.endswith("metrics.json")),
    shell:
        "noisyor-bench acp-ablation-table --runs {params.runs} --datasets {input.datasets:q}"
        " --out-csv {output.csv:q} --out-md {output.md:q} > {log:q} 2>&1"


rule claims_synthetic:
    input:
        synthetic_tables(),
    output:
        csv=R("tables/claims_synthetic.csv"),
        md=R("tables/claims_synthetic.md"),
    log:
        log_path("claims_synthetic", "claims"),
    benchmark:
        benchmark_path("claims_synthetic", "claims")
    conda:
        CONDA_ENV
    params:
        experiments=" ".join(grid.experiments(config)),
        not_run=" ".join(shlex.quote(f"{k}={v}") for k, v in grid.not_run_experiments(config).items()),
    shell:
        "noisyor-bench acp-claims-synthetic --tables {input:q} --experiments {params.experiments}"
        " --not-run {params.not_run}"
        " --out-csv {output.csv:q} --out-md {output.md:q} > {log:q} 2>&1"
