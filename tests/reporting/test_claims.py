"""The generic claims machinery (noisyor_bench.reporting.claims): difference and contrast CIs against
scipy, verdict rules, constants vs samples, claim records and their CSV round trip."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from noisyor_bench.infra.errors import DataError
from noisyor_bench.reporting import claims as C
from noisyor_bench.reporting.claims import INCONCLUSIVE, NOT_REPRODUCED, REPRODUCED, Claim, Interval


def seeds(*xs: float) -> dict[int, float]:
    return dict(enumerate(xs))


def test_paired_ci_matches_scipy_ttest_rel():
    a, b = seeds(22.0, 22.4, 21.9, 22.3), seeds(37.0, 36.1, 38.2, 37.5)
    iv = C.difference_ci(a, b)
    ref = stats.ttest_rel(list(a.values()), list(b.values())).confidence_interval(0.95)
    assert iv.kind == "paired"
    assert (iv.low, iv.high) == pytest.approx((ref.low, ref.high), abs=1e-10)
    assert iv.estimate == pytest.approx(np.mean(list(a.values())) - np.mean(list(b.values())))


def test_welch_ci_matches_scipy_ttest_ind():
    a, b = seeds(1.0, 2.5, 1.7), {7: 4.0, 8: 3.1, 9: 5.2, 10: 4.4}
    iv = C.difference_ci(a, b)  # different seeds: unpaired
    ref = stats.ttest_ind(list(a.values()), list(b.values()), equal_var=False).confidence_interval(0.95)
    assert iv.kind == "welch"
    assert (iv.low, iv.high) == pytest.approx((ref.low, ref.high), abs=1e-10)
    forced = C.difference_ci(seeds(1.0, 2.0, 3.5), seeds(2.0, 2.2, 2.1), paired=False)
    assert forced.kind == "welch"


def test_four_group_contrast_by_hand():
    g = [seeds(1.0, 2.0, 4.0), seeds(0.5, 0.7), seeds(3.0, 3.3, 2.9, 3.1), seeds(1.0, 1.4, 1.2)]
    c = [1.0, -1.0, -1.0, 1.0]
    iv = C.contrast_ci(list(zip(c, g)))
    means = [np.mean(list(x.values())) for x in g]
    v = [np.var(list(x.values()), ddof=1) / len(x) for x in g]
    se2 = sum(v)
    df = se2**2 / sum(vi**2 / (len(x) - 1) for vi, x in zip(v, g))
    h = stats.t.ppf(0.975, df) * math.sqrt(se2)
    est = sum(ci * m for ci, m in zip(c, means))
    assert (iv.estimate, iv.low, iv.high) == pytest.approx((est, est - h, est + h), abs=1e-12)


def test_single_seed_has_no_ci():
    iv = C.difference_ci(seeds(1.0), seeds(2.0))
    assert iv.kind == "n=1" and math.isnan(iv.low)
    assert C.verdict_below(iv) == INCONCLUSIVE
    assert "no CI" in iv.text()


def test_verdict_rules():
    assert C.verdict_below(Interval(-2, -3, -1, "paired", "3")) == REPRODUCED
    assert C.verdict_below(Interval(2, 1, 3, "paired", "3")) == NOT_REPRODUCED
    assert C.verdict_below(Interval(0.5, -1, 2, "paired", "3")) == INCONCLUSIVE
    assert C.verdict_above(Interval(2, 1, 3, "paired", "3")) == REPRODUCED
    assert C.verdict_above(Interval(-2, -3, -1, "paired", "3")) == NOT_REPRODUCED
    assert C.verdict_below(Interval(0.1, 0.05, 0.15, "paired", "3"), bound=0.2) == REPRODUCED
    assert C.combine([REPRODUCED, REPRODUCED]) == REPRODUCED
    assert C.combine([REPRODUCED, INCONCLUSIVE]) == INCONCLUSIVE
    assert C.combine([INCONCLUSIVE, NOT_REPRODUCED]) == NOT_REPRODUCED
    assert C.combine([]) == C.NOT_TESTED


def test_write_read_claims_roundtrip(tmp_path):
    items = [
        Claim("fig3a-1", "ACP | beats AVI", "Fig. 3a", REPRODUCED, "x = 1, y", "rule"),
        Claim("table4-2", "s", "Table 4", C.NOT_TESTED, "not tested: table4", "r"),
        Claim(
            "table4-3", "s", "Table 4", INCONCLUSIVE, "n", "r", low_power="n>=12", unconverged="1 of 5 runs"
        ),
    ]
    C.write_claims(items, tmp_path / "claims.csv", tmp_path / "claims.md")
    assert C.read_claims(tmp_path / "claims.csv") == items
    header = (tmp_path / "claims.csv").read_text().splitlines()[0].split(",")
    assert "statistical_verdict" not in header and set(C.QUALIFIERS) <= set(header)
    md = (tmp_path / "claims.md").read_text()
    assert (
        "The papers: 1 of 3 claims reproduced, 0 not reproduced, 1 inconclusive, 1 not tested (1 with qualifiers)"
        in md
    )
    assert (
        "- ACP: 1 of 3 claims reproduced, 0 not reproduced, 1 inconclusive, 1 not tested (1 with qualifiers)"
        in md
    )
    assert "[unconverged: 1 of 5 runs] [low power: n>=12]" in md and "ACP \\| beats" in md
    with pytest.raises(DataError, match="duplicate"):
        C.write_claims(items + items[:1], tmp_path / "dup.csv")


def test_timing_round_trips_and_an_older_csv_without_it_reads_empty(tmp_path):
    timed = Claim(
        "ape-close-to-vi-faster-toybars",
        "s",
        "Table 1",
        REPRODUCED,
        "speed: time VI / time APE judged above 100x (figures in timing)",
        "r",
        timing="time VI 5.25 (n=3) s, APE 0.042 (n=3) s; log10 ratio +2.10 [+2.05, +2.15] = 125x",
    )
    assert C.CLAIM_COLUMNS[-1] == "timing" and "timing" not in C.QUALIFIERS
    assert not timed.qualifiers() and not timed.tags()  # times are no qualifier
    items = [timed, Claim("fig3a-1", "s", "Fig. 3a", REPRODUCED, "x = 1", "rule")]
    C.write_claims(items, tmp_path / "claims.csv", tmp_path / "claims.md")
    assert C.read_claims(tmp_path / "claims.csv") == items
    md = (tmp_path / "claims.md").read_text()
    assert "(figures in timing); timing: time VI 5.25 (n=3) s" in md  # after the numbers, for people
    # a claims CSV written before the column: every claim without times
    frame = pd.read_csv(tmp_path / "claims.csv", dtype=str, keep_default_na=False).drop(columns="timing")
    frame.to_csv(tmp_path / "old.csv", index=False)
    back = C.read_claims(tmp_path / "old.csv")
    assert [c.timing for c in back] == ["", ""] and back[1] == items[1]
    assert back[0] == Claim(**{**timed.__dict__, "timing": ""})


def test_claim_rejects_unknown_verdict():
    with pytest.raises(ValueError, match="verdict"):
        Claim("fig3a-x", "s", "l", "maybe", "n", "r")


def test_compare_against_a_constant_is_a_one_sample_interval():
    sample = seeds(14.0, 14.3, 14.1, 14.4)
    const = C.Side({0: 22.0, 1: 22.0}, deterministic=True)
    iv = C.compare(C.Side(sample), const)
    ref = stats.ttest_1samp(list(sample.values()), 22.0).confidence_interval(0.95)
    assert iv.kind == "vs constant" and (iv.low, iv.high) == pytest.approx((ref.low - 22.0, ref.high - 22.0))
    flipped = C.compare(const, C.Side(sample))
    assert (flipped.estimate, flipped.low, flipped.high) == pytest.approx((-iv.estimate, -iv.high, -iv.low))
    both = C.compare(const, C.Side({0: 20.5}, deterministic=True))
    assert (both.estimate, both.low, both.high, both.kind) == (1.5, 1.5, 1.5, "constants")
    assert C.verdict_above(both) == REPRODUCED  # two constants differ exactly
    # a single-seed sample against a constant has no CI
    assert math.isnan(C.compare(C.Side({0: 1.0}), const).low)


def test_qualified_collects_the_rows_read_and_passes_them_to_the_outer_claim():
    """Rows read inside a claim count for it (and for a claim made of it), never outside one; an
    unconverged run is a qualifier beside the verdict, never a change of it."""
    rows = pd.DataFrame({"artifact": ["t", "t"], "n_runs": [3, 2], "n_converged": [3, 1]})

    @C.qualified
    def inner() -> Claim:
        C.note_evidence(rows.iloc[[1]])
        return Claim("fig5-inner", "s", "l", REPRODUCED, "n", "r")

    @C.qualified
    def outer() -> Claim:
        C.note_evidence(rows.iloc[[0]])
        inner()
        return Claim("fig5-outer", "s", "l", REPRODUCED, "n", "r")

    C.note_evidence(rows)  # no claim being checked: nothing is collected
    a, b = inner(), outer()
    assert a.verdict == REPRODUCED and a.evidence == "1/2 runs converged; no baseline in the tables"
    assert b.verdict == REPRODUCED and b.evidence == "4/5 runs converged; no baseline in the tables"
    assert (a.unconverged, b.unconverged) == ("1 of 2 runs", "1 of 5 runs")
    ok = C.qualified(lambda: Claim("fig5-ok", "s", "l", REPRODUCED, "n", "r"))()
    assert ok.verdict == REPRODUCED and ok.evidence == "" and ok.qualifiers() == {}
    assert C.budget_aware is C.qualified  # the old name, kept for one release


def test_a_qualifier_the_claim_sets_itself_is_kept():
    rows = pd.DataFrame({"artifact": ["t"], "n_runs": [2], "n_converged": [1], "below_baseline": [True]})

    @C.qualified
    def check() -> Claim:
        C.note_evidence(rows)
        return Claim("fig5-x", "s", "l", NOT_REPRODUCED, "n", "r", unconverged="judged in nats: none")

    claim = check()
    assert claim.verdict == NOT_REPRODUCED
    assert claim.unconverged == "judged in nats: none"  # the claim's own judgement wins
    assert claim.weak_learning.startswith("1 cell not better than the independent baseline")


def test_a_claims_own_unconverged_reason_joins_the_rows_and_does_not_replace_them():
    """A NUTS chain that barely moved (the claim's own reason) stands beside the unconverged VI
    runs it also read; each part once, and nothing outside a claim."""
    rows = pd.DataFrame({"artifact": ["t"], "n_runs": [3], "n_converged": [1]})

    @C.qualified
    def check() -> Claim:
        C.note_evidence(rows)
        own = C.join_qualifiers(C.rows_unconverged(), "NUTS chain barely moved in seed(s) [0]")
        return Claim("ape-x", "s", "l", REPRODUCED, "n", "r", unconverged=own)

    claim = check()
    assert claim.verdict == REPRODUCED
    assert claim.unconverged == "2 of 3 runs; NUTS chain barely moved in seed(s) [0]"
    assert C.rows_unconverged() == ""
    assert C.join_qualifiers("a; b", "", "b; c") == "a; b; c"


def test_a_missing_condition_is_not_tested_and_rests_on_no_rows():
    rows = pd.DataFrame({"artifact": ["t"], "n_runs": [2], "n_converged": [1]})

    @C.qualified
    def check() -> Claim:
        C.note_evidence(rows)
        return C.no_data_claim("fig5-x", "s", "l", "r", "fig5 syn-random-2 at N_train=30")

    claim = check()
    assert claim.verdict == C.NOT_TESTED and claim.numbers == "not tested: fig5 syn-random-2 at N_train=30"
    assert claim.evidence == "" and claim.qualifiers() == {}
    none = C.difference_ci({}, seeds(1.0, 2.0))
    assert C.verdict_below(none) == C.verdict_above(none) == C.verdict_within(none, 1.0) == C.NOT_TESTED
    assert C.combine([C.NOT_TESTED, C.NOT_TESTED]) == C.NOT_TESTED
    assert C.combine([REPRODUCED, C.NOT_TESTED]) == INCONCLUSIVE  # part of the claim untested
    assert C.combine([NOT_REPRODUCED, C.NOT_TESTED]) == NOT_REPRODUCED


def test_old_claims_csv_reads_in_the_new_vocabulary(tmp_path):
    """A claims CSV written before qualifiers were named: budget-limited -> its statistical verdict, "no data" ->
    not tested; the statistical_verdict column is ignored."""
    path = tmp_path / "claims.csv"
    path.write_text(
        "claim_id,statement,location,verdict,numbers,rule,statistical_verdict,evidence\n"
        "fig5-a,s,l,budget-limited,n,r,reproduced,4/5 runs converged\n"
        "fig5-b,s,l,inconclusive,no data: fig5 table,r,inconclusive,\n"
        "fig5-c,s,l,not reproduced,n,r,not reproduced,\n"
    )
    back = C.read_claims(path)
    assert [c.verdict for c in back] == [REPRODUCED, C.NOT_TESTED, NOT_REPRODUCED]
    assert back[0].evidence == "4/5 runs converged"


def test_claims_of_three_papers_share_one_table_grouped_by_paper(tmp_path):
    def claim(claim_id: str, verdict: str) -> Claim:
        return Claim(claim_id, "s", "where", verdict, "n", "rule")

    claims = [
        claim("fig5-acp-small", REPRODUCED),
        claim("ape-table1-aware", NOT_REPRODUCED),
        claim("avipam-speed", REPRODUCED),
    ]
    assert [c.paper for c in claims] == ["acp", "ape", "avipam"]
    C.write_claims(claims, tmp_path / "c.csv", tmp_path / "c.md")
    back = C.read_claims(tmp_path / "c.csv")
    assert [c.paper for c in back] == ["acp", "ape", "avipam"]
    text = (tmp_path / "c.md").read_text()
    headings = [line for line in text.splitlines() if line.startswith("## ")]
    assert [h.split(":")[0] for h in headings] == ["## ACP", "## APE", "## aviPAM"]
    assert (
        "0 of 1 claim reproduced, 1 not reproduced, 0 inconclusive, 0 not tested." in text.split("## APE")[1]
    )
    with pytest.raises(ValueError, match="paper 'lda'"):
        Claim("x", "s", "w", REPRODUCED, "n", "r", paper="lda")


def test_a_study_beyond_the_papers_has_its_own_section_and_is_not_counted_as_a_papers(tmp_path):
    claims = [
        Claim("ape-table1-aware", "s", "where", REPRODUCED, "n", "rule"),
        Claim("ape-noisyor-ranking", "s", "where", NOT_REPRODUCED, "n", "rule"),
    ]
    assert [c.paper for c in claims] == ["ape", "ape_noisyor"]
    C.write_claims(claims, tmp_path / "c.csv", tmp_path / "c.md")
    text = (tmp_path / "c.md").read_text()
    assert "The papers: 1 of 1 claim reproduced, 0 not reproduced" in text.splitlines()[2]
    assert "and 1 claims of our studies beyond the papers" in text.splitlines()[2]
    headings = [line.split(":")[0] for line in text.splitlines() if line.startswith("## ")]
    assert headings == ["## APE", "## Beyond the papers"]
    assert (
        "1 of 1 claim reproduced, 0 not reproduced, 0 inconclusive, 0 not tested."
        in text.split("## APE")[1].split("## Beyond")[0]
    )


def test_an_unregistered_claim_prefix_is_an_error_naming_the_file(tmp_path):
    path = tmp_path / "claims_vae4.csv"
    path.write_text("claim_id,statement,location,verdict,numbers,rule\nvae4-elbo,s,l,reproduced,n,r\n")
    with pytest.raises(
        DataError, match=r"claims_vae4.csv: claim 'vae4-elbo': no registered paper has its prefix"
    ):
        C.read_claims(path)


def test_two_constants_are_judged_by_their_sign_never_inconclusive():
    a = C.Side({0: 10.0}, deterministic=True)
    b = C.Side({0: 12.03}, deterministic=True)
    iv = C.compare(a, b)
    assert iv.kind == "constants" and iv.estimate == pytest.approx(-2.03)
    assert C.verdict_below(iv) == REPRODUCED and C.verdict_above(iv) == NOT_REPRODUCED
    assert C.verdict_above(C.compare(b, a)) == REPRODUCED
    assert C.low_power(iv) == ""  # nothing to resolve: exact


def test_low_power_names_the_n_that_resolves_the_observed_effect():
    """The n is checked by hand: the smallest n whose t CI (observed sd) excludes 0."""
    d = seeds(0.4, -1.0, 1.8, -0.2, 1.0)  # paired differences, mean 0.4
    iv = C.difference_ci(d, seeds(0, 0, 0, 0, 0))
    assert C.verdict_below(iv) == INCONCLUSIVE
    sd = np.std(list(d.values()), ddof=1)
    need = next(n for n in range(2, 1000) if stats.t.ppf(0.975, n - 1) * sd / math.sqrt(n) < 0.4)
    assert need - 1 >= 2 and stats.t.ppf(0.975, need - 2) * sd / math.sqrt(need - 1) >= 0.4
    text = C.low_power(iv)
    assert text.endswith(f"n>={need} would resolve it") and "|effect| 0.4" in text
    # the effect is measured to the nearest straddled boundary; a decided CI has no qualifier
    assert C.low_power(iv, 1.0).startswith("CI half-width") and "|effect| 0.6" in C.low_power(iv, 1.0)
    assert C.low_power(C.Interval(-2, -3, -1, "paired", "3", 0.2, 2.0)) == ""
    assert "no CI" in C.low_power(C.difference_ci(seeds(1.0), seeds(2.0)))
    # Welch: both sides grow to n seeds; checked against the closed form of its df (2n - 2)
    a, b = seeds(1.0, 3.0, 2.0), seeds(2.5, 1.5, 3.5)
    w = C.difference_ci(a, b, paired=False)
    s2 = np.var(list(a.values()), ddof=1) + np.var(list(b.values()), ddof=1)
    effect = abs(w.estimate)
    need_w = next(n for n in range(2, 10000) if stats.t.ppf(0.975, 2 * n - 2) * math.sqrt(s2 / n) < effect)
    assert C.low_power(w).endswith(f"n>={need_w} would resolve it")
    # unequal sides (3 vs 2 seeds): the n named is above today's smaller side, never "n>=2"
    # (2026-11-26: aviPAM's CTM at 2 seeds against 4-PAM at 3 read "n>=2 would resolve it")
    a3, b2 = seeds(2.0, 2.01, 1.99), {7: 1.0, 8: 1.2}  # Satterthwaite df ~1: t 12.7, not 4.3
    w32 = C.difference_ci(a3, b2, paired=False)
    assert C.verdict_below(w32) == INCONCLUSIVE
    named = int(C.low_power(w32).rsplit("n>=", 1)[1].split()[0])
    assert named >= 3


@pytest.mark.parametrize(
    ("projected", "verdict", "budget_words"),
    [
        # the curve of a deciding cell could still move by 2x the effect: not settled at this budget
        (
            1.0,
            "inconclusive",
            ("avi N_train=30 by 1", ">= the effect 0.5 nats", "at this budget: reproduced"),
        ),
        # it could move by less than the effect: the verdict stands (the unconverged qualifier may say it)
        (0.2, "reproduced", ()),
        # early-stopped runs (0) and runs with nothing recorded (NaN) never trigger it
        (0.0, "reproduced", ()),
        (float("nan"), "reproduced", ()),
    ],
)
def test_the_budget_rule_holds_back_a_verdict_a_doubled_budget_could_move(
    projected: float, verdict: str, budget_words: tuple[str, ...]
) -> None:
    """A NELBO comparison (effect 0.5 nats, CI [-0.7, -0.3] below 0) whose deciding cell stopped at
    its epoch limit still improving: a doubled budget projected to move it by >= the effect makes
    the verdict 'inconclusive (budget)' with the statistic at this budget; below the effect it stands."""
    from noisyor_bench.reporting.claims import Evidence, Interval, RowEvidence, verdict_label, with_evidence

    evidence = Evidence(
        rows={("fig5", "r1"): RowEvidence(5, 4, None, "avi N_train=30", 0.05, projected, n_seeds=5)},
        metrics={"nelbo"},
    )
    iv = Interval(-0.5, -0.7, -0.3, "paired", "5")
    evidence.decisions.append((iv, (0.0,)))
    evidence.verdicts.append((iv, (0.0,), "reproduced"))
    claim = with_evidence(
        Claim("fig5-acp-better-small-n-syn-random-1", "s", "l", "reproduced", "n", "r"), evidence
    )
    assert claim.verdict == verdict
    for word in budget_words:
        assert word in claim.budget
    assert bool(claim.budget) == bool(budget_words)
    assert verdict_label(claim) == ("inconclusive (budget)" if budget_words else "reproduced")
    assert bool(claim.margin) == (not budget_words)  # a budget-held verdict has no margin


def _two_cells(metric: str, values: dict[str, list[float]], projected: dict[str, float]) -> pd.DataFrame:
    """A table of two cells (methods ``a`` and ``b``), per-seed ``metric`` values and how far a
    doubled budget could move each cell's runs (``max_projected_nats``)."""
    return pd.DataFrame(
        [
            {
                "artifact": "t",
                "method": m,
                "n_seeds": len(v),
                "n_runs": len(v),
                "n_converged": len(v) - 1,
                f"{metric}_values": ";".join(f"{s}:{x}" for s, x in enumerate(v)),
                "max_last_window_nats": 0.05,
                "max_projected_nats": projected[m],
            }
            for m, v in values.items()
        ]
    )


@pytest.mark.parametrize(
    ("metric", "a", "b", "bound", "mover", "expected"),
    [
        # NELBO (lower is better): a - b = -0.5 < 0 reproduced. a improving lowers a: the difference
        # falls, away from 0 -> the verdict stands; b improving lowers b: the difference rises, toward 0
        ("nelbo", [10.0, 10.1, 9.9], [10.5, 10.6, 10.4], 0.0, "a", "reproduced"),
        ("nelbo", [10.0, 10.1, 9.9], [10.5, 10.6, 10.4], 0.0, "b", "inconclusive"),
        # not reproduced (a - b = +0.5 > 0): a improving pulls the difference down, toward 0
        ("nelbo", [10.5, 10.6, 10.4], [10.0, 10.1, 9.9], 0.0, "a", "inconclusive"),
        ("nelbo", [10.5, 10.6, 10.4], [10.0, 10.1, 9.9], 0.0, "b", "not reproduced"),
        # APE's "Standard fails" on ELBO per word (higher is better): Standard - APE = -0.41 against
        # the claim's < -0.5, not reproduced; Standard still improving only widens the gap to -0.5
        ("elbo_per_word", [-5.20, -5.21, -5.20], [-4.80, -4.79, -4.80], -0.5, "a", "not reproduced"),
        ("elbo_per_word", [-5.20, -5.21, -5.20], [-4.80, -4.79, -4.80], -0.5, "b", "inconclusive"),
    ],
)
def test_the_budget_rule_holds_back_only_moves_towards_the_boundary(
    metric: str, a: list[float], b: list[float], bound: float, mover: str, expected: str
) -> None:
    """The direction of the budget rule, through table_side and compare: a cell still improving
    changes its side's value in its metric's direction (a NELBO falls, an ELBO per word rises); only
    a move that brings the deciding difference toward its boundary holds the verdict back. The
    other direction is named beside the verdict (the unconverged qualifier), not held."""

    @C.qualified
    def claim(table: pd.DataFrame) -> Claim:
        iv = C.compare(C.table_side(table, metric, method="a"), C.table_side(table, metric, method="b"))
        return Claim("fig5-c", "s", "l", C.verdict_below(iv, bound), "n", "r")

    table = _two_cells(metric, {"a": a, "b": b}, {m: (2.0 if m == mover else 0.0) for m in ("a", "b")})
    judged = claim(table)
    assert judged.verdict == expected
    held = expected == "inconclusive"
    assert bool(judged.budget) == held and (f"{mover} by 2" in judged.budget) == held
    assert ("away from the decision boundary" in judged.unconverged) == (not held)


def test_the_budget_rule_without_the_sides_rows_counts_every_move() -> None:
    """A statistic not built from table sides (no rows on its interval) keeps the rule without a
    direction: any cell read that could move by the effect holds the verdict back."""

    @C.qualified
    def claim(table: pd.DataFrame) -> Claim:
        a, b = C.table_side(table, "nelbo", method="a"), C.table_side(table, "nelbo", method="b")
        iv = C.difference_ci(a.values, b.values)  # no sides' rows on it
        return Claim("fig5-c", "s", "l", C.verdict_below(iv), "n", "r")

    table = _two_cells("nelbo", {"a": [10.0, 10.1, 9.9], "b": [10.5, 10.6, 10.4]}, {"a": 2.0, "b": 0.0})
    assert claim(table).verdict == "inconclusive"


def test_the_budget_rule_leaves_claims_on_other_metrics_alone() -> None:
    """F1 / EM / recovery have no projected move in nats: a moving NELBO curve read beside them
    does not hold their verdict back."""
    from noisyor_bench.reporting.claims import Evidence, Interval, RowEvidence, with_evidence

    evidence = Evidence(rows={("r",): RowEvidence(5, 4, None, "avi", 0.05, 9.0)}, metrics={"f1"})
    iv = Interval(3.0, 1.0, 5.0, "paired", "5")
    evidence.verdicts.append((iv, (0.0,), "reproduced"))
    claim = with_evidence(
        Claim("fig5-acp-better-small-n-syn-random-1", "s", "l", "reproduced", "n", "r"), evidence
    )
    assert claim.verdict == "reproduced" and not claim.budget


# ------------------------------------------------------------------ low power against a constant
def _resolving_n(sd: float, effect: float, n_now: int) -> int:
    """The smallest n > n_now whose t CI (df n - 1, the observed sd) excludes the boundary: scipy's
    quantiles, searched one n at a time."""
    return next(
        n for n in range(n_now + 1, 100_000) if stats.t.ppf(0.975, n - 1) * sd / math.sqrt(n) < effect
    )


@pytest.mark.parametrize(
    ("sampled", "constant", "mirrored"),
    [
        ((10.0, 10.6), 10.0, False),  # 2 seeds: df 1, the case that read "n>=2" with 2 in hand
        ((10.0, 10.6), 10.0, True),  # the constant on the left
        ((9.8, 10.5, 10.2), 10.0, False),
        ((9.7, 10.4, 10.1, 10.6, 9.9), 10.0, False),
        ((9.7, 10.4, 10.1, 10.6, 9.9), 10.0, True),
    ],
    ids=["2-vs-constant", "constant-vs-2", "3-vs-constant", "5-vs-constant", "constant-vs-5"],
)
def test_low_power_against_a_constant_counts_the_sampled_side(sampled, constant, mirrored):
    sample, fixed = C.Side(seeds(*sampled)), C.Side({0: constant}, deterministic=True)
    iv = C.compare(fixed, sample) if mirrored else C.compare(sample, fixed)
    assert iv.kind == "vs constant" and iv.low <= 0.0 <= iv.high  # straddles: low power applies
    values = np.asarray(sampled)
    sd, effect = float(values.std(ddof=1)), abs(float(values.mean()) - constant)
    need = _resolving_n(sd, effect, len(sampled))
    text = C.low_power(iv)
    assert text.endswith(f"n>={need} seeds on the sampled side would resolve it"), text
    assert need > len(sampled)
    if len(sampled) == 2:
        assert text.startswith(
            "1 degree of freedom: n >= 3 seeds on the sampled side needed (t against a constant"
        )
    else:
        assert "degree" not in text


def test_sampled_n_counts_pairs_the_sampled_side_and_the_smaller_welch_side():
    assert C.sampled_n(C.Interval(0.1, -1, 1, "paired", "4", 0.1, 3.0)) == 4
    assert C.sampled_n(C.Interval(0.1, -1, 1, "vs constant", "5 vs 1", 0.1, 4.0)) == 5
    assert C.sampled_n(C.Interval(0.1, -1, 1, "vs constant", "1 vs 3", 0.1, 2.0)) == 3
    assert C.sampled_n(C.Interval(0.1, -1, 1, "welch", "3 vs 2", 0.1, 1.5)) == 2


# ------------------------------------------------------------------ bound gap by mode
def _gap_evidence(mode: str | None, gap: float) -> C.Evidence:
    """Evidence of one NELBO claim with effect 0.1 nats read from one row whose NELBO - NLL is ``gap``."""
    row = {
        "artifact": "fig5",
        "dataset": "d",
        "method": "avi",
        "n_train": 30,
        "nll": 10.0,
        "nll_rows_nelbo": 10.0 + gap,
    }
    if mode is not None:
        row["mode"] = mode
    evidence = C.Evidence()
    evidence.note(pd.DataFrame([row]))
    evidence.metrics.add("nelbo")
    evidence.decisions.append((C.Interval(-0.1, -0.15, -0.05, "paired", "3", 0.01, 2.0), (0.0,)))
    return evidence


@pytest.mark.parametrize(
    ("mode", "gap", "tagged"),
    [
        ("learning", 0.3, True),  # a learned model's slack above the effect
        (None, 0.3, True),  # a table without a mode column: a learned model
        ("learning", 0.05, False),  # slack below the effect
        ("inference", 0.3, False),  # one true model on both sides: the gap is the compared quantity
    ],
)
def test_bound_gap_only_where_a_learned_models_bound_and_likelihood_differ(mode, gap, tagged):
    assert bool(_gap_evidence(mode, gap).bound_gap()) == tagged


def test_note_mode_marks_rows_of_a_table_without_a_mode_column():
    evidence = _gap_evidence(None, 0.3)
    evidence.set_mode(C.INFERENCE_MODE)  # rows read before the mode was noted are marked too
    assert evidence.bound_gap() == ""
    with pytest.raises(ValueError, match="mode 'training' not in"):
        C.note_mode("training")
