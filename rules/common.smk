# The workflow's shared core: the validated config, result paths, the CLI's shell arguments, raw
# inputs, report helpers and the targets of the selected papers. No paper lives here: each
# paper's rules file (rules/<paper>*.smk, included by the Snakefile from the paper registry,
# noisyor_bench.experiments.papers) registers its targets with paper_hooks().
import json
import os
import re
import shlex
import sys
from pathlib import Path

sys.path.insert(0, str(Path(workflow.basedir) / "workflow"))

from noisyor_bench.data.rawdata import RAW_DATA_ENV, REGISTRY as RAW_KEYS
from noisyor_bench.experiments import job_seconds, papers
from noisyor_bench.experiments.config import config_warnings, raw_data_dir, validate_config
from noisyor_bench.experiments.rundir import cell_path, run_path
from noisyor_bench.infra import shellargs
from noisyor_bench.infra.constants import NAME_PATTERN
from noisyor_bench.infra.errors import ConfigError
from noisyor_bench.infra.provenance import CHECKOUT_ENV
from snakemake.exceptions import WorkflowError

_RAW_CONFIG = config
try:
    config = validate_config(config)  # also maps the deprecated `profile`/`profiles` to `grid`/`grids`
except ConfigError as err:
    raise WorkflowError(str(err)) from None
# The report's captions read snakemake.config["grid"]: the grid that really ran, also when it
# was chosen with the deprecated `--config profile=...`.
_RAW_CONFIG["grid"] = config["grid"]

GRID = config["grids"][config["grid"]]  # grids.<grid> of `--config grid=...` (default: config.yaml's)
_CONFIG_WARNINGS = config_warnings(config)  # schema-valid but doubtful settings
if _CONFIG_WARNINGS:
    print(
        f"noisyor-bench: {len(_CONFIG_WARNINGS)} config warning(s) for grid {config['grid']}; "
        f"'noisyor-bench check-config --set grid={config['grid']}' lists them with their keys",
        file=sys.stderr,
    )
SELECTED = [p.id for p in papers.selected(config["papers"])]  # registry order: tables, claims
RESULTS = config["results_dir"]
RAW_DATA_DIR = raw_data_dir(config)
# The mirror reaches every command through $NOISYOR_RAW_DATA (each command reads it when
# --raw-data-dir is absent), never through a rule's params or input paths: Snakemake reruns a job
# whose params or set of input paths changed, and a mirror at another path holding the same files
# must rerun nothing. What the files hold is checked by verify_raw's sha256 stamps (rules/rawdata.smk).
if RAW_DATA_DIR is not None:
    RAW_DATA_DIR = Path(os.path.abspath(RAW_DATA_DIR))
    os.environ[RAW_DATA_ENV] = str(RAW_DATA_DIR)
    workflow.register_envvars(RAW_DATA_ENV)  # also passed to the jobs of remote executors
# Every job refuses to run a noisyor_bench package imported from another checkout than this one
# (e.g. a .venv linked to another checkout): its records would name this checkout's commit.
os.environ[CHECKOUT_ENV] = str(Path(workflow.basedir).resolve())
workflow.register_envvars(CHECKOUT_ENV)


def R(path):
    """A path under the configured results directory."""
    return f"{RESULTS}/{path}"


def RUN(*cell, seed, file=None):
    """<results>/runs/<cell>/seed<s>[/<file>]: every run path of the rules, spelled by the code that
    writes and reads runs (noisyor_bench.experiments.rundir.run_path). ``cell``: experiment,
    dataset, method and N, or one cell path; any of them may be a {wildcard}."""
    return R(run_path(cell[0] if len(cell) == 1 else cell_path(*cell), seed, file))


def run_folders(files):
    """The run folders of a job's output files, in their order and shell-quoted: its --out-dir."""
    return " ".join(shlex.quote(d) for d in dict.fromkeys(str(Path(f).parent) for f in files))


