# Stage: the report's runtime section. `snakemake --report results/report.zip` (make report)
# collects every output marked with paper_report() (common.smk); this rule adds the compute of
# the run, from the files of the rules' `benchmark:` directives. Rule names are the
# noisyor-bench subcommand they run; `table-html` runs in one rule per table,
# `table_html_<table>`.


from noisyor_bench.infra.provenance import code_version_label

REPORT_CONVERGENCE = "All papers - Convergence"
REPORT_RUNTIME = "All papers - Runtime"
REPORT_SOFTWARE = "All papers - Software"


# Tables in the report: each is shown as its HTML view (tables/<name>.html, written next to the
# CSV by `noisyor-bench table-html`; the CSV is a download link inside the view). One line per
# table: table_view(<CSV path or pattern>, <caption>, <category>, <label>[, <subcategory>]); a
# table gets its view when its CSV or .md is among the grid's targets (table_view_targets).
table_view(R("tables/claims.csv"), "claims", REPORT_CLAIMS, "Verdict per paper claim (table)")
table_view(
    R("tables/comparison.csv"),
    "comparison",
    REPORT_CLAIMS,
    "This run against the published reference (cells and claims)",
)
table_view(
    R("tables/convergence.csv"), "convergence_summary", REPORT_CONVERGENCE, "Convergence summary (table)"
)
table_view(
    R("tables/convergence_{experiment}.csv"),
    "convergence",
    REPORT_CONVERGENCE,
    lambda w: f"Convergence per run: {w.experiment}",
)
table_view(R("tables/runtime.csv"), "runtime", REPORT_RUNTIME, "Runtime per rule (table)")
table_view(R("tables/runtime_jobs.csv"), "runtime", REPORT_RUNTIME, "Runtime per job (table)")


# One small rule per registered table (a rule's report caption and category are fixed).
for _view in TABLE_VIEWS:

    rule:
        name:
            f"table_html_{re.sub(r'[^A-Za-z0-9]+', '_', Path(_view['csv']).stem).strip('_')}"
        input:
            _view["csv"],
        output:
            paper_report(
                f"{_view['csv'][: -len('.csv')]}.html",
                _view["caption"],
                _view["category"],
                _view["artifact"],
                _view["subcategory"],
            ),
        log:
            log_path("table_html", Path(_view["csv"]).stem),
        conda:
            CONDA_ENV
        shell:
            "noisyor-bench table-html --tables {input:q} --out-html {output:q} > {log:q} 2>&1"


# One claims page per selected paper (and study beyond the papers): its answer line, its claims
# grouped by paper section behind toggles, each decision behind its own toggle
# (claims/<paper>_claims.html); rule all builds them.
CLAIMS_PAGES = [R(f"claims/{p}_claims.html") for p in SELECTED]


for _paper_id in SELECTED:

    rule:
        name:
            f"claims_pages_{_paper_id}"
        input:
            R("tables/claims.csv"),
        output:
            paper_report(
                R(f"claims/{_paper_id}_claims.html"),
                "claims_page",
                REPORT_CLAIMS,
                f"{papers.get(_paper_id).name}: claims and verdicts",
            ),
        log:
            log_path("claims_pages", _paper_id),
        conda:
            CONDA_ENV
        params:
            paper=_paper_id,
            name=papers.get(_paper_id).name,
            beyond=papers.get(_paper_id).beyond_the_papers,
            results=lambda w, input: str(Path(input[0]).parent.parent),
        shell:
            "noisyor-bench claims-pages --claims {input:q} --results {params.results:q} --papers {params.paper}"
            " --out-html {output:q} > {log:q} 2>&1"


# The report's landing page (docs/captions/workflow.rst) shows the answer per paper -- the same
# lines as the console's end summary and README (noisyor_bench.reporting.answer) -- read from this
# results directory when the report is built (`--report`): the run has finished by then. The
# page includes <results>/claims/answer.rst, written here (the config stays as validated).
LANDING_ANSWER = R("claims/answer.rst")
if any(a == "--report" or a.startswith("--report=") for a in sys.argv):
    from noisyor_bench.reporting.summary import write_landing_answer

    write_landing_answer(RESULTS, LANDING_ANSWER, SELECTED)


# The report's software page: installed versions of the pinned packages, the git commit, the
# machine. The commit is a param, so a run from another commit rewrites the page.
rule software_html:
    output:
        paper_report(
            R("software.html"), "software", REPORT_SOFTWARE, "Software versions, git commit, machine"
        ),
    log:
        log_path("software_html", "software"),
    conda:
        CONDA_ENV
    params:
        commit=lambda w: code_version_label(),
    shell:
        "noisyor-bench software-html --out-html {output:q} > {log:q} 2>&1"


# Benchmark files are not declared outputs, so no input can name them: the rule takes every
# other artifact as input (it runs when all jobs have written their benchmark file, and again
# whenever one of them reran) and reads the benchmark files of the jobs upstream of it in this
# run's DAG, each once: the directory also keeps the files of jobs no longer in the workflow.
rule runtime_table:
    input:
        all_targets(),
    output:
        csv=R("tables/runtime.csv"),
        md=R("tables/runtime.md"),
        jobs=R("tables/runtime_jobs.csv"),
        png=paper_report(
            R("figures/runtime.png"), "runtime_figure", REPORT_RUNTIME, "Runtime per rule (figure)"
        ),
    log:
        log_path("runtime_table", "runtime"),
    conda:
        CONDA_ENV
    params:
        benchmarks=R("benchmarks"),
        jobs=dag_benchmarks,
    shell:
        "noisyor-bench runtime-table --benchmarks {params.benchmarks:q} {params.jobs} --out-csv {output.csv:q} --out-md {output.md:q}"
        " --out-jobs-csv {output.jobs:q} --out-png {output.png:q} > {log:q} 2>&1"


# Rules the cost model does not list as compute take seconds: run them locally, not as cluster jobs
# (rules/common.smk). Kept last: it sees every rule defined above.
mark_local_rules()
