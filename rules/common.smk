# Helpers shared by the rules: validated config, result paths, CLI invocation, JSON params.
import json
import re
import shlex
import sys
from pathlib import Path

sys.path.insert(0, str(Path(workflow.basedir) / "workflow"))

from noisyor_bench.experiments import job_seconds
from noisyor_bench.experiments.acp import grid
from noisyor_bench.experiments.acp.grid import corpora as corpus_grid
from noisyor_bench.experiments.config import budget_warnings, raw_data_dir, validate_config
from noisyor_bench.inference.noisyor.registry import METHODS, wildcard_pattern
from noisyor_bench.infra.constants import NAME_PATTERN
from noisyor_bench.infra.errors import ConfigError
from snakemake.exceptions import WorkflowError

_RAW_CONFIG = config
try:
    config = validate_config(config)  # also maps the deprecated `profile`/`profiles` to `grid`/`grids`
except ConfigError as err:
    raise WorkflowError(str(err)) from None
# The report's captions read snakemake.config["grid"]: the grid that really ran, also when it
# was chosen with the deprecated `--config profile=...`.
_RAW_CONFIG["grid"] = config["grid"]

GRID = grid.active_grid(config)  # grids.<grid> of `--config grid=...` (default: config.yaml's)
_BUDGET_WARNINGS = budget_warnings(config)  # schema-valid but absurd budgets (issue 18)
if _BUDGET_WARNINGS:
    print(
        f"noisyor-bench: {len(_BUDGET_WARNINGS)} budget warning(s) for grid {config['grid']} "
        "(patience not below max_epochs, batch_size above N_train); 'noisyor-bench check-config "
        f"--set grid={config['grid']}' lists them with their keys",
        file=sys.stderr,
    )
PAPERS = config["papers"]  # which papers `rule all` reproduces (acp, ape, avipam)
SEEDS = grid.seeds(config)
DEVICE = GRID.get("device", "auto")
THREADS = int(GRID.get("threads", 1))
GPUS_PER_JOB = int(GRID.get("gpus_per_job", 0))
RUN_FILES = ("metrics.json", "posterior_test.npz", "curve.csv")
RESULTS = config["results_dir"]
RAW_DATA_DIR = raw_data_dir(config)


def R(path):
    """A path under the configured results directory."""
    return f"{RESULTS}/{path}"


# Every rule calls the package CLI `noisyor-bench`, installed in the project's venv (`make`)
# or in the conda env of `--sdm conda` (envs/environment.yaml installs the package).
CONDA_ENV = "../envs/environment.yaml"  # relative to rules/, for `--sdm conda`
RAW_ARG = f"--raw-data-dir {shlex.quote(str(RAW_DATA_DIR))}" if RAW_DATA_DIR else ""
CACHE_DIR = R("raw")


# Report (`snakemake --report`, rules/report.smk): one category per paper section (the report
# sorts categories by name), each result labelled with the paper artifact it regenerates and
# captioned from docs/captions/<name>.rst (paths relative to rules/).
REPORT_DATASETS = "4.1 Datasets (Tables 2-3, Fig. 2)"
REPORT_INFERENCE = "4.2 Inference (Fig. 3)"
REPORT_RECOVERY = "4.3 Parameter estimation (Fig. 4, supp. Figs. 1-2)"
REPORT_GENERATIVE = "4.4 Generative modeling (Fig. 5, Table 4)"
REPORT_TEXT = "4.5 Topic models / supplement 5.1"
REPORT_CLAIMS = "Claims"
REPORT_CONVERGENCE = "Convergence"
REPORT_ABLATION = "Ablation (ours): ACP with theta stopped in eq. 11"
REPORT_RUNTIME = "Runtime"
REPORT_SOFTWARE = "Software"


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


def _pattern_regex(pattern):
    """A regex matching the concrete paths of a path pattern with {wildcards}."""
    parts = re.split(r"\{[^}]+\}", pattern)
    return re.compile(f"{'[^/]+'.join(re.escape(p) for p in parts)}\\Z")


