# noisyor-bench: regenerate every table and figure of "Amortized Inference of Variational
# Bounds for Learning Noisy-OR". The science is in the package under workflow/; each rule is a
# short call of the CLI subcommand of the same name (`-` -> `_`; rules/*.smk say where one
# subcommand runs in several rules). The ACP paper's own rules: rules/acp_*.smk. Choose the
# experiment grid with --config grid=smoke|quick|paper.
from snakemake.utils import min_version

min_version("9.0")


configfile: "config/config.yaml"


report: "docs/captions/workflow.rst"


include: "rules/common.smk"
include: "rules/rawdata.smk"
include: "rules/acp_datasets.smk"
include: "rules/acp_corpora.smk"
include: "rules/acp_training.smk"
include: "rules/acp_synthetic.smk"
include: "rules/acp_text.smk"
include: "rules/ape_noisyor.smk"
include: "rules/ape.smk"
include: "rules/avipam.smk"
include: "rules/summary.smk"
include: "rules/report.smk"


# NAME_PATTERN (noisyor_bench.infra.constants) is also what the config validation requires of
# dataset, corpus and experiment names, so no configured name can escape the results directory.
# Methods: exactly the names of the registry (noisyor_bench.inference.noisyor.registry).
wildcard_constraints:
    experiment=NAME_PATTERN,
    dataset=NAME_PATTERN,
    method=wildcard_pattern(),
    n="[0-9]+",


rule all:
    default_target: True
    input:
        all_targets(),
        runtime_targets(),


# The console's last lines: the claims' verdict counts and where the tables and report are.
onsuccess:
    from noisyor_bench.reporting.summary import run_summary

    try:
        print(run_summary(RESULTS, report="results/report.zip"), flush=True)
    except Exception as err:  # a summary must never turn a finished run into a failure
        print(f"(no claims summary: {err})", flush=True)
