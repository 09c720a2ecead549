"""aviPAM's NPMI bias (calibration rows against Lau's logged values) and the collapse claim's
diverged runs, on hand-made tables with hand-worked numbers."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from avipam_rows import small_run_row
from scipy import stats

from noisyor_bench.reporting.avipam import claims as avc
from noisyor_bench.reporting.avipam import tables as avt
from noisyor_bench.reporting.avipam.calibration import calibration_claim, metric_bias
from noisyor_bench.reporting.claims import INCONCLUSIVE, NOT_TESTED, REPRODUCED

# the averages Lau's scripts printed for AVITM's three published runs (prodlda_k50_20news.yaml)
LAU_LOGGED = (0.250585946611, 0.231101832556, 0.250596966953)
PUBLISHED = {0: 0.234, 1: 0.221, 2: 0.234}


def _values(per_seed: dict[int, float]) -> str:
    return ";".join(f"{s}:{v!r}" for s, v in per_seed.items())


def _row(method: str, component: str, per_seed: dict[int, float]) -> dict:
    return {
        "artifact": "avipam-table1",
        "experiment": "small",
        "method": method,
        "component": component,
        "label": f"{method} {component}",
        "status": "measured",
        "n_seeds": len(per_seed),
        "n_runs": len(per_seed),
        "n_converged": len(per_seed),
        "deterministic": False,
        "npmi_paper_mean": float(np.mean(list(per_seed.values()))),
        "npmi_paper_values": _values(per_seed),
    }


def _table1(molda_gap: float, calibration: bool) -> dict[str, pd.DataFrame]:
    """MoLDA's 10-topic component ``molda_gap`` above its 50-topic one in every seed (a little
    spread), with or without the published-topics calibration row."""
    fine = {0: 0.210, 1: 0.2112, 2: 0.2121}
    coarse = {s: v + molda_gap + 0.0001 * s for s, v in fine.items()}
    rows = [_row("avipam-molda", "molda-10", coarse), _row("avipam-molda", "molda-50", fine)]
    if calibration:
        rows.append(_row("avitm-published", "sub", PUBLISHED))
    return {"avipam-table1": pd.DataFrame(rows)}


def test_metric_bias_is_ours_minus_lau_per_published_run():
    bias = metric_bias(_table1(0.05, calibration=True)["avipam-table1"])
    expected = {s: PUBLISHED[s] - LAU_LOGGED[s] for s in PUBLISHED}
    assert bias.per_run == pytest.approx(expected)
    assert bias.mean == pytest.approx(sum(expected.values()) / 3)
    assert bias.mean == pytest.approx(-0.014428, abs=1e-6)  # hand-worked: (-0.01659 - 0.01010 - 0.01660) / 3
    assert "-0.014" in bias.text()
    assert metric_bias(_table1(0.05, calibration=False)["avipam-table1"]) is None
    claim = calibration_claim(_table1(0.05, calibration=True))
    assert "metric bias" in claim.numbers and "-0.014" in claim.numbers


def _margin(gap: float) -> float:
    """The paired CI's distance to 0 for the MoLDA differences of :func:`_table1` (scipy's t)."""
    d = np.array([gap + 0.0001 * s for s in range(3)])
    half = stats.t.ppf(0.975, 2) * d.std(ddof=1) / np.sqrt(3)
    return float(d.mean() - half)


@pytest.mark.parametrize(
    ("gap", "calibration", "qualified"),
    [
        (0.010, True, True),  # margin ~0.010 < |bias| 0.0144
        (0.050, True, False),  # margin ~0.050: outside the bias
        (0.010, False, False),  # no calibration rows: nothing said
    ],
)
def test_coherence_claim_within_the_bias_is_qualified(gap, calibration, qualified):
    claim = avc.molda_components(_table1(gap, calibration))
    assert claim.verdict == REPRODUCED  # the qualifier never changes the verdict
    assert (calibration and _margin(gap) < 0.014428) is qualified
    assert ("within the metric's bias" in claim.protocol_deviation) is qualified
    if qualified:
        assert f"margin {_margin(gap):.3f}" in claim.protocol_deviation


def test_table1_caption_shows_the_bias_only_with_calibration_rows():
    runs = pd.DataFrame(
        [
            small_run_row(method, seed, npmi_paper=value, npmi_external=value, npmi_internal=value / 2)
            for method, values in (
                ("avitm-published", PUBLISHED),
                ("avipam-pam4", {0: 0.2, 1: 0.21, 2: 0.22}),
            )
            for seed, value in values.items()
        ]
    )
    paper = avt.paper_numbers()
    with_rows = avt.caption(avt.build_table(runs, "table1", paper, "q"), "table1", paper, "q")
    assert "METRIC BIAS" in with_rows and "-0.014" in with_rows
    without = runs[runs["method"] != "avitm-published"]
    assert "METRIC BIAS" not in avt.caption(
        avt.build_table(without, "table1", paper, "q"), "table1", paper, "q"
    )


def _collapse(values: dict[tuple[str, float], tuple[list[float], list[bool]]]) -> dict[str, pd.DataFrame]:
    """The collapse table: per (variant, lr) the per-seed collapsed share and which seeds diverged
    (a diverged run records every dimension as collapsed: share 1.0)."""
    rows = []
    for (variant, lr), (shares, diverged) in values.items():
        rows.append(
            {
                "artifact": "avipam-collapse",
                "corpus": "20news",
                "variant": variant,
                "lr": lr,
                "n_runs": len(shares),
                "n_converged": len(shares),
                "collapsed_share_values": _values(dict(enumerate(shares))),
                "diverged_share_values": _values({i: float(d) for i, d in enumerate(diverged)}),
            }
        )
    return {"avipam-collapse": pd.DataFrame(rows)}


def test_diverged_runs_are_counted_apart_not_as_collapse():
    # without normalisation 4 of 6 runs diverged (share 1.0); the other 2 collapsed nothing
    none = ([1.0, 1.0, 1.0, 1.0, 0.0, 0.0], [True, True, True, True, False, False])
    bn = ([0.0, 0.02, 0.0, 0.02, 0.0], [False] * 5)
    claim = avc.batchnorm_prevents_collapse(_collapse({("none", 0.1): none, ("batchnorm", 0.1): bn}))
    # counting the diverged runs as collapse, scipy's Welch CI lies above 0: "reproduced"
    counted = stats.ttest_ind(none[0], bn[0], equal_var=False).confidence_interval(0.95)
    assert counted.low > 0
    # on the runs that did not diverge: none 0.0 (2 runs) vs batchnorm 0.008, nothing collapsed
    kept = stats.ttest_ind([0.0, 0.0], bn[0], equal_var=False).confidence_interval(0.95)
    assert kept.low < 0 < kept.high
    assert claim.verdict == INCONCLUSIVE
    assert "4 of 6 diverged" in claim.numbers and "0 of 5 diverged" in claim.numbers
    assert "over 2 run(s)" in claim.numbers


def test_every_run_diverged_leaves_collapse_untested():
    none = ([1.0, 1.0, 1.0], [True, True, True])
    bn = ([0.0, 0.02, 0.0], [False] * 3)
    claim = avc.batchnorm_prevents_collapse(_collapse({("none", 0.1): none, ("batchnorm", 0.1): bn}))
    assert claim.verdict == NOT_TESTED and "3 of 3 diverged" in claim.numbers
