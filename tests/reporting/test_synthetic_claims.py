"""The ACP paper's synthetic-data claims (noisyor_bench.reporting.acp.synthetic_claims) on hand-made
tables (no runs needed): each claim's verdict, not-tested cases, qualifiers beside the verdicts."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from noisyor_bench.reporting import claims as C
from noisyor_bench.reporting.acp import synthetic_claims as SC
from noisyor_bench.reporting.claims import INCONCLUSIVE, NOT_REPRODUCED, REPRODUCED


def vals(values: dict[int, float]) -> str:
    return ";".join(f"{s}:{v!r}" for s, v in values.items())


def seeds(*xs: float) -> dict[int, float]:
    return dict(enumerate(xs))


def fig3a(cells: dict[tuple[int, str], dict[int, float]]) -> pd.DataFrame:
    rows = [
        {
            "artifact": "fig3a",
            "dataset": "syn-pattern",
            "n_train": n,
            "method": m,
            "status": "measured",
            "nelbo_values": vals(v),
        }
        for (n, m), v in cells.items()
    ]
    return pd.DataFrame(rows)


def table4(cells: dict[tuple[int, str], dict[int, float] | None]) -> pd.DataFrame:
    rows = [
        {
            "artifact": "table4",
            "dataset": "syn-random-7",
            "n_train": n,
            "method": m,
            "status": "measured" if v else "not run",
            "nelbo_values": vals(v) if v else np.nan,
        }
        for (n, m), v in cells.items()
    ]
    return pd.DataFrame(rows)


def fig5(cells: dict[tuple[str, int, str], dict[int, float]]) -> pd.DataFrame:
    rows = [
        {"artifact": "fig5", "dataset": d, "n_train": n, "method": m, "nelbo_values": vals(v)}
        for (d, n, m), v in cells.items()
    ]
    return pd.DataFrame(rows)


def recovery(
    cells: dict[tuple[str, str, int], list[int]],
    n_true: int = 8,
    val: dict[tuple[str, str, int], list[float]] | None = None,
) -> pd.DataFrame:
    """Recovery rows; ``val`` (optional) gives each seed's validation NELBO."""
    rows = [
        {
            "artifact": "recovery",
            "dataset": d,
            "method": m,
            "n_train": n,
            "seed": s,
            "recovered": r,
            "n_true": n_true,
            **({"val_nelbo": val[(d, m, n)][s]} if val else {}),
        }
        for (d, m, n), counts in cells.items()
        for s, r in enumerate(counts)
    ]
    return pd.DataFrame(rows)


def curves(per_seed: dict[int, tuple[list[float], list[float]]]) -> pd.DataFrame:
    rows = [
        {
            "artifact": "fig3b",
            "dataset": "syn-pattern",
            "method": "ub-cdi",
            "n_train": 0,
            "seed": s,
            "round": r,
            "ll_ub": llub[r],
            "elbo": elbo[r],
        }
        for s, (llub, elbo) in per_seed.items()
        for r in range(len(llub))
    ]
    return pd.DataFrame(rows)


GOOD, BAD = seeds(22.0, 22.2, 22.1), seeds(37.0, 37.5, 37.2)


NOISY_A, NOISY_B = seeds(22.0, 25.0, 19.0), seeds(23.0, 21.0, 24.0)


