# noisyor-bench: regenerate every table and figure of the registered papers (ACP, APE, aviPAM;
# noisyor_bench.experiments.papers). The science is in the package under workflow/; each rule is a
# short call of one CLI command, named after its step (the command carries its paper's prefix:
# rule table4 runs acp-table4). A paper's rules are its own
# rules/<paper>*.smk files, included from its registry entry. Choose the experiment grid with
# --config grid=<name> (a key of config/config.yaml's `grids`) and the papers with
# --config 'papers=[...]'.
from snakemake.utils import min_version

min_version("9.0")


configfile: "config/config.yaml"


report: "docs/captions/workflow.rst"


include: "rules/common.smk"
include: "rules/rawdata.smk"


for _paper_rules in papers.rules_files():

    include: _paper_rules


include: "rules/summary.smk"
include: "rules/report.smk"


# NAME_PATTERN (noisyor_bench.infra.constants) is also what the config validation requires of
# dataset, corpus and experiment names, so no configured name can escape the results directory.
wildcard_constraints:
    experiment=NAME_PATTERN,
    dataset=NAME_PATTERN,
    n="[0-9]+",


rule all:
    default_target: True
    input:
        all_targets(),
        runtime_targets(),
        CLAIMS_PAGES,


# Last after the rules: every rule checks the results directory when its first job is planned
# (rules/common.smk, _guard_results_dir).
guard_every_rule()


# The console's last lines: one answer line per paper (N of M claims reproduced, grid, compute;
# the same as the report's landing page and README) and where the tables and report are.
# onsuccess runs only when jobs ran: this invocation (wall time from Snakemake's start, grid,
# papers, commit) goes to <results>/logs/last_run.json, one record per paper, so a run of some
# papers keeps the others' answers from their own last run, labelled with it.
onsuccess:
    import time
    from noisyor_bench.reporting.answer import write_run_record
    from noisyor_bench.infra.resultsdir import record_rebuilt
    from noisyor_bench.reporting.summary import run_summary

    settings = workflow.dag_settings
    if set(settings.targets) <= {"all"} and not (
        settings.target_jobs or settings.until or settings.omit_from or settings.allowed_rules
    ):
        # every target of this config is built: the results are now the config's (its hash in
        # <results>/.noisyor-bench-results.json; a failed or partial run keeps the older hash)
        record_rebuilt(RESULTS, config, _code_commit(), workdir=os.getcwd())
    try:
        start = workflow.start_time.timestamp()
        write_run_record(
            RESULTS,
            start,
            time.time(),
            len(workflow.dag),
            config["grid"],
            SELECTED,
            _code_commit(),
            dirty=_code_dirty(),
        )
        print(run_summary(RESULTS, report="results/report.zip"), flush=True)
    except Exception as err:  # a summary must never turn a finished run into a failure
        print(f"(no claims summary: {err})", flush=True)