def table_view_targets(tables):
    """HTML views of the registered tables among ``tables`` (their CSV or .md in the list)."""
    csvs = {f"{t[: -len('.md')]}.csv" if t.endswith(".md") else t for t in tables}
    views = []
    for view in TABLE_VIEWS:
        regex = _pattern_regex(view["csv"])
        views += [f"{c[: -len('.csv')]}.html" for c in sorted(csvs) if regex.match(c)]
    return list(dict.fromkeys(views))


def software_commit():
    """The code's git commit (+dirty), a param of the software page so a new commit rewrites it."""
    from noisyor_bench.infra.provenance import code_version

    code = code_version()
    state = "with uncommitted changes" if code.get("dirty") else "clean"
    return f"{code.get('commit')} ({state})"


def recovery_artifact(wildcards):
    """Report label of a parameter-recovery result: which paper figure(s) it regenerates."""
    if wildcards.experiment == "fig4":
        return "Fig. 4 + supp. Fig. 1: learned patterns, SYN-PATTERN"
    return "Supp. Fig. 2: learned patterns, MULTI-MNIST"


def runtime_targets():
    """Outputs of runtime_table (rules/report.smk), which rule all builds after every other artifact."""
    tables = [
        R("tables/runtime.csv"),
        R("tables/runtime.md"),
        R("tables/runtime_jobs.csv"),
        R("figures/runtime.png"),
    ]
    return tables + table_view_targets(tables)


# A JSON argument longer than this goes through a file (`@<results>/params/<sha>.json`): the
# paper grid's search draws would otherwise make shell lines of thousands of characters.
JSON_INLINE_MAX = 160


def json_param(obj):
    """A config value as a shell-quoted compact JSON argument (deterministic: sorted keys).

    Long values are written once to a file named by their sha256 and passed as ``@file``
    (every JSON option of the CLI reads ``@file``: noisyor_bench.commands.arguments.json_argument); the name changes with the content, so
    Snakemake's params trigger still reruns a job whose value changed.
    """
    import hashlib

    from noisyor_bench.infra.io import write_text_atomic

    text = json.dumps(obj, sort_keys=True, separators=(",", ":"))
    if len(text) <= JSON_INLINE_MAX:
        return shlex.quote(text)
    path = Path(R(f"params/{hashlib.sha256(text.encode()).hexdigest()[:16]}.json"))
    if not path.is_file():
        write_text_atomic(path, f"{text}\n")
    return shlex.quote(f"@{path}")


def list_param(paths):
    """A file list for a list option: inline when short, else ``@<results>/params/<sha>.txt``
    (one path a line; the CLI expands ``@FILE`` items of list options)."""
    import hashlib

    from noisyor_bench.infra.io import write_text_atomic

    paths = [str(p) for p in paths]
    text = " ".join(shlex.quote(p) for p in paths)
    if len(text) <= JSON_INLINE_MAX:
        return text
    body = "".join(f"{p}\n" for p in paths)
    path = Path(R(f"params/{hashlib.sha256(body.encode()).hexdigest()[:16]}.txt"))
    if not path.is_file():
        write_text_atomic(path, body)
    return shlex.quote(f"@{path}")


def log_path(rule_name, stem):
    return R(f"logs/{rule_name}/{stem}.log")


def benchmark_path(rule_name, stem):
    return R(f"benchmarks/{rule_name}/{stem}.tsv")


def raw_inputs(*keys):
    """Locations of raw inputs (mirror files, or <results>/raw files made by fetch_raw)."""
    from noisyor_bench.data.rawdata import expected_location

    return [str(expected_location(key, RAW_DATA_DIR, CACHE_DIR)) for key in keys]


def raw_stamps(*keys):
    """Stamps written by verify_raw (rules/rawdata.smk) for raw inputs. Every rule reading raw files
    takes these too, so it starts only after every file it reads is verified.  ancient(): a
    stamp orders the jobs but its mtime triggers nothing (a raw file that really changed is an
    input of the rule itself and triggers the rebuild, after its verification)."""
    return [ancient(R(f"raw_verified/{key}.json")) for key in keys]


