"""Timing claims that do not flip with machine load: repeated and per-step
timings with their spread, and speed claims decided only when the spread agrees with the CI."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pandas as pd
import pytest
import torch
from avipam_rows import small_run_row

from noisyor_bench.experiments.ape.evaluate import encode_timed
from noisyor_bench.infra.timing import (
    MIN_REPEATS,
    Timing,
    cumulative_timing,
    from_dict,
    per_step_timing,
    single,
    time_repeated,
)
from noisyor_bench.reporting.ape.claims import ape_claims
from noisyor_bench.reporting.ape.table1 import figure1_rows, seed_rows, table1
from noisyor_bench.reporting.avipam import claims as avc
from noisyor_bench.reporting.avipam import tables as avt
from noisyor_bench.reporting.claims import INCONCLUSIVE, NOT_REPRODUCED, REPRODUCED, Interval
from noisyor_bench.reporting.tables import read_table, write_table
from noisyor_bench.reporting.timing_claims import (
    SPREAD_NOTE,
    TIMING_MARGIN,
    TOLERANCE_NOTE,
    judge_speed,
    log_ratio_spread,
    spread_verdict,
)


def _fake_clock(durations: list[float]) -> Iterator[float]:
    """Clock readings whose successive (start, stop) pairs are ``durations`` apart: no real sleeps."""
    now = 0.0
    for d in durations:
        yield now
        now += d
        yield now


# ------------------------------------------------------------------------------ the timing helpers
def test_time_repeated_takes_the_median_and_survives_one_slow_outlier() -> None:
    clock = _fake_clock([0.010, 0.011, 5.0, 0.009, 0.012])  # one repetition hit by load
    calls: list[int] = []
    out, timing = time_repeated(lambda: calls.append(1) or len(calls), 5, clock=lambda: next(clock))
    assert out == 5 and len(calls) == 5
    assert timing.median == pytest.approx(0.011)
    assert (timing.low, timing.high) == (pytest.approx(0.009), pytest.approx(5.0))
    assert (timing.n, timing.kind) == (5, "repeated")


def test_time_repeated_never_times_fewer_than_the_minimum() -> None:
    calls: list[int] = []
    _, timing = time_repeated(lambda: calls.append(1), repeats=1)
    assert len(calls) == MIN_REPEATS == timing.n == 5
    assert 0.0 <= timing.low <= timing.median <= timing.high


def test_encode_timed_really_repeats_the_forward_pass() -> None:
    class Encoder(torch.nn.Module):
        kind = "model-aware"

        def __init__(self) -> None:
            super().__init__()
            self.calls = 0

        def forward(self, x: torch.Tensor, theta: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
            self.calls += 1
            return x[:, :2] * 1.0, x[:, :2] * 0.0

    class Combos:
        x = torch.ones(4, 3)
        theta = torch.ones(4, 2, 3)

    enc = Encoder()
    mu, log_sigma, timing, cpu = encode_timed(enc, Combos(), repeats=1)  # type: ignore[arg-type]
    assert (
        enc.calls == MIN_REPEATS and timing.n == MIN_REPEATS and cpu.n == MIN_REPEATS
    )  # one loop, two clocks
    assert 0.0 <= cpu.low <= cpu.median <= cpu.high
    assert mu.dtype == torch.float64 and mu.shape == (4, 2)


def test_per_step_timing_rebases_a_load_spike_out_of_the_total() -> None:
    steps = [0.01] * 99 + [1.0]  # one step slowed 100x by load
    measured = sum(steps)
    timing = per_step_timing(steps, [1.0] * len(steps), measured)
    assert timing.measured == pytest.approx(1.99)
    assert timing.median == pytest.approx(1.0)  # 100 steps x the median step time
    assert timing.low == pytest.approx(1.0) and timing.high == pytest.approx(1.0)  # IQR of equal steps


def test_cumulative_timing_reads_a_curve_and_few_chunks_use_min_max() -> None:
    timing = cumulative_timing([10, 20, 30], [1.0, 2.0, 4.0], measured=4.0)  # 0.1, 0.1, 0.2 s/step
    assert timing.n == 3 and timing.median == pytest.approx(3.0)
    assert (timing.low, timing.high) == (pytest.approx(3.0), pytest.approx(6.0))
    assert cumulative_timing([], [], 2.5) == single(2.5)


def test_timings_add_rebase_and_round_trip() -> None:
    t = Timing(2.0, 1.0, 4.0, 3.0, 7, "per-step")
    part = t.rebase(1.5)  # half the measured run: half of everything
    assert (part.median, part.low, part.high, part.measured) == (1.0, 0.5, 2.0, 1.5)
    both = t + single(1.0)
    assert (both.median, both.low, both.high, both.kind) == (3.0, 2.0, 5.0, "sum")
    assert from_dict(t.as_dict(), 99.0) == t and from_dict(None, 2.0) == single(2.0)
    assert t.columns("m", 0.5) == {"m_median": 1.0, "m_low": 0.5, "m_high": 2.0}


# ----------------------------------------------------------------------------- the spread rule
@pytest.mark.parametrize(
    ("ci_verdict", "spread", "expected"),
    [
        (REPRODUCED, (2.3, 2.5), (REPRODUCED, "")),  # whole interval above 100x
        (REPRODUCED, (1.6, 2.7), (INCONCLUSIVE, SPREAD_NOTE)),  # 41x..457x: crosses 100x
        (NOT_REPRODUCED, (1.2, 1.6), (NOT_REPRODUCED, "")),
        (NOT_REPRODUCED, (1.5, 2.1), (INCONCLUSIVE, SPREAD_NOTE)),
        (INCONCLUSIVE, (2.3, 2.5), (INCONCLUSIVE, "")),  # the CI alone is already undecided
    ],
)
def test_spread_verdict(ci_verdict: str, spread: tuple[float, float], expected: tuple[str, str]) -> None:
    assert spread_verdict(ci_verdict, spread, 2.0) == expected


# ----------------------------------------------------------------------- the timing tolerance
def _ln_ci(estimate: float, low: float, high: float) -> Interval:
    """A Welch CI of a log ratio, given as ratios (9.9x -> ln 9.9)."""
    return Interval(math.log(estimate), math.log(low), math.log(high), "welch", "3 vs 3", df=4.0)


@pytest.mark.parametrize(
    ("ratio", "expected", "note"),
    [
        ((8.3, 7.0, 9.9), INCONCLUSIVE, TOLERANCE_NOTE),  # below 10x, but its upper end within x1.5
        ((8.3, 6.4, 10.7), INCONCLUSIVE, ""),  # the same claim in another run: the CI crosses 10x
        ((5.0, 4.0, 6.5), NOT_REPRODUCED, ""),  # upper end below 10x / 1.5
        ((46.1, 31.3, 67.8), REPRODUCED, ""),
        ((20.0, 14.0, 28.0), INCONCLUSIVE, TOLERANCE_NOTE),  # lower end within x1.5 above 10x
    ],
)
def test_a_timed_verdict_needs_its_ci_to_clear_the_threshold_by_the_tolerance(
    ratio: tuple[float, float, float], expected: str, note: str
) -> None:
    iv = _ln_ci(*ratio)
    part = judge_speed(iv, (iv.low, iv.high), math.log(10.0), scale="ln")
    assert (part.verdict, part.note) == (expected, note)
    # the same ratios on a log10 scale judge alike: the tolerance is a factor, not a log unit
    iv10 = Interval(*(v / math.log(10.0) for v in (iv.estimate, iv.low, iv.high)), "welch", "3 vs 3", df=4.0)
    assert judge_speed(iv10, (iv10.low, iv10.high), 1.0, scale="log10").verdict == expected


# ------------------------------------------------------------------- APE: ape-close-to-vi-faster
def _ape_eval(seed: int, ape: tuple[float, float, float], vi: tuple[float, float, float]) -> dict:
    """One seed's evaluation: model-aware APE and VI close in LL, times (median, low, high)."""
    methods = {}
    for m, ll, (med, low, high) in (("ape-model-aware", -4.2, ape), ("vi", -3.9, vi)):
        f = 1 + 0.02 * seed
        methods[m] = {
            "ll_is": ll + 0.01 * seed,
            "ll_paper": ll,
            "elbo_per_word": ll,
            "elbo_pair": -170.0,
            "time_s": med * f,
            "time_s_median": med * f,
            "time_s_low": low * f,
            "time_s_high": high * f,
            "agree_vi": 40,
            "agree_is": 40,
            "pairs": 45,
            "converged": True,
            "combinations": 300,
        }
    return {"experiment": "ape-eval", "dataset": "toybars", "seed": seed, "methods": methods, "figure1": {}}