# Every rule calls the package CLI `noisyor-bench`, installed in the project's venv (`make`)
# or in the conda env of `--sdm conda` (envs/environment.yaml installs the package).
CONDA_ENV = "../envs/environment.yaml"  # relative to rules/, for `--sdm conda`
# Download mode's cache. Paths under the results directory (this one, outputs, argument files) are
# spelled with the same prefix as the outputs whose metadata Snakemake keys by path, so they never
# differ while that metadata is found: a relative results_dir keeps them relative.
CACHE_DIR = R("raw")


# Report (`snakemake --report`, rules/report.smk): one category per paper section (the report
# sorts categories by name), each result labelled with the paper artifact it regenerates and
# captioned from docs/captions/<name>.rst (paths relative to rules/).
REPORT_CLAIMS = "All papers - Claims"


def paper_report(path, caption, category, artifact, subcategory=None):
    """``report()`` of a result: caption docs/captions/<caption>.rst, label = the paper artifact.

    ``artifact`` is a string (may name wildcards) or a function of the wildcards; it must be
    unique within its category, since the report lists a category's results by label.
    """
    labels = (lambda w: {"artifact": artifact(w)}) if callable(artifact) else {"artifact": artifact}
    return report(
        path,
        caption=f"../docs/captions/{caption}.rst",
        category=category,
        subcategory=subcategory,
        labels=labels,
    )


# HTML views of the tables (rules/report.smk): Snakemake's report renders .html inline but
# shows a .csv only as a download link, so each table registered with table_view() gets
# tables/<name>.html (noisyor-bench table-html) in the report instead of its CSV.
TABLE_VIEWS = []


def table_view(csv, caption, category, artifact, subcategory=None):
    """Show the table ``csv`` (a path, may name wildcards) in the report as its HTML view."""
    TABLE_VIEWS.append(
        dict(csv=csv, caption=caption, category=category, artifact=artifact, subcategory=subcategory)
    )


def table_view_targets(tables):
    """HTML views of the registered tables among ``tables`` (their CSV or .md in the list)."""
    csvs = {f"{t[: -len('.md')]}.csv" if t.endswith(".md") else t for t in tables}
    views = []
    for view in TABLE_VIEWS:  # a pattern's {wildcards} match one path component each
        parts = re.split(r"\{[^}]+\}", view["csv"])
        regex = re.compile(f"{'[^/]+'.join(re.escape(p) for p in parts)}\\Z")
        views += [f"{c[: -len('.csv')]}.html" for c in sorted(csvs) if regex.match(c)]
    return list(dict.fromkeys(views))


# Whether this invocation executes jobs (set when its first job is planned, _guard_results_dir
# below): only then are argument files written, so a dry run, lint or --dag writes nothing outside
# .snakemake/.
_EXECUTES = {"jobs": False}


def json_param(obj):
    """A config value as a shell-quoted JSON argument, long ones as ``@<results>/params/<sha>.json``."""
    return shellargs.json_argument(obj, R("params"), write=_EXECUTES["jobs"])


def previous_option(files):
    """``--previous <the last segment's state>`` of a training job that runs as segments
    (noisyor_bench.experiments.segments), or nothing (its first segment, or a training in one job)."""
    return f"--previous {shlex.quote(str(files[0]))}" if files else ""


def list_param(paths):
    """A file list for a list option, long ones as ``@<results>/params/<sha>.txt``."""
    return shellargs.list_argument(paths, R("params"), write=_EXECUTES["jobs"])


def log_path(rule_name, stem):
    return R(f"logs/{rule_name}/{stem}.log")


def benchmark_path(rule_name, stem):
    return R(f"benchmarks/{rule_name}/{stem}.tsv")


def raw_paths(*keys):
    """Locations of raw inputs (mirror files, or <results>/raw files made by fetch_raw)."""
    from noisyor_bench.data.rawdata import expected_location

    return [str(expected_location(key, RAW_DATA_DIR, CACHE_DIR)) for key in keys]


