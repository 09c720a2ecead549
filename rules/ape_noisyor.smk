# APE's question asked of noisy-OR (beyond the papers; docs/ape_noisyor.md): its settings
# (grids.<grid>.ape_noisyor), input functions and targets, and its registration with the core
# (paper_hooks, rules/common.smk). Its rules: rules/ape_noisyor_rules.smk.
APE_NOISYOR = GRID.get("ape_noisyor", {})
REPORT_APE_NOISYOR = "Beyond the papers - APE on noisy-OR"


def ape_noisyor_families():
    return list(APE_NOISYOR.get("families", {})) if paper_selected("ape_noisyor") else []


def ape_noisyor_run(family, method, seed, file="metrics.json"):
    """A run's file, metrics.json by default (any argument may be a {wildcard}); N = the training
    problems."""
    n = APE_NOISYOR.get("problems", {}).get("train", 0)
    return RUN("ape-noisyor", family, method, n, seed=seed, file=file)


def ape_noisyor_run_outputs(family, method, seeds):
    """What each run writes and the report reads: its record and its scores (the exact ELBO of
    every test row under every candidate)."""
    return [ape_noisyor_run(family, method, s, f) for s in seeds for f in ("metrics.json", "scores.npz")]


def ape_noisyor_run_files(file="metrics.json"):
    """``file`` of every encoder seed and every per-datapoint baseline (seed 0: deterministic)."""
    files = []
    for family in ape_noisyor_families():
        for encoder in APE_NOISYOR["encoders"]:
            files += [ape_noisyor_run(family, encoder, s, file) for s in APE_NOISYOR["seeds"]]
        files += [ape_noisyor_run(family, b, 0, file) for b in APE_NOISYOR.get("baselines", [])]
    return files


def ape_noisyor_targets():
    if not ape_noisyor_families():
        return []
    return [R("tables/ape_noisyor.csv"), R("tables/ape_noisyor.md"), R("figures/ape_noisyor.png")]


def ape_noisyor_claim_tables():
    return [R("tables/claims_ape_noisyor.csv")] if ape_noisyor_families() else []


def _ape_noisyor_pattern(names):
    return "|".join(re.escape(n) for n in names) or "(?!)"


paper_hooks(
    "ape_noisyor",
    ape_noisyor_targets,
    ape_noisyor_claim_tables,
    lambda: {"ape-noisyor": ape_noisyor_run_files()} if ape_noisyor_families() else {},
)