def _ape_claim(tmp_path: Path, ape: tuple[float, float, float], vi: tuple[float, float, float]):
    files = []
    for s in range(3):
        path = tmp_path / f"seed{s}" / "metrics.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(_ape_eval(s, ape, vi)))
        files.append(path)
    write_table(table1(seed_rows(files)), tmp_path / "t.csv")
    write_table(figure1_rows(files), tmp_path / "f.csv")
    table = read_table(tmp_path / "t.csv")
    assert {"time_s_median_values", "time_s_low_values", "time_s_high_values"} <= set(table.columns)
    claims = {c.claim_id: c for c in ape_claims(table, read_table(tmp_path / "f.csv"))}
    return claims["ape-close-to-vi-faster-toybars"]


@pytest.mark.parametrize(
    ("ape", "vi", "verdict", "note"),
    [
        # medians 200x; the APE pass's min..max 0.0045..0.006 s: 158x..233x, all above 100x
        ((0.005, 0.0045, 0.006), (1.0, 0.95, 1.05), REPRODUCED, False),
        # medians 200x, but one slow pass reached 0.024 s: 40x..233x crosses 100x
        ((0.005, 0.0045, 0.024), (1.0, 0.95, 1.05), INCONCLUSIVE, True),
        # medians 20x with a tight spread: entirely below
        ((0.05, 0.045, 0.06), (1.0, 0.95, 1.05), NOT_REPRODUCED, False),
        # medians 50x, but VI's per-step spread reaches 3x its median: 16x..150x crosses 100x
        ((0.02, 0.02, 0.02), (1.0, 0.33, 3.0), INCONCLUSIVE, True),
    ],
)
def test_ape_speed_claim_is_judged_on_the_timing_spread(tmp_path, ape, vi, verdict, note) -> None:
    claim = _ape_claim(tmp_path, ape, vi)
    assert claim.verdict == verdict, claim.timing
    assert (SPREAD_NOTE in claim.timing) == note
    assert SPREAD_NOTE in claim.rule and "spread" in claim.timing
    # the numbers say how the time part was judged, never a time
    judged = {REPRODUCED: "judged above 100x", NOT_REPRODUCED: "judged below 100x"}.get(
        verdict, "not decided"
    )
    assert f"speed: time VI / time APE {judged}" in claim.numbers and "figures in timing" in claim.numbers
    assert SPREAD_NOTE not in claim.numbers and "spread [" not in claim.numbers


