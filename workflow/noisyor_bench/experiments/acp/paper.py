"""The ACP paper's registry entry (:mod:`noisyor_bench.experiments.papers`)."""

from noisyor_bench.experiments.papers import Paper, register

PAPER = register(
    Paper(
        id="acp",
        name="ACP",
        title="Amortized Inference of Variational Bounds for Learning Noisy-OR",
        citation="Yiming Yan, Melissa Ailem, Fei Sha. Preliminary work under review at AISTATS 2020.",
        rules=(
            "acp.smk",
            "acp_datasets.smk",
            "acp_corpora.smk",
            "acp_training.smk",
            "acp_synthetic.smk",
            "acp_text.smk",
        ),
        grid_sections=("acp",),
        # the ACP claim ids predate paper prefixes: they start with the paper artifact they check
        claim_prefixes=("fig", "suppfig", "table", "mechanism-"),
        claims_tables=("tables/claims_synthetic.csv", "tables/claims_text.csv"),
        paper_numbers="reporting/acp/paper_numbers.yaml",
        run_kinds=("fig", "suppfig", "table", "classification-", "tsne-"),
        costs="noisyor_bench.experiments.acp.costs",
        cost_slices="noisyor_bench.experiments.acp.slices",
        docs="docs/bounds.md",
        references=(
            "reference/paper-synpattern",
            "reference/paper-fig5-table4",
            "reference/extended-acp",
            "reference/extended-fig5",
        ),
        judge="noisyor_bench.reporting.acp.judge:judge",
        doc_blocks={
            "synrandom-seeds": "noisyor_bench.reporting.acp.seed_table:synrandom_seeds",
            "generator-verdicts": "noisyor_bench.reporting.acp.generator_table:generator_verdicts",
            "stop-epochs": "noisyor_bench.reporting.acp.stop_epochs:stop_epochs",
        },
        labeller=None,  # the noisy-OR method registry's labels
        smoke_artifacts=(
            "tables/datasets.csv",
            "figures/patterns_syn-pattern.png",
            "figures/patterns_multi-mnist.png",
            "tables/fig3a.md",
            "figures/fig3b.png",
            "tables/fig3a_sensitivity.md",
            "figures/fig3a_sensitivity.png",
            "figures/fig4_patterns.png",
            "figures/suppfig2_patterns.png",
            "figures/fig5.png",
            "tables/table4.md",
            "tables/ablation_acp_sg.md",
            "tables/convergence_fig5.md",
            "tables/convergence_table5.csv",
            "tables/fig3a.html",
            "data/neurips-titles.npz",
            "data/reuters.npz",
            "pmi/cooccurrence.npz",
            "tables/claims_synthetic.csv",
        ),
        table_command=("paper-numbers", "--paper", "acp"),
        run_verifier="noisyor_bench.experiments.acp.verify",
        config_schema="experiments/acp/config_schema.yaml",
        config_checks="noisyor_bench.experiments.acp.configcheck",
    )
)
