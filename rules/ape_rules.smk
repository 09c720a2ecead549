# Stage: the APE paper ("Rapid Model Comparison by Amortizing Across Models"; docs/ape.md):
# data, encoder training, VI / NUTS on the test combinations, evaluation, Table 1, Figures 1-2 and
# claims (settings and input functions: rules/ape.smk). Each rule is named as the noisyor-bench
# subcommand it runs (`-` -> `_`).
REPORT_APE = "APE - Table 1, Figures 1-2 (Zhang & Hughes)"

table_view(
    R("tables/ape_table1.csv"), "ape_table1", REPORT_APE, "Table 1: likelihood, time, agreement (table)"
)
table_view(R("tables/claims_ape.csv"), "ape_claims", REPORT_APE, "APE claims and verdicts (table)")


rule ape_data:
    input:
        raw=lambda w: ape_raw_inputs(w.ds),
        verified=lambda w: ape_raw_stamps(w.ds),
    output:
        npz=R("data/ape-{ds}.npz"),
        meta=R("data/ape-{ds}.json"),
    log:
        log_path("ape_data", "{ds}"),
    benchmark:
        benchmark_path("ape_data", "{ds}")
    wildcard_constraints:
        ds="toybars|mdreviews",
    priority: UPSTREAM_PRIORITY
    conda:
        CONDA_ENV
    params:
        settings=lambda w: json_param(ape_step_settings(w.ds, "ape-data")),
        cache=lambda w: CACHE_DIR,
    shell:
        "noisyor-bench ape-data --dataset {wildcards.ds} --settings {params.settings}"
        " --cache-dir {params.cache:q} --out {output.npz:q} > {log:q} 2>&1"


# A training over ape.max_job_hours (the paper grid's reviews encoders) runs as segments, each
# its own cluster job resuming the previous one's state (ape_train_segments); the last segment
# is ape_train itself. Bit-identical to one job (docs/ape.md, "Trainings longer than a job").
rule ape_train_segment:
    input:
        data=R("data/ape-{ds}.npz"),
        previous=ape_previous_segment,
    output:
        temp(ape_segment_file("{ds}", "{method}", "{n}", "{seed}", "{k}")),
    log:
        log_path("ape_train", "{ds}_{method}_n{n}_seed{seed}_segment{k}"),
    benchmark:
        benchmark_path("ape_train", "{ds}_{method}_n{n}_seed{seed}_segment{k}")
    wildcard_constraints:
        ds="toybars|mdreviews",
        method="standard|ape-naive|ape-model-aware",
        seed="[0-9]+",
        k="[0-9]+",
    conda:
        CONDA_ENV
    threads: 1
    resources:
        **compute_resources("ape_train", "{ds}_{method}_n{n}_seed{seed}_segment{k}"),
    params:
        settings=lambda w: json_param(ape_step_settings(w.ds, "ape-train", w.method)),
        device=APE.get("device", "cpu"),
        segments=lambda w: ape_train_segments(w.ds, w.method, w.seed),
        previous=lambda w, input: previous_option(input.previous),
    shell:
        "noisyor-bench ape-train-segment --dataset {wildcards.ds} --dataset-file {input.data:q}"
        " --method {wildcards.method} --seed {wildcards.seed} --settings {params.settings}"
        " --device {params.device} --threads {threads} --segment {wildcards.k} --segments {params.segments}"
        " {params.previous} --out {output:q} > {log:q} 2>&1"


rule ape_train:
    input:
        data=R("data/ape-{ds}.npz"),
        previous=ape_last_segment,
    output:
        metrics=RUN("ape-train", "{ds}", "{method}", "{n}", seed="{seed}", file="metrics.json"),
        curve=RUN("ape-train", "{ds}", "{method}", "{n}", seed="{seed}", file="curve.csv"),
        encoder=RUN("ape-train", "{ds}", "{method}", "{n}", seed="{seed}", file="encoder.pt"),
    log:
        log_path("ape_train", "{ds}_{method}_n{n}_seed{seed}"),
    benchmark:
        benchmark_path("ape_train", "{ds}_{method}_n{n}_seed{seed}")
    wildcard_constraints:
        ds="toybars|mdreviews",
        method="standard|ape-naive|ape-model-aware",
        seed="[0-9]+",
    conda:
        CONDA_ENV
    threads: 1
    resources:
        **compute_resources("ape_train", "{ds}_{method}_n{n}_seed{seed}"),
    params:
        settings=lambda w: json_param(ape_step_settings(w.ds, "ape-train", w.method)),
        device=APE.get("device", "cpu"),
        out=lambda w, output: str(Path(output.metrics).parent),
        previous=lambda w, input: previous_option(input.previous),
    shell:
        "noisyor-bench ape-train --dataset {wildcards.ds} --dataset-file {input.data:q} --method {wildcards.method}"
        " --seed {wildcards.seed} --settings {params.settings} --device {params.device} --threads {threads}"
        " {params.previous} --out-dir {params.out:q} > {log:q} 2>&1"


