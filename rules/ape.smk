# The APE paper ("Rapid Model Comparison by Amortizing Across Models"; docs/ape.md): its
# settings (grids.<grid>.ape), input functions and targets, and its registration with the core
# (paper_hooks, rules/common.smk). Its rules: rules/ape_rules.smk.
APE = GRID.get("ape") or {}
APE_SEEDS = list(APE.get("seeds") or [])
APE_ENCODERS_ORDER = ("standard", "ape-naive", "ape-model-aware")
# An evaluation run scores every method of one seed and trains nothing: method "all", N 0
# (noisyor_bench.experiments.ape.evaluate.METHOD / N_TRAIN; not imported: torch at DAG time).
APE_EVAL_CELL = ("all", 0)


def ape_datasets():
    """APE datasets of the selected grid (empty when the paper is not selected)."""
    return list(APE.get("datasets") or {}) if paper_selected("ape") else []


def ape_step_settings(ds, step, method=None):
    """The part of ``ds``'s settings one step reads (its ``--settings``, hence its params): a
    changed key reruns the steps that read it only (noisyor_bench.experiments.ape.steps)."""
    from noisyor_bench.experiments.ape.steps import step_settings

    return step_settings(APE["datasets"][ds], step, method)


def ape_raw_inputs(ds):
    return raw_inputs("mdreviews-valid", "mdreviews-test", "mdreviews-vocab") if ds == "mdreviews" else []


def ape_raw_stamps(ds):
    return raw_stamps("mdreviews-valid", "mdreviews-test", "mdreviews-vocab") if ds == "mdreviews" else []


def ape_encoder_dirs(ds, seed):
    """method -> training run directory of every encoder of the dataset for one seed."""
    section = APE["datasets"][ds]
    pool = int(section["theta_pool"]["size"])
    return {
        m: RUN("ape-train", ds, m, 1 if m == "standard" else pool, seed=seed)
        for m in APE_ENCODERS_ORDER
        if m in section["encoders"]
    }


def ape_train_segments(ds, method, seed):
    """Jobs an encoder's training runs as (noisyor_bench.experiments.ape.segments): one, or as
    many as keep each under ape.max_job_hours on one core by the cost model."""
    if APE.get("max_job_hours") is None:
        return 1
    from noisyor_bench.experiments.ape.costs import segment_count

    return segment_count(config, ds, method, seed)


def ape_segment_file(ds, method, n, seed, k):
    """The loop state at the end of segment k, written by ape_train_segment (temporary, read by
    the next segment only)."""
    return R(f"segments/ape-train/{ds}/{method}/n{n}/seed{seed}/segment{k}.pt")


def ape_previous_segment(wildcards):
    """Segment k's input: segment k - 1's state (none for the first)."""
    k = int(wildcards.k)
    w = wildcards
    return [ape_segment_file(w.ds, w.method, w.n, w.seed, k - 1)] if k > 0 else []


def ape_last_segment(wildcards):
    """The training job's input where it runs as segments: the state of the one before it."""
    w = wildcards
    n = ape_train_segments(w.ds, w.method, w.seed)
    return [ape_segment_file(w.ds, w.method, w.n, w.seed, n - 2)] if n > 1 else []


def ape_nuts_files(ds, seed):
    """The seed's NUTS run (metrics.json), or nothing when the grid runs no NUTS on ``ds``."""
    nuts = APE["datasets"][ds].get("nuts") or {}
    runs = int(nuts.get("documents") or nuts.get("combinations", 0)) > 0
    seeds = nuts.get("seeds")  # the quick grid samples in some seeds only
    return (
        [RUN("ape-nuts", ds, "nuts", 0, seed=seed, file="metrics.json")]
        if runs and (seeds is None or int(seed) in [int(s) for s in seeds])
        else []
    )


def ape_eval_run(ds, seed, file=None):
    """The evaluation run of (dataset, seed), or one of its files."""
    return RUN("ape-eval", ds, *APE_EVAL_CELL, seed=seed, file=file)


def ape_vi_run(ds, seed, file=None):
    """The VI run of (dataset, seed), or one of its files."""
    return RUN("ape-vi", ds, "vi", 0, seed=seed, file=file)


def ape_eval_files(ds=None):
    """Evaluation metrics.json of every (dataset, seed), or of one dataset."""
    return [ape_eval_run(d, s, "metrics.json") for d in ape_datasets() if ds in (None, d) for s in APE_SEEDS]


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
        return [ape_vi_run(ds, s, "metrics.json") for ds in ape_datasets() for s in APE_SEEDS]
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


def ape_convergence_runs():
    return {e: ape_run_files(e) for e in ("ape-train", "ape-vi")} if ape_targets() else {}


paper_hooks(
    "ape",
    ape_targets,
    lambda: [R("tables/claims_ape.csv")] if ape_targets() else [],
    ape_convergence_runs,
)
