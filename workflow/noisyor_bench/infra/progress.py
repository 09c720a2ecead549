"""One progress line helper for every long loop: steps done, elapsed time and an ETA, logged at
most every :data:`INTERVAL_S` seconds (a job's log shows a line at least every 30 s
while it works; hours of silence on the paper grid looked like a hang).

A loop calls :meth:`Progress.update` after each step (cheap: one clock read unless a line is
due); the first step, then one step per interval, and the last step are logged.  This module is
the one home of *when* a line is due (:meth:`Progress.due`) and of how elapsed time and ETA read
(:meth:`Progress.timing`, :func:`duration`): the epoch trainers'
:class:`noisyor_bench.inference.progress.EpochProgress` writes its own line (with the losses)
from these.
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
    """Throttled ``progress: <what> <done>/<total> <unit> (p%), elapsed m:ss, ETA m:ss`` lines.

    ``since``: steps done before this process started (a run resumed from a checkpoint); the ETA
    extrapolates the mean time of the steps since.  ``at_most``: the total is a cap the loop may
    stop before (early stopping), so the ETA reads ``<= m:ss``.
    """

    def __init__(
        self,
        what: str,
        total: int | None,
        unit: str = "steps",
        interval: float = INTERVAL_S,
        logger: logging.Logger | None = None,
        clock: Callable[[], float] = time.monotonic,
        since: int = 0,
        at_most: bool = False,
    ) -> None:
        self.what, self.total, self.unit, self.interval, self.clock = what, total, unit, interval, clock
        self.since, self.at_most = since, at_most
        self.log = logger or _log
        self.start = clock()
        self.last: float | None = None

    def eta(self, done: int, now: float) -> float | None:
        """Seconds to ``total`` at this process's mean step time (None: no total, no step yet)."""
        ran = done - self.since
        if not self.total or ran <= 0:
            return None
        return (now - self.start) / ran * max(self.total - done, 0)

    def timing(self, done: int, now: float) -> str:
        """``elapsed m:ss, ETA m:ss`` (``ETA <= m:ss`` for a cap, ``ETA ?`` when unknown)."""
        eta = self.eta(done, now)
        eta_text = "?" if eta is None else ("<= " if self.at_most else "") + duration(eta)
        return f"elapsed {duration(now - self.start)}, ETA {eta_text}"

    def due(self, done: int, now: float) -> bool:
        """Whether a line is due at ``now`` (the first call, ``interval`` since the last line, or
        the last step); a due line counts as written."""
        final = bool(self.total) and done >= (self.total or 0)
        if self.last is not None and now - self.last < self.interval and not final:
            return False
        self.last = now
        return True

    def line(self, done: int, note: str = "", now: float | None = None) -> str:
        """The progress line for ``done`` steps at ``now`` (default: the clock), due or not."""
        now = self.clock() if now is None else now
        if self.total:
            where = f"{done}/{self.total} {self.unit} ({100 * done // self.total}%)"
        else:
            where = f"{done} {self.unit}"
        return f"progress: {self.what} {where}, {self.timing(done, now)}" + (f"; {note}" if note else "")

    def update(self, done: int, note: str = "") -> bool:
        """Log a line if one is due (:meth:`due`); whether one was logged."""
        now = self.clock()
        if not self.due(done, now):
            return False
        self.log.info("%s", self.line(done, note, now))
        return True


__all__ = ["INTERVAL_S", "Progress", "duration"]