def raw_inputs(*keys):
    """Raw inputs of a rule: in download mode the files fetch_raw makes under <results>/raw, as
    ancient() (judged by content, not mtime); with a mirror none, since the command reads the
    mirror from $NOISYOR_RAW_DATA. Either way it also takes the files' stamps, raw_stamps.
    verify_raw checks the content, and the stamps order the jobs."""
    if RAW_DATA_DIR is not None:
        return []
    return [ancient(p) for p in raw_paths(*keys)]


def verify_raw_input(wildcards):
    """verify_raw's input. Download mode: the fetched file, ancient() while its content is the one
    its stamp verified. Mirror mode: nothing while the mirror file's content is the one its stamp
    verified (or before the first check), so a touched file or a mirror at another path reruns
    nothing; the file itself (a newer file whose sha256 differs from the stamp's) when its content
    changed, which reruns verify_raw and fails on the checksum; a missing file stops the DAG.
    Before the first stamp, a mirror file is checked against its pin here: a file that fails it is
    an input, so that verify_raw runs (and fails) before the rules that read it."""
    from noisyor_bench.data.rawdata import verify
    from noisyor_bench.infra.errors import DataError
    from noisyor_bench.infra.hashing import sha256_file

    (path,) = raw_paths(wildcards.key)
    verified = [] if RAW_DATA_DIR is not None else ancient(path)
    stamp = Path(R(f"raw_verified/{wildcards.key}.json"))
    if RAW_DATA_DIR is not None and os.path.isfile(path) and not stamp.exists():
        try:
            verify(wildcards.key, path)
        except DataError:
            return path
        return verified
    try:
        if os.stat(path).st_mtime <= stamp.stat().st_mtime:
            return verified
        recorded = json.loads(stamp.read_text(encoding="utf-8")).get("sha256")
        return verified if recorded and recorded == sha256_file(path) else path
    except (OSError, ValueError):  # no stamp yet, no file yet (fetch_raw makes it), unreadable stamp
        return path


def raw_stamps(*keys):
    """verify_raw's stamps (rules/rawdata.smk): a rule reading raw files starts after their check;
    ancient(): a stamp orders jobs, its mtime triggers nothing (the raw file itself does)."""
    return [ancient(R(f"raw_verified/{key}.json")) for key in keys]


def pmi_reference_input():
    """The PMI reference corpus (config pmi.reference): a raw-input key, or a user path."""
    ref = config["pmi"]["reference"]
    return raw_inputs(ref) if ref in RAW_KEYS else [ref]


def pmi_reference_stamps():
    ref = config["pmi"]["reference"]
    return raw_stamps(ref) if ref in RAW_KEYS else []


# ---------------------------------------------------------------------------------------
# The papers' targets. Each paper's rules file calls paper_hooks() once with functions of no
# argument: its results (tables, figures), its claim tables (merged into tables/claims.csv) and
# its runs with a convergence verdict ({experiment: [metrics.json, ...]}, one table each).
PAPER_HOOKS = {}


def paper_hooks(paper_id, results, claim_tables, convergence_runs):
    papers.get(paper_id)  # a registered paper
    PAPER_HOOKS[paper_id] = dict(results=results, claims=claim_tables, convergence=convergence_runs)


def _hooks(paper_id):
    if paper_id not in PAPER_HOOKS:
        rules = ", ".join(papers.rules_files([paper_id]))
        raise WorkflowError(f"paper {paper_id!r} is selected but its rules ({rules}) call no paper_hooks()")
    return PAPER_HOOKS[paper_id]


def paper_selected(paper_id):
    return paper_id in SELECTED


def claim_tables():
    """Claim tables of every selected paper, merged into results/tables/claims_run.csv."""
    return [t for p in SELECTED for t in _hooks(p)["claims"]()]


_CONVERGENCE = {}


def convergence_runs():
    """experiment -> metrics.json of its runs, for every selected paper, in registry order."""
    if not _CONVERGENCE:
        for p in SELECTED:
            _CONVERGENCE.update(_hooks(p)["convergence"]())
    return _CONVERGENCE


def convergence_run_files(experiment):
    return convergence_runs()[experiment]


