"""Budget-aware aviPAM verdicts: a comparison whose lower side is before its coherence plateau,
its curve still moving by more than the effect, reads "inconclusive (budget)"; a flat curve
leaves the verdict; the ``unconverged`` qualifier names the runs that decide the comparison."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from noisyor_bench.reporting.avipam import claims as avipam_claims
from noisyor_bench.reporting.avipam.tables import curve_rise
from noisyor_bench.reporting.claims import (
    BUDGET_LABEL,
    INCONCLUSIVE,
    NOT_REPRODUCED,
    Claim,
    verdict_label,
    write_claims,
)

EFFECT = 0.008  # 4-PAM Gibbs below LDA Gibbs at the short budget


def _row(method: str, label: str, values: list[float], **extra: float) -> dict[str, object]:
    return {
        "artifact": "avipam-table1",
        "corpus": "20news",
        "experiment": "small",
        "method": method,
        "component": "sub",
        "label": label,
        "status": "measured",
        "n_seeds": len(values),
        "n_runs": len(values),
        "n_converged": len(values),
        "npmi_paper_mean": float(np.mean(values)) if values else math.nan,
        "npmi_paper_values": ";".join(f"{s}:{v}" for s, v in enumerate(values)),
        "gibbs_iterations": math.nan,
        "n_coherence_converged": math.nan,
        "coherence_plateau_epoch": math.nan,
        "epochs_mean": math.nan,
        "npmi_paper_rise": math.nan,
        "rise_from_step": math.nan,
        "rise_to_step": math.nan,
        **extra,
    }


def _table1(pam_rise: float, pam_converged: float = 0.0) -> dict[str, pd.DataFrame]:
    """Table 1 as the quick grid's: 4-PAM Gibbs 0.008 below LDA Gibbs at 163 sweeps (3 seeds),
    its coherence curve rising by ``pam_rise`` over the second half of the chain."""
    rows = [
        _row(
            "lda-gibbs",
            "LDA Gibbs",
            [0.1148, 0.1152, 0.1150],
            gibbs_iterations=287.0,
            n_coherence_converged=0.0,
            npmi_paper_rise=0.001,
            rise_from_step=150.0,
            rise_to_step=287.0,
        ),
        _row("lda-online", "LDA DMFVI", [0.060, 0.062, 0.061]),
        _row(
            "pam4-gibbs",
            "4-PAM Gibbs",
            [0.1068, 0.1072, 0.1070],
            gibbs_iterations=163.0,
            n_coherence_converged=pam_converged,
            npmi_paper_rise=pam_rise,
            rise_from_step=100.0,
            rise_to_step=163.0,
        ),
        _row(
            "avipam-pam4",
            "aviPAM 4-PAM",
            [0.180, 0.182, 0.181],
            n_coherence_converged=0.0,
            coherence_plateau_epoch=200.0,
            epochs_mean=34.0,
        ),
        {**_row("avipam-pam5", "aviPAM 5-PAM", []), "status": "not run in this grid (quick)"},
        {**_row("lda-batch", "LDA batch DMFVI", []), "status": "not run in this grid (quick)"},
    ]
    return {"avipam-table1": pd.DataFrame(rows)}


def test_curve_moving_by_twice_the_effect_reads_inconclusive_budget() -> None:
    flat = avipam_claims.table1_order(_table1(pam_rise=0.0))
    assert flat.verdict == NOT_REPRODUCED  # the statistics alone decide against the claim
    claim = avipam_claims.table1_order(_table1(pam_rise=2 * EFFECT))
    assert claim.verdict == INCONCLUSIVE
    assert verdict_label(claim) == BUDGET_LABEL
    # why, with the size of the movement and the statistic at this budget
    assert "4-PAM Gibbs coherence rose 0.016 from sweep 100 to 163" in claim.budget
    assert "more than the 0.008 effect" in claim.budget
    assert "at this budget: 4-PAM Gibbs 0.107 vs LDA Gibbs 0.115" in claim.budget
    assert "inconclusive (budget)" in claim.numbers


def test_flat_or_plateaued_curve_leaves_the_verdict() -> None:
    flat = avipam_claims.table1_order(_table1(pam_rise=EFFECT / 2))
    assert (flat.verdict, flat.budget) == (NOT_REPRODUCED, "")
    assert verdict_label(flat) == NOT_REPRODUCED
    # rising, but past its coherence plateau (every chain): the verdict stands
    past = avipam_claims.table1_order(_table1(pam_rise=2 * EFFECT, pam_converged=3.0))
    assert (past.verdict, past.budget) == (NOT_REPRODUCED, "")


def test_pam_beats_lda_budget_too() -> None:
    claim = avipam_claims.pam_beats_lda(_table1(pam_rise=2 * EFFECT))
    assert claim.verdict == INCONCLUSIVE and "4-PAM Gibbs coherence rose" in claim.budget
    assert avipam_claims.pam_beats_lda(_table1(pam_rise=0.0)).verdict == NOT_REPRODUCED


def test_unconverged_names_the_deciding_chains() -> None:
    claim = avipam_claims.table1_order(_table1(pam_rise=0.0))
    assert claim.verdict == NOT_REPRODUCED
    # the failing comparison is 4-PAM Gibbs vs LDA Gibbs: its chains, judged by coherence
    assert "4-PAM Gibbs: 3 of 3 chains before their coherence plateau" in claim.unconverged
    assert "LDA Gibbs: 3 of 3 chains before their coherence plateau" in claim.unconverged
    # aviPAM 4-PAM is short too, but its comparisons hold: it does not decide the verdict
    assert "aviPAM 4-PAM" not in claim.unconverged
    assert "likelihood" not in claim.unconverged


def test_verdict_label_and_claims_markdown(tmp_path) -> None:
    claim = Claim("avipam-x", "s", "l", INCONCLUSIVE, "n", "r", budget="curve still rising")
    assert verdict_label(claim) == BUDGET_LABEL
    assert verdict_label({"verdict": INCONCLUSIVE, "budget": float("nan")}) == INCONCLUSIVE
    assert verdict_label({"verdict": NOT_REPRODUCED, "budget": ""}) == NOT_REPRODUCED
    write_claims([claim], tmp_path / "claims.csv", tmp_path / "claims.md")
    text = (tmp_path / "claims.md").read_text()
    assert f"| {BUDGET_LABEL} |" in text and "[budget: curve still rising]" in text


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        ([0.05, 0.07, 0.09, 0.10, 0.107], (0.107 - 0.09, 100.0, 163.0)),  # rising: from half the run
        ([0.10, 0.10, 0.10, 0.10, 0.10], (0.0, 100.0, 163.0)),
    ],
)
def test_curve_rise(values: list[float], expected: tuple[float, float, float]) -> None:
    rise, start, end = curve_rise([20, 60, 100, 140, 163], values)
    assert rise == pytest.approx(expected[0]) and (start, end) == expected[1:]


def _molda(rise_10: float, rise_50: float, converged: float = 0.0) -> dict[str, pd.DataFrame]:
    """MoLDA's two components of the same 3 runs: 10 topics 0.035 below 50 (quick's numbers),
    their coherence curves rising by ``rise_10`` / ``rise_50`` over the second half."""
    extra = dict(n_coherence_converged=converged, rise_from_step=18.0, rise_to_step=34.0, epochs_mean=34.0)
    rows = [
        {
            **_row("avipam-molda", "aviPAM MoLDA", [0.095, 0.094, 0.096], npmi_paper_rise=rise_10, **extra),
            "component": "molda-10",
        },
        {
            **_row("avipam-molda", "aviPAM MoLDA", [0.130, 0.129, 0.131], npmi_paper_rise=rise_50, **extra),
            "component": "molda-50",
        },
    ]
    return {"avipam-table1": pd.DataFrame(rows)}


def test_molda_is_judged_by_the_movement_of_its_difference_not_of_either_curve() -> None:
    # both components rose 0.06 (more than the 0.035 difference) but together: the difference
    # moved 0.003, so the verdict stands, and the numbers show the movement
    together = avipam_claims.molda_components(_molda(0.060, 0.057))
    assert together.verdict == NOT_REPRODUCED and together.budget == ""
    assert "the difference moved +0.003 from epoch 18 to 34" in together.numbers
    # the 10-topic component catching up by twice the difference: undecided at this budget
    apart = avipam_claims.molda_components(_molda(0.080, 0.010))
    assert apart.verdict == INCONCLUSIVE and verdict_label(apart) == BUDGET_LABEL
    assert (
        "moved +0.070 from epoch 18 to 34" in apart.budget
        and "more than the 0.035 difference" in apart.budget
    )
    # past the plateau (every run): the same movement leaves the verdict
    past = avipam_claims.molda_components(_molda(0.080, 0.010, converged=3.0))
    assert past.verdict == NOT_REPRODUCED and past.budget == ""