rule ape_vi:
    input:
        R("data/ape-{ds}.npz"),
    output:
        metrics=ape_vi_run("{ds}", "{seed}", "metrics.json"),
        posterior=ape_vi_run("{ds}", "{seed}", "posterior.npz"),
        curve=ape_vi_run("{ds}", "{seed}", "curve.csv"),
    log:
        log_path("ape_vi", "{ds}_seed{seed}"),
    benchmark:
        benchmark_path("ape_vi", "{ds}_seed{seed}")
    wildcard_constraints:
        ds="toybars|mdreviews",
        seed="[0-9]+",
    conda:
        CONDA_ENV
    threads: 1
    resources:
        **compute_resources("ape_vi", "{ds}_seed{seed}"),
    params:
        settings=lambda w: json_param(ape_step_settings(w.ds, "ape-vi")),
        out=lambda w, output: str(Path(output.metrics).parent),
    shell:
        "noisyor-bench ape-vi --dataset {wildcards.ds} --dataset-file {input:q} --seed {wildcards.seed}"
        " --settings {params.settings} --threads {threads} --out-dir {params.out:q} > {log:q} 2>&1"


rule ape_nuts:
    input:
        data=R("data/ape-{ds}.npz"),
        vi=ape_vi_run("{ds}", "{seed}", "posterior.npz"),
    output:
        metrics=RUN("ape-nuts", "{ds}", "nuts", 0, seed="{seed}", file="metrics.json"),
        samples=RUN("ape-nuts", "{ds}", "nuts", 0, seed="{seed}", file="samples.npz"),
    log:
        log_path("ape_nuts", "{ds}_seed{seed}"),
    benchmark:
        benchmark_path("ape_nuts", "{ds}_seed{seed}")
    wildcard_constraints:
        ds="toybars|mdreviews",
        seed="[0-9]+",
    conda:
        CONDA_ENV
    threads: 1
    resources:
        **compute_resources("ape_nuts", "{ds}_seed{seed}"),
    params:
        settings=lambda w: json_param(ape_step_settings(w.ds, "ape-nuts")),
        vi=lambda w, input: str(Path(input.vi).parent),
        out=lambda w, output: str(Path(output.metrics).parent),
    shell:
        "noisyor-bench ape-nuts --dataset {wildcards.ds} --dataset-file {input.data:q} --seed {wildcards.seed}"
        " --settings {params.settings} --vi-dir {params.vi:q} --threads {threads} --out-dir {params.out:q} > {log:q} 2>&1"


rule ape_evaluate:
    input:
        data=R("data/ape-{ds}.npz"),
        encoders=lambda w: [f"{d}/metrics.json" for d in ape_encoder_dirs(w.ds, int(w.seed)).values()],
        encoder_weights=lambda w: [f"{d}/encoder.pt" for d in ape_encoder_dirs(w.ds, int(w.seed)).values()],
        vi=ape_vi_run("{ds}", "{seed}", "metrics.json"),
        vi_files=[ape_vi_run("{ds}", "{seed}", "posterior.npz"), ape_vi_run("{ds}", "{seed}", "curve.csv")],
        nuts=lambda w: ape_nuts_files(w.ds, int(w.seed)),
        nuts_samples=lambda w: [
            str(Path(f).parent / "samples.npz") for f in ape_nuts_files(w.ds, int(w.seed))
        ],
    output:
        metrics=ape_eval_run("{ds}", "{seed}", "metrics.json"),
        scores=ape_eval_run("{ds}", "{seed}", "scores.npz"),
    log:
        log_path("ape_evaluate", "{ds}_seed{seed}"),
    benchmark:
        benchmark_path("ape_evaluate", "{ds}_seed{seed}")
    wildcard_constraints:
        ds="toybars|mdreviews",
        seed="[0-9]+",
    conda:
        CONDA_ENV
    threads: 1
    resources:
        **compute_resources("ape_evaluate", "{ds}_seed{seed}"),
    params:
        settings=lambda w: json_param(ape_step_settings(w.ds, "ape-evaluate")),
        encoders=lambda w: " ".join(
            shlex.quote(f"{m}={d}") for m, d in ape_encoder_dirs(w.ds, int(w.seed)).items()
        ),
        vi=lambda w, input: str(Path(input.vi).parent),
        nuts=lambda w, input: (
            f"--nuts-dir {shlex.quote(str(Path(input.nuts[0]).parent))}" if input.nuts else ""
        ),
        out=lambda w, output: str(Path(output.metrics).parent),
    shell:
        "noisyor-bench ape-evaluate --dataset {wildcards.ds} --dataset-file {input.data:q} --seed {wildcards.seed}"
        " --settings {params.settings} --vi-dir {params.vi:q} {params.nuts} --encoder {params.encoders}"
        " --threads {threads} --out-dir {params.out:q} > {log:q} 2>&1"


