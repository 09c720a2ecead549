"""The one progress helper of long loops: a line at the first step, then at most one
per interval, always at the last step, with an ETA from the mean step time so far."""

from __future__ import annotations

import logging

from noisyor_bench.infra.progress import Progress


def test_lines_are_throttled_and_the_eta_extrapolates_the_mean_step(caplog):
    now = [0.0]
    ticker = Progress("Gibbs chain", 100, unit="sweeps", interval=20.0, clock=lambda: now[0])
    logged = []
    with caplog.at_level(logging.INFO, logger="noisyor_bench.infra.progress"):
        for step in range(1, 101):
            now[0] = 3.0 * step  # 3 s a sweep
            logged.append(ticker.update(step))
    # first call, then every 7th sweep (21 s >= 20 s), and the last: 1, 8, 15, ..., 99, 100
    assert [i + 1 for i, x in enumerate(logged) if x] == [*range(1, 100, 7), 100]
    first = caplog.records[0].getMessage()
    # after 1 sweep at 3 s: 99 sweeps left at 3 s each = 297 s = 4:57
    assert first == "progress: Gibbs chain 1/100 sweeps (1%), elapsed 0:03, ETA 4:57"
    assert caplog.records[-1].getMessage().endswith("100/100 sweeps (100%), elapsed 5:00, ETA 0:00")


def test_an_unknown_total_has_no_eta():
    ticker = Progress("NUTS", None, unit="draws", clock=lambda: 10.0)
    assert ticker.line(5, "warmup") == "progress: NUTS 5 draws, elapsed 0:00, ETA ?; warmup"


def test_a_resumed_loop_extrapolates_only_the_steps_this_process_ran():
    # a checkpoint held 50 steps; this process ran steps 51..60 in 20 s: 2 s a step, 40 left = 80 s
    now = [0.0]
    ticker = Progress("APE training", 100, since=50, clock=lambda: now[0])
    now[0] = 20.0
    assert ticker.eta(60, now[0]) == 80.0
    assert ticker.line(60) == "progress: APE training 60/100 steps (60%), elapsed 0:20, ETA 1:20"
    assert ticker.eta(50, now[0]) is None  # no step of this process yet


def test_a_cap_reads_as_an_upper_bound_and_an_unknown_eta_stays_unknown():
    ticker = Progress("fit", 10, unit="epochs", at_most=True, clock=lambda: 0.0)
    # 3 epochs in 6 s, 7 left at 2 s each = 14 s; early stopping may end sooner
    assert ticker.timing(3, 6.0) == "elapsed 0:06, ETA <= 0:14"
    assert ticker.timing(0, 6.0) == "elapsed 0:06, ETA ?"


def test_the_last_step_is_due_however_soon_it_comes():
    ticker = Progress("fit", 3, interval=60.0, clock=lambda: 0.0)
    assert [ticker.due(d, 1.0 * d) for d in (1, 2, 3)] == [True, False, True]
    assert not ticker.due(2, 59.0)  # 56 s after the last line (at 3.0): not due
    assert ticker.due(2, 63.0)  # 60 s after it: due
