"""One progress line helper for every long loop: steps done, elapsed time and an ETA, logged at
most every :data:`INTERVAL_S` seconds (issue 29: a job's log shows a line at least every 30 s
while it works; hours of silence on the paper grid looked like a hang).

A loop calls :meth:`Progress.update` after each step (cheap: one clock read unless a line is
due); the first step, then one step per interval, and the last step are logged. Epoch-based
trainers keep :class:`noisyor_bench.inference.progress.EpochProgress`, which adds the losses.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

INTERVAL_S = 20.0
"""Seconds between two progress lines (below the 30 s a reader of a job's log waits at most)."""

_log = logging.getLogger(__name__)


def duration(seconds: float) -> str:
    """``"1:02:03"`` / ``"2:03"``: a duration as a person reads it (every progress line and the
    console use this one)."""
    s = int(round(max(seconds, 0.0)))
    h, rem = divmod(s, 3600)
    m, sec = divmod(rem, 60)
    return f"{h}:{m:02d}:{sec:02d}" if h else f"{m}:{sec:02d}"


class Progress:
    """Throttled ``progress: <what> <done>/<total> <unit> (p%), elapsed m:ss, ETA m:ss`` lines."""

    def __init__(
        self,
        what: str,
        total: int | None,
        unit: str = "steps",
        interval: float = INTERVAL_S,
        logger: logging.Logger | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.what, self.total, self.unit, self.interval, self.clock = what, total, unit, interval, clock
        self.log = logger or _log
        self.start = clock()
        self.last: float | None = None

    def line(self, done: int, note: str = "") -> str:
        """The progress line for ``done`` steps now (whether or not it is due)."""
        elapsed = self.clock() - self.start
        if self.total:
            eta = elapsed / done * max(self.total - done, 0) if done > 0 else None
            where = f"{done}/{self.total} {self.unit} ({100 * done // self.total}%)"
        else:
            eta, where = None, f"{done} {self.unit}"
        eta_text = "?" if eta is None else duration(eta)
        return f"progress: {self.what} {where}, elapsed {duration(elapsed)}, ETA {eta_text}" + (
            f"; {note}" if note else ""
        )

    def update(self, done: int, note: str = "") -> bool:
        """Log a line if one is due (first call, ``interval`` since the last, or the last step)."""
        now = self.clock()
        final = bool(self.total) and done >= (self.total or 0)
        if self.last is not None and now - self.last < self.interval and not final:
            return False
        self.last = now
        self.log.info("%s", self.line(done, note))
        return True


__all__ = ["INTERVAL_S", "Progress"]