def _raw_key_pattern():
    from noisyor_bench.data.rawdata import REGISTRY

    import re

    return "|".join(re.escape(k) for k in sorted(REGISTRY))


RAW_KEY_PATTERN = _raw_key_pattern()


def pmi_reference_input():
    """The PMI reference corpus: a raw-input key of the registry, or a user path."""
    from noisyor_bench.data.rawdata import REGISTRY

    ref = config["pmi"]["reference"]
    return raw_inputs(ref) if ref in REGISTRY else [ref]


def pmi_reference_stamps():
    """verify_raw stamp of the PMI reference corpus when it is a raw input of the registry."""
    from noisyor_bench.data.rawdata import REGISTRY

    ref = config["pmi"]["reference"]
    return raw_stamps(ref) if ref in REGISTRY else []


def cell_of(wildcards):
    """The grid cell named by a job's wildcards (the mode comes from the experiment)."""
    exp = grid.experiments(config)[wildcards.experiment]
    return grid.Cell(wildcards.experiment, wildcards.dataset, wildcards.method, int(wildcards.n), exp["mode"])


def search_result(wildcards):
    """best.json of the cell's search, or nothing when the cell uses the defaults."""
    cell = cell_of(wildcards)
    return [R(f"search/{cell.path}/best.json")] if grid.n_draws(config, cell) > 1 else []


def run_files(experiment, dataset, method, n, files=RUN_FILES, seeds=None):
    """The per-seed files a train_cell job writes (wildcard patterns or concrete values).

    Seeds: ``seeds`` if given, else the cell's (``grid.seeds``: the experiment's own or the
    grid's; the first only for a deterministic cell, e.g. SVI in inference mode).
    """
    if seeds is None:
        known = experiment in grid.experiments(config)
        seeds = grid.seeds(config, experiment, dataset, method) if known else SEEDS
    return [R(f"runs/{experiment}/{dataset}/{method}/n{n}/seed{seed}/{f}") for seed in seeds for f in files]


def experiment_files(experiment, files=("metrics.json",), methods=None):
    """Run files of every cell of an experiment in the selected grid (empty if absent)."""
    return [
        path
        for cell in grid.cells(config, experiment)
        if methods is None or cell.method in methods
        for path in run_files(cell.experiment, cell.dataset, cell.method, cell.n_train, files)
    ]


def experiment_datasets(experiment):
    """Dataset files of an experiment (for figures that label panels by dataset)."""
    exp = grid.experiments(config).get(experiment)
    return [R(f"data/{ds}.npz") for ds in exp["datasets"]] if exp else []


def baseline_files(experiment):
    """results/baselines/<dataset>.json of an experiment's datasets (rule baselines, rules/acp_synthetic.smk)."""
    exp = grid.experiments(config).get(experiment)
    return [R(f"baselines/{ds}.json") for ds in exp["datasets"]] if exp else []


def baseline_n_train(dataset):
    """N_train values a dataset's baselines need: its synthetic cells, or the Table 5 grid (NeurIPS titles)."""
    if dataset in config["datasets"]:
        return grid.baseline_n_train(config, dataset)
    return sorted(int(n) for n in (TEXT.get("topics") or {}).get("n_train", []))


def missing_reasons(experiment):
    """``[METHOD=]TEXT`` items for cells an experiment's table shows without runs."""
    exp = grid.experiments(config).get(experiment) or {}
    default = f"not run in this grid (grids.{config['grid']}.experiments.{experiment}.runs)"
    return [default] + [f"{m}={why}" for m, why in sorted((exp.get("not_run") or {}).items())]


def recovery_dataset(experiment):
    """The one dataset whose true patterns a recovery figure compares against."""
    (dataset,) = grid.experiments(config)[experiment]["datasets"]
    return dataset


