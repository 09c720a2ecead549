"""The aviPAM paper's registry entry (:mod:`noisyor_bench.experiments.papers`)."""

from noisyor_bench.experiments.papers import Paper, register

PAPER = register(
    Paper(
        id="avipam",
        name="aviPAM",
        title="Variational Inference in Pachinko Allocation Machines",
        citation="Akash Srivastava, Charles Sutton. Preprint.",
        rules=("avipam.smk", "avipam_rules.smk"),
        grid_sections=("avipam",),
        claim_prefixes=("avipam-",),
        calibration_prefixes=("avipam-calibration-",),
        claims_tables=("tables/claims_avipam.csv",),
        paper_numbers="reporting/avipam/paper_numbers.yaml",
        run_verifier="noisyor_bench.experiments.avipam.verify",
        config_schema="experiments/avipam/config_schema.yaml",
        config_checks="noisyor_bench.experiments.avipam.configcheck",
        run_kinds=("avipam-",),
        costs="noisyor_bench.experiments.avipam.costs",
        cost_slices="noisyor_bench.experiments.avipam.slices",
        docs="docs/avipam.md",
        references=(
            "reference/paper-avipam-table1",
            "reference/paper-avipam-nips",
            "reference/paper-avipam-table2-timing",
        ),
        judge="noisyor_bench.reporting.avipam.judge:judge",
        labeller="noisyor_bench.reporting.avipam.labels:avipam_method_label",
        smoke_artifacts=(
            "tables/avipam_table1.md",
            "tables/avipam_table4.md",
            "tables/avipam_table1.html",
            "tables/avipam_collapse.md",
            "figures/avipam_collapse.png",
            "figures/avipam_fig2_topics.png",
            "tables/claims_avipam.csv",
            "tables/claims_avipam.md",
            "tables/convergence_avipam-small.md",
        ),
        table_command=("paper-numbers", "--paper", "avipam"),
    )
)