def convergence_tables():
    return [R(f"tables/convergence_{e}.csv") for e in convergence_runs()]


def result_targets():
    """The grid's results (tables, figures, claims), without the comparison with the reference."""
    targets = [t for p in SELECTED for t in _hooks(p)["results"]()]
    targets += [R("tables/claims.csv"), R("tables/claims.md"), R("tables/claims_sources.csv")]
    targets += [R("software.html")]
    if convergence_tables():  # a paper without runs (only tables) has no convergence to judge
        targets += convergence_tables() + [R("tables/convergence.csv"), R("tables/convergence.md")]
    return list(dict.fromkeys(targets))


# The published reference result sets (config key reference_dir; `registered`: the selected
# papers' own): every run is compared with their tables (rule compare, rules/summary.smk).
# Spelled relative to the working directory when they lie inside it (the repository root, as `make`
# runs): a checkout moved or copied with its .snakemake/ then names the same inputs and params.
def workdir_relative(path):
    path = Path(path)
    try:
        return path.relative_to(Path.cwd()) if path.is_absolute() else path
    except ValueError:  # outside the working directory
        return path


REFERENCE_DIRS = [
    workdir_relative(d)
    for d in papers.reference_dirs(config.get("reference_dir"), config["papers"], workflow.basedir)
]
REFERENCE_TABLES = sorted(str(p) for d in REFERENCE_DIRS for p in (d / "tables").glob("*.csv"))


def all_targets():
    """Everything `rule all` builds for the selected grid and papers."""
    targets = result_targets()
    targets += [R("tables/comparison.csv"), R("tables/comparison.md")] if REFERENCE_TABLES else []
    return targets + table_view_targets(targets)


def runtime_targets():
    """Outputs of runtime_table (rules/report.smk), which rule all builds after every other artifact."""
    tables = [R(f"tables/{t}") for t in ("runtime.csv", "runtime.md", "runtime_jobs.csv")]
    return tables + [R("figures/runtime.png")] + table_view_targets(tables)


# Scheduling order (`priority:`): longest jobs first, so that the cores of a small machine are not
# left with one long job at the end. The order comes from measured seconds per job
# (config/job_seconds.csv, written by `noisyor-bench job-seconds` from reference runs'
# runtime_jobs.csv; noisyor_bench.experiments.job_seconds): a rule whose benchmark is
# benchmark_path(rule, stem) gets `priority: measured_priority(rule, stem)`; a job without a
# measurement gets 0. Data preparation runs before everything (UPSTREAM_PRIORITY): priorities order
# only the jobs that are ready, so a cheap upstream job would otherwise wait behind every long
# training job and start its own long children last (measured 2026-11-24: MULTI-MNIST's dataset
# waited 25 min, then its two ~450 s training jobs ran at the end).
UPSTREAM_PRIORITY = job_seconds.UPSTREAM_PRIORITY
JOB_SECONDS = job_seconds.load(
    None if config.get("job_seconds") is None else Path(workflow.basedir) / config["job_seconds"]
)


def measured_priority(rule_name, stem):
    """``priority:`` of a job from its measured seconds; ``stem`` as in its benchmark_path. A job
    without a measurement (another grid's sizes, a search chunk) takes the cost model's estimate
    (JOB_COSTS, below), so that the order stays longest first."""

    def _priority(wildcards):
        job = stem.format(**dict(wildcards.items()))
        if (rule_name, job) not in JOB_SECONDS and (rule_name, job) in JOB_COSTS:
            return min(round(JOB_COSTS[(rule_name, job)].cpu_seconds), UPSTREAM_PRIORITY - 1)
        return job_seconds.priority(JOB_SECONDS, rule_name, job)

    return _priority


# One writer per results directory: Snakemake's own lock covers a working directory,
# not a results_dir shared by invocations from different working directories.  Taken when the
# workflow starts executing jobs (onstart: not in dry runs, lint, or the per-job processes of
# cluster executors), held until this Snakemake process ends.
onstart:
    from noisyor_bench.infra.results_lock import take_for_invocation

    take_for_invocation(RESULTS)  # held by noisyor_bench.infra.io until this process ends
    if workflow.executor_plugin is not None and workflow.executor_plugin.name == "slurm":
        _guard_slurm_runs(log)