def _scaled(times: tuple[float, float, float], factor: float) -> tuple[float, float, float]:
    return (times[0] * factor, times[1] * factor, times[2] * factor)


@pytest.mark.parametrize(
    ("ape", "vi"),
    [
        ((0.005, 0.0045, 0.006), (1.0, 0.95, 1.05)),  # reproduced
        ((0.005, 0.0045, 0.024), (1.0, 0.95, 1.05)),  # inconclusive: the spread crosses 100x
        ((0.05, 0.045, 0.06), (1.0, 0.95, 1.05)),  # not reproduced
    ],
)
def test_ape_speed_claim_numbers_do_not_move_with_the_times(tmp_path, ape, vi) -> None:
    # a machine 3x slower (every time x3), or a VI 3x slower (the ratio x3, the same verdict):
    # claims.csv's columns stay the same, only the timing moves
    base = _ape_claim(tmp_path / "base", ape, vi)
    for scaled_ape, scaled_vi in ((_scaled(ape, 3.0), _scaled(vi, 3.0)), (ape, _scaled(vi, 1.5))):
        other = _ape_claim(tmp_path / f"x{scaled_vi[0]}", scaled_ape, scaled_vi)
        assert other.verdict == base.verdict
        assert replace(other, timing=base.timing) == base  # numbers, margin, low power, ...
        assert other.timing != base.timing and " s, " in other.timing