def sensitivity_runs():
    """First-seed Fig. 3a runs of SVI and LB-CDI on SYN-PATTERN (deterministic methods: one seed
    suffices), for the sensitivity figure; empty when the grid has none."""
    return [
        R(f"runs/fig3a/{c.dataset}/{c.method}/n{c.n_train}/seed{SEEDS[0]}/metrics.json")
        for c in grid.cells(config, "fig3a")
        # the methods with a per-datapoint step cap (noisyor_bench.reporting.acp.sensitivity.STEP_HPARAMS,
        # not imported here: it loads torch while Snakemake parses the workflow)
        if c.method in ("svi", "lb-cdi") and c.dataset == "syn-pattern" and c.n_train == 0
    ]


def synthetic_tables():
    """Aggregated tables of the synthetic experiments present in the grid (for claims)."""
    exps = grid.experiments(config)
    tables = []
    if "fig3a" in exps:
        tables += [R("tables/fig3a.csv"), R("tables/fig3b.csv")]
    tables += [R(f"tables/{e}_recovery.csv") for e in ("fig4", "suppfig2") if e in exps]
    tables += [R(f"tables/{e}.csv") for e in ("fig5", "table4") if e in exps]
    tables += ablation_tables()
    return tables


def ablation_cells():
    """(experiment, dataset, N_train) of every ACP-SG cell (the ablation of ACP) in the selected grid."""
    ablations = {m.name for m in METHODS if m.ablates}  # the registry's ablations (ACP-SG)
    return sorted({(c.experiment, c.dataset, c.n_train) for c in grid.cells(config) if c.method in ablations})


def ablation_files(files=("metrics.json", "posterior_test.npz")):
    """Run files the ablation table pairs by seed: ACP-SG, ACP and AVI in each ACP-SG cell (AVI where it ran)."""
    wanted = set(ablation_cells())
    return [
        path
        for cell in grid.cells(config)
        # the ablation, the method it ablates (registry: `ablates`) and the table's yardstick AVI
        # (noisyor_bench.reporting.acp.ablation: ABLATION, REFERENCE, BASELINE)
        if (cell.experiment, cell.dataset, cell.n_train) in wanted and cell.method in ("acp-sg", "acp", "avi")
        for path in run_files(cell.experiment, cell.dataset, cell.method, cell.n_train, files)
    ]


def ablation_tables():
    """The ablation table (for claims and rule all), if the grid runs ACP-SG."""
    return [R("tables/ablation_acp_sg.csv")] if ablation_cells() else []


def claim_tables():
    """Claim tables of every selected paper, merged into results/tables/claims.csv."""
    tables = []
    if "acp" in PAPERS:
        tables += [R("tables/claims_synthetic.csv")] + text_claim_tables()
    if ape_targets():
        tables.append(R("tables/claims_ape.csv"))
    tables += ape_noisyor_claim_tables()  # rules/ape_noisyor.smk (empty unless "ape" in PAPERS)
    if "avipam" in PAPERS and AVIPAM:  # rules/avipam.smk
        tables += [R("tables/claims_avipam.csv")]
    return tables


# A published reference result set (config key reference_dir, issue 16): every run is compared
# with it (rule compare in rules/summary.smk) when the folder holds a tables/ directory.
REFERENCE_DIR = (
    None if config.get("reference_dir") is None else Path(workflow.basedir) / config["reference_dir"]
)


def reference_tables():
    """The reference's table CSVs (rerun triggers of the comparison), or [] when none is configured."""
    if REFERENCE_DIR is None or not (REFERENCE_DIR / "tables").is_dir():
        return []
    return sorted(str(p) for p in (REFERENCE_DIR / "tables").glob("*.csv"))


def comparison_targets():
    """This run against the reference (tables/comparison.*), when a reference is configured."""
    return [R("tables/comparison.csv"), R("tables/comparison.md")] if reference_tables() else []


def run_tables():
    """The table CSVs of this run that the comparison reads (every table target, claims included)."""
    return sorted({t for t in result_targets() if t.startswith(R("tables/")) and t.endswith(".csv")})


def all_targets():
    """Everything `rule all` builds for the selected grid and papers."""
    targets = result_targets() + comparison_targets()
    return targets + table_view_targets(targets)