# A SLURM driver refuses to start while jobs of an earlier driver of this results directory (one
# killed, whose jobs run on) are still queued or running: it would submit them again. Then it
# records its own run ID for the next run's check (noisyor_bench.infra.slurm_runs).
def _guard_slurm_runs(log):
    from noisyor_bench.infra.slurm_runs import guard

    error, warning = guard(RESULTS, log)
    if warning:
        print(f"noisyor-bench: warning: {warning}", file=sys.stderr, flush=True)
    if error:
        print(f"Error: {error}", file=sys.stderr, flush=True)
        raise SystemExit(1)


# The results directory is checked when an invocation that executes jobs plans its first job,
# before any job runs and whatever hooks are on: its grid (noisyor_bench.infra.resultsdir; also on
# dry runs), then, on a real run, the one-writer lock (held until this process ends; onstart above
# takes the same lock, a no-op by then) and the record of its grid. Per-job processes of cluster
# executors (exec_mode remote/subprocess) skip both. It runs from an input function that every
# rule carries (guard_every_rule, called once every rule is defined). Snakemake calls input functions
# while it builds the DAG, and only Workflow.execute (a run or a dry run) sets the executor that
# tells a dry run from a real one; --dag, --summary, --lint and the report plan without one and
# skip the guard.
_GUARD = {"done": False}


def _aggregating_rules():
    """The rules that gather other jobs' outputs into tables, figures and claims: those without
    wildcards (one job each), less `all` and the HTML views (rebuilt after their table anyway).
    What a changed config may have to rebuild where Snakemake holds no record (check_identity)."""
    return tuple(
        sorted(
            r.name
            for r in workflow.rules
            if not r.has_wildcards() and r.name != "all" and not r.name.startswith("table_html")
        )
    )


def _guard_results_dir():
    from noisyor_bench.infra.clock import refuse_future_files
    from noisyor_bench.infra.errors import UserError
    from noisyor_bench.infra.resultsdir import check_identity, write_identity
    from noisyor_bench.infra.results_lock import locked_line, take_for_invocation

    if workflow.executor_plugin is None:  # --dag, --summary, --list-untracked ...: nothing runs
        return
    _EXECUTES["jobs"] = not workflow.dryrun
    if not workflow.is_main_process:
        return
    try:
        refuse_future_files([RESULTS, *REFERENCE_DIRS])  # before Snakemake judges by mtimes
        for warning in check_identity(RESULTS, config, os.getcwd(), _aggregating_rules()):
            print(f"noisyor-bench: warning: {warning}", file=sys.stderr, flush=True)
        if not workflow.dryrun:
            take_for_invocation(RESULTS)  # held by noisyor_bench.infra.io until this process ends
            print(locked_line(RESULTS), file=sys.stderr, flush=True)  # the console's log starts here
            write_identity(RESULTS, config, _code_commit(), workdir=os.getcwd())
    except UserError as err:
        # Snakemake would wrap an exception of an input function in its own report with a
        # traceback; the refusal is the user's to act on, so it is said alone and ends the run.
        print(f"Error: {err}", file=sys.stderr, flush=True)
        raise SystemExit(1) from None
    except OSError as err:  # a read-only or unwritable results directory: one line, not a traceback
        print(f"Error: {_unwritable_results(err)}", file=sys.stderr, flush=True)
        raise SystemExit(1) from None


def _unwritable_results(err):
    """The line for an OS error on the results directory itself (the lock, its record)."""
    import errno as _errno

    code = _errno.errorcode.get(err.errno or 0, "")
    where = f" ({err.filename})" if err.filename else ""
    return (
        f"results_dir {RESULTS} cannot be written: {err.strerror or err}{f' ({code})' if code else ''}"
        f"{where}; make it writable, or choose another results_dir (--config results_dir=...)"
    )