def test_log_ratio_spread_takes_the_unfavourable_ends(tmp_path) -> None:
    claim = _ape_claim(tmp_path, (0.005, 0.0045, 0.024), (1.0, 0.95, 1.05))
    assert (
        "39.6x..233x" in claim.timing
    )  # VI low / APE high .. VI high / APE low (every seed x the same factor)


# ------------------------------------------------------------------------------ aviPAM speed-up
def _avipam_tables(
    gibbs: tuple[float, float, float],
    avi: tuple[float, float, float],
    cpu: tuple[tuple[float, float, float], tuple[float, float, float]] | None = None,
    threads: int = 1,
) -> dict[str, pd.DataFrame]:
    """Table 1 with 3 seeds of (median, low, high) wall minutes per method; ``cpu``: the CPU
    minutes of (Gibbs, aviPAM) too; ``threads``: aviPAM's torch threads."""
    rows = []
    for i, (method, (med, low, high)) in enumerate((("pam4-gibbs", gibbs), ("avipam-pam4", avi))):
        for seed, d in enumerate((-0.002, 0.0, 0.002)):
            own = {}
            if cpu is not None:
                c_med, c_low, c_high = cpu[i]
                own = {
                    "train_cpu_minutes": c_med * (1 + d),
                    "train_cpu_minutes_median": c_med * (1 + d),
                    "train_cpu_minutes_low": c_low * (1 + d),
                    "train_cpu_minutes_high": c_high * (1 + d),
                }
            rows.append(
                small_run_row(
                    method,
                    seed,
                    train_minutes=med * (1 + d),
                    train_minutes_median=med * (1 + d),
                    train_minutes_low=low * (1 + d),
                    train_minutes_high=high * (1 + d),
                    gibbs_iterations=10000 if method == "pam4-gibbs" else None,
                    avi_max_epochs=None if method == "pam4-gibbs" else 40,
                    threads=1 if method == "pam4-gibbs" else threads,
                    **own,
                )
            )
    t = avt.build_table(pd.DataFrame(rows), "table1", avt.paper_numbers(), "test")
    assert {"train_minutes_low_values", "train_minutes_high_values"} <= set(t.columns)
    return {"avipam-table1": pd.read_csv(pd.io.common.StringIO(t.to_csv(index=False)), dtype={"seeds": str})}


@pytest.mark.parametrize(
    ("gibbs", "avi", "verdict", "note"),
    [
        ((50.0, 45.0, 55.0), (1.0, 0.9, 1.1), REPRODUCED, False),  # 41x..61x: above 10x
        ((50.0, 45.0, 55.0), (1.0, 0.9, 6.0), INCONCLUSIVE, True),  # 7.5x..61x: crosses 10x
        ((3.0, 2.9, 3.1), (1.0, 0.9, 1.1), NOT_REPRODUCED, False),
    ],
)
def test_avipam_speedup_is_judged_on_the_timing_spread(gibbs, avi, verdict, note) -> None:
    claim = avc.speedup(_avipam_tables(gibbs, avi))
    assert claim.verdict == verdict, claim.timing
    assert (SPREAD_NOTE in claim.timing) == note and SPREAD_NOTE in claim.rule
    assert SPREAD_NOTE not in claim.numbers and " min" not in claim.numbers