def result_targets():
    """The grid's results (tables, figures, claims), without the comparison with the reference."""
    targets = acp_targets() if "acp" in PAPERS else []
    targets += ape_targets()  # rules/ape.smk (empty unless "ape" in PAPERS)
    targets += ape_noisyor_targets()  # rules/ape_noisyor.smk (likewise)
    if "avipam" in PAPERS:
        targets += avipam_targets()  # rules/avipam.smk
    targets += [R("tables/claims.csv"), R("tables/claims.md"), R("software.html")]
    targets += convergence_tables() + [R("tables/convergence.csv"), R("tables/convergence.md")]
    acp_tables = synthetic_tables() + text_tables() if "acp" in PAPERS else []
    return targets + [t for t in acp_tables if t not in targets]


def acp_targets():
    """The ACP paper's tables and figures (noisy-OR, the core)."""
    targets = [R("tables/datasets.csv"), R("tables/datasets.md")]
    if TEXT:  # the real corpora and the PMI reference only where the grid has text experiments
        targets += [R("pmi/cooccurrence.npz"), R("data/reuters.npz")]
    for name in GRID["datasets"]:
        targets.append(R(f"figures/patterns_{name}.png"))
    exps = grid.experiments(config)
    if "fig3a" in exps:
        targets += [R("tables/fig3a.md"), R("figures/fig3b.png")]
    if sensitivity_runs():
        targets += [R("tables/fig3a_sensitivity.md"), R("figures/fig3a_sensitivity.png")]
    targets += [R(f"figures/{e}_patterns.png") for e in ("fig4", "suppfig2") if e in exps]
    if "fig5" in exps:
        targets.append(R("figures/fig5.png"))
    if "table4" in exps:
        targets.append(R("tables/table4.md"))
    targets += [R("tables/ablation_acp_sg.md") for _ in ablation_tables()]
    return targets + text_targets()


def dataset_raw_inputs(wildcards):
    """Raw files a dataset is built from (for provenance and rerun triggers)."""
    from noisyor_bench.data.rawdata import dataset_raw_keys

    spec = config["datasets"][wildcards.name]
    return raw_inputs(*dataset_raw_keys(spec))


def dataset_raw_stamps(wildcards):
    """verify_raw stamps of the raw files a dataset is built from."""
    from noisyor_bench.data.rawdata import dataset_raw_keys

    return raw_stamps(*dataset_raw_keys(config["datasets"][wildcards.name]))


# ---------------------------------------------------------------------------------------
# Real-corpus experiments (rules/acp_training.smk: train_cell_corpus; rules/acp_text.smk): the grid's `text` section
# (noisyor_bench.experiments.acp.grid.corpora), validated with the rest of the config by validate_config above.

TEXT = corpus_grid.corpus_section(config)
TEXT_SEEDS = corpus_grid.seeds(config)


def text_run_files(experiment, dataset, method, n, files=RUN_FILES, seeds=None):
    """Per-seed files of one text cell (wildcard patterns or concrete values)."""
    return [
        R(f"runs/{experiment}/{dataset}/{method}/n{n}/seed{s}/{f}")
        for s in (TEXT_SEEDS if seeds is None else seeds)
        for f in files
    ]


def text_cell_files(cells, files=("metrics.json",), seeds=None):
    return [
        p for c in cells for p in text_run_files(c.experiment, c.dataset, c.method, c.n_train, files, seeds)
    ]


def classification_cells():
    return [
        c
        for k in corpus_grid.classification_ks(config)
        for c in corpus_grid.cells(config, corpus_grid.classification_experiment(k))
    ]


def tsne_files(k, files=("metrics.json", "posterior_test.npz")):
    """Runs shown in the t-SNE figure of one K: the t-SNE N_train columns, first seed."""
    return text_cell_files(corpus_grid.tsne_cells(config, int(k)), files, seeds=TEXT_SEEDS[:1])


def text_targets():
    """Tables and figures of the real-corpus experiments of the selected grid."""
    targets = []
    if TEXT.get("topics"):
        targets += [R("tables/table5.csv"), R("tables/table5.md")]
    if TEXT.get("classification"):
        targets += [R("tables/classification.md"), R("figures/classification.png")]
    if TEXT.get("tsne"):
        targets += [R(f"figures/tsne_K{k}.png") for k in corpus_grid.classification_ks(config)]
        targets += [R("tables/tsne.md")]
    return targets