# The rule: the verdict is the run selected by validation NELBO (the paper shows its
# best run), no longer a Wilson-CI majority of seeds. Each case now gives per-seed validation NELBOs;
# the selected run is the one with the lowest (ties: lowest seed). Old cases whose per-seed counts
# decided a majority are kept, and the verdict follows the selected run's outcome.
@pytest.mark.parametrize(
    "acp,acp_val,avi,avi_val,expected",
    [
        # selected ACP seed 0 recovers 8/8, selected AVI seed 0 misses (6/8): both stated effects hold
        ([8, 8, 8, 8], [5.0, 5.1, 5.2, 5.3], [6, 7, 5, 6], [5.0, 5.1, 5.2, 5.3], REPRODUCED),
        # was inconclusive (2/3 straddles 1/2); the selected ACP run (seed 2, 7/8) misses one
        ([8, 8, 7], [5.2, 5.1, 5.0], [6, 6, 6, 6], [5.0] * 4, NOT_REPRODUCED),
        # ACP never recovers all: the selected run cannot either
        ([7, 7, 6, 7], [5.0, 5.1, 5.2, 5.3], [6, 6, 6, 6], [5.0] * 4, NOT_REPRODUCED),
        # AVI's selected run recovers all: "AVI misses" fails
        ([8, 8, 8, 8], [5.0] * 4, [8, 8, 8, 8], [5.0] * 4, NOT_REPRODUCED),
        # 2 seeds, even 1 seed: the selected run decides (was inconclusive for lack of a Wilson majority)
        ([8, 8], [5.0, 5.1], [6, 6], [5.0, 5.1], REPRODUCED),
        ([8], [5.0], [6], [5.0], REPRODUCED),
        # ACP 9/10, but validation NELBO selects its one miss (seed 9): not reproduced
        ([8] * 9 + [7], [5.5] * 9 + [5.0], [6] * 9 + [8], [5.5] * 10, NOT_REPRODUCED),
        # AVI 2/10 recover all and the lowest validation NELBO is one of them (seed 8)
        ([8] * 9 + [7], [5.0] * 10, [6] * 8 + [8, 8], [5.5] * 8 + [5.0, 5.0], NOT_REPRODUCED),
        # ties go to the lowest seed: AVI seeds 0 and 3 tie, seed 0 (a miss) is selected
        ([8] * 4, [5.0] * 4, [6, 8, 8, 6], [5.0, 5.1, 5.1, 5.0], REPRODUCED),
    ],
)
def test_claim_recovery_n200(acp, acp_val, avi, avi_val, expected):
    cell_acp, cell_avi = ("syn-pattern", "acp", 200), ("syn-pattern", "avi", 200)
    tables = {
        "recovery": recovery({cell_acp: acp, cell_avi: avi}, val={cell_acp: acp_val, cell_avi: avi_val})
    }
    assert SC.claim_recovery_n200(tables).verdict == expected


def test_claim_recovery_n200_without_val_nelbo_is_inconclusive():
    """Tables from before val_nelbo was recorded: nothing is selected, whatever the per-seed counts."""
    tables = {
        "recovery": recovery({("syn-pattern", "acp", 200): [8] * 4, ("syn-pattern", "avi", 200): [6] * 4})
    }
    assert SC.claim_recovery_n200(tables).verdict == INCONCLUSIVE


def test_claim_recovery_success_rate_and_selected_run_in_numbers():
    """7/10 seeds recover all (Wilson (0.397, 0.892) by hand, descriptive only); the selected run
    decides: ACP's lowest validation NELBO ties at seeds 2 and 5, seed 2 (7/8) is selected and
    misses one -> "both recover all" is not reproduced."""
    acp = [8, 8, 7, 8, 8, 6, 8, 8, 7, 8]
    val = {
        ("syn-pattern", m, 1000): [10.9, 10.8, 10.4, 11.0, 10.7, 10.4, 10.95, 10.85, 10.6, 10.75]
        for m in ("acp", "avi")
    }
    tables = {
        "recovery": recovery(
            {("syn-pattern", "acp", 1000): acp, ("syn-pattern", "avi", 1000): [8] * 10}, val=val
        )
    }
    claim = SC.claim_recovery_n1000(tables)
    assert claim.verdict == NOT_REPRODUCED  # AVI's selected run (seed 2, 8/8) alone would pass
    assert "per-seed full recovery 7/10 (70%; Wilson 95% CI 40–89%)" in claim.numbers
    assert "per-seed full recovery 10/10 (100%; Wilson 95% CI 72–100%)" in claim.numbers
    # lowest validation NELBO 10.4 at seeds 2 and 5: ties go to the lower seed (2, which misses one)
    assert "ACP: selected on val. NELBO seed 2: 7/8;" in claim.numbers
    assert "AVI: selected on val. NELBO seed 2: 8/8 (all);" in claim.numbers
    assert "McNemar exact p = 0.25" in claim.numbers  # paired by seed: AVI only 3, ACP only 0
    assert "lowest validation NELBO" in claim.rule and "Wilson" in claim.rule


def test_claim_recovery_without_val_nelbo_reports_no_selection():
    tables = {
        "recovery": recovery(
            {("syn-pattern", "lb-cdi", 1000): [3] * 5, ("syn-pattern", "svi", 1000): [2] * 5}
        )
    }
    claim = SC.claim_recovery_nonamortized(tables)
    # no validation NELBO: no run is selected, so the primary check cannot be made (today's
    # rule; the old majority-of-seeds rule said reproduced from 0/5)
    assert claim.verdict == INCONCLUSIVE
    assert "n/a (no validation NELBO)" in claim.numbers


def test_claim_recovery_other_dataset_is_no_data():
    tables = {
        "recovery": recovery({("multi-mnist", "acp", 200): [8, 8], ("multi-mnist", "avi", 200): [6, 6]})
    }
    assert SC.claim_recovery_n200(tables).numbers.startswith("not tested")


