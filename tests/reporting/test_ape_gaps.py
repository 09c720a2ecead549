"""APE Table 1 and claims by gap to VI: gaps on identical combinations beside the
paper's, NUTS shown only as its gap with its chain diagnostics, absolute values captioned with the
document constant and VI's spread over random document sets, and the warm start at both rates."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from noisyor_bench.reporting.ape.claims import ape_claims
from noisyor_bench.reporting.ape.gaps import document_set_rows, paper_gap
from noisyor_bench.reporting.ape.table1 import figure1_rows, seed_rows, table1, table1_markdown
from noisyor_bench.reporting.claims import NOT_REPRODUCED, REPRODUCED
from noisyor_bench.reporting.tables import read_table, write_table

# per method: (clean LL/word, paper-style LL/word); the paper-style values carry a document
# constant of -2 nats/word that the clean ones do not
VALUES = {
    "standard": (-6.0, -8.0),
    "ape-model-aware": (-5.2, -7.5),
    "vi": (-5.0, -7.0),
    "vi-warm": (-5.0, -7.0),
}


def _eval(seed: int, warm: float | None = 3.0, stuck: bool = False, sets: int = 0) -> dict:
    shift = 0.3 * seed  # a different document set per seed: every absolute value moves, gaps do not
    methods = {
        m: {
            "ll_is": ll_is - shift,
            "ll_paper": paper - shift,
            "ll_paper_words": paper + 2.0 - shift,
            "ll_paper_coefficient": 1.0,
            "ll_paper_prior": -3.0,
            "elbo_per_word": ll_is - 0.1,
            "time_s": {"vi": 30.0, "vi-warm": 20.0}.get(m, 0.02) * (1 + 0.01 * seed),
            "agree_vi": 40,
            "agree_is": 40,
            "pairs": 45,
            "converged": True,
            "combinations": 300,
        }
        for m, (ll_is, paper) in VALUES.items()
    }
    nuts = {
        "combinations": 10,
        "documents": 10,
        "methods": {
            "nuts": {"ll_is": -5.3 - shift, "ll_paper": -9.5 - shift - 0.05 * seed, "time_s": 900.0 + seed},
            "vi": {"ll_is": -5.4 - shift, "ll_paper": -9.4 - shift, "time_s": None},
        },
        "chain": {
            "step_size": 0.05,
            "acceptance": 0.8,
            "divergences": 0,
            "diagnostics": {
                "ess_median": 40.0,
                "rhat_max": 1.1,
                "moved_fraction": 0.2 if stuck and seed == 1 else 1.0,
                "sd_ratio_median": 1.2,
                "stuck": stuck and seed == 1,
            },
        },
    }
    figure1 = {
        "ape_time": 0.02,
        "ape_elbo": -170.0,
        "vi_time_to_quality": 30.0 + seed,
        "warm_time_to_quality": warm,
        "vi_time_to_ape_elbo": 0.4,
        "warm_lr": 0.0005,
        "warm_vi_lr_lr": 0.05,
        "warm_vi_lr_steps": 800,
        "warm_vi_lr_time_to_quality": 15.0 + seed,
        "warm_authors_lr": 0.1,
        "warm_authors_steps": 600,
        "warm_authors_time_to_quality": None,
        # a target every seed's VI reaches (99% of a 200-nat improvement, seeds 0.5 nats apart)
        "vi_initial_elbo": -500.0,
        "vi_final_elbo": -300.0 - 0.5 * seed,
        "vi_best_elbo": -300.0 - 0.5 * seed,
        "quality_fraction": 0.99,
        "quality_target": -500.0 + 0.99 * (200.0 - 0.5 * seed),
    }
    docsets = {
        "sets": [
            {"ll_paper": -7.0 + 0.9 * c, "ll_paper_words": -6.9, "ll_is": -7.2, "doc_constant": c}
            for c in (-1.0 - 0.25 * i - 0.1 * seed for i in range(sets))
        ]
    }
    return {
        "experiment": "ape-eval",
        "dataset": "mdreviews",
        "seed": seed,
        "methods": methods,
        "nuts_subset": nuts,
        "figure1": figure1,
        "doc_constant": -2.0,
        "document_sets": docsets if sets else None,
        "ranking": {"vi_totals": list(range(10)), "mc_ceiling": 45, "documents": 300, "elbo_draws": 1000},
    }


def _write(tmp_path: Path, evals: list[dict]) -> list[Path]:
    files = []
    for e in evals:
        path = tmp_path / f"seed{e['seed']}" / "metrics.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(e))
        files.append(path)
    return files


def _claims(tmp_path: Path, evals: list[dict]) -> dict:
    files = _write(tmp_path, evals)
    write_table(table1(seed_rows(files), document_set_rows(files)), tmp_path / "t.csv")
    write_table(figure1_rows(files), tmp_path / "f.csv")
    return {c.claim_id: c for c in ape_claims(read_table(tmp_path / "t.csv"), read_table(tmp_path / "f.csv"))}


def test_gaps_are_per_seed_differences_on_the_same_combinations(tmp_path):
    files = _write(tmp_path, [_eval(s) for s in range(3)])
    rows = seed_rows(files)
    aware = rows[rows["method"] == "ape-model-aware"].set_index("seed")
    assert aware["gap_paper"].tolist() == pytest.approx([-0.5] * 3)  # the per-seed shift cancels
    assert aware["gap_is"].tolist() == pytest.approx([-0.2] * 3)
    nuts = rows[rows["method"] == "nuts"].set_index("seed")  # against VI on NUTS's combinations
    assert nuts["gap_paper"].tolist() == pytest.approx([-0.1, -0.15, -0.2])
    assert nuts["gap_is"].tolist() == pytest.approx([0.1] * 3)
    assert math.isnan(rows[rows["method"] == "vi"]["gap_paper"].iloc[0])
    assert aware["doc_constant"].tolist() == pytest.approx([-2.0] * 3)


def test_paper_gaps_are_read_from_table1():
    assert paper_gap("mdreviews", "ape-model-aware") == pytest.approx(-5.2450 + 4.9758)
    assert paper_gap("mdreviews", "standard") == pytest.approx(-6.1966 + 4.9758)
    assert paper_gap("mdreviews", "nuts") == pytest.approx(-5.0803 + 4.9758)
    assert math.isnan(paper_gap("mdreviews", "vi"))


def test_markdown_shows_gaps_nuts_only_as_its_gap_and_the_document_caption(tmp_path):
    files = _write(tmp_path, [_eval(s, sets=4) for s in range(3)])
    md = table1_markdown(
        table1(seed_rows(files), document_set_rows(files)), {"seeds": [0, 1, 2], "datasets": {}}
    )
    assert "gap to VI, paper style (ours)" in md and "-0.269" in md and "-1.221" in md  # the paper's gaps
    nuts_line = next(line for line in md.splitlines() if line.startswith("| NUTS"))
    assert "-0.150" in nuts_line and "-9.5" not in nuts_line  # NUTS: its gap, never its absolute value
    assert "VI on NUTS" not in md.split("## ")[1].split("\n\n")[1]  # the yardstick row stays in the CSV
    assert "12 random evaluation-document sets" in md and "document constant" in md
    assert "about +/-1 nat/word" in md
    assert "paper-style = 0.90 x constant -7.00" in md  # the fitted line of the sets
    assert "above every set" in md  # the paper's VI -4.98 lies above all the sets' values (-8.2 .. -7.9)


def test_nuts_claim_on_the_gap_and_a_stuck_chain_is_flagged(tmp_path):
    claims = _claims(tmp_path, [_eval(s, stuck=True) for s in range(3)])
    nuts = claims["ape-nuts-vs-vi-mdreviews"]
    assert nuts.verdict == REPRODUCED  # NUTS below VI on its combinations in every seed, and slower
    assert "10 distinct documents" in nuts.numbers and "acceptance" in nuts.numbers
    assert nuts.unconverged == "NUTS chain barely moved in seed(s) [1]"
    assert "paper: all 300" in nuts.protocol_deviation


def test_warm_start_shows_every_rate_and_both_times_per_seed(tmp_path):
    claims = _claims(tmp_path, [_eval(s, warm=None) for s in range(3)])
    warm = claims["ape-warm-start-mdreviews"]
    assert warm.verdict == NOT_REPRODUCED  # never at the paper's rate
    # the seconds per seed in timing (no "n/a" where the times exist), which seeds reached it in numbers
    assert "random init {0: 30, 1: 31, 2: 32}" in warm.timing
    assert "(lr 0.0005) {0: never, 1: never, 2: never}" in warm.timing
    assert "at VI's own rate (lr 0.05) {0: 15, 1: 16, 2: 17}" in warm.timing
    assert "the authors' runnable warm start (lr 0.1) x 600 steps {0: never" in warm.timing
    assert (
        "warm start at the paper's rate (lr 0.0005) in no seed; at VI's own rate (lr 0.05) in every seed"
        in (warm.numbers)
    )
    reached = _claims(tmp_path / "b", [_eval(s, warm=3.0) for s in range(3)])["ape-warm-start-mdreviews"]
    assert reached.verdict == REPRODUCED


def test_reductions_name_the_nuts_documents_seeds_and_document_sets():
    from noisyor_bench.reporting.ape.table1 import reductions

    section = {
        "theta_pool": {"size": 300},
        "evaluation": {"documents": 30, "document_sets": 2},
        "data": {"test_models": 10},
        "nuts": {"documents": 10, "warmup": 100, "samples": 100, "max_tree_depth": 10, "seeds": [0]},
        "encoders": ["standard", "ape-model-aware"],
    }
    text = " ".join(reductions({"seeds": [0, 1, 2], "datasets": {"mdreviews": section}}))
    assert "NUTS on 10 combinations of 10 distinct documents, one test model each" in text
    assert "NUTS in seed(s) [0] only" in text
    assert "VI on 6 random evaluation-document sets (>= 10)" in text
    assert "warm-up" not in text and "tree depth" not in text  # the authors' 100 + 100 at depth 10
