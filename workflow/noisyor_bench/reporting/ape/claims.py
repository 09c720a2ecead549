"""The APE paper's claims, checked on Table 1 (``tables/ape_table1.csv``).

Absolute log-likelihoods depend on the evaluation's quirks (docs/ape.md), so every verdict
rests on an ordering, a ratio or an agreement count, with a 95% CI over seeds (paired by seed:
every method of a seed is scored on the same combinations):

* ``ape-model-aware-beats-naive-<d>``: clean IS log-likelihood per word, model-aware minus naive > 0;
* ``ape-standard-fails-<d>``: the Standard encoder's clean log-likelihood below the model-aware
  APE's by more than :data:`FAILURE_MARGIN` nats per word (it was trained on one model);
* ``ape-close-to-vi-faster-<d>``: VI minus model-aware APE (clean) below :data:`GAP` nats per word
  *and* log10(time VI / time APE) above 2 (100x);
* ``ape-agreement-<d>``: agreement with VI, model-aware APE minus Standard > 0 pairs;
* ``ape-warm-start-<d>``: log10 of the time VI from random initialisation needs to reach its own
  final quality over the time the APE-warm-started VI needs (APE forward pass included) > 0;
* ``ape-nuts-vs-vi-<d>``: on NUTS's combinations, NUTS's paper-style log-likelihood below VI's
  (the appendix: "slightly lower ... due to its wider posteriors") and NUTS slower (log10 ratio > 0).

The three claims on times (faster, warm start, NUTS slower) are judged on the per-seed robust
times and decided only when the timings' spread agrees with the CI
(:mod:`noisyor_bench.reporting.timing_claims`): a ratio whose spread crosses its threshold is
inconclusive, "timing spread crosses the threshold".

Each claim is budget-aware (:func:`noisyor_bench.reporting.claims.budget_aware`): when the rows
it reads include unconverged training or VI runs the verdict is budget-limited.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import pandas as pd

from noisyor_bench.reporting.ape.paper import claim_location, table1_row
from noisyor_bench.reporting.claims import (
    INCONCLUSIVE,
    RULE_LESS,
    Claim,
    Side,
    budget_aware,
    combine,
    compare,
    format_side,
    no_data_claim,
    table_side,
    verdict_above,
    verdict_below,
)
from noisyor_bench.reporting.timing_claims import (
    SPREAD_RULE,
    TimedSide,
    log_ratio_spread,
    spread_text,
    spread_verdict,
    timed_side,
)

GAP = 0.5  # nats per word: "quality close to VI" (the paper's gaps: 0.33 toy bars, 0.27 reviews)
FAILURE_MARGIN = 0.5  # nats per word: "fails to generalise" (the paper: 5.1 toy bars, 0.95 reviews)
SPEEDUP_LOG10 = 2.0  # 100x
# the claims on times, judged with the timings' spread (reporting.timing_claims)
TIMED_CLAIMS = ("ape-close-to-vi-faster-", "ape-warm-start-", "ape-nuts-vs-vi-")
DATASETS = ("toybars", "mdreviews")
RULE = (
    "paired 95% CI over seeds of the per-seed difference (ratios: of log10 times); reproduced if it "
    "lies entirely on the claimed side of the threshold, not reproduced if entirely on the other, else "
    "inconclusive (one seed: no CI)"
)


def _side(table: pd.DataFrame, dataset: str, method: str, metric: str) -> Side:
    return table_side(table, metric, dataset=dataset, method=method)


def _map(side: Side, f: Callable[[float], float]) -> Side:
    return Side(
        {s: f(v) for s, v in side.values.items() if v is not None and math.isfinite(f(v))}, side.deterministic
    )


def _log10(v: float) -> float:
    return math.log10(v) if v > 0 else float("nan")


def _claim(claim_id: str, statement: str, key: str, verdict: str, numbers: str) -> Claim:
    rule = RULE + ("; " + SPREAD_RULE if claim_id.startswith(TIMED_CLAIMS) else "")
    return Claim(
        claim_id, statement, claim_location(key), verdict, numbers, rule + "; " + RULE_LESS.split("; ")[-1]
    )


def _paper_ll(dataset: str, method: str) -> str:
    value = table1_row(dataset, method).get("ll")
    return "n/a" if value is None else f"{value:.4f}"


@budget_aware
def model_aware_beats_naive(table: pd.DataFrame, dataset: str) -> Claim:
    cid, key = f"ape-model-aware-beats-naive-{dataset}", "model_aware_beats_naive"
    statement = "The model-aware APE gives better held-out likelihood than the naive APE"
    aware, naive = (
        _side(table, dataset, "ape-model-aware", "ll_is"),
        _side(table, dataset, "ape-naive", "ll_is"),
    )
    if not aware or not naive:
        return no_data_claim(cid, statement, claim_location(key), RULE, "model-aware or naive APE not run")
    iv = compare(aware, naive)
    numbers = (
        f"clean LL/word model-aware {format_side(aware.values, 4)} vs naive {format_side(naive.values, 4)}; difference {iv.text(4)}"
        f" (paper, paper-style: {_paper_ll(dataset, 'ape-model-aware')} vs {_paper_ll(dataset, 'ape-naive')})"
    )
    return _claim(cid, statement, key, verdict_above(iv), numbers)


@budget_aware
def standard_fails(table: pd.DataFrame, dataset: str) -> Claim:
    cid, key = f"ape-standard-fails-{dataset}", "standard_fails"
    statement = (
        f"The Standard encoder fails to generalise across models: its held-out likelihood is more than "
        f"{FAILURE_MARGIN} nats/word below the model-aware APE's"
    )
    std, aware = _side(table, dataset, "standard", "ll_is"), _side(table, dataset, "ape-model-aware", "ll_is")
    if not std or not aware:
        return no_data_claim(cid, statement, claim_location(key), RULE, "Standard or model-aware APE not run")
    iv = compare(std, aware)
    numbers = (
        f"clean LL/word Standard {format_side(std.values, 4)} vs model-aware {format_side(aware.values, 4)}; difference {iv.text(4)}"
        f" (paper, paper-style: {_paper_ll(dataset, 'standard')} vs {_paper_ll(dataset, 'ape-model-aware')})"
    )
    return _claim(cid, statement, key, verdict_below(iv, -FAILURE_MARGIN), numbers)


@budget_aware
def close_to_vi_faster(table: pd.DataFrame, dataset: str) -> Claim:
    cid, key = f"ape-close-to-vi-faster-{dataset}", "within_gap_faster"
    statement = (
        f"APE (model-aware) is within {GAP} nats/word of VI's held-out likelihood at 100x or more less time"
    )
    vi, aware = _side(table, dataset, "vi", "ll_is"), _side(table, dataset, "ape-model-aware", "ll_is")
    t_vi, t_ape = _timed(table, dataset, "vi"), _timed(table, dataset, "ape-model-aware")
    if not vi or not aware or not t_vi or not t_ape:
        return no_data_claim(cid, statement, claim_location(key), RULE, "VI or model-aware APE not run")
    gap = compare(vi, aware)
    speed = compare(_map(t_vi.median, _log10), _map(t_ape.median, _log10))
    spread = log_ratio_spread(t_vi, t_ape)
    fast, note = spread_verdict(verdict_above(speed, SPEEDUP_LOG10), spread, SPEEDUP_LOG10)
    verdict = combine([verdict_below(gap, GAP), fast])
    ratio = 10**speed.estimate if math.isfinite(speed.estimate) else float("nan")
    numbers = (
        f"gap VI - APE (clean LL/word) {gap.text(4)}; log10(time VI / time APE) {speed.text(2)} = {ratio:.0f}x, "
        f"{spread_text(spread)}{_note(note)} (paper: gap {_gap_paper(dataset)}, {_ratio_paper(dataset)}x)"
    )
    return _claim(cid, statement, key, verdict, numbers)


def _timed(table: pd.DataFrame, dataset: str, method: str) -> TimedSide:
    return timed_side(table, "time_s", dataset=dataset, method=method)


def _note(note: str) -> str:
    return f" -- {note}" if note else ""


def _gap_paper(dataset: str) -> str:
    vi, ape = table1_row(dataset, "vi").get("ll"), table1_row(dataset, "ape-model-aware").get("ll")
    return "n/a" if vi is None or ape is None else f"{vi - ape:.3f}"


def _ratio_paper(dataset: str) -> str:
    vi, ape = table1_row(dataset, "vi").get("time_s"), table1_row(dataset, "ape-model-aware").get("time_s")
    return "n/a" if not vi or not ape else f"{vi / ape:.0f}"


@budget_aware
def agreement(table: pd.DataFrame, dataset: str) -> Claim:
    cid, key = f"ape-agreement-{dataset}", "agreement"
    statement = "APE's ranking of the test models agrees with VI's more often than the Standard encoder's"
    aware, std = (
        _side(table, dataset, "ape-model-aware", "agree_vi"),
        _side(table, dataset, "standard", "agree_vi"),
    )
    if not aware or not std:
        return no_data_claim(cid, statement, claim_location(key), RULE, "Standard or model-aware APE not run")
    iv = compare(aware, std)
    paper_a, paper_s = (
        table1_row(dataset, "ape-model-aware").get("agree"),
        table1_row(dataset, "standard").get("agree"),
    )
    numbers = (
        f"pairs agreeing with VI: APE {format_side(aware.values, 1)} vs Standard {format_side(std.values, 1)}; difference "
        f"{iv.text(1)} (paper: {paper_a}/45 vs {paper_s}/45)"
    )
    return _claim(cid, statement, key, verdict_above(iv), numbers)


def warm_start_sides(
    eval_rows: pd.DataFrame, dataset: str, part: str = "median"
) -> tuple[dict[int, float], dict[int, float]]:
    """Per seed, seconds to VI's quality: (random init, warm start incl. the APE pass); inf = never.
    ``part``: the per-step-corrected ``median`` (default), the spread's ``low`` / ``high`` end, or
    "" the raw measured times; a table without the part's columns gives the raw times."""
    rows = eval_rows[eval_rows["dataset"] == dataset]
    out = []
    for name in ("vi_time_to_quality", "warm_time_to_quality"):
        column = f"{name}_{part}" if part and f"{name}_{part}" in rows.columns else name
        # a row without the part (a run from before the spread) falls back to its raw time
        out.append({int(r["seed"]): _none_inf(_first(r[column], r[name])) for _, r in rows.iterrows()})
    return out[0], out[1]