def _lock_for_report():
    """`snakemake --report` reads every result without executing (so without the guard): it takes
    the results lock too, so no report is built from a directory another invocation is writing."""
    from noisyor_bench.infra.errors import UserError
    from noisyor_bench.infra.results_lock import take_for_invocation

    if workflow.is_main_process and any(a == "--report" or a.startswith("--report=") for a in sys.argv[1:]):
        try:
            take_for_invocation(RESULTS)
        except UserError as err:
            print(f"Error: {err}", file=sys.stderr, flush=True)
            raise SystemExit(1) from None


_lock_for_report()


def _code_commit():
    """The checkout's commit for the results directory's record (None outside a git checkout)."""
    from noisyor_bench.infra.provenance import git_state

    return git_state(workflow.basedir, "Snakefile").get("commit")


def _code_dirty():
    """Whether the checkout has uncommitted changes (None outside a git checkout): the run record
    and the answer say so beside the commit."""
    from noisyor_bench.infra.provenance import git_state

    return git_state(workflow.basedir, "Snakefile").get("dirty")


def results_dir_guard(wildcards):
    """Input function of every rule: the results-directory guard, once per invocation, when
    Snakemake plans the first job; adds no input file."""
    if not _GUARD["done"]:
        _GUARD["done"] = True
        _guard_results_dir()
    return []


def guard_every_rule():
    """Attach the guard's input function to every defined rule, once all are defined; then
    whichever targets an invocation asks for, its first planned job runs the guard. Also keeps
    every rule's finished outputs until its job replaces them (keep_outputs_until_replaced)."""
    for rule_object in workflow.rules:
        rule_object.set_input(results_dir_guard)
    keep_outputs_until_replaced()


# Finished results are kept until their replacement exists. Snakemake removes a job's outputs
# when the job starts, unless they are flagged update(): then it leaves them in place, keeps a
# copy under .snakemake/ and puts it back if the job fails. Every command writes its outputs by
# rename (run folders from <run>.partial, tables and data through noisyor_bench.infra.io's atomic
# writers), so a rerun that fails or is killed leaves the finished files byte-identical. Left out:
# the raw-input rules, whose stamp or download is a check that must be redone when it fails.
OUTPUTS_REMOVED_AT_START = ("fetch_raw", "verify_raw")


def keep_outputs_until_replaced():
    from snakemake.io import flag

    for rule_object in workflow.rules:
        if rule_object.name not in OUTPUTS_REMOVED_AT_START:
            for output_file in rule_object.output:
                flag(output_file, "update")


# A job that failed after Snakemake put its update() outputs back is recorded by Snakemake as
# finished (its metadata then holds the new params and inputs, and the restored copies are newer
# than every input), so the next invocation would take the old results as current. Its outputs
# are marked incomplete instead: the next invocation reruns the job (profiles: rerun-incomplete).
# A job stopped with Snakemake itself (Ctrl-C, a killed Snakemake) is never postprocessed and
# stays marked incomplete anyway.
onerror:
    from snakemake.io import is_flagged

    for _failed in getattr(workflow.scheduler, "failed", ()):
        if any(is_flagged(f, "update") for f in _failed.output):
            workflow.persistence.started(_failed)


# ---------------------------------------------------------------------------------------
# Cluster resources from the cost model (noisyor_bench.experiments.costs, docs/cluster.md):
# every compute job's expected seconds and memory, scaled from measured runs (the quick grid's
# config/job_seconds.csv, the paper-protocol run under reference/) by its cell's size. The
# resources of each compute job come from `**compute_resources(name, stem)`, which gives `runtime`
# (minutes, attempt x max(10 min, SAFETY x the estimate): a retry gets at least twice the limit; the
# 10 min lower only in tests, NOISYOR_TEST_RUNTIME_FLOOR_MIN, with a warning on every run), `mem_mb`
# (attempt x 1.5 x the memory estimate), and `gpu` (>= 1 for a
# CUDA-capable job under the gpu and slurm profiles). Every other rule is local (mark_local_rules(), called after the last
# rules file, rules/report.smk), since it takes seconds.
from noisyor_bench.experiments import costs as cost_model

