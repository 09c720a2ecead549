"""aviPAM tables and claims on toy result tables: verdicts are decided by the table numbers."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from noisyor_bench.reporting.avipam import claims as avc
from noisyor_bench.reporting.avipam import tables as avt
from noisyor_bench.reporting.claims import INCONCLUSIVE, NOT_REPRODUCED, NOT_TESTED, REPRODUCED


def _runs(
    means: dict[tuple[str, str], float],
    corpus: str = "20news",
    experiment: str = "small",
    spread: float = 0.002,
    minutes: dict[str, float] | None = None,
    converged: bool = True,
) -> pd.DataFrame:
    rows = []
    for (method, comp), mean in means.items():
        for seed, d in enumerate((-spread, 0.0, spread)):
            rows.append(
                {
                    "experiment": f"avipam-{experiment}",
                    "table_experiment": experiment,
                    "corpus": corpus,
                    "method": method,
                    "component": comp,
                    "n_topics": 50,
                    "seed": seed,
                    "npmi_external": mean + d,
                    "npmi_internal": mean / 2 + d,
                    "train_minutes": (minutes or {}).get(method, 1.0) * (1 + d),
                    "train_seconds": 60.0,
                    "threads": 1,
                    "converged": converged,
                    "gibbs_iterations": 10000 if method.endswith("gibbs") else None,
                    "avi_max_epochs": None if method.endswith("gibbs") else 40,
                    "epochs": 10,
                    "run_dir": f"r/{method}/{seed}",
                }
            )
    return pd.DataFrame(rows)


PAPER_ORDER = {
    ("lda-gibbs", "sub"): 0.17,
    ("lda-online", "sub"): 0.11,
    ("lda-batch", "sub"): 0.11,
    ("pam4-gibbs", "sub"): 0.20,
    ("avipam-pam4", "sub"): 0.24,
    ("avipam-pam5", "sub"): 0.24,
    ("avipam-ctm", "sub"): 0.14,
    ("avipam-molda", "molda-10"): 0.29,
    ("avipam-molda", "molda-50"): 0.21,
}


def _tables(runs: pd.DataFrame, name: str = "table1") -> dict[str, pd.DataFrame]:
    t = avt.build_table(runs, name, avt.paper_numbers(), "test")
    # round trip through CSV as the workflow does
    return {f"avipam-{name}": pd.read_csv(pd.io.common.StringIO(t.to_csv(index=False)), dtype={"seeds": str})}


def test_table_has_paper_numbers_beside_ours_and_not_run_rows() -> None:
    runs = _runs({("avipam-pam4", "sub"): 0.3})
    table = avt.build_table(runs, "table1", avt.paper_numbers(), "quick")
    row = table[table["method"] == "avipam-pam4"].iloc[0]
    assert row["status"] == "measured" and row["paper_npmi"] == pytest.approx(0.24)
    assert row["npmi_external_mean"] == pytest.approx(0.3)
    gibbs = table[table["method"] == "pam4-gibbs"].iloc[0]
    assert gibbs["status"].startswith("not run") and gibbs["paper_npmi"] == pytest.approx(0.20)
    md = avt.markdown(table, "table1", avt.paper_numbers(), "quick")
    assert "0.300 ± " in md and "not run in this grid" in md


def test_reduced_gibbs_iterations_are_stated_in_the_caption() -> None:
    runs = _runs({("pam4-gibbs", "sub"): 0.2})
    runs["gibbs_iterations"] = 200
    table = avt.build_table(runs, "table1", avt.paper_numbers(), "quick")
    assert "REDUCED" in avt.caption(table, "table1", avt.paper_numbers(), "quick")
    assert "SUBSTITUTE" in avt.caption(
        avt.build_table(runs.assign(corpus="nips"), "table3", avt.paper_numbers(), "q"),
        "table3",
        avt.paper_numbers(),
        "q",
    )


def test_caption_states_the_runs_learning_rate_and_scikit_learn_passes() -> None:
    runs = _runs({("avipam-pam4", "sub"): 0.2, ("lda-online", "sub"): 0.1})
    runs["avi_lr"] = [0.005 if m == "avipam-pam4" else None for m in runs["method"]]
    runs["mean_field_passes"] = [12 if m == "lda-online" else None for m in runs["method"]]
    text = avt.caption(
        avt.build_table(runs, "table1", avt.paper_numbers(), "quick"), "table1", avt.paper_numbers(), "quick"
    )
    assert "Adam lr 0.005" in text and "at most 12 passes" in text


@pytest.mark.parametrize(
    ("shift", "expected"),
    [
        (0.0, REPRODUCED),  # the paper's ordering, clearly separated
        (None, NOT_REPRODUCED),  # LDA DMFVI above LDA Gibbs
    ],
)
def test_table1_order_verdict(shift: float | None, expected: str) -> None:
    means = dict(PAPER_ORDER)
    if shift is None:
        means[("lda-online", "sub")] = 0.30
    claim = avc.table1_order(_tables(_runs(means)))
    assert claim.verdict == expected


def test_overlapping_values_are_inconclusive() -> None:
    means = dict(PAPER_ORDER)
    means[("pam4-gibbs", "sub")] = 0.24  # equal to aviPAM 4-PAM
    claim = avc.table1_order(_tables(_runs(means, spread=0.01)))
    assert claim.verdict == INCONCLUSIVE


def test_unconverged_runs_qualify_a_claim_and_keep_its_verdict() -> None:
    claim = avc.ctm_below_pam(_tables(_runs(PAPER_ORDER, converged=False)))
    assert claim.verdict == REPRODUCED and claim.unconverged != ""


def test_topic_quality_claims_judge_avipam_runs_by_the_coherence_plateau_not_the_elbo() -> None:
    """A fixed-epoch aviPAM run past its coherence plateau is converged for a coherence claim,
    even when its ELBO had not flattened; one before the plateau is not, even when it had."""
    means = {("avipam-molda", "molda-10"): 0.3, ("avipam-molda", "molda-50"): 0.2}
    past = _runs(means, converged=False).assign(coherence_converged=True, coherence_plateau_epoch=10.0)
    claim = avc.molda_components(_tables(past))
    assert claim.verdict == REPRODUCED and claim.unconverged == ""
    before = _runs(means, converged=True).assign(coherence_converged=False, coherence_plateau_epoch=200.0)
    claim = avc.molda_components(_tables(before))
    assert claim.verdict == REPRODUCED and "before the coherence plateau" in claim.unconverged


def test_pam_beats_lda_leaves_out_a_method_the_grid_did_not_run_and_says_so() -> None:
    means = {k: v for k, v in PAPER_ORDER.items() if k[0] != "lda-batch"}
    claim = avc.pam_beats_lda(_tables(_runs(means)))
    assert claim.verdict == REPRODUCED
    assert "lda-batch: not run in this grid" in claim.numbers and "- lda-batch" not in claim.numbers
    # a run method (lda-online) below a PAM still decides: not left out
    means[("lda-online", "sub")] = 0.30
    assert avc.pam_beats_lda(_tables(_runs(means))).verdict == NOT_REPRODUCED


def test_ctm_and_molda_claims() -> None:
    t = _tables(_runs(PAPER_ORDER))
    assert avc.ctm_below_pam(t).verdict == REPRODUCED
    assert avc.molda_components(t).verdict == REPRODUCED
    flipped = dict(PAPER_ORDER)
    flipped[("avipam-molda", "molda-10")] = 0.1
    assert avc.molda_components(_tables(_runs(flipped))).verdict == NOT_REPRODUCED


@pytest.mark.parametrize(("gibbs_minutes", "expected"), [(100.0, REPRODUCED), (3.0, NOT_REPRODUCED)])
def test_speedup_ratio_verdict(gibbs_minutes: float, expected: str) -> None:
    runs = _runs(
        {("pam4-gibbs", "sub"): 0.2, ("avipam-pam4", "sub"): 0.24},
        minutes={"pam4-gibbs": gibbs_minutes, "avipam-pam4": 1.0},
    )
    claim = avc.speedup(_tables(runs), hardware="test cpu")
    assert claim.verdict == expected and "test cpu" in claim.timing and "test cpu" not in claim.numbers


def test_speedup_scales_reduced_gibbs_to_the_paper_iterations() -> None:
    runs = _runs(
        {("pam4-gibbs", "sub"): 0.2, ("avipam-pam4", "sub"): 0.24},
        minutes={"pam4-gibbs": 0.5, "avipam-pam4": 1.0},
    )
    runs.loc[runs["method"] == "pam4-gibbs", "gibbs_iterations"] = 200  # x50 -> 25 min at 10,000
    assert avc.speedup(_tables(runs)).verdict == REPRODUCED


def test_speedup_charges_avipam_the_epochs_to_its_coherence_plateau() -> None:
    """An aviPAM run stopped at 20 epochs whose coherence plateaus at 200 is charged 10x its
    minutes: 25 min of Gibbs (0.5 min x 50) against 10 min is 2.5x, not the 25x as run."""
    runs = _runs(
        {("pam4-gibbs", "sub"): 0.2, ("avipam-pam4", "sub"): 0.24},
        minutes={"pam4-gibbs": 0.5, "avipam-pam4": 1.0},
    )
    runs.loc[runs["method"] == "pam4-gibbs", "gibbs_iterations"] = 200
    runs.loc[runs["method"] == "avipam-pam4", "epochs"] = 20
    assert avc.speedup(_tables(runs)).verdict == REPRODUCED  # no plateau known: as run, 25x
    runs.loc[runs["method"] == "avipam-pam4", "coherence_plateau_epoch"] = 200
    claim = avc.speedup(_tables(runs))
    assert claim.verdict == NOT_REPRODUCED
    assert "x10 -> its coherence plateau at 200 epochs" in claim.numbers
    assert "aviPAM minutes scaled from 20 epochs to its coherence plateau" in claim.protocol_deviation
    assert "ratio 2.5 " in claim.timing
    runs.loc[runs["method"] == "avipam-pam4", "epochs"] = 200  # at its plateau: nothing scaled
    assert "coherence plateau" not in avc.speedup(_tables(runs)).numbers


def test_missing_tables_give_no_data() -> None:
    for check in avc.CHECKS:
        claim = check({}) if check is not avc.speedup else check({}, "")
        assert claim.verdict == NOT_TESTED and claim.numbers.startswith("not tested")


def _collapse(values: dict[tuple[str, str, float], list[float]]) -> dict[str, pd.DataFrame]:
    rows = []
    for (corpus, variant, lr), vals in values.items():
        rows.append(
            {
                "artifact": "avipam-collapse",
                "corpus": corpus,
                "variant": variant,
                "lr": lr,
                "n_runs": len(vals),
                "n_converged": len(vals),
                "collapsed_share_values": ";".join(f"{i}:{v!r}" for i, v in enumerate(vals)),
                "npmi_external_values": ";".join(f"{i}:{0.2 - v / 10!r}" for i, v in enumerate(vals)),
            }
        )
    return {"avipam-collapse": pd.DataFrame(rows)}


def test_batchnorm_collapse_claims() -> None:
    t = _collapse(
        {
            ("mnist", "none", 0.1): [0.9, 0.92, 0.91],
            ("mnist", "batchnorm", 0.1): [0.1, 0.12, 0.11],
            ("mnist", "norm", 0.1): [0.1, 0.11, 0.12],
            ("mnist", "none", 0.002): [0.2, 0.21, 0.22],
        }
    )
    assert avc.batchnorm_prevents_collapse(t).verdict == REPRODUCED
    assert avc.norm_equivalent(t).verdict == REPRODUCED
    t2 = _collapse(
        {("mnist", "none", 0.1): [0.1, 0.11, 0.12], ("mnist", "batchnorm", 0.1): [0.9, 0.92, 0.91]}
    )
    assert avc.batchnorm_prevents_collapse(t2).verdict == NOT_REPRODUCED


def test_run_npmi_uses_lau_rule_against_a_hand_table() -> None:
    from noisyor_bench.evaluation.coherence import document_reference

    counts = np.array([[1, 1, 0], [1, 1, 0], [0, 0, 1], [1, 0, 1]])
    table = document_reference(counts, ["a", "b", "c"])
    # topic (a, b): n_a = 3, n_b = 2, n_ab = 2, N = 4 -> log(2*4/6) / -log(2/4)
    mean, per_topic = avt.run_npmi(np.array([[0, 1]]), table)
    assert mean == pytest.approx(math.log(8 / 6) / -math.log(0.5))


def test_molda_claim_reads_measured_components_only() -> None:
    means = {("avipam-molda", "molda-3"): 0.3, ("avipam-molda", "molda-6"): 0.1}
    claim = avc.molda_components(_tables(_runs(means)))
    assert "molda-3 - molda-6" in claim.numbers and claim.verdict == REPRODUCED


@pytest.mark.parametrize(
    ("lls", "expected"),
    [
        ([-9.0, -8.0, -7.4, -7.4, -7.4, -7.4, -7.4, -7.4], True),  # the last 5 points improve on nothing
        ([-9.0, -8.5, -8.0, -7.5, -7.0, -6.5, -6.0, -5.5], False),  # still improving
    ],
)
def test_gibbs_trace_convergence_rule(lls: list[float], expected: bool) -> None:
    from noisyor_bench.experiments.avipam.methods import trace_convergence

    trace = [(10 * (i + 1), ll, float(i)) for i, ll in enumerate(lls)]
    conv = trace_convergence(trace, 80)
    assert conv["converged"] is expected and conv["epochs"] == 80


def test_gibbs_trace_best_point_ignores_a_nan_point() -> None:
    """A NaN trace point (a failed likelihood evaluation) is never the chain's best: min() over
    NaN keeps whichever comes first, which once made the NaN iteration the best."""
    from noisyor_bench.experiments.avipam.methods import trace_convergence

    lls = [float("nan"), -9.0, -8.0, -7.5, -7.0, -6.5, -6.0, -5.5]
    conv = trace_convergence([(10 * (i + 1), ll, float(i)) for i, ll in enumerate(lls)], 80)
    assert conv["best_epoch"] == 80 and conv["converged"] is False
    assert trace_convergence([(10, float("nan"), 0.0)], 10) is None


def test_collapse_markdown_rows_have_one_cell_per_header_column() -> None:
    """Each row of the collapse table lines up with its header (a diverged-runs cell once
    shifted every later value one column to the right)."""
    from noisyor_bench.reporting.avipam import collapse

    runs = pd.DataFrame(
        [
            {
                "corpus": "mnist",
                "variant": v,
                "lr": lr,
                "seed": s,
                "n_collapsed": float(nc),
                "latent_dims": 50,
                "collapsed_share": nc / 50,
                "diverged_share": float(div),
                "kl_total": 20.0 + s,
                "diverged": div,
                "train_minutes": 0.1,
                "npmi_external": float("nan"),
                "npmi_internal": float("nan"),
            }
            for v, lr, nc, div in [("batchnorm", 0.002, 0, False), ("none", 0.1, 50, True)]
            for s in (0, 1)
        ]
    )
    text = collapse.markdown(collapse.build_table(runs), "quick")
    lines = [line for line in text.splitlines() if line.startswith("|")]
    header, rows = lines[0], lines[2:]
    assert "diverged runs" in header and len(rows) == 2
    assert all(row.count("|") == header.count("|") for row in rows)
    none_row = next(row for row in rows if "0.1" in row)
    cells = [c.strip() for c in none_row.strip("|").split("|")]
    assert cells[header.strip("|").split("|").index(" diverged runs ")] == "2/2"


def test_nips_reduction_is_in_the_caption_and_the_claim_keeps_the_4pam_pair() -> None:
    means = {("pam4-gibbs", "sub"): 0.03, ("avipam-pam4", "sub"): 0.05}
    runs = _runs(means, corpus="nips", experiment="small")
    table = avt.build_table(runs, "table3", avt.paper_numbers(), "quick")
    text = avt.caption(table, "table3", avt.paper_numbers(), "quick")
    assert "REDUCED: not run in this grid:" in text and "aviPAM 5-PAM" in text and "aviPAM MoLDA" in text
    claim = avc.nips_small(_tables(runs, name="table3"))
    assert claim.verdict == "reproduced"
    assert "avipam-pam5: not run in this grid" in claim.numbers


def _quality_runs(epochs: int, plateau: int, sweeps: int) -> pd.DataFrame:
    runs = _runs(PAPER_ORDER)
    runs["npmi_paper"] = runs["npmi_external"]
    avi = runs["method"].str.startswith("avipam-")
    runs["epochs"] = np.where(avi, epochs, 10)
    runs["coherence_plateau_epoch"] = np.where(avi, plateau, np.nan)
    runs["coherence_converged"] = [bool(epochs >= plateau) if a else None for a in avi]
    runs.loc[runs["method"].str.endswith("gibbs"), "gibbs_iterations"] = sweeps
    return runs


def test_topic_quality_claims_judge_avipam_on_the_coherence_plateau_and_state_deviations() -> None:
    # aviPAM trained 40 epochs, coherence plateaus at 200; Gibbs at 300 of 10,000 sweeps
    claim = avc.table1_order(_tables(_quality_runs(40, 200, 300)))
    assert claim.verdict == REPRODUCED  # qualifiers never change the verdict
    assert "aviPAM 4-PAM: 3 of 3 runs before the coherence plateau" in claim.unconverged
    assert "aviPAM 4-PAM 40 epochs (coherence plateaus at 200)" in claim.protocol_deviation
    assert "300 of 10,000 sweeps" in claim.protocol_deviation
    # at the plateau and the paper's sweeps: no qualifier (every run converged by its rule)
    full = avc.table1_order(_tables(_quality_runs(200, 200, 10000)))
    assert full.verdict == REPRODUCED and full.unconverged == "" and full.protocol_deviation == ""
    # the claims read the paper protocol's column where the table has it
    runs = _quality_runs(200, 200, 10000)
    runs.loc[runs["method"] == "lda-online", "npmi_paper"] = 0.30  # above LDA Gibbs on that metric only
    assert avc.table1_order(_tables(runs)).verdict == NOT_REPRODUCED
    no_paper = _runs(PAPER_ORDER)
    claim = avc.table1_order(_tables(no_paper))
    assert claim.verdict == REPRODUCED and "Wikipedia" in claim.protocol_deviation


def _curved_runs(avi_minutes: float) -> pd.DataFrame:
    """4-PAM Gibbs (0.5 min, 200 sweeps) and aviPAM 4-PAM (``avi_minutes``, 10 epochs) with
    coherence curves: the lowest best point of every run is Gibbs seed 2's 0.19, which Gibbs
    seeds 0-1 first reach at sweep 200 (100% of their sweeps), seed 2 at 200 too, and aviPAM at
    epoch 4 (40%)."""
    runs = _runs(
        {("pam4-gibbs", "sub"): 0.2, ("avipam-pam4", "sub"): 0.24},
        minutes={"pam4-gibbs": 0.5, "avipam-pam4": avi_minutes},
    )
    gibbs = runs["method"] == "pam4-gibbs"
    runs.loc[gibbs, "gibbs_iterations"] = 200
    runs.loc[gibbs, "npmi_curve"] = "50:0.1;100:0.18;200:0.2"
    runs.loc[gibbs & (runs["seed"] == 2), "npmi_curve"] = "50:0.1;100:0.18;200:0.19"
    runs.loc[~gibbs, "npmi_curve"] = "2:0.12;4:0.21;10:0.24"
    return runs


def test_speedup_has_a_row_at_equal_coherence_and_one_at_the_papers_sweeps() -> None:
    tables = _tables(_curved_runs(avi_minutes=1.0))
    row = tables["avipam-table1"].set_index("method").loc["avipam-pam4"]
    assert row["equal_coherence_npmi"] == pytest.approx(0.19)
    assert row["equal_coherence_fraction_values"] == "0:0.4;1:0.4;2:0.4"
    scaled, equal = avc.speedup(tables), avc.speedup_converged(tables)
    assert scaled.claim_id == "avipam-speedup" and equal.claim_id == "avipam-speedup-converged"
    assert scaled.verdict == REPRODUCED  # 0.5 min x 10000 / 200 = 25 min vs 1 min
    # to NPMI 0.19: Gibbs 0.5 min x 100% vs aviPAM 1 min x 40%: 1.25x, below 10x
    assert equal.verdict == NOT_REPRODUCED
    assert "NPMI 0.190" in equal.numbers and "aviPAM at 40%, 40%, 40% of its epochs" in equal.numbers
    assert "ratio 1.25 [" in equal.timing
    assert "scaled from 200 sweeps" in scaled.protocol_deviation
    assert "scaled" not in equal.protocol_deviation
    assert [c.claim_id for c in avc.check_all(tables)].count("avipam-speedup-converged") == 1
    # aviPAM 50x faster a step: 0.5 min vs 0.008 min to the same coherence, 62.5x
    assert avc.speedup_converged(_tables(_curved_runs(avi_minutes=0.02))).verdict == REPRODUCED


def test_speedup_at_equal_coherence_needs_both_curves() -> None:
    """Tables from before the curves (the references' older tables): nothing to judge."""
    runs = _curved_runs(avi_minutes=1.0)
    runs.loc[runs["method"] == "avipam-pam4", "npmi_curve"] = ""
    claim = avc.speedup_converged(_tables(runs))
    assert claim.verdict == NOT_TESTED
    no_column = _curved_runs(avi_minutes=1.0).drop(columns=["npmi_curve"])
    assert avc.speedup_converged(_tables(no_column)).verdict == NOT_TESTED


def test_beta_ranked_ablation_rows_and_the_gain_ablation_are_labelled_and_ordered() -> None:
    runs = _runs(
        {("avipam-pam4", "sub"): 0.2, ("avipam-pam4@beta", "sub"): 0.1, ("avipam-pam4-gain", "sub"): 0.15}
    )
    table = avt.build_table(runs, "table1", avt.paper_numbers(), "quick")
    labels = list(table.loc[table["method"].str.startswith("avipam-pam4"), "label"])
    assert labels == [
        "aviPAM 4-PAM",
        "aviPAM 4-PAM, top words by β (ablation)",
        "aviPAM 4-PAM, BN with gain (ablation)",
    ]


def test_a_timing_cell_is_timed_but_not_judged_at_equal_coherence() -> None:
    """Runs of a timing cell (a few steps at the paper's sizes) have curves, but their few points
    say nothing about topic quality: no equal-coherence target, and the caption says why."""
    runs = _curved_runs(avi_minutes=1.0).assign(timing_only=True)
    tables = _tables(runs)
    table = tables["avipam-table1"]
    assert table["equal_coherence_npmi"].isna().all()
    assert avc.speedup_converged(tables).verdict == NOT_TESTED
    assert avc.speedup(tables).verdict == REPRODUCED  # the timing itself still counts
    assert "TIMING CELL" in avt.caption(
        avt.build_table(runs, "table1", avt.paper_numbers(), "t"), "table1", avt.paper_numbers(), "t"
    )