def test_claim_recovery_mnist_counts():
    tables = {
        "recovery": recovery(
            {("multi-mnist", "acp", 8000): [8, 9, 8], ("multi-mnist", "avi", 8000): [6, 7, 5]}, n_true=10
        )
    }
    assert SC.claim_recovery_mnist(tables).verdict == REPRODUCED
    tables = {
        "recovery": recovery(
            {("multi-mnist", "acp", 8000): [6, 7, 5], ("multi-mnist", "avi", 8000): [8, 9, 8]}, n_true=10
        )
    }
    assert SC.claim_recovery_mnist(tables).verdict == NOT_REPRODUCED


def test_claim_recovery_mnist_smaller_cell_is_labelled():
    """The quick grid runs MULTI-MNIST at N_train = 2,000 (8,000 cannot converge in its budget):
    the claim is checked there and says so; with 8,000 present, 8,000 is used."""
    small = {
        ("multi-mnist", "acp", 2000): [8, 9, 8],
        ("multi-mnist", "avi", 2000): [6, 7, 5],
        ("multi-mnist", "acp", 500): [1, 1, 1],
        ("multi-mnist", "avi", 500): [5, 5, 5],
    }
    claim = SC.claim_recovery_mnist({"recovery": recovery(small, n_true=10)})
    assert claim.verdict == REPRODUCED and "N_train = 2000, not the paper's 8000" in claim.numbers
    assert claim.claim_id == "suppfig2-acp-recovers-more-than-avi-n8000"
    both = {**small, ("multi-mnist", "acp", 8000): [6, 7, 5], ("multi-mnist", "avi", 8000): [8, 9, 8]}
    claim = SC.claim_recovery_mnist({"recovery": recovery(both, n_true=10)})
    assert claim.verdict == NOT_REPRODUCED and "not the paper's" not in claim.numbers


PAPER_TABLE4 = {  # the paper's Table 4 (paper lines 297-302): '-' cells are no comparison
    40000: ("avi", "svi"),
    20000: ("avi", "svi"),
    10000: ("avi", "svi"),
    5000: ("avi", "svi"),
    1000: ("avi", "svi", "lb-cdi"),
}
"""By hand: 4 rows x (AVI, SVI) + the 1,000 row's three competitors = 11 comparisons."""


def _full_table4(acp_gap: float = -1.0) -> dict[tuple[int, str], dict[int, float] | None]:
    """Every comparison of the paper's Table 4, ACP ``acp_gap`` nats from each competitor."""
    cells: dict[tuple[int, str], dict[int, float] | None] = {}
    for n, others in PAPER_TABLE4.items():
        cells[(n, "acp")] = seeds(150.0, 150.2, 150.1)
        for m in others:
            cells[(n, m)] = seeds(150.0 - acp_gap, 150.3 - acp_gap, 150.1 - acp_gap)
    return cells


def test_table4_lists_the_papers_eleven_comparisons():
    assert SC.table4_paper_comparisons() == [(n, m) for n, ms in PAPER_TABLE4.items() for m in ms]
    assert len(SC.table4_paper_comparisons()) == 11


@pytest.mark.parametrize(
    ("cells", "verdict", "tested"),
    [
        # every comparison run, ACP lower in each: the statement holds
        (_full_table4(), REPRODUCED, 11),
        # ACP lower wherever it ran, but 8 of 11 comparisons never ran: not the paper's statement yet
        (
            {
                (1000, "acp"): seeds(157.0, 157.2, 157.1),
                (1000, "avi"): seeds(159.0, 159.3, 159.1),
                (1000, "svi"): seeds(158.0, 158.1, 158.3),
                (40000, "lb-cdi"): None,
            },
            INCONCLUSIVE,
            2,
        ),
        # one tested comparison refutes it, whatever is missing
        (
            {(5000, "acp"): seeds(152.0, 152.1, 152.2), (5000, "svi"): seeds(150.0, 150.2, 150.1)},
            NOT_REPRODUCED,
            1,
        ),
        # every comparison run, one CI straddles 0
        ({**_full_table4(), (1000, "svi"): seeds(150.4, 149.8, 150.1)}, INCONCLUSIVE, 11),
    ],
    ids=["all-11-lower", "2-of-11-lower", "1-of-11-refutes", "all-11-one-tie"],
)
def test_table4_claim_counts_the_comparisons_of_its_statement(cells, verdict, tested):
    claim = SC.claim_acp_lowest_table4({"table4": table4(cells)})
    assert claim.verdict == verdict, claim.numbers
    assert claim.numbers.startswith(f"{tested} of 11 comparisons tested")
    assert ("not tested: " in claim.numbers) == (tested < 11)


