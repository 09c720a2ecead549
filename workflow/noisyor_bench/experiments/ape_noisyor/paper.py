"""APE's question asked of noisy-OR: a study of ours beyond the papers (registry entry,
:mod:`noisyor_bench.experiments.papers`).  Its claims are reported apart, never as APE's."""

from noisyor_bench.experiments.papers import Paper, register

PAPER = register(
    Paper(
        id="ape_noisyor",
        name="APE on noisy-OR",
        title="APE's amortization across models, asked of noisy-OR networks (beyond the papers)",
        citation="This repository's study (docs/ape_noisyor.md); after Zhang & Hughes (APE) and Yan, Ailem & Sha (ACP).",
        rules=("ape_noisyor.smk", "ape_noisyor_rules.smk"),
        grid_sections=("ape_noisyor",),
        claim_prefixes=("ape-noisyor-",),
        claims_tables=("tables/claims_ape_noisyor.csv",),
        paper_numbers=None,  # no paper: nothing published to compare with
        references=("reference/extended-ape-noisyor",),
        run_verifier="noisyor_bench.experiments.ape_noisyor.verify",
        config_schema="experiments/ape_noisyor/config_schema.yaml",
        config_checks="noisyor_bench.experiments.ape_noisyor.configcheck",
        run_kinds=("ape-noisyor",),
        costs="noisyor_bench.experiments.ape_noisyor.costs",
        cost_slices="noisyor_bench.experiments.ape_noisyor.slices",
        docs="docs/ape_noisyor.md",
        judge="noisyor_bench.reporting.ape_noisyor.judge:judge",
        labeller="noisyor_bench.reporting.ape_noisyor.labels:ape_noisyor_method_label",
        smoke_artifacts=(
            "tables/ape_noisyor.md",
            "tables/ape_noisyor.html",
            "figures/ape_noisyor.png",
            "tables/convergence_ape-noisyor.md",
            "tables/claims_ape_noisyor.csv",
        ),
        beyond_the_papers=True,
    )
)
