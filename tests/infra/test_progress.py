"""The one progress helper of long loops (issue 29): a line at the first step, then at most one
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
