# The ACP paper (noisy-OR, the core): its shared settings, input functions and targets, and its
# registration with the workflow core (paper_hooks, rules/common.smk). Its rules:
# rules/acp_datasets.smk, acp_corpora.smk, acp_training.smk, acp_synthetic.smk, acp_text.smk
# (the registry entry, noisyor_bench/experiments/acp/paper.py, lists them).
from noisyor_bench.experiments.acp import costs as acp_costs
from noisyor_bench.experiments.acp import grid
from noisyor_bench.experiments.acp.grid import corpora as corpus_grid
from noisyor_bench.inference.noisyor.registry import METHODS, wildcard_pattern


# Methods: exactly the names of the method registry (noisyor_bench.inference.noisyor.registry).
wildcard_constraints:
    method=wildcard_pattern(),


ACP_GRID = grid.active_grid(config)  # grids.<grid>.acp with the grid's neutral keys (device, threads)
SEEDS = grid.seeds(config)
DEVICE = ACP_GRID.get("device", "auto")
THREADS = int(ACP_GRID.get("threads", 1))
GPUS_PER_JOB = int(ACP_GRID.get("gpus_per_job", 0))
RUN_FILES = ("metrics.json", "posterior_test.npz", "curve.csv")

# Report categories of the ACP paper's sections (rules/report.smk sorts categories by name).
REPORT_DATASETS = "ACP - 4.1 Datasets (Tables 2-3, Fig. 2)"
REPORT_INFERENCE = "ACP - 4.2 Inference (Fig. 3)"
REPORT_RECOVERY = "ACP - 4.3 Parameter estimation (Fig. 4, supp. Figs. 1-2)"
REPORT_GENERATIVE = "ACP - 4.4 Generative modeling (Fig. 5, Table 4)"
REPORT_TEXT = "ACP - 4.5 Topic models / supplement 5.1"
REPORT_ABLATION = "Beyond the papers - Ablation (ours), ACP with theta stopped in eq. 11"
REPORT_TOPICS = "Table 5: topics (NeurIPS titles)"  # subcategories of REPORT_TEXT
REPORT_CLASSIFICATION = "Supplement 5.1: Reuters classification"
REPORT_TSNE = "Supplement 5.1: t-SNE"


def recovery_artifact(wildcards):
    """Report label of a parameter-recovery result: which paper figure(s) it regenerates."""
    if wildcards.experiment == "fig4":
        return "Fig. 4 + supp. Fig. 1: learned patterns, SYN-PATTERN"
    return "Supp. Fig. 2: learned patterns, MULTI-MNIST"


def cell_of(wildcards):
    """The grid cell named by a job's wildcards (the mode comes from the experiment)."""
    exp = grid.experiments(config)[wildcards.experiment]
    return grid.Cell(wildcards.experiment, wildcards.dataset, wildcards.method, int(wildcards.n), exp["mode"])


def search_result(wildcards):
    """best.json of the cell's search, or nothing when the cell uses the defaults."""
    cell = cell_of(wildcards)
    return [R(f"search/{cell.path}/best.json")] if grid.n_draws(config, cell) > 1 else []


# Cells whose training the cost model puts over search.max_job_hours run one job per seed
# (rule train_cell_seed, wildcard `cell` = the cell's path; acp_costs.per_seed_cells).
PER_SEED_CELLS = {c.path: c for c in acp_costs.per_seed_cells(config)}


def per_seed_cell(wildcards):
    """The cell of a per-seed training job (its wildcard `cell` is the cell's path)."""
    return PER_SEED_CELLS[wildcards.cell]


def train_segments(wildcards):
    """Jobs a per-seed training runs as (noisyor_bench.experiments.segments): one, or segments
    (rule train_segment) before the training job itself (acp_costs.train_segments)."""
    return acp_costs.train_segments(config, per_seed_cell(wildcards))


def train_segment_file(cell, seed, k):
    """The fit's state at the end of segment k, written by train_segment (temporary, read
    by the next segment or the training job only)."""
    return R(f"segments/train-cell/{cell}/seed{seed}/segment{k}.pt")


def previous_train_segment(wildcards):
    """Segment k's input: segment k - 1's state (none for the first)."""
    k = int(wildcards.k)
    return [train_segment_file(wildcards.cell, wildcards.seed, k - 1)] if k > 0 else []


def last_train_segment(wildcards):
    """A per-seed training job's input where it runs as segments: the state of the one before it."""
    n = train_segments(wildcards)
    return [train_segment_file(wildcards.cell, wildcards.seed, n - 2)] if n > 1 else []