def text_tables():
    """Aggregated text tables the claims are checked on."""
    tables = []
    if TEXT.get("topics"):
        tables.append(R("tables/table5.csv"))
    if TEXT.get("classification"):
        tables.append(R("tables/classification.csv"))
    if TEXT.get("tsne"):
        tables.append(R("tables/tsne.csv"))
    return tables


def text_claim_tables():
    """The text claim table (for claim_tables() in common.smk), if the grid has text experiments."""
    return [R("tables/claims_text.csv")] if text_tables() else []


def tsne_tables():
    """Per-K t-SNE tables merged into tables/tsne.csv."""
    return (
        [R(f"tables/tsne_K{k}.csv") for k in corpus_grid.classification_ks(config)]
        if TEXT.get("tsne")
        else []
    )


# ---------------------------------------------------------------------------------------
# APE's question on noisy-OR (rules/ape_noisyor.smk, docs/ape_noisyor.md): grids.<g>.ape_noisyor.
APE_NOISYOR = GRID.get("ape_noisyor", {})
REPORT_APE_NOISYOR = "APE on noisy-OR (beyond the paper)"


def ape_noisyor_families():
    return list(APE_NOISYOR.get("families", {})) if "ape" in PAPERS else []


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


# The APE paper (rules/ape.smk): grids.<grid>.ape, validated with the rest of the config.
APE = GRID.get("ape") or {}
APE_SEEDS = list(APE.get("seeds") or [])
APE_ENCODERS_ORDER = ("standard", "ape-naive", "ape-model-aware")


def ape_datasets():
    """APE datasets of the selected grid (empty when the paper is not selected)."""
    return list(APE.get("datasets") or {}) if "ape" in PAPERS else []


def ape_raw_inputs(ds):
    return raw_inputs("mdreviews-valid", "mdreviews-test", "mdreviews-vocab") if ds == "mdreviews" else []


def ape_raw_stamps(ds):
    return raw_stamps("mdreviews-valid", "mdreviews-test", "mdreviews-vocab") if ds == "mdreviews" else []


def ape_encoder_dirs(ds, seed):
    """method -> training run directory of every encoder of the dataset for one seed."""
    section = APE["datasets"][ds]
    pool = int(section["theta_pool"]["size"])
    return {
        m: R(f"runs/ape-train/{ds}/{m}/n{1 if m == 'standard' else pool}/seed{seed}")
        for m in APE_ENCODERS_ORDER
        if m in section["encoders"]
    }


def ape_nuts_files(ds, seed):
    """The seed's NUTS run (metrics.json), or nothing when the grid runs no NUTS on ``ds``."""
    nuts = APE["datasets"][ds].get("nuts") or {}
    return (
        [R(f"runs/ape-nuts/{ds}/nuts/n0/seed{seed}/metrics.json")]
        if int(nuts.get("combinations", 0)) > 0
        else []
    )


def ape_eval_files(ds=None):
    """Evaluation metrics.json of every (dataset, seed), or of one dataset."""
    return [
        R(f"runs/ape-eval/{d}/seed{s}/metrics.json")
        for d in ape_datasets()
        if ds in (None, d)
        for s in APE_SEEDS
    ]


def ape_run_files(experiment):
    """metrics.json of the APE runs with a convergence verdict: ape-train (encoders), ape-vi."""
    if experiment == "ape-train":
        return [
            f"{d}/metrics.json"
            for ds in ape_datasets()
            for s in APE_SEEDS
            for d in ape_encoder_dirs(ds, s).values()
        ]
    if experiment == "ape-vi":
        return [R(f"runs/ape-vi/{ds}/vi/n0/seed{s}/metrics.json") for ds in ape_datasets() for s in APE_SEEDS]
    return []


