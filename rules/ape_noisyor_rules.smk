# Stage: APE's question on noisy-OR (beyond the paper; docs/ape_noisyor.md). Encoders
# amortized across many noisy-OR models (grids.<grid>.ape_noisyor), ranked on unseen ones against
# the exact log-likelihood. Each rule is named as the noisyor-bench subcommand it runs.
table_view(R("tables/ape_noisyor.csv"), "ape_noisyor_table", REPORT_APE_NOISYOR, "APE on noisy-OR (table)")


rule ape_noisyor_problems:
    output:
        npz=R("data/ape-noisyor-{family}.npz"),
    log:
        log_path("ape_noisyor_problems", "{family}"),
    benchmark:
        benchmark_path("ape_noisyor_problems", "{family}")
    priority: UPSTREAM_PRIORITY
    conda:
        CONDA_ENV
    params:
        settings=lambda w: json_param(APE_NOISYOR),
    shell:
        "noisyor-bench ape-noisyor-problems --settings {params.settings} --family {wildcards.family}"
        " --out-npz {output.npz:q} > {log:q} 2>&1"


rule ape_noisyor_train:
    input:
        problems=R("data/ape-noisyor-{family}.npz"),
    output:
        ape_noisyor_run_outputs("{family}", "{encoder}", APE_NOISYOR.get("seeds", [])),
    log:
        log_path("ape_noisyor_train", "{family}-{encoder}"),
    benchmark:
        benchmark_path("ape_noisyor_train", "{family}-{encoder}")
    wildcard_constraints:
        encoder=_ape_noisyor_pattern(APE_NOISYOR.get("encoders", {})),
    conda:
        CONDA_ENV
    resources:
        **compute_resources("ape_noisyor_train", "{family}-{encoder}"),
    params:
        settings=lambda w: json_param(APE_NOISYOR),
        out=lambda w, output: run_folders(output),
    shell:
        "noisyor-bench ape-noisyor-train --settings {params.settings} --family {wildcards.family}"
        " --encoder {wildcards.encoder} --problems {input.problems:q} --out-dir {params.out} > {log:q} 2>&1"


rule ape_noisyor_baseline:
    input:
        problems=R("data/ape-noisyor-{family}.npz"),
    output:
        ape_noisyor_run_outputs("{family}", "{baseline}", [0]),
    log:
        log_path("ape_noisyor_baseline", "{family}-{baseline}"),
    benchmark:
        benchmark_path("ape_noisyor_baseline", "{family}-{baseline}")
    wildcard_constraints:
        baseline="svi|lb-cdi",
    conda:
        CONDA_ENV
    resources:
        **compute_resources("ape_noisyor_baseline", "{family}-{baseline}"),
    params:
        settings=lambda w: json_param(APE_NOISYOR),
        out=lambda w, output: run_folders(output),
    shell:
        "noisyor-bench ape-noisyor-baseline --settings {params.settings} --family {wildcards.family}"
        " --method {wildcards.baseline} --problems {input.problems:q} --out-dir {params.out} > {log:q} 2>&1"


rule ape_noisyor_report:
    input:
        problems=[R(f"data/ape-noisyor-{f}.npz") for f in ape_noisyor_families()],
        runs=ape_noisyor_run_files(),
        scores=ape_noisyor_run_files("scores.npz"),
    output:
        csv=R("tables/ape_noisyor.csv"),
        md=R("tables/ape_noisyor.md"),
        png=paper_report(
            R("figures/ape_noisyor.png"),
            "ape_noisyor",
            REPORT_APE_NOISYOR,
            "APE on noisy-OR: ranking agreement and ELBO gap",
        ),
        claims_csv=R("tables/claims_ape_noisyor.csv"),
        claims_md=R("tables/claims_ape_noisyor.md"),
    log:
        log_path("ape_noisyor_report", "ape_noisyor"),
    benchmark:
        benchmark_path("ape_noisyor_report", "ape_noisyor")
    conda:
        CONDA_ENV
    params:
        settings=lambda w: json_param(APE_NOISYOR),
        runs=lambda w, input: list_param(input.runs),
        grid=config["grid"],
    shell:
        "noisyor-bench ape-noisyor-report --settings {params.settings} --grid {params.grid}"
        " --problems {input.problems:q} --runs {params.runs} --out-csv {output.csv:q} --out-md {output.md:q}"
        " --out-png {output.png:q} --out-claims-csv {output.claims_csv:q} --out-claims-md {output.claims_md:q} > {log:q} 2>&1"
