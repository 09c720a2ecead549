"""The numbers docs/baselines.md quotes in its calibration section -- SYN-PATTERN and its two
generator variants -- are what the calibration tool computes now, on the datasets the config builds."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest
import yaml
from conftest import REPO

from noisyor_bench.data.synthetic.build import build_dataset
from noisyor_bench.experiments.acp.calibration import panel
from noisyor_bench.reporting.acp.calibration import flag_rows, mean_residual, paper_rows
from noisyor_bench.reporting.acp.degradation import degradation_curve
from noisyor_bench.reporting.acp.paper import paper_numbers

DOC = REPO / "docs" / "baselines.md"
SECTION = "## Calibration: what the generator allows the paper's rows"
#: The table's columns after the quantity, in order.
GENERATORS = ("syn-pattern", "syn-pattern-leak2", "syn-pattern-overlap")


def documented_table() -> dict[str, list[str]]:
    text = DOC.read_text(encoding="utf-8")
    assert SECTION in text, f"{DOC}: the section {SECTION!r} is missing"
    section = text.split(SECTION, 1)[1].split("\n## ", 1)[0].split("<!-- reference:", 1)[0]
    rows = [line.strip().strip("|").split("|") for line in section.splitlines() if line.startswith("| ")]
    assert [c.strip() for c in rows[0][1:]] == list(GENERATORS), f"{DOC}: the table's columns are {rows[0]}"
    return {row[0].strip(): [v.strip() for v in row[1:]] for row in rows[1:]}  # rows[0]: the header


def _column(name: str, cache) -> dict[str, str]:
    """The quantities of one generator's column."""
    spec = yaml.safe_load((REPO / "config" / "config.yaml").read_text())["datasets"][name]
    data, _ = build_dataset(name, spec, None, cache)
    rec = panel(data, name)
    rec["variant_of"] = spec.get("variant_of")
    curve = degradation_curve(data, name, np.arange(data["x_test"].shape[0]))
    rows = [r for r in paper_rows(paper_numbers()) if r["paper_artifact"] == "fig3a"]
    flagged = flag_rows(rows, [rec], curve)
    mean, _ = mean_residual(flagged)
    residual = pd.to_numeric(flagged["residual"], errors="coerce")
    em_gap = flagged["em_below_near_exact"]
    return {
        "truth −log p(x), exact": f"{rec['truth_nll']:.2f} ± {rec['truth_se']:.2f}",
        "best mean-field NELBO of the truth": f"{rec['meanfield_nelbo']:.2f}",
        "near-exact F1 / EM": f"{rec['near_exact_f1']:.2f} / {rec['near_exact_em']:.2f}",
        "MAP F1 / EM": f"{rec['map_f1']:.2f} / {rec['map_em']:.2f}",
        "independent-Bernoulli entropy": f"{rec['indep_entropy']:.2f}",
        "Fig. 3a rows with a feasible NELBO / EM": (
            f"{int(flagged['nelbo_feasible'].sum())} of {len(flagged)} / "
            f"{int(flagged['em_feasible'].sum())} of {len(flagged)}"
        ),
        "Fig. 3a NELBO − truth": (
            f"{flagged['nelbo_above_truth'].min():.2f} to {flagged['nelbo_above_truth'].max():.2f}"
        ),
        "Fig. 3a near-exact EM − EM": f"{em_gap.min():.1f} to {em_gap.max():.1f}",
        "degradation-curve residuals (AVI, ACP at 1,000, 100, 20; SVI, LB-CDI, UB-CDI)": ", ".join(
            "–" if np.isnan(v) else f"{v:+.2f}" for v in residual
        ),
        "mean (median) residual": f"{mean:+.2f} ({residual.median():+.2f})",
    }


@pytest.fixture(scope="module")
def computed(tmp_path_factory) -> dict[str, list[str]]:
    columns = [_column(name, tmp_path_factory.mktemp(name)) for name in GENERATORS]
    return {label: [c[label] for c in columns] for label in columns[0]}


def test_the_fig3a_rows_are_in_the_order_the_docs_name_them():
    rows = [
        (r["method"], r["n_train"]) for r in paper_rows(paper_numbers()) if r["paper_artifact"] == "fig3a"
    ]
    assert rows == [
        ("avi", 1000),
        ("acp", 1000),
        ("avi", 100),
        ("acp", 100),
        ("avi", 20),
        ("acp", 20),
        ("svi", 0),
        ("lb-cdi", 0),
        ("ub-cdi", 0),
    ]


def test_every_documented_number_is_the_tools(computed):
    documented = documented_table()
    assert set(documented) == set(computed)
    drifted = {k: (documented[k], computed[k]) for k in computed if documented[k] != computed[k]}
    assert not drifted, f"{DOC}: numbers differ from the tool (documented, computed): {drifted}"


REFERENCE = REPO / "reference" / "paper-fig5-table4" / "tables"


def test_the_syn_random_7_numbers_are_the_references():
    """The SYN-RANDOM-7 block of the calibration section quotes reference/paper-fig5-table4."""
    text = DOC.read_text(encoding="utf-8")
    block = text.split("<!-- reference: paper-fig5-table4 -->", 1)[1].split("<!-- end reference -->", 1)[0]
    documented = {
        row[0].strip(): row[1].strip()
        for row in (
            line.strip().strip("|").split("|") for line in block.splitlines() if line.startswith("| ")
        )
    }
    panel = pd.read_csv(REFERENCE / "acp_calibration.csv").set_index("dataset").loc["syn-random-7"]
    truth_rows = int(re.search(r"subset of (\d+) of", panel["truth_estimator"]).group(1))
    rows = pd.read_csv(REFERENCE / "acp_calibration_rows.csv")
    best = rows[(rows["paper_artifact"] == "table4") & (rows["dataset"] == "syn-random-7")]
    best = best.loc[best["paper_nelbo"].idxmin()]
    table4 = pd.read_csv(REFERENCE / "table4.csv").set_index(["n_train", "method"])["nelbo_mean"]
    expected = {
        f"truth −log p(x), AIS (1,600 × 8, {truth_rows:,} test rows)": (
            f"{panel['truth_nll']:.2f} ± {panel['truth_se']:.2f}"
        ),
        "independent-Bernoulli entropy": f"{panel['indep_entropy']:.2f}",
        f"paper's best NELBO ({best['method'].upper()}, N_train = {int(best['n_train']):,}) − truth": (
            f"{best['nelbo_above_truth']:.2f}"
        ),
        "AVI / ACP NELBO at N_train = 5,000 (5 seeds; paper 157.6 / 151.2)": (
            f"{table4[(5000, 'avi')]:.2f} / {table4[(5000, 'acp')]:.2f}"
        ),
        "AVI / ACP NELBO at N_train = 1,000 (5 seeds; paper 159.2 / 157.2)": (
            f"{table4[(1000, 'avi')]:.2f} / {table4[(1000, 'acp')]:.2f}"
        ),
    }
    assert documented == {"quantity": "SYN-RANDOM-7", **expected}
    paper = pd.read_csv(REFERENCE / "table4.csv").set_index(["n_train", "method"])["paper_nelbo"]
    for n, avi, acp in ((5000, 157.6, 151.2), (1000, 159.2, 157.2)):  # the labels' paper values
        assert (paper[(n, "avi")], paper[(n, "acp")]) == (avi, acp)
    assert "AIS" in panel["truth_estimator"] or "ais" in panel["truth_estimator"]
    # the panel's own truth, on enough rows that its standard error is at most 0.7 nats
    assert truth_rows >= 1000 and float(panel["truth_se"]) <= 0.7