def per_seed_search_result(wildcards):
    """search_result of a per-seed training job's cell."""
    cell = per_seed_cell(wildcards)
    return [R(f"search/{cell.path}/best.json")] if grid.n_draws(config, cell) > 1 else []


def searched_files(name):
    """``name`` (best.json or search.csv) of every searched cell of the grid (rule search_table)."""
    return [R(f"search/{c.path}/{name}") for c in grid.cells(config) if grid.n_draws(config, c) > 1]


def search_chunk_tables(wildcards):
    """The chunk tables of a cell's search (rule search_chunk), one per range of acp_costs.search_chunks
    (`draws_per_job` draws each, or sized by the cost model under `max_job_hours`)."""
    cell = cell_of(wildcards)
    return [
        R(f"search/{cell.path}/chunks/{i}.csv") for i in range(len(acp_costs.search_chunks(config, cell)))
    ]


def search_chunk_range(wildcards):
    """``START:STOP`` of chunk ``wildcards.chunk`` of the cell's search (fails for a chunk it has not)."""
    ranges = acp_costs.search_chunks(config, cell_of(wildcards))
    index = int(wildcards.chunk)
    if index >= len(ranges):
        raise ValueError(f"search chunk {index}: the cell's search has {len(ranges)} chunks")
    start, stop = ranges[index]
    return f"{start}:{stop}"


def run_files(experiment, dataset, method, n, files=RUN_FILES, seeds=None):
    """The per-seed files a train_cell job writes (wildcard patterns or concrete values).

    Seeds: ``seeds`` if given, else the cell's (``grid.seeds``: the experiment's own or the
    grid's; the first only for a deterministic cell, e.g. SVI in inference mode).
    """
    if seeds is None:
        known = experiment in grid.experiments(config)
        seeds = grid.seeds(config, experiment, dataset, method) if known else SEEDS
    return [RUN(experiment, dataset, method, n, seed=seed, file=f) for seed in seeds for f in files]


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


def calibration_datasets():
    """The calibration panel's synthetic datasets: the grid's experiments', then its generator variants."""
    return grid.calibration_datasets(config)


def baseline_n_train(dataset):
    """N_train values a dataset's baselines need: its synthetic cells, or the Table 5 grid (NeurIPS titles)."""
    if dataset in config["datasets"]:
        return grid.baseline_n_train(config, dataset)
    return sorted(int(n) for n in (TEXT.get("topics") or {}).get("n_train", []))


def missing_reasons(experiment):
    """``[METHOD=]TEXT`` items for cells an experiment's table shows without runs."""
    exp = grid.experiments(config).get(experiment) or {}
    default = f"not run in this grid (grids.{config['grid']}.acp.experiments.{experiment}.runs)"
    return [default] + [f"{m}={why}" for m, why in sorted((exp.get("not_run") or {}).items())]


def recovery_datasets(experiment):
    """The datasets whose true patterns a recovery table compares against: the paper's (the
    figure's) first, then its generator variants (``variant_of``) the experiment also runs."""
    names = grid.experiments(config)[experiment]["datasets"]
    return sorted(names, key=lambda ds: bool(config["datasets"].get(ds, {}).get("variant_of")))