def ape_targets():
    """The APE paper's tables, figures and claims (empty when not selected)."""
    datasets = ape_datasets()
    if not datasets or not APE_SEEDS:
        return []
    targets = [R("tables/ape_table1.csv"), R("tables/ape_table1.md"), R("tables/claims_ape.md")]
    targets += [R(f"figures/ape_fig1_{side}_{ds}.png") for ds in datasets for side in ("left", "right")]
    if "toybars" in datasets:
        targets.append(R("figures/ape_fig2.png"))
    return targets


# The aviPAM paper (rules/avipam.smk; grids.<g>.avipam, noisyor_bench.experiments.avipam.cells).
from noisyor_bench.experiments.avipam import cells as avipam_cells

AVIPAM = avipam_cells.section(config)
AVIPAM_CELLS = {c.path: c for c in avipam_cells.all_cells(AVIPAM)}
AVIPAM_RAW = {
    "20news": ("20news-train-feat", "20news-test-feat", "20news-vocab"),
    "nips": ("neurips-papers-csv", "nltk-wordnet", "nltk-stopwords"),
    "mnist": ("mnist-test-images", "mnist-test-labels"),
}
AVIPAM_DATA_ARGS = {
    "nips": config["corpora"].get("avipam-nips", {}),
    "mnist": config["corpora"].get("avipam-mnist", {}),
}
AVIPAM_TABLES = ("table1", "table2", "table3", "table4")
REPORT_AVIPAM = "aviPAM: Tables 1-4, collapse study (Figs. 2-3)"


def avipam_run_files(cells, files=("metrics.json",)):
    return [R(f"runs/{c.path}/{f}") for c in cells for f in files]


def avipam_table_runs():
    return avipam_run_files(
        [c for e in avipam_cells.TABLE_EXPERIMENTS for c in avipam_cells.table_cells(AVIPAM, e)],
        ("metrics.json", "topics.npz"),
    )


def avipam_collapse_runs():
    return avipam_run_files(avipam_cells.collapse_cells(AVIPAM), ("metrics.json", "topics.npz"))


def avipam_npmi_inputs(corpora):
    """NPMI reference counts (external Wikipedia, internal held-out) of the text corpora among ``corpora``."""
    return [
        R(f"avipam/npmi/{c}-{ref}.npz")
        for c in corpora
        if c in avipam_cells.TEXT_CORPORA
        for ref in ("external", "internal")
    ]


def avipam_table_corpora():
    return sorted(
        {c.corpus for e in avipam_cells.TABLE_EXPERIMENTS for c in avipam_cells.table_cells(AVIPAM, e)}
    )


def avipam_collapse_corpora():
    return sorted({c.corpus for c in avipam_cells.collapse_cells(AVIPAM)})


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
    """``priority:`` of a job from its measured seconds; ``stem`` as in its benchmark_path."""

    def _priority(wildcards):
        return job_seconds.priority(JOB_SECONDS, rule_name, stem.format(**dict(wildcards.items())))

    return _priority


def avipam_settings(wildcards):
    path = (
        f"avipam-{wildcards.aexp}/{wildcards.corpus}/{wildcards.amethod}/n{wildcards.n}/seed{wildcards.seed}"
    )
    try:
        cell = AVIPAM_CELLS[path]
    except KeyError:
        raise WorkflowError(f"runs/{path} is not a run of grids.{config['grid']}.avipam") from None
    return json_param(avipam_cells.cell_settings(AVIPAM, cell))


def avipam_data_args(wildcards):
    args = AVIPAM_DATA_ARGS.get(wildcards.corpus) or {}
    return " ".join(f"--{k.replace('_', '-')} {v}" for k, v in sorted(args.items()))


def avipam_targets():
    """The aviPAM paper's tables, figures and claims (rule all)."""
    if not AVIPAM:
        return []
    targets = []
    if avipam_table_runs():
        targets += [R(f"tables/avipam_{t}.{ext}") for t in AVIPAM_TABLES for ext in ("csv", "md")]
        targets += [R("tables/avipam_npmi_runs.csv")]
    if avipam_collapse_runs():
        targets += [
            R("tables/avipam_collapse.csv"),
            R("tables/avipam_collapse.md"),
            R("figures/avipam_collapse.png"),
        ]
        targets += [R("figures/avipam_fig2_topics.png")]
    return targets + [R("tables/claims_avipam.csv"), R("tables/claims_avipam.md")]


