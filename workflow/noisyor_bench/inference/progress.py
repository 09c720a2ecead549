"""The one progress logger of a fit: log lines with the elapsed time and an ETA, throttled for
log files, and a tqdm bar over epochs on a terminal.

Every trainer reports one :class:`~noisyor_bench.inference.fitting.EpochRecord` per epoch to a
callback; :class:`EpochProgress` is that callback for the ACP runs
(:mod:`noisyor_bench.experiments.acp.runs`) and for aviPAM's fits
(:mod:`noisyor_bench.inference.topics.avipam`).  Inside a Snakemake job the bar is off (stderr
is no terminal) and the lines go to the job's log file.
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Callable

from noisyor_bench.inference.fitting import EpochRecord
from noisyor_bench.infra.progress import Progress, duration

PROGRESS_INTERVAL_S = 10.0
"""At most one progress log line per this many seconds (jobs log to a file, not a terminal)."""

_log = logging.getLogger(__name__)


class EpochProgress:
    """Progress log lines with an ETA, plus a tqdm bar over epochs (stderr, off when not a TTY).

    A line (``<desc>: epoch E/T, train NELBO .., val NELBO .., elapsed m:ss, ETA <= m:ss``) at the
    first epoch this process trains, then at most every ``interval`` seconds, and at the epoch
    limit.  The ETA is the epochs left at this process's mean epoch time (a run resumed from a
    checkpoint counts only the epochs trained since; early stopping may end sooner).  When a line
    is due and how elapsed/ETA read is :class:`~noisyor_bench.infra.progress.Progress`'s (one
    home for every progress line); this class adds the losses and the bar.
    ``logger``: the caller's logger (its name is in the job's log lines); ``bar``: whether to
    show the tqdm bar on a terminal.
    """

    def __init__(
        self,
        total: int,
        desc: str,
        interval: float = PROGRESS_INTERVAL_S,
        clock: Callable[[], float] = time.monotonic,
        logger: logging.Logger | None = None,
        bar: bool = True,
    ) -> None:
        self.bar = None
        if bar:
            from tqdm import tqdm

            self.bar = tqdm(total=total, desc=desc, unit="epoch", file=sys.stderr, disable=None, leave=False)
        self.total, self.desc = total, desc
        self.log = _log if logger is None else logger
        self.ticker = Progress(
            desc, total, unit="epochs", interval=interval, logger=self.log, clock=clock, at_most=True
        )
        self._first_epoch: int | None = None

    @property
    def first_epoch(self) -> int | None:
        """The first epoch this process trained (None before the first record)."""
        return self._first_epoch

    @first_epoch.setter
    def first_epoch(self, epoch: int | None) -> None:
        self._first_epoch = epoch
        self.ticker.since = 0 if epoch is None else epoch - 1  # the epochs a checkpoint held

    def eta(self, epoch: int, now: float) -> float | None:
        """Seconds to the epoch limit at this process's mean epoch time (None: unknown)."""
        return None if self.first_epoch is None else self.ticker.eta(epoch, now)

    def __call__(self, record: EpochRecord) -> None:
        val = "-" if record.val_nelbo is None else f"{record.val_nelbo:.4f}"
        if self.bar is not None and not self.bar.disable:
            self.bar.n = min(record.epoch, self.bar.total or record.epoch)
            self.bar.set_postfix(train=f"{record.train_nelbo:.4f}", val=val, refresh=True)
        if self.first_epoch is None:
            self.first_epoch = record.epoch
        now = self.ticker.clock()
        if not self.ticker.due(record.epoch, now):
            return
        self.log.info(
            "%s: epoch %d/%s, train NELBO %.4f, val NELBO %s, %s",
            self.desc,
            record.epoch,
            self.total or "?",
            record.train_nelbo,
            val,
            self.ticker.timing(record.epoch, now),
        )

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


__all__ = ["PROGRESS_INTERVAL_S", "EpochProgress", "duration"]