@pytest.mark.parametrize(
    ("gibbs", "avi"),
    [
        ((50.0, 45.0, 55.0), (1.0, 0.9, 1.1)),  # reproduced
        ((50.0, 45.0, 55.0), (1.0, 0.9, 6.0)),  # inconclusive: the spread crosses 10x
        ((3.0, 2.9, 3.1), (1.0, 0.9, 1.1)),  # not reproduced
    ],
)
def test_avipam_speedup_numbers_do_not_move_with_the_times(gibbs, avi) -> None:
    base = avc.speedup(_avipam_tables(gibbs, avi), hardware="cpu A")
    slower = avc.speedup(_avipam_tables(_scaled(gibbs, 3.0), _scaled(avi, 3.0)), hardware="cpu B")
    assert slower.verdict == base.verdict
    assert replace(slower, timing=base.timing) == base  # numbers, margin, qualifiers
    assert slower.timing != base.timing and "hardware: cpu B" in slower.timing
    assert "cpu" not in slower.numbers and " min" not in slower.numbers
    if base.verdict in (REPRODUCED, NOT_REPRODUCED):  # its margin is measured time: in timing
        assert base.margin == TIMING_MARGIN and "; margin " in base.timing


# a loaded machine: the wall clock says 3x (each run shared its core), the CPU clock 40x
LOADED_WALL = ((30.0, 28.0, 33.0), (10.0, 9.0, 11.0))
IDLE_CPU = ((40.0, 39.0, 41.0), (1.0, 0.98, 1.02))


def test_avipam_speedup_is_judged_on_cpu_time_when_both_sides_ran_one_thread() -> None:
    on_cpu = avc.speedup(_avipam_tables(*LOADED_WALL, cpu=IDLE_CPU))
    on_wall = avc.speedup(_avipam_tables(*LOADED_WALL))
    assert on_cpu.verdict == REPRODUCED and "CPU time 4-PAM Gibbs / aviPAM 4-PAM" in on_cpu.numbers
    assert "per-step CPU times, one thread" in on_cpu.timing and "ratio 40 [" in on_cpu.timing
    assert on_wall.verdict == NOT_REPRODUCED and "CPU time" not in on_wall.numbers
    assert "per-step wall times" in on_wall.timing and "ratio 3 [" in on_wall.timing
    assert "CPU time where the run recorded it on one thread" in on_cpu.rule == on_wall.rule


def test_avipam_speedup_uses_wall_time_for_several_threads_and_per_seed_where_cpu_time_is_missing() -> None:
    # aviPAM on 4 threads: its CPU time is not its wall time, so its wall time counts (Gibbs: one thread)
    threaded = avc.speedup(_avipam_tables(*LOADED_WALL, cpu=IDLE_CPU, threads=4))
    assert threaded.verdict == NOT_REPRODUCED and "CPU time" not in threaded.numbers
    assert "CPU where recorded (4-PAM Gibbs seeds [0, 1, 2]), else wall); ratio 4 [" in threaded.timing
    t = _avipam_tables(*LOADED_WALL, cpu=IDLE_CPU)["avipam-table1"]
    row = t.index[t["method"] == "avipam-pam4"][0]
    for part in ("median", "low", "high"):  # seed 2 of aviPAM has no CPU time (a run from before it)
        t.loc[row, f"train_cpu_minutes_{part}_values"] = "0:1.0;1:1.0;2:nan"
    mixed = avc.speedup({"avipam-table1": t})
    assert "time (CPU where recorded: 4-PAM Gibbs seeds [0, 1, 2], aviPAM 4-PAM seeds [0, 1]; else wall)" in (
        mixed.numbers
    ), mixed.numbers
    # Gibbs 40 min (CPU) in every seed; aviPAM 1, 1 (CPU) and 10 (wall): mean log ratio ln(40) - ln(10)/3
    assert "ratio 18.6" in mixed.timing, mixed.timing