def test_table4_claim_without_a_competitor_is_not_tested():
    assert SC.claim_acp_lowest_table4(
        {"table4": table4({(1000, "avi"): seeds(1.0, 2.0)})}
    ).numbers.startswith("not tested")


def _fig5_cells(adv_small: float, adv_large: float, seeds_avi=(0, 1, 2), seeds_acp=(0, 1, 2)):
    noise = [0.0, 0.1, -0.1]
    cells = {}
    for n, adv in ((100, adv_small), (1000, (adv_small + adv_large) / 2), (10000, adv_large)):
        cells[("syn-random-1", n, "acp")] = {s: 50.0 + e for s, e in zip(seeds_acp, noise)}
        cells[("syn-random-1", n, "avi")] = {s: 50.0 + adv + 2 * e for s, e in zip(seeds_avi, noise[::-1])}
    return cells


@pytest.mark.parametrize(
    "small,large,expected",
    [
        (5.0, 0.5, REPRODUCED),
        (0.5, 5.0, NOT_REPRODUCED),
        (1.0, 0.95, INCONCLUSIVE),
    ],
)
def test_claim_advantage_grows(small, large, expected):
    claim = SC.claim_advantage_grows({"fig5": fig5(_fig5_cells(small, large))}, "syn-random-1")
    assert claim.verdict == expected
    unpaired = SC.claim_advantage_grows(
        {"fig5": fig5(_fig5_cells(small, large, seeds_avi=(5, 6, 7)))}, "syn-random-1"
    )
    assert unpaired.verdict == expected and "welch" in unpaired.numbers


@pytest.mark.parametrize(
    ("large", "found"),
    [
        (-0.5, "ACP worse than AVI by 0.50 nats at N_train=10000"),
        (0.25, "ACP better than AVI by 0.25 nats at N_train=10000"),
    ],
)
def test_advantage_grows_prints_what_was_found_at_the_large_n_train(large, found):
    """The statement never claims the paper's on-par sentence; the numbers say what the means show."""
    claim = SC.claim_advantage_grows({"fig5": fig5(_fig5_cells(5.0, large))}, "syn-random-1")
    assert found in claim.numbers and "ACP better than AVI by 5.00 nats at N_train=100" in claim.numbers
    assert "on-par or slightly better" not in claim.statement


def test_claim_advantage_no_data_and_single_n():
    assert SC.claim_advantage_grows({}, "syn-random-2").numbers.startswith("not tested")
    one_n = {k: v for k, v in _fig5_cells(5.0, 0.5).items() if k[1] == 100}
    assert SC.claim_advantage_grows({"fig5": fig5(one_n)}, "syn-random-1").numbers.startswith("not tested")


def test_synthetic_claims_without_tables_all_no_data():
    out = SC.synthetic_claims({})
    assert len(out) == 11 + 4 * 6  # per Fig. 5 dataset: advantage grows, small N, on par, vs SVI/LB-CDI
    assert all(c.verdict == C.NOT_TESTED and c.numbers.startswith("not tested") for c in out)
    assert len({c.claim_id for c in out}) == len(out)


def test_claims_of_experiments_the_grid_does_not_run_are_left_out():
    only_synpattern = SC.synthetic_claims({}, experiments=["fig3a", "fig4"])
    ids = [c.claim_id for c in only_synpattern]
    assert len(ids) == 6 + 3  # Fig. 3a/3b, then the Fig. 4 / supplement Fig. 1 recovery claims
    assert not any(i.startswith(("fig5-", "table4-", "suppfig2-")) for i in ids)
    assert [c.claim_id for c in SC.synthetic_claims({}, experiments=["fig5"])] == [
        c.claim_id for c in SC.synthetic_claims({}) if c.claim_id.startswith("fig5-")
    ]


def test_fig5_panels_the_grid_does_not_run_are_not_tested_with_the_panels_it_runs():
    """The quick grid runs one Fig. 5 panel: the other panels' claims say so, the run panel is judged."""
    out = SC.synthetic_claims({"fig5": fig5(_fig5_cells(5.0, 0.5))}, experiments=["fig5"])
    by_id = {c.claim_id: c for c in out}
    assert by_id["fig5-acp-advantage-grows-syn-random-1"].verdict == REPRODUCED
    for ds in ("syn-random-2", "syn-random-6"):
        claim = by_id[f"fig5-acp-better-small-n-{ds}"]
        assert claim.verdict == C.NOT_TESTED
        assert claim.numbers == f"not tested: fig5 {ds} is not among this grid's Fig. 5 panels (syn-random-1)"
    assert len(out) == 4 * 6


