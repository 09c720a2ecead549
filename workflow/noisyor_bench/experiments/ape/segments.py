"""An encoder training run as consecutive cluster jobs (segments), each resuming the last.

Why: the paper grid's naive encoder on the reviews takes days of one core (1.6 million steps),
past any partition's time limit; a retry that resumes a killed job's checkpoint still asks the
partition for more than it allows.  With ``ape.max_job_hours`` the cost model's estimate of a
training splits it into ``n`` segments of nearly equal steps (:func:`segment_stops`): segment
``k < n - 1`` is rule ``ape_train_segment`` (its output: the loop state at its last step), the
last is rule ``ape_train`` started from segment ``n - 2``'s state.  The segments end bit-identical
to one uninterrupted run (:func:`noisyor_bench.inference.topics.ape_training.train_encoder`).
What every paper's segments share: :mod:`noisyor_bench.experiments.segments`.
Light (no torch): the cost model and the rules read it at DAG time.
"""

from __future__ import annotations

import math

from noisyor_bench.experiments.segments import count, segment_stem
from noisyor_bench.infra.errors import ConfigError


def segment_stops(steps: int, segments: int) -> list[int]:
    """The step each of ``segments`` segments of a ``steps``-step training ends at (the last:
    ``steps``): ``ceil(steps (k + 1) / segments)``; every segment has at least one step."""
    steps, segments = int(steps), int(segments)
    if segments < 1:
        raise ConfigError(f"an APE training runs as at least 1 segment; got {segments}")
    if segments > steps:
        raise ConfigError(f"{segments} segments of a {steps}-step training: at most one per step")
    return [math.ceil(steps * (k + 1) / segments) for k in range(segments)]


__all__ = ["count", "segment_stem", "segment_stops"]
