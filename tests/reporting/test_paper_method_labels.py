"""Each paper's own method names in the shared tables (reporting/methods.py method_label): APE's and
aviPAM's labels from their label modules, ACP's from the method registry; the convergence tables
show them instead of upper-cased ids."""

from __future__ import annotations

import pandas as pd

from noisyor_bench.reporting.convergence_tables import (
    convergence_markdown,
    convergence_table,
    summary_markdown,
    summary_table,
)
from noisyor_bench.reporting.methods import method_label


def test_each_paper_names_its_own_methods() -> None:
    assert method_label("ape-model-aware", "ape-train") == "APE (model-aware)"
    assert method_label("ape-naive", "ape-train") == "APE (naive)"
    assert method_label("vi", "ape-vi") == "VI"
    assert method_label("avipam-pam4", "avipam-small") == "aviPAM 4-PAM"
    assert method_label("pam4-gibbs", "avipam-large") == "4-PAM Gibbs (tomotopy PAModel)"
    assert method_label("batchnorm-lr0.002", "avipam-collapse") == "batch-norm (gain), lr 0.002"
    assert method_label("none-lr0.1", "avipam-collapse") == "no normalisation, lr 0.1"
    # the same id means a different thing in APE's noisy-OR study than in ACP's experiments
    assert method_label("avi", "ape-noisyor") == "AVI (input x)"
    assert method_label("avi-model-aware", "ape-noisyor") == "APE model-aware [theta^T x, theta^T (1-x)]"
    assert method_label("avi", "fig5") == "AVI"
    assert method_label("lb-cdi") == "LB-CDI"


def test_unknown_ids_fall_back_to_the_registry_then_upper_case() -> None:
    assert method_label("svi", "avipam-small") == "SVI"  # not an aviPAM method: the registry's name
    assert method_label("mystery-lr", "avipam-collapse") == "MYSTERY-LR"  # no parsable rate
    assert method_label("true-exact", "ape-train") == "TRUE-EXACT"
    assert method_label("acp", float("nan")) == "ACP"  # type: ignore[arg-type]  # a missing CSV cell


def _runs(experiment: str, methods: list[str]) -> pd.DataFrame:
    rows = []
    for m in methods:
        for seed in (0, 1):
            rows.append(
                {
                    "experiment": experiment,
                    "dataset": "20news",
                    "method": m,
                    "mode": "learning",
                    "n_train": 0,
                    "seed": seed,
                    "stop_reason": "max_epochs",
                    "epochs": 10,
                    "best_epoch": 10,
                    "converged": seed == 0,
                    "convergence_rule": "plateau" if seed == 0 else "still_improving",
                    "run_dir": f"runs/{experiment}/{m}/seed{seed}",
                }
            )
    return pd.DataFrame(rows)


def test_convergence_tables_show_the_papers_labels_not_upper_cased_ids() -> None:
    ape = convergence_table(_runs("ape-train", ["standard", "ape-model-aware"]))
    avipam = convergence_table(_runs("avipam-collapse", ["batchnorm-lr0.002"]))
    small = convergence_table(_runs("avipam-small", ["avipam-pam4", "lda-gibbs"]))
    per_run = convergence_markdown(ape) + convergence_markdown(avipam) + convergence_markdown(small)
    summary = summary_markdown(summary_table([ape, avipam, small]))
    for md in (per_run, summary):
        for label in ("| APE (model-aware) |", "| Standard encoder |", "| batch-norm (gain), lr 0.002 |"):
            assert label in md
        assert "| aviPAM 4-PAM |" in md and "| LDA Gibbs (tomotopy) |" in md
        for upper in ("APE-MODEL-AWARE", "BATCHNORM-LR0.002", "AVIPAM-PAM4", "LDA-GIBBS", "STANDARD"):
            assert upper not in md
    # the CSV keeps the ids (other tools join on them)
    assert set(ape["method"]) == {"standard", "ape-model-aware"}