def _with(table: pd.DataFrame, **cols: dict) -> pd.DataFrame:
    """``table`` plus columns given per row key (n_train, method) -> value; other rows keep the default."""
    out = table.copy()
    for col, spec in cols.items():
        default = spec.pop("*", np.nan)
        out[col] = [spec.get((int(n), m), default) for n, m in zip(out["n_train"], out["method"])]
    return out


CLEAR_WIN = {(20, "acp"): seeds(22.0, 22.4, 22.2), (20, "avi"): seeds(37.0, 38.0, 37.5)}


CLEAR_LOSS = {(20, "acp"): seeds(40.0, 40.4, 40.2), (20, "avi"): seeds(37.0, 38.0, 37.5)}


@pytest.mark.parametrize(
    "cells, columns, verdict, unconverged, weak",
    [
        # no convergence / baseline columns: treated as converged, the statistics decide
        (CLEAR_WIN, {}, REPRODUCED, "", ""),
        # every run converged, no cell above the baseline
        (
            CLEAR_WIN,
            {"n_runs": {"*": 3}, "n_converged": {"*": 3}, "below_baseline": {"*": False}},
            REPRODUCED,
            "",
            "",
        ),
        # one AVI run stopped at its limit still improving: a qualifier, the verdict stays
        (
            CLEAR_WIN,
            {"n_runs": {"*": 3}, "n_converged": {"*": 3, (20, "avi"): 2}},
            REPRODUCED,
            "1 of 6 runs (avi N_train=20 syn-pattern)",
            "",
        ),
        # a cell worse than the independent baseline, all converged: weak learning beside the verdict
        (
            CLEAR_LOSS,
            {"n_runs": {"*": 3}, "n_converged": {"*": 3}, "below_baseline": {"*": False, (20, "acp"): True}},
            NOT_REPRODUCED,
            "",
            "1 cell not better than the independent baseline: acp N_train=20 syn-pattern: NELBO above the independent baseline [NELBO (bound) only]",
        ),
        # both at once, each its own qualifier
        (
            CLEAR_LOSS,
            {"n_runs": {"*": 3}, "n_converged": {"*": 1}, "below_baseline": {"*": True}},
            NOT_REPRODUCED,
            "4 of 6 runs (acp N_train=20 syn-pattern, avi N_train=20 syn-pattern)",
            "2 cells not better than the independent baseline: acp N_train=20 syn-pattern: NELBO above the independent baseline; avi N_train=20 syn-pattern: NELBO above the independent baseline [NELBO (bound) only]",
        ),
        # booleans read back from a CSV as strings; the losing side below the baseline: still reproduced
        (
            CLEAR_WIN,
            {"below_baseline": {"*": "False", (20, "avi"): "True"}},
            REPRODUCED,
            "",
            "1 cell not better than the independent baseline: avi N_train=20 syn-pattern: NELBO above the independent baseline [NELBO (bound) only]",
        ),
    ],
)
def test_qualifiers_never_change_the_verdict_table_driven(cells, columns, verdict, unconverged, weak):
    table = _with(fig3a(cells), **{k: dict(v) for k, v in columns.items()})
    claim = SC.claim_acp_beats_avi({"fig3a": table}, 20)
    assert (claim.verdict, claim.unconverged, claim.weak_learning) == (verdict, unconverged, weak)
    assert "budget-limited" not in claim.numbers
    converged = (
        int(table["n_converged"].sum()) if "n_converged" in table else 6
    )  # else: one run per seed value
    assert claim.evidence.startswith(f"{converged}/6 runs converged")


def test_claims_csv_roundtrip_keeps_qualifiers(tmp_path):
    table = _with(fig3a(CLEAR_WIN), n_runs={"*": 3}, n_converged={"*": 2})
    claims = [SC.claim_acp_beats_avi({"fig3a": table}, 20), SC.claim_acp_beats_avi({}, 100)]
    C.write_claims(claims, tmp_path / "c.csv", tmp_path / "c.md")
    back = C.read_claims(tmp_path / "c.csv")
    assert back == claims and back[0].verdict == REPRODUCED and back[0].unconverged.startswith("2 of 6")
    assert back[1].verdict == C.NOT_TESTED
    assert (
        "1 of 2 claims reproduced, 0 not reproduced, 0 inconclusive, 1 not tested"
        in (tmp_path / "c.md").read_text()
    )