def avipam_claim_inputs():
    tables = [R(f"tables/avipam_{t}.csv") for t in AVIPAM_TABLES] if avipam_table_runs() else []
    return tables + ([R("tables/avipam_collapse.csv")] if avipam_collapse_runs() else [])


def avipam_experiments():
    """Run experiments of the grid (convergence tables)."""
    return sorted({c.run_experiment for c in AVIPAM_CELLS.values()})


def avipam_experiment_runs(experiment):
    return avipam_run_files([c for c in AVIPAM_CELLS.values() if c.run_experiment == experiment])


# ---------------------------------------------------------------------------------------
# Convergence tables (rules/summary.smk): one per experiment with runs -- the synthetic grid
# and the real-corpus experiments, which write the same run directories.
def convergence_experiments():
    """Every experiment of the selected grid that has runs, in a stable order: the ACP paper's
    synthetic then text experiments, then APE's (encoder training, VI), APE on noisy-OR, aviPAM's."""
    experiments = []
    if "acp" in PAPERS:
        synthetic = sorted(grid.experiments(config))
        text = sorted({c.experiment for c in corpus_grid.cells(config)})
        experiments += synthetic + [e for e in text if e not in synthetic]
    if ape_targets():
        experiments += ["ape-train", "ape-vi"]
    if ape_noisyor_families():  # rules/ape_noisyor.smk ("ape" in PAPERS)
        experiments.append("ape-noisyor")
    if "avipam" in PAPERS:
        experiments += avipam_experiments()  # rules/avipam.smk: avipam-small, avipam-large, avipam-collapse
    return experiments


def convergence_run_files(experiment):
    """metrics.json of every run of an experiment (synthetic, text, APE, APE on noisy-OR, aviPAM)."""
    if experiment == "ape-noisyor":
        return ape_noisyor_run_files()
    if experiment in ("ape-train", "ape-vi"):
        return ape_run_files(experiment)
    if experiment in grid.experiments(config):
        return experiment_files(experiment)
    if experiment.startswith("avipam-"):
        return avipam_experiment_runs(experiment)
    return text_cell_files(corpus_grid.cells(config, experiment))


def convergence_tables():
    return [R(f"tables/convergence_{e}.csv") for e in convergence_experiments()]


# Corrupted derived datasets (issue 18).  A dataset .npz whose bytes differ from the sha256
# its sidecar recorded when it was built (truncated, overwritten, half-copied) would make
# Snakemake rerun every dependant (its mtime is newer), deleting finished run files before
# the first job fails on the bad file.  The check runs here, when the DAG is built, so the
# workflow stops before any job is scheduled and names the file and the way out.
def _check_built_datasets():
    from noisyor_bench.commands.acp.datasets import dataset_integrity

    problems = [p for name in config["datasets"] if (p := dataset_integrity(R(f"data/{name}.npz")))]
    if problems:
        raise WorkflowError(
            "corrupted dataset file(s); nothing was scheduled, no output was removed:\n  "
            + "\n  ".join(problems)
            + "\nMove each away (mv FILE FILE.corrupt) and run again: it is rebuilt from the config, "
            "byte-identical to the original; to keep the finished runs that depend on it, add "
            "'--rerun-triggers params input software-env code' to that invocation (their inputs' "
            "contents are unchanged, only the mtime is newer)."
        )


if not getattr(workflow, "remote_exec", False):
    _check_built_datasets()


# One writer per results directory (issue 18): Snakemake's own lock covers a working directory,
# not a results_dir shared by invocations from different working directories.  Taken when the
# workflow starts executing jobs (onstart: not in dry runs, lint, or the per-job processes of
# cluster executors), held until this Snakemake process ends.
onstart:
    from noisyor_bench.infra.io import lock_results_dir

    workflow._noisyor_results_lock = lock_results_dir(RESULTS)