def _first(v: object, fallback: object) -> object:
    return fallback if v is None or (isinstance(v, float) and math.isnan(v)) else v


def _none_inf(v: object) -> float:
    return math.inf if v is None or (isinstance(v, float) and math.isnan(v)) else float(v)


@budget_aware
def warm_start(table: pd.DataFrame, figure1: pd.DataFrame, dataset: str) -> Claim:
    cid, key = f"ape-warm-start-{dataset}", "warm_start"
    statement = "VI warm-started from APE reaches VI's quality sooner than VI from random initialisation"
    if figure1 is None or figure1.empty or dataset not in set(figure1["dataset"]):
        return no_data_claim(cid, statement, claim_location(key), RULE, "no Figure 1 times")
    _side(table, dataset, "vi", "time_s")  # the VI rows: their convergence is evidence
    _side(table, dataset, "vi-warm", "time_s")
    cold, warm = warm_start_sides(figure1, dataset)
    finite = {s for s in cold if math.isfinite(cold[s]) and math.isfinite(warm.get(s, math.inf))}
    never_warm = [s for s in warm if not math.isfinite(warm[s])]
    log_ratio = Side({s: math.log10(max(cold[s], 1e-9) / max(warm[s], 1e-9)) for s in finite})
    iv = compare(log_ratio, Side({s: 0.0 for s in finite}))
    (cold_lo, warm_lo), (cold_hi, warm_hi) = (warm_start_sides(figure1, dataset, p) for p in ("low", "high"))
    spread = log_ratio_spread(
        TimedSide(*(Side({s: v[s] for s in finite}) for v in (cold, cold_lo, cold_hi))),
        TimedSide(*(Side({s: v[s] for s in finite}) for v in (warm, warm_lo, warm_hi))),
    )
    sooner, note = spread_verdict(verdict_above(iv), spread, 0.0)
    verdict = sooner if not never_warm else combine([sooner, "not reproduced"])
    rows = figure1[figure1["dataset"] == dataset]
    to_ape = {
        int(r.seed): float(r.vi_time_to_ape_elbo)
        for r in rows.itertuples()
        if not pd.isna(r.vi_time_to_ape_elbo)
    }
    ape_t = {int(r.seed): float(r.ape_time) for r in rows.itertuples() if not pd.isna(r.ape_time)}
    numbers = (
        f"VI from random init needs {format_side(to_ape, 3)} s to reach APE's ELBO, APE {format_side(ape_t, 4)} s "
        f"(paper: > 0.4 s vs < 0.02 s); "
        f"seconds to VI's final quality (within 0.1%): random init {format_side({s: cold[s] for s in finite}, 3)}, "
        f"warm start {format_side({s: warm[s] for s in finite}, 3)}; log10 ratio {iv.text(2)}, "
        f"{spread_text(spread)}{_note(note)}"
        + (f"; warm start never reached it in seed(s) {never_warm}" if never_warm else "")
    )
    return _claim(cid, statement, key, verdict if finite or never_warm else INCONCLUSIVE, numbers)