def test_deterministic_svi_is_a_constant_in_claim_4():
    amort = {(1000, "avi"): seeds(14.0, 14.1, 14.2), (1000, "acp"): seeds(14.3, 14.4, 14.5)}
    # SVI's two seeds are the same number: as a sample its zero variance would make Welch's CI the
    # amortized side's alone; as a constant the interval is the one-sample t of AVI/ACP against 22
    table = fig3a({**amort, (0, "svi"): seeds(22.0, 22.0)})
    table["deterministic"] = [m == "svi" for m in table["method"]]
    claim = SC.claim_nonamortized_worse({"fig3a": table}, "svi")
    assert claim.verdict == REPRODUCED and "vs constant" in claim.numbers and "welch" not in claim.numbers
    assert "SVI 22.00 (deterministic)" in claim.numbers
    # close to the constant: AVI − 14.25 = -0.15 ± 0.25 and ACP − 14.25 = +0.15 ± 0.25 both straddle 0
    near = fig3a({**amort, (0, "svi"): seeds(14.25, 14.25)}).assign(
        deterministic=lambda d: d["method"] == "svi"
    )
    assert SC.claim_nonamortized_worse({"fig3a": near}, "svi").verdict == INCONCLUSIVE


def _fig5_three(avi_small, acp_small, avi_large, acp_large, extra=None, large_n=1000):
    cells = {
        ("syn-random-1", 30, "avi"): avi_small,
        ("syn-random-1", 30, "acp"): acp_small,
        ("syn-random-1", large_n, "avi"): avi_large,
        ("syn-random-1", large_n, "acp"): acp_large,
    }
    cells.update(extra or {})
    return {"fig5": fig5(cells)}


@pytest.mark.parametrize(
    "avi_large, acp_large, expected",
    [
        # margin = 1% of the level (~10 nats) = 0.1; paired differences 0.01, 0.03, -0.02: CI inside +-0.1
        (seeds(10.01, 10.03, 9.98), seeds(10.0, 10.0, 10.0), REPRODUCED),
        # ACP better by ~0.5 nats at large N: entirely outside the margin -> not "on par" (not "slightly better")
        (seeds(10.5, 10.52, 10.49), seeds(10.0, 10.0, 10.0), NOT_REPRODUCED),
        # a wide interval straddling the margin
        (seeds(10.0, 10.3, 9.9), seeds(10.0, 10.0, 10.0), INCONCLUSIVE),
    ],
)
def test_fig5_on_par_equivalence(avi_large, acp_large, expected):
    tables = _fig5_three(
        seeds(12.0, 12.1, 12.2), seeds(11.0, 11.0, 11.1), avi_large, acp_large, large_n=10000
    )
    claim = SC.claim_fig5_on_par_large_n(tables, "syn-random-1")
    assert claim.verdict == expected and "N_train=10000" in claim.numbers
    level = (np.mean(list(avi_large.values())) + 10.0) / 2
    assert f"margin ±{0.01 * level:.3f} nats" in claim.numbers
    assert "1%" in claim.rule and "Table 4" in claim.rule


def test_fig5_on_par_below_the_papers_large_n_is_not_tested():
    """At N_train = 1,000 the paper's own Table 4 is 1.3% apart (our margin 1%): an equivalence
    check there would call the paper's numbers not on par, so it is not the paper's condition."""
    tables = _fig5_three(
        seeds(12.0, 12.1, 12.2), seeds(11.0, 11.0, 11.1), seeds(10.5, 10.52, 10.49), seeds(10.0, 10.0, 10.0)
    )
    claim = SC.claim_fig5_on_par_large_n(tables, "syn-random-1")
    assert (
        claim.verdict == C.NOT_TESTED and "largest N_train here 1,000 < the paper's 10,000" in claim.numbers
    )


def test_fig5_protocol_deviation_names_the_n_train_run_of_the_papers():
    tables = _fig5_three(
        seeds(12.0, 12.1, 12.2), seeds(11.0, 11.0, 11.1), seeds(10.0, 10.1, 9.9), seeds(10.0, 10.0, 10.0)
    )
    small = SC.claim_fig5_acp_better_small_n(tables, "syn-random-1")
    # the N_train the claim read (the smallest both ran), against the plot's
    assert "N_train {30} of Fig. 5's {10, 30, 100, 300, 1000, 3000, 10000}" in small.protocol_deviation
    grows = SC.claim_advantage_grows(tables, "syn-random-1")
    assert "N_train {30, 1000} of Fig. 5's {10, 30, 100, 300, 1000, 3000, 10000}" in grows.protocol_deviation


