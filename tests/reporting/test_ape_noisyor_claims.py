"""The APE-on-noisy-OR claims on toy tables: each verdict from hand-made per-seed values."""

from __future__ import annotations

import pandas as pd
import pytest

from noisyor_bench.reporting.ape_noisyor.claims import ape_noisyor_claims
from noisyor_bench.reporting.ape_noisyor.table import ape_noisyor_markdown, ape_noisyor_table
from noisyor_bench.reporting.claims import NOT_REPRODUCED, NOT_TESTED, REPRODUCED

SEEDS = (0, 1, 2)


def _runs(values: dict[str, dict[str, list[float]]], unconverged: tuple[str, ...] = ()) -> pd.DataFrame:
    """Per-run rows: ``values[method][metric]`` one value per seed; baselines get one deterministic run."""
    rows = []
    for method, metrics in values.items():
        baseline = method in ("svi", "lb-cdi")
        for i, seed in enumerate((0,) if baseline else SEEDS):
            rows.append(
                {
                    "dataset": "fam",
                    "method": method,
                    "mode": "inference",
                    "n_train": 10,
                    "seed": seed,
                    "converged": None if baseline else method not in unconverged,
                    "run_dir": f"/runs/{method}/seed{seed}",
                    "base_method": method.split("-")[0],
                    "encoder_input": "",
                    "agreement_pairs": 270,  # 6 problems x 45 candidate pairs: step 1/270
                    **{m: v[i] for m, v in metrics.items()},
                    "inference_seconds": 0.1,
                }
            )
    frame = pd.DataFrame(rows)
    for m in ("agreement_exact", "agreement_svi", "gap_exact", "gap_svi", "gap_lbcdi"):
        if m not in frame.columns:
            frame[m] = float("nan")
    return frame


def _enc(gap: list[float], agree: list[float], lbcdi: list[float] | None = None) -> dict[str, list[float]]:
    return {"gap_exact": gap, "agreement_exact": agree, "gap_lbcdi": lbcdi or [g - 0.1 for g in gap]}


CASES = {
    # model-aware tighter than naive and standard; ACP ranks as well; encoders looser than LB-CDI
    "all reproduced": (
        {
            "avi": _enc([3.0, 3.1, 2.9], [0.80, 0.82, 0.81]),
            "avi-concat": _enc([2.0, 2.1, 2.2], [0.85, 0.86, 0.84]),
            "avi-model-aware": _enc([1.0, 1.1, 1.05], [0.90, 0.91, 0.92]),
            "acp": _enc([0.9, 1.0, 0.95], [0.91, 0.92, 0.91]),
            "lb-cdi": {"gap_exact": [0.1], "agreement_exact": [1.0], "gap_lbcdi": [0.0]},
        },
        (),
        [REPRODUCED, REPRODUCED, REPRODUCED, REPRODUCED],
    ),
    # naive beats model-aware; ACP clearly ranks worse; ACP tighter than LB-CDI (negative gap)
    "reversed": (
        {
            "avi": _enc([0.5, 0.55, 0.6], [0.80, 0.82, 0.81]),
            "avi-concat": _enc([1.0, 1.1, 1.05], [0.85, 0.86, 0.84]),
            "avi-model-aware": _enc([2.0, 2.1, 2.2], [0.95, 0.96, 0.95]),
            "acp": _enc([0.9, 1.0, 0.95], [0.70, 0.71, 0.70], lbcdi=[-0.5, -0.6, -0.55]),
            "lb-cdi": {"gap_exact": [0.1], "agreement_exact": [1.0], "gap_lbcdi": [0.0]},
        },
        (),
        [NOT_REPRODUCED, NOT_REPRODUCED, NOT_REPRODUCED, NOT_REPRODUCED],
    ),
    # as "all reproduced", and an unconverged model-aware run only qualifies its claims
    "unconverged": (
        {
            "avi": _enc([3.0, 3.1, 2.9], [0.80, 0.82, 0.81]),
            "avi-concat": _enc([2.0, 2.1, 2.2], [0.85, 0.86, 0.84]),
            "avi-model-aware": _enc([1.0, 1.1, 1.05], [0.90, 0.91, 0.92]),
            "acp": _enc([0.9, 1.0, 0.95], [0.91, 0.92, 0.91]),
        },
        ("avi-model-aware",),
        [REPRODUCED, REPRODUCED, REPRODUCED, REPRODUCED],
    ),
}


@pytest.mark.parametrize("case", CASES)
def test_claim_verdicts_on_toy_tables(case: str) -> None:
    values, unconverged, expected = CASES[case]
    table = ape_noisyor_table(_runs(values, unconverged))
    claims = ape_noisyor_claims(table)
    assert [c.claim_id for c in claims] == [
        "ape-noisyor-model-aware-vs-naive",
        "ape-noisyor-standard-vs-model-aware",
        "ape-noisyor-acp-ranks-as-ape",
        "ape-noisyor-amortization-gap",
    ]
    assert [c.verdict for c in claims] == expected
    if case == "unconverged":
        assert all(c.unconverged for c in claims)
    else:
        assert not any(c.unconverged for c in claims)


def test_missing_encoder_is_not_tested_and_table_renders() -> None:
    table = ape_noisyor_table(_runs({"avi": _enc([1.0, 1.1, 1.2], [0.8, 0.8, 0.9])}))
    claims = ape_noisyor_claims(table)
    assert {c.verdict for c in claims} == {NOT_TESTED}
    assert all(c.numbers.startswith("not tested") for c in claims)
    md = ape_noisyor_markdown(table, {"grid": "toy", "detail": ""})
    assert "## fam" in md and "AVI (input x)" in md
