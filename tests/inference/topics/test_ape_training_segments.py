"""APE training as consecutive jobs (segments): each job trains its share of the steps from the
previous job's saved state; together they end bit-identical to one uninterrupted run, also when
a segment is killed and retried, and when early stopping ends the training inside a segment."""

import dataclasses

import pytest
from apetiny import CFG, assert_same_training, train_tiny

from noisyor_bench.experiments.ape.segments import count, segment_stem, segment_stops
from noisyor_bench.inference.training import load_checkpoint
from noisyor_bench.infra.errors import ConfigError


class Killed(Exception):
    """Stands for a job killed at its wall-time limit."""


def _run(kind, cfg=CFG, checkpoint=None, resume_from=None, stop_at=None, kill_at=None, fingerprint=None):
    """train_tiny's encoder and result, and the steps it trained (its draws / the batch size)."""

    def progress(row):
        if kill_at is not None and row["step"] == kill_at:
            raise Killed

    enc, result, draws = train_tiny(
        kind, cfg, progress, checkpoint_path=checkpoint, checkpoint_every=4, fingerprint=fingerprint,
        resume_from=resume_from, stop_at=stop_at,
    )  # fmt: skip
    return enc, result, sum(len(d) for d in draws) // cfg.batch_size


def _segments(kind, tmp_path, n, cfg=CFG, kill=None):
    """The training as ``n`` jobs (segment k's output: tmp_path/segment<k>.pt; the last job
    the whole run's); ``kill``: (segment, step) killed once first, then retried."""
    stops = segment_stops(cfg.max_steps, n)
    previous, steps = None, []
    for k, stop in enumerate(stops):
        last = k == n - 1
        work = tmp_path / ("final.pt" if last else f"segment{k}.pt.partial")
        if kill is not None and kill[0] == k:
            with pytest.raises(Killed):
                _run(kind, cfg, work, previous, None if last else stop, kill_at=kill[1])
        out = _run(kind, cfg, work, previous, None if last else stop)
        steps.append(out[2])
        if not last:
            assert out[1].stop_reason == "paused" and out[1].steps <= stop
            previous = tmp_path / f"segment{k}.pt"
            work.replace(previous)
    return out, steps


@pytest.mark.parametrize("kind", ["model_aware", "naive"])
def test_three_segments_end_bit_identical_to_one_run(tmp_path, kind):
    whole = _run(kind)
    segmented, steps = _segments(kind, tmp_path, 3)
    assert_same_training(whole, segmented)
    assert steps == [10, 10, 10]  # each job trained its own share only


def test_a_killed_segment_resumes_its_own_checkpoint_not_the_previous_segments(tmp_path):
    whole = _run("model_aware")
    # segment 1 of 3 (steps 11-20) killed at step 18, its last checkpoint at step 16
    segmented, steps = _segments("model_aware", tmp_path, 3, kill=(1, 18))
    assert_same_training(whole, segmented)
    assert steps == [10, 4, 10]  # the retry trained steps 17-20


def test_early_stopping_inside_a_segment_carries_through_the_later_ones(tmp_path):
    cfg = dataclasses.replace(CFG, max_steps=60, patience=1, learning_rate=0.5)
    whole = _run("model_aware", cfg)
    assert whole[1].stop_reason == "patience" and whole[1].steps < 40
    segmented, steps = _segments("model_aware", tmp_path, 3, cfg)
    assert_same_training(whole, segmented)
    assert steps[1:] == [0, 0]
    assert load_checkpoint(tmp_path / "segment1.pt")["loop"]["stopped"] is True


def test_a_previous_segment_of_another_configuration_is_an_error_not_a_fresh_start(tmp_path):
    work = tmp_path / "segment0.pt"
    _run("model_aware", checkpoint=work, stop_at=10, fingerprint={"dataset_sha256": "a"})
    with pytest.raises(ConfigError):
        _run(
            "model_aware",
            checkpoint=tmp_path / "final.pt",
            resume_from=work,
            fingerprint={"dataset_sha256": "b"},
        )


def test_a_pause_needs_somewhere_to_write_and_a_step_of_the_run():
    with pytest.raises(ConfigError, match="checkpoint_path"):
        _run("model_aware", stop_at=10)
    with pytest.raises(ConfigError, match="stop_at"):
        _run("model_aware", checkpoint=None, stop_at=31)


def test_segment_stops_cover_the_steps_in_nearly_equal_shares():
    assert segment_stops(30, 3) == [10, 20, 30]
    assert segment_stops(10, 3) == [4, 7, 10]
    assert segment_stops(1_585_000, 14)[-1] == 1_585_000
    shares = [
        b - a for a, b in zip([0, *segment_stops(1_585_000, 14)], segment_stops(1_585_000, 14), strict=False)
    ]
    assert max(shares) - min(shares) <= 1
    with pytest.raises(ConfigError):
        segment_stops(3, 4)
    assert (
        segment_stem("mdreviews_ape-naive_n50000_seed0", 2, 5) == "mdreviews_ape-naive_n50000_seed0_segment2"
    )
    assert segment_stem("mdreviews_ape-naive_n50000_seed0", 4, 5) == "mdreviews_ape-naive_n50000_seed0"
    assert count(84 * 3600, 6) == 14 and count(5 * 3600, 6) == 1 and count(10.0, None) == 1