def test_fig5_small_n_and_vs_classical():
    tables = _fig5_three(
        seeds(12.0, 12.1, 12.2),
        seeds(11.0, 11.0, 11.1),
        seeds(10.0, 10.1, 9.9),
        seeds(10.0, 10.0, 10.0),
        {
            ("syn-random-1", 30, "svi"): seeds(13.0, 13.1, 13.2),
            ("syn-random-1", 30, "lb-cdi"): seeds(11.5, 11.6, 11.4),
        },
    )
    small = SC.claim_fig5_acp_better_small_n(tables, "syn-random-1")
    assert small.verdict == REPRODUCED and "N_train=30" in small.numbers
    vs = SC.claim_fig5_acp_beats_classical(tables, "syn-random-1")
    assert vs.verdict == REPRODUCED and "ACP−SVI" in vs.numbers and "ACP−LB-CDI" in vs.numbers
    # the quick table's contradiction (LB-CDI 11.32 vs ACP 13.25) is a "not reproduced"
    worse = _fig5_three(
        seeds(14.0, 14.1, 14.2),
        seeds(13.2, 13.3, 13.25),
        seeds(10.0, 10.1, 9.9),
        seeds(10.0, 10.0, 10.0),
        {("syn-random-1", 30, "lb-cdi"): seeds(11.3, 11.35, 11.31)},
    )
    assert SC.claim_fig5_acp_beats_classical(worse, "syn-random-1").verdict == NOT_REPRODUCED
    assert SC.claim_fig5_acp_beats_classical(
        _fig5_three(*[seeds(1.0, 2.0)] * 4), "syn-random-1"
    ).numbers.startswith("not tested")
    one_n = {
        "fig5": fig5(
            {("syn-random-1", 30, "avi"): seeds(1.0, 2.0), ("syn-random-1", 30, "acp"): seeds(1.0, 2.0)}
        )
    }
    assert SC.claim_fig5_on_par_large_n(one_n, "syn-random-1").numbers.startswith("not tested")


def test_claims_of_experiments_left_out_on_purpose_are_not_tested_with_the_reason():
    """A grid's not_run_experiments (quick: supplement Fig. 2) keeps the claim in the table, not
    tested, naming why -- even when tables for it exist (a stale run must not judge it)."""
    out = SC.synthetic_claims({}, experiments=["fig3a", "fig4"], not_run={"suppfig2": "paper grid only"})
    mnist = [c for c in out if c.claim_id.startswith("suppfig2-")]
    assert len(mnist) == 1
    assert mnist[0].verdict == C.NOT_TESTED
    assert mnist[0].numbers == "not tested: suppfig2 is not in this grid: paper grid only"
    assert not any(c.claim_id.startswith(("fig5-", "table4-")) for c in out)
    assert [c.claim_id for c in out][:9] == [
        c.claim_id for c in SC.synthetic_claims({}, experiments=["fig3a", "fig4"])
    ]


def test_fig3a_inference_claims_carry_no_bound_gap():
    """Fig. 3a scores one true model on both sides: a NELBO - NLL far above the effect is the
    compared quantity, not a learned model's slack (the same rows in Fig. 5 would be tagged)."""
    rows = [
        {
            "artifact": "fig3a",
            "dataset": "syn-pattern",
            "n_train": 20,
            "method": m,
            "status": "measured",
            "nelbo_values": vals(v),
            "nll": 9.0,
            "nll_rows_nelbo": float(np.mean(list(v.values()))),
        }
        for m, v in (("acp", seeds(10.1, 10.2, 10.15)), ("avi", seeds(10.5, 10.6, 10.55)))
    ]
    claim = SC.claim_acp_beats_avi({"fig3a": pd.DataFrame(rows)}, 20)
    assert claim.verdict == REPRODUCED and claim.bound_gap == ""
    learned = [{**r, "artifact": "fig5", "dataset": "syn-random-1"} for r in rows]
    fig5_claim = SC.claim_fig5_acp_better_small_n({"fig5": pd.DataFrame(learned)}, "syn-random-1")
    assert fig5_claim.verdict == REPRODUCED and fig5_claim.bound_gap.startswith("NELBO − NLL")


# --------------------------------------------------------------------------- generator variants
def _fig3a_on(dataset: str, acp: dict[int, float], avi: dict[int, float]) -> pd.DataFrame:
    return fig3a({(20, "acp"): acp, (20, "avi"): avi}).assign(dataset=dataset)