@budget_aware
def nuts_vs_vi(table: pd.DataFrame, dataset: str) -> Claim:
    cid, key = f"ape-nuts-vs-vi-{dataset}", "nuts_vs_vi"
    statement = "NUTS's posterior predictive likelihood is slightly below VI's, at far more time"
    nuts, vi = _side(table, dataset, "nuts", "ll_paper"), _side(table, dataset, "vi-nuts-subset", "ll_paper")
    # time per combination: NUTS may run on fewer combinations than VI
    t_nuts = _per_combination(table, dataset, "nuts", _timed(table, dataset, "nuts"))
    t_vi = _per_combination(table, dataset, "vi", _timed(table, dataset, "vi"))
    if not nuts or not vi:
        return no_data_claim(cid, statement, claim_location(key), RULE, "NUTS not run in this grid")
    diff = compare(nuts, vi)
    nuts_clean, vi_clean = (
        _side(table, dataset, "nuts", "ll_is"),
        _side(table, dataset, "vi-nuts-subset", "ll_is"),
    )
    speed = compare(_map(t_nuts.median, _log10), _map(t_vi.median, _log10))
    spread = log_ratio_spread(t_nuts, t_vi)
    slower, note = spread_verdict(verdict_above(speed), spread, 0.0)
    verdict = combine([verdict_below(diff), slower])
    numbers = (
        f"paper-style LL/word on NUTS's combinations: NUTS {format_side(nuts.values, 4)} vs VI {format_side(vi.values, 4)}, "
        f"difference {diff.text(4)}; clean: {format_side(nuts_clean.values, 4)} vs {format_side(vi_clean.values, 4)}; "
        f"log10(time per combination NUTS / VI) {speed.text(2)}, {spread_text(spread)}{_note(note)} "
        f"(paper: {_paper_ll(dataset, 'nuts')} vs "
        f"{_paper_ll(dataset, 'vi')}, {table1_row(dataset, 'nuts').get('time_s')} s vs {table1_row(dataset, 'vi').get('time_s')} s)"
    )
    return _claim(cid, statement, key, verdict, numbers)


def _per_combination(table: pd.DataFrame, dataset: str, method: str, side: TimedSide) -> TimedSide:
    rows = table[(table["dataset"] == dataset) & (table["method"] == method)]
    n = float(rows["combinations"].iloc[0]) if len(rows) and "combinations" in rows else float("nan")
    if not (n > 0):
        return side
    return side.map(lambda v: v / n)


def ape_claims(
    table: pd.DataFrame, figure1: pd.DataFrame | None, datasets: Sequence[str] = DATASETS
) -> list[Claim]:
    """Every APE claim, per dataset present in the table."""
    present = [d for d in datasets if d in set(table["dataset"])]
    claims: list[Claim] = []
    for d in present:
        claims += [
            model_aware_beats_naive(table, d),
            standard_fails(table, d),
            close_to_vi_faster(table, d),
            agreement(table, d),
            warm_start(table, figure1, d),
            nuts_vs_vi(table, d),
        ]
    return claims