rule ape_table1:
    input:
        evals=ape_eval_files(),
        data=[R(f"data/ape-{ds}.npz") for ds in ape_datasets()],
        train=ape_run_files("ape-train"),
    output:
        csv=R("tables/ape_table1.csv"),
        md=R("tables/ape_table1.md"),
        figure1=R("tables/ape_figure1.csv"),
    log:
        log_path("ape_table1", "table1"),
    benchmark:
        benchmark_path("ape_table1", "table1")
    conda:
        CONDA_ENV
    params:
        settings=lambda w: json_param(APE),
    shell:
        "noisyor-bench ape-table1 --evals {input.evals:q} --datasets {input.data:q} --train-runs {input.train:q}"
        " --settings {params.settings}"
        " --out-csv {output.csv:q}"
        " --out-md {output.md:q} --out-figure1-csv {output.figure1:q} > {log:q} 2>&1"


rule ape_figures:
    input:
        evals=lambda w: ape_eval_files(w.ds),
        scores=lambda w: [str(Path(f).parent / "scores.npz") for f in ape_eval_files(w.ds)],
        vi=lambda w: [ape_vi_run(w.ds, s, "curve.csv") for s in APE_SEEDS],
    output:
        left=paper_report(
            R("figures/ape_fig1_left_{ds}.png"),
            "ape_fig1_left",
            REPORT_APE,
            lambda w: f"Figure 1 (left): ELBO vs time, {w.ds}",
        ),
        left_pdf=R("figures/ape_fig1_left_{ds}.pdf"),
        right=paper_report(
            R("figures/ape_fig1_right_{ds}.png"),
            "ape_fig1_right",
            REPORT_APE,
            lambda w: f"Figure 1 (right): |ELBO encoder - ELBO VI|, {w.ds}",
        ),
        right_pdf=R("figures/ape_fig1_right_{ds}.pdf"),
    log:
        log_path("ape_figures", "{ds}"),
    benchmark:
        benchmark_path("ape_figures", "{ds}")
    wildcard_constraints:
        ds="toybars|mdreviews",
    conda:
        CONDA_ENV
    params:
        vi=lambda w, input: " ".join(shlex.quote(str(Path(f).parent)) for f in input.vi),
    shell:
        "noisyor-bench ape-figures --dataset {wildcards.ds} --evals {input.evals:q} --vi-dirs {params.vi}"
        " --out-left-png {output.left:q} --out-left-pdf {output.left_pdf:q} --out-right-png {output.right:q}"
        " --out-right-pdf {output.right_pdf:q} > {log:q} 2>&1"


rule ape_figure2:
    input:
        data=R("data/ape-toybars.npz"),
        scores=ape_eval_run("toybars", APE_SEEDS[0] if APE_SEEDS else 0, "scores.npz"),
    output:
        png=paper_report(
            R("figures/ape_fig2.png"),
            "ape_fig2",
            REPORT_APE,
            "Figure 2: toy bars topics and reconstructions",
        ),
        pdf=R("figures/ape_fig2.pdf"),
    log:
        log_path("ape_figure2", "fig2"),
    benchmark:
        benchmark_path("ape_figure2", "fig2")
    conda:
        CONDA_ENV
    params:
        eval_dir=lambda w, input: str(Path(input.scores).parent),
    shell:
        "noisyor-bench ape-figure2 --dataset-file {input.data:q} --eval-dir {params.eval_dir:q}"
        " --out-png {output.png:q} --out-pdf {output.pdf:q} > {log:q} 2>&1"


rule ape_claims:
    input:
        table=R("tables/ape_table1.csv"),
        figure1=R("tables/ape_figure1.csv"),
    output:
        csv=R("tables/claims_ape.csv"),
        md=R("tables/claims_ape.md"),
    log:
        log_path("ape_claims", "claims"),
    benchmark:
        benchmark_path("ape_claims", "claims")
    conda:
        CONDA_ENV
    shell:
        "noisyor-bench ape-claims --table {input.table:q} --figure1 {input.figure1:q}"
        " --out-csv {output.csv:q} --out-md {output.md:q} > {log:q} 2>&1"