try:  # the wall-time floor: 10 min, lower only in tests (NOISYOR_TEST_RUNTIME_FLOOR_MIN)
    RUNTIME_FLOOR = cost_model.runtime_floor()
except ConfigError as err:
    raise WorkflowError(str(err)) from None
if cost_model.runtime_floor_message(RUNTIME_FLOOR) and workflow.is_main_process:
    print(f"noisyor-bench: warning: {cost_model.runtime_floor_message(RUNTIME_FLOOR)}", file=sys.stderr)
COST_REFERENCES = cost_model.load_references(workflow.basedir, config.get("job_seconds"))
JOB_COSTS = cost_model.by_job(cost_model.estimate_jobs(config, COST_REFERENCES, SELECTED))
RULE_SLOWEST = {}  # the slowest estimate of each rule, for jobs the cost model does not list
for (_rule_name, _), _est in JOB_COSTS.items():
    if _rule_name not in RULE_SLOWEST or _est.cpu_seconds > RULE_SLOWEST[_rule_name].cpu_seconds:
        RULE_SLOWEST[_rule_name] = _est


def _job_estimate(rule_name, stem, wildcards):
    job = stem.format(**dict(wildcards.items()))
    return JOB_COSTS.get((rule_name, job)) or RULE_SLOWEST.get(rule_name)


def _gpus_requested():
    """GPUs a CUDA-capable job takes: the grid's gpus_per_job (clusters), or 1 where GPUs are counted
    (profiles/gpu's `resources: gpu`, `--resources gpu=N`)."""
    declared = workflow.global_resources.get("gpu")
    declared = getattr(declared, "value", declared)
    per_job = int(GRID.get("gpus_per_job", 0))
    return per_job if per_job or not declared else 1


def compute_resources(rule_name, stem):
    """``resources:`` of a compute job (benchmark ``benchmark_path(rule_name, stem)``): `runtime`,
    `mem_mb` and `gpu` (the cost model says which jobs can use CUDA: amortized training, not Gibbs,
    NUTS, VI or the per-datapoint methods)."""

    def runtime(wildcards, attempt):
        est = _job_estimate(rule_name, stem, wildcards)
        return cost_model.runtime_minutes(est.cpu_seconds if est else 3600.0, attempt, RUNTIME_FLOOR)

    def mem(wildcards, attempt):
        est = _job_estimate(rule_name, stem, wildcards)
        return cost_model.mem_mb(est.mem_mb if est else cost_model.BASE_MEM_MB, attempt)

    def gpu(wildcards):
        est = _job_estimate(rule_name, stem, wildcards)
        return _gpus_requested() if est is not None and est.cuda else 0

    return dict(runtime=runtime, mem_mb=mem, gpu=gpu)


def mark_local_rules():
    """Every rule whose benchmark is not a compute rule of the cost model runs locally (seconds)."""
    compute = cost_model.compute_rules()
    local = []
    for r in workflow.rules:
        parts = Path(str(r.benchmark or "")).parts  # <results>/benchmarks/<rule>/<job>.tsv
        name = parts[parts.index("benchmarks") + 1] if "benchmarks" in parts[:-1] else r.name
        if name not in compute:
            local.append(r.name)
    workflow.localrules(*local)


# The runtime table's benchmark files: those of the jobs upstream of it in this run's DAG, each once
# (the benchmark directory also keeps the files of jobs no longer in the workflow).
def dag_benchmarks(wildcards):
    """``--jobs <files>`` (noisyor_bench.reporting.runtime.upstream_benchmarks); empty (every
    file counts) where Snakemake has no DAG."""
    from noisyor_bench.reporting.runtime import upstream_benchmarks

    files = upstream_benchmarks(workflow.dag, "runtime_table")
    return f"--jobs {list_param(files)}" if files else ""
