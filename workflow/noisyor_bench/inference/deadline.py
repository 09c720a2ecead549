"""A fit that pauses at an epoch boundary once its time is used, leaving an exact checkpoint.

Why: one seed's training can take longer than a cluster partition allows (the paper grid's
Fig. 5 LB-CDI at N_train = 10,000).  Such a training runs as several jobs, *segments*
(:mod:`noisyor_bench.experiments.segments`): each one fits for its share of time inside
:func:`pause_after`, and the next one resumes the checkpoint it leaves.  The fit loops
(:class:`~noisyor_bench.inference.training.Trainer` and
:class:`~noisyor_bench.inference.noisyor.fitloop.FitLoop`) ask :func:`due` after every epoch; when
it holds and the fit is not finished, they write the checkpoint (whatever their rule for
skipping costly writes) and raise :class:`Paused`.  Resume is exact, so the numbers never depend
on where a fit paused, only the segments' lengths do.

Only fits with a checkpoint pause: a fit without one has nothing to hand over, and the inner
fits of an evaluation (run outside :func:`pause_after`) never see a deadline.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager

_deadline: float | None = None  # time.monotonic() after which a checkpointed fit pauses


class Paused(Exception):
    """A fit stopped at the end of ``epoch`` because its time was used; its checkpoint is exact."""

    def __init__(self, epoch: int) -> None:
        super().__init__(
            f"paused after epoch {epoch}: the segment's time is used (its checkpoint is written)"
        )
        self.epoch = int(epoch)


@contextmanager
def pause_after(seconds: float) -> Iterator[None]:
    """Checkpointed fits inside pause at the first epoch end ``seconds`` from now (0: after the
    first epoch)."""
    global _deadline
    if not seconds >= 0:
        raise ValueError(f"a segment's fitting time must be >= 0 seconds, got {seconds!r}")
    previous, _deadline = _deadline, time.monotonic() + float(seconds)
    try:
        yield
    finally:
        _deadline = previous


def due() -> bool:
    """Whether a checkpointed fit should pause at this epoch end."""
    return _deadline is not None and time.monotonic() >= _deadline


__all__ = ["Paused", "due", "pause_after"]