def sensitivity_runs():
    """First-seed Fig. 3a runs of SVI and LB-CDI on SYN-PATTERN (deterministic methods: one seed
    suffices), for the sensitivity figure; empty when the grid has none."""
    return [
        RUN(c.path, seed=SEEDS[0], file="metrics.json")
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
    if searched_files("best.json"):  # the searches behind the cells (claims' protocol_deviation)
        tables.append(R("tables/search_draws.csv"))
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


def acp_targets():
    """The ACP paper's tables and figures (noisy-OR, the core)."""
    targets = [R("tables/datasets.csv"), R("tables/datasets.md")]
    if TEXT:  # the real corpora and the PMI reference only where the grid has text experiments
        targets += [R("pmi/cooccurrence.npz"), R("data/reuters.npz")]
    for name in ACP_GRID.get("datasets", []):
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
    if calibration_datasets():
        targets.append(R("tables/acp_calibration.md"))
    targets += [R("tables/ablation_acp_sg.md") for _ in ablation_tables()]
    if searched_files("best.json"):  # the searches' draws and selections (rule search_table)
        targets += [R("tables/search_draws.csv"), R("tables/search_draws.md")]
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
        RUN(experiment, dataset, method, n, seed=s, file=f)
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
    """The text claim table (for acp_claim_tables()), if the grid has text experiments."""
    return [R("tables/claims_text.csv")] if text_tables() else []


def tsne_tables():
    """Per-K t-SNE tables merged into tables/tsne.csv."""
    return (
        [R(f"tables/tsne_K{k}.csv") for k in corpus_grid.classification_ks(config)]
        if TEXT.get("tsne")
        else []
    )


# Corrupted derived datasets.  A dataset .npz whose bytes differ from the sha256
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


def acp_results():
    """Tables and figures of the ACP paper, with the aggregated tables its claims read."""
    return acp_targets() + synthetic_tables() + text_tables()


def acp_claim_tables():
    return [R("tables/claims_synthetic.csv")] + text_claim_tables()


def acp_convergence_runs():
    """The synthetic experiments, then the real-corpus ones (sorted by name within each)."""
    runs = {e: experiment_files(e) for e in sorted(grid.experiments(config))}
    for e in sorted({c.experiment for c in corpus_grid.cells(config)}):
        runs.setdefault(e, text_cell_files(corpus_grid.cells(config, e)))
    return runs


paper_hooks("acp", acp_results, acp_claim_tables, acp_convergence_runs)


# Tables of the ACP paper in the report, each as its HTML view (table_view, rules/common.smk).
table_view(
    R("tables/datasets.csv"), "datasets_table", REPORT_DATASETS, "Tables 2-3: dataset parameters, sparsity"
)
table_view(R("tables/fig3a.csv"), "fig3a", REPORT_INFERENCE, "Fig. 3a: NELBO, F1, exact match (table)")
table_view(
    R("tables/{experiment}_recovery.csv"),
    "recovery",
    REPORT_RECOVERY,
    lambda w: f"{recovery_artifact(w)} (patterns recovered, table)",
)
table_view(R("tables/fig5.csv"), "fig5", REPORT_GENERATIVE, "Fig. 5 (numbers, table)")
table_view(R("tables/table4.csv"), "table4", REPORT_GENERATIVE, "Table 4: NELBO, SYN-RANDOM D=500 K=100")
table_view(
    R("tables/acp_calibration.csv"),
    "acp_calibration",
    REPORT_INFERENCE,
    "Calibration: what each generator allows the paper's rows (table)",
)
table_view(R("tables/table5.csv"), "table5", REPORT_TEXT, "Table 5: top words and PMI", REPORT_TOPICS)
table_view(
    R("tables/classification.csv"),
    "classification",
    REPORT_TEXT,
    "Supp. Fig. 3 (numbers, table)",
    REPORT_CLASSIFICATION,
)
table_view(
    R("tables/tsne.csv"), "tsne_table", REPORT_TEXT, "Supp. Figs. 4-6: 5-NN accuracy (table)", REPORT_TSNE
)
table_view(
    R("tables/fig3a_sensitivity.csv"),
    "fig3a_sensitivity",
    REPORT_INFERENCE,
    "Fig. 3a sensitivity: SVI/LB-CDI vs per-datapoint steps (table)",
)
table_view(
    R("tables/ablation_acp_sg.csv"), "ablation", REPORT_ABLATION, "ACP vs ACP-SG, paired by seed (table)"
)


# Staleness by content: a finished run (or search draw) whose metrics.json records another
# dataset sha256 or budget than the current ones reruns, whatever the mtimes and whether or not
# Snakemake's metadata of it is at hand (noisyor_bench.experiments.acp.stale_runs). The check is
# an input function adding no file: when the job is planned, its stale outputs join the files
# Snakemake forces (as --forcerun does), so the job and everything after it rerun; a line says why.
_STALE_SAID = set()


def stale_check(records, dataset, budget, forced, fit_only=False):
    """Input function: force ``forced(wildcards)`` (one of the job's outputs) when any record of
    ``records(wildcards)`` was made from another content of ``dataset(wildcards)`` or another
    ``budget(wildcards)``; adds no input."""
    from noisyor_bench.experiments.acp.stale_runs import stale_runs

    def check(wildcards):
        if workflow.dag is None or not workflow.is_main_process:
            return []
        stale = stale_runs(records(wildcards), dataset(wildcards), budget(wildcards), fit_only)
        if stale:
            output = forced(wildcards)
            workflow.dag.forcefiles.add(output)
            if output not in _STALE_SAID:
                _STALE_SAID.add(output)
                path, reasons = next(iter(stale.items()))
                print(
                    f"noisyor-bench: {len(stale)} finished run(s) of {output} made from another "
                    f"{' and '.join(r.split(' ')[0] for r in reasons)} ({path}: {'; '.join(reasons)}): rerun",
                    file=sys.stderr,
                )
        return []

    return check


def _chunk_draw_records(w):
    """metrics.json of every finished draw of a search chunk (its folder: the table without .csv)."""
    work = Path(R(f"search/{w.experiment}/{w.dataset}/{w.method}/n{w.n}/chunks/{w.chunk}"))
    return sorted(str(p) for p in work.glob("draw*/metrics.json"))
