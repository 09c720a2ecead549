# The aviPAM paper ("Variational Inference in Pachinko Allocation Machines"; docs/avipam.md):
# its settings (grids.<grid>.avipam, noisyor_bench.experiments.avipam.cells), input functions
# and targets, and its registration with the core (paper_hooks, rules/common.smk). Its rules:
# rules/avipam_rules.smk.
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
REPORT_AVIPAM = "aviPAM - Tables 1-4, collapse study (Figs. 2-3)"


def avipam_run_files(cells, files=("metrics.json",)):
    return [RUN(c.key.cell_path, seed=c.seed, file=f) for c in cells for f in files]


def avipam_table_runs():
    return avipam_run_files(
        [c for e in avipam_cells.TABLE_EXPERIMENTS for c in avipam_cells.table_cells(AVIPAM, e)],
        ("metrics.json", "topics.npz"),
    )


def avipam_collapse_runs():
    return avipam_run_files(avipam_cells.collapse_cells(AVIPAM), ("metrics.json", "topics.npz", "curve.csv"))


def avipam_npmi_inputs(corpora):
    """NPMI reference counts (paper protocol: the corpus's own text; external Wikipedia; internal
    held-out) of the text corpora among ``corpora``."""
    return [
        R(f"avipam/npmi/{c}-{ref}.npz")
        for c in corpora
        if c in avipam_cells.TEXT_CORPORA
        for ref in ("paper", "external", "internal")
    ]


def avipam_npmi_raw(wildcards):
    """Raw inputs of a reference's counts: the Wikipedia slice (external), the raw 20 Newsgroups
    messages (the paper protocol on 20news), none otherwise."""
    if wildcards.reference == "external":
        return pmi_reference_input()
    if wildcards.reference == "paper" and wildcards.corpus == "20news":
        return raw_inputs("20news-bydate-text")
    return []


def avipam_npmi_stamps(wildcards):
    if wildcards.reference == "external":
        return pmi_reference_stamps()
    if wildcards.reference == "paper" and wildcards.corpus == "20news":
        return raw_stamps("20news-bydate-text")
    return []


def avipam_table_corpora():
    return sorted(
        {c.corpus for e in avipam_cells.TABLE_EXPERIMENTS for c in avipam_cells.table_cells(AVIPAM, e)}
    )


def avipam_collapse_corpora():
    return sorted({c.corpus for c in avipam_cells.collapse_cells(AVIPAM)})


def avipam_settings(wildcards):
    cell = f"avipam-{wildcards.aexp}/{wildcards.corpus}/{wildcards.amethod}/n{wildcards.n}"
    try:
        cell = AVIPAM_CELLS[f"{cell}/seed{wildcards.seed}"]
    except KeyError:
        run = RUN(cell, seed=wildcards.seed)
        raise WorkflowError(f"{run} is not a run of grids.{config['grid']}.avipam") from None
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


paper_hooks(
    "avipam",
    avipam_targets,
    lambda: [R("tables/claims_avipam.csv")] if AVIPAM else [],
    lambda: {e: avipam_experiment_runs(e) for e in avipam_experiments()},
)
