"""The APE paper's registry entry (:mod:`noisyor_bench.experiments.papers`)."""

from noisyor_bench.experiments.papers import Paper, register

PAPER = register(
    Paper(
        id="ape",
        name="APE",
        title="Rapid Model Comparison by Amortizing Across Models",
        citation="Lily H. Zhang, Michael C. Hughes. Workshop paper; code: github.com/tufts-ml/any_parameter_encoder (branch workshop).",
        rules=("ape.smk", "ape_rules.smk"),
        grid_sections=("ape",),
        claim_prefixes=("ape-",),
        claims_tables=("tables/claims_ape.csv",),
        paper_numbers="reporting/ape/paper_numbers.yaml",
        run_verifier="noisyor_bench.experiments.ape.verify",
        config_schema="experiments/ape/config_schema.yaml",
        config_checks="noisyor_bench.experiments.ape.configcheck",
        run_kinds=("ape-",),
        costs="noisyor_bench.experiments.ape.costs",
        cost_slices="noisyor_bench.experiments.ape.slices",
        docs="docs/ape.md",
        references=("reference/paper-ape-toybars",),
        judge="noisyor_bench.reporting.ape.judge:judge",
        labeller="noisyor_bench.reporting.ape.labels:ape_method_label",
        smoke_artifacts=(
            "tables/ape_table1.csv",
            "tables/ape_table1.md",
            "tables/ape_table1.html",
            "figures/ape_fig1_left_toybars.png",
            "figures/ape_fig1_right_toybars.png",
            "figures/ape_fig2.png",
            "tables/claims_ape.csv",
            "tables/convergence_ape-train.md",
            "tables/convergence_ape-vi.md",
        ),
        table_command=("paper-numbers", "--paper", "ape"),
    )
)
