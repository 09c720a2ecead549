"""A training longer than a cluster job, run as consecutive jobs (segments), each resuming the last.

Why: a partition's time limit bounds a job, not a training.  A paper-grid training the cost
model puts over its paper's ``max_job_hours`` (APE's naive encoder on the reviews, ACP's Fig. 5
LB-CDI seeds at N_train = 10,000) runs as ``n`` jobs: segments ``0 .. n - 2`` each hand their
exact loop state to the next (rules ``ape_train_segment``, ``train_segment``), and the
last segment is the training job itself, which also evaluates.  Resume is exact, so the
segments end bit-identical to one uninterrupted job.  How a paper cuts a training (by steps
for APE, by fitting time for ACP, whose fits stop early) is the paper's; what is shared lives
here.  Light (no torch): the cost model and the rules read it at DAG time.
"""

from __future__ import annotations

import math

from noisyor_bench.infra.errors import ConfigError

#: A segment cut by fitting time fits for this multiple of its estimate: more than its share
#: (the last segment also evaluates, and a slower machine than the measured one leaves more for
#: it), below its time limit (SAFETY = 2 x the estimate, :mod:`noisyor_bench.experiments.costs`),
#: which also covers the epoch it ends with and the checkpoint it writes.
FILL = 1.5


def count(estimate_seconds: float, max_job_hours: float | None) -> int:
    """Segments of a training estimated at ``estimate_seconds`` on one core: enough that each
    stays under ``max_job_hours`` (None: one, the whole training in one job)."""
    if max_job_hours is None:
        return 1
    if not max_job_hours > 0:
        raise ConfigError(f"max_job_hours must be > 0, got {max_job_hours}")
    return max(1, math.ceil(estimate_seconds / 3600 / float(max_job_hours)))


def segment_stem(stem: str, segment: int, segments: int) -> str:
    """The benchmark stem of segment ``segment``: ``<stem>_segment<k>``; the last one is the
    training job itself (``stem``)."""
    return stem if segment == segments - 1 else f"{stem}_segment{segment}"


def check_segment(segment: int, segments: int, has_previous: bool, last_job: str) -> None:
    """A segment job's place in its training (ConfigError naming what is wrong): 0 .. n - 2 (the
    last segment is the training job, ``last_job``), with ``--previous`` exactly after the first."""
    segment, segments = int(segment), int(segments)
    if not 0 <= segment < segments - 1:
        raise ConfigError(
            f"training segment {segment} of {segments}: a segment job runs 0..{segments - 2}; "
            f"the last segment is the training job ({last_job})"
        )
    if has_previous != (segment > 0):
        raise ConfigError(
            f"training segment {segment}: "
            + (
                "--previous (segment k-1's output) is needed"
                if segment
                else "the first segment has no --previous"
            )
        )


__all__ = ["FILL", "check_segment", "count", "segment_stem"]
