# Stage: APE's question on noisy-OR (issue 14, beyond the paper; docs/ape_noisyor.md). Encoders
# amortized across many noisy-OR models (grids.<grid>.ape_noisyor), ranked on unseen ones against
# the exact log-likelihood. Each rule is named as the noisyor-bench subcommand it runs.
# Helpers (targets, run files, the settings APE_NOISYOR): rules/common.smk.
# ---------------------------------------------------------------------------------------
# APE's question on noisy-OR (rules/ape_noisyor.smk, docs/ape_noisyor.md): grids.<g>.ape_noisyor.
APE_NOISYOR = GRID.get("ape_noisyor", {})
REPORT_APE_NOISYOR = "APE on noisy-OR (beyond the paper)"


def ape_noisyor_families():
    return list(APE_NOISYOR.get("families", {})) if paper_selected("ape_noisyor") else []


def ape_noisyor_run(family, method, seed):
    n = APE_NOISYOR["problems"]["train"]
    return R(f"runs/ape-noisyor/{family}/{method}/n{n}/seed{seed}/metrics.json")


def ape_noisyor_run_files():
    """metrics.json of every encoder seed and every per-datapoint baseline (seed 0: deterministic)."""
    files = []
    for family in ape_noisyor_families():
        for encoder in APE_NOISYOR["encoders"]:
            files += [ape_noisyor_run(family, encoder, s) for s in APE_NOISYOR["seeds"]]
        files += [ape_noisyor_run(family, b, 0) for b in APE_NOISYOR.get("baselines", [])]
    return files


def ape_noisyor_targets():
    if not ape_noisyor_families():
        return []
    return [R("tables/ape_noisyor.csv"), R("tables/ape_noisyor.md"), R("figures/ape_noisyor.png")]


def ape_noisyor_claim_tables():
    return [R("tables/claims_ape_noisyor.csv")] if ape_noisyor_families() else []


def ape_noisyor_runs_dir(metrics_json):
    """<results>/runs from a run's metrics.json (runs/ape-noisyor/<family>/<method>/n<N>/seed<s>/)."""
    return str(Path(metrics_json).parents[5])


def _ape_noisyor_pattern(names):
    return "|".join(re.escape(n) for n in names) or "(?!)"


paper_hooks(
    "ape_noisyor",
    ape_noisyor_targets,
    ape_noisyor_claim_tables,
    lambda: {"ape-noisyor": ape_noisyor_run_files()} if ape_noisyor_families() else {},
)


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
        " --out-npz {output.npz} > {log} 2>&1"


rule ape_noisyor_train:
    input:
        problems=R("data/ape-noisyor-{family}.npz"),
    output:
        [
            R(
                f"runs/ape-noisyor/{{family}}/{{encoder}}/n{APE_NOISYOR['problems']['train']}/seed{s}/metrics.json"
            )
            for s in APE_NOISYOR.get("seeds", [])
        ]
        if APE_NOISYOR
        else [],
    log:
        log_path("ape_noisyor_train", "{family}-{encoder}"),
    benchmark:
        benchmark_path("ape_noisyor_train", "{family}-{encoder}")
    wildcard_constraints:
        encoder=_ape_noisyor_pattern(APE_NOISYOR.get("encoders", {})),
    conda:
        CONDA_ENV
    params:
        settings=lambda w: json_param(APE_NOISYOR),
        runs=lambda w, output: ape_noisyor_runs_dir(output[0]),
    shell:
        "noisyor-bench ape-noisyor-train --settings {params.settings} --family {wildcards.family}"
        " --encoder {wildcards.encoder} --problems {input.problems} --runs-dir {params.runs} > {log} 2>&1"


rule ape_noisyor_baseline:
    input:
        problems=R("data/ape-noisyor-{family}.npz"),
    output:
        R(
            f"runs/ape-noisyor/{{family}}/{{baseline}}/n{APE_NOISYOR.get('problems', {}).get('train', 0)}/seed0/metrics.json"
        ),
    log:
        log_path("ape_noisyor_baseline", "{family}-{baseline}"),
    benchmark:
        benchmark_path("ape_noisyor_baseline", "{family}-{baseline}")
    wildcard_constraints:
        baseline="svi|lb-cdi",
    conda:
        CONDA_ENV
    params:
        settings=lambda w: json_param(APE_NOISYOR),
        runs=lambda w, output: ape_noisyor_runs_dir(output[0]),
    shell:
        "noisyor-bench ape-noisyor-baseline --settings {params.settings} --family {wildcards.family}"
        " --method {wildcards.baseline} --problems {input.problems} --runs-dir {params.runs} > {log} 2>&1"


rule ape_noisyor_report:
    input:
        problems=[R(f"data/ape-noisyor-{f}.npz") for f in ape_noisyor_families()],
        runs=ape_noisyor_run_files(),
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
        " --problems {input.problems} --runs {params.runs} --out-csv {output.csv} --out-md {output.md}"
        " --out-png {output.png} --out-claims-csv {output.claims_csv} --out-claims-md {output.claims_md} > {log} 2>&1"