def _fig3a_claim(claims: list[C.Claim], cid: str = "fig3a-acp-beats-avi-n20") -> C.Claim:
    return next(c for c in claims if c.claim_id == cid)


LOWER, HIGHER = seeds(20.0, 20.1, 20.2), seeds(25.0, 25.1, 25.2)


def _beside_syn_pattern(
    variant: str, acp: dict[int, float], avi: dict[int, float]
) -> dict[str, pd.DataFrame]:
    """Fig. 3a at N_train = 20: ACP lower than AVI on SYN-PATTERN, ``acp``/``avi`` on ``variant``."""
    frames = [_fig3a_on("syn-pattern", LOWER, HIGHER), _fig3a_on(variant, acp, avi)]
    return {"fig3a": pd.concat(frames, ignore_index=True)}


def test_a_claim_on_a_generator_variant_stands_beside_the_papers_verdict_and_never_replaces_it():
    """Fig. 3a at N_train = 20 on SYN-PATTERN (ACP lower: reproduced) and on a variant where ACP
    is higher (not reproduced): the verdict stays SYN-PATTERN's, each generator's verdict is in
    ``generators``, and ``generator_sensitive`` names the generators that differ."""
    tables = _beside_syn_pattern("syn-pattern-overlap", HIGHER, LOWER)
    claim = _fig3a_claim(SC.synthetic_claims(tables, experiments=["fig3a"]))
    assert claim.verdict == REPRODUCED
    assert claim.generators.startswith("syn-pattern: reproduced (margin ")
    assert "; syn-pattern-overlap: not reproduced (margin " in claim.generators
    assert claim.generator_sensitive == "syn-pattern reproduced, syn-pattern-overlap not reproduced"
    assert "[generator sensitive: syn-pattern reproduced" in claim.tags()
    assert "per generator: syn-pattern: reproduced" in C.numbers_cell(claim)


def test_generators_that_agree_are_listed_without_the_qualifier_and_none_without_variant_rows():
    both = _beside_syn_pattern("syn-pattern-leak2", LOWER, HIGHER)
    claim = _fig3a_claim(SC.synthetic_claims(both, experiments=["fig3a"]))
    assert claim.verdict == REPRODUCED and claim.generator_sensitive == ""
    assert claim.generators.count("reproduced") == 2 and "syn-pattern-leak2: reproduced" in claim.generators
    # a variant without the claim's cells (N_train = 100 here) is not listed: nothing was judged there
    at_100 = _fig3a_claim(SC.synthetic_claims(both, experiments=["fig3a"]), "fig3a-acp-beats-avi-n100")
    assert at_100.generators == "" and at_100.generator_sensitive == ""
    alone = _fig3a_claim(SC.synthetic_claims({"fig3a": _fig3a_on("syn-pattern", LOWER, HIGHER)}, ["fig3a"]))
    assert alone.generators == "" and alone.generator_sensitive == ""


def test_recovery_claims_are_judged_per_generator_from_the_recovery_rows_of_fig4():
    """Fig. 4 at N_train = 200: ACP recovers all and AVI misses on SYN-PATTERN (reproduced); on
    the variant ACP's selected run misses a pattern (not reproduced): generator-sensitive."""
    val = [10.0, 11.0]
    rows = recovery(
        {
            ("syn-pattern", "acp", 200): [8, 8],
            ("syn-pattern", "avi", 200): [6, 7],
            ("syn-pattern-leak2", "acp", 200): [7, 8],
            ("syn-pattern-leak2", "avi", 200): [6, 6],
        },
        val={
            k: val
            for k in [
                ("syn-pattern", "acp", 200),
                ("syn-pattern", "avi", 200),
                ("syn-pattern-leak2", "acp", 200),
                ("syn-pattern-leak2", "avi", 200),
            ]
        },
    ).assign(experiment="fig4")
    claims = SC.synthetic_claims({"recovery": rows}, experiments=["fig4"])
    n200 = _fig3a_claim(claims, "fig4-acp-recovers-all-avi-misses-n200")
    assert n200.verdict == REPRODUCED
    assert n200.generators == "syn-pattern: reproduced; syn-pattern-leak2: not reproduced"
    assert n200.generator_sensitive == "syn-pattern reproduced, syn-pattern-leak2 not reproduced"
    # supplement Fig. 1 is not run on the variants: no generator column
    assert _fig3a_claim(claims, "suppfig1-lbcdi-svi-do-not-recover-n1000").generators == ""