def test_tables_without_spread_columns_fall_back_to_the_measured_time() -> None:
    from noisyor_bench.reporting.timing_claims import TimedSide, timed_side

    t = _avipam_tables((50.0, 45.0, 55.0), (1.0, 0.9, 1.1))["avipam-table1"]
    old = t.drop(
        columns=[
            c
            for c in t.columns
            if c.startswith(("train_minutes_median", "train_minutes_low", "train_minutes_high"))
        ]
    )
    side = timed_side(old, "train_minutes", method="pam4-gibbs", component="sub")
    assert isinstance(side, TimedSide) and side and side.low == side.median == side.high
    assert log_ratio_spread(side, side) == (0.0, 0.0)


# ----------------------------------------------------------------------- where the times are taken
def test_figure1_times_to_quality_carry_the_runs_correction_and_spread() -> None:
    from noisyor_bench.experiments.ape.evaluate import _figure1

    # VI's quality: 99% of its improvement from -200 to -100, -101, first reached at 4 s
    vi = pd.DataFrame({"seconds": [0.0, 1.0, 2.0, 4.0], "eval_elbo": [-200.0, -120.0, -102.0, -100.0]})
    warm = pd.DataFrame({"seconds": [0.0, 0.5], "eval_elbo": [-110.0, -100.05]})
    ape = Timing(0.01, 0.008, 0.02, 0.01, 5, "repeated")
    times = {"ape-model-aware": ape, "vi": Timing(2.0, 1.0, 3.0, 4.0, 40, "per-step")}
    warm_vi = Timing(0.25, 0.2, 0.5, 0.5, 10, "per-step")
    out = _figure1({"ape-model-aware": {"time_s": 0.01, "elbo_pair": -110.0}}, vi, warm, times, warm_vi)
    assert out["vi_time_to_quality"] == 4.0  # the measured time is kept
    assert (out["vi_time_to_quality_median"], out["vi_time_to_quality_low"]) == (2.0, 1.0)
    assert out["warm_time_to_quality_median"] == pytest.approx(0.01 + 0.25)
    assert out["warm_time_to_quality_high"] == pytest.approx(0.02 + 0.5)


@pytest.mark.parametrize("grouped", [False, True])
def test_vi_records_its_time_rebased_on_its_steps(grouped: bool) -> None:
    import numpy as np

    from noisyor_bench.experiments.ape.baselines import fit_vi_grouped
    from noisyor_bench.experiments.ape.pairs import EvalCombinations
    from noisyor_bench.inference.topics.ape_vi import ViConfig
    from noisyor_bench.models.topics.logistic_normal import ape_prior

    gen = torch.Generator().manual_seed(0)
    theta = torch.softmax(torch.randn(2, 3, 8, generator=gen), -1)  # 2 models, K = 3, V = 8
    model_index = np.array([0, 1, 0, 1])
    combos = EvalCombinations(
        torch.randint(0, 4, (4, 8), generator=gen).float(),
        theta[model_index],
        np.array([0, 0, 1, 1]),
        model_index,
    )
    config = ViConfig(max_steps=30, stop_rule=False, eval_every=0)
    r = fit_vi_grouped(combos, ape_prior(3), config, seed=0, group_by_model=grouped)
    assert r.timing is not None and r.timing.measured == pytest.approx(r.seconds)
    assert r.timing.n == 30 and r.timing.kind == ("sum" if grouped else "per-step")
    assert 0.0 < r.timing.low <= r.timing.median <= r.timing.high
