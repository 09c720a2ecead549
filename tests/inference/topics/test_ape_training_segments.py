"""APE training as consecutive jobs (segments): each job trains its share of the steps from the
previous job's saved state; together they end bit-identical to one uninterrupted run, also when
a segment is killed and retried, and when early stopping ends the training inside a segment."""

import dataclasses

import pytest
import torch

from noisyor_bench.experiments.ape.segments import count, segment_stem, segment_stops
from noisyor_bench.inference.topics.ape_encoders import build_encoder
from noisyor_bench.inference.topics.ape_training import ApeTrainingConfig, train_encoder
from noisyor_bench.inference.training import load_checkpoint
from noisyor_bench.infra.errors import ConfigError

D = torch.float64
CFG = ApeTrainingConfig(max_steps=30, batch_size=8, eval_every=6, learning_rate=0.05)


class Killed(Exception):
    """Stands for a job killed at its wall-time limit."""


def _run(kind, cfg=CFG, checkpoint=None, resume_from=None, stop_at=None, kill_at=None, fingerprint=None):
    torch.manual_seed(5)
    thetas = torch.distributions.Dirichlet(torch.full((12,), 0.3, dtype=D)).sample((10, 3))
    docs = torch.randint(0, 4, (24, 12)).to(D)
    draws = []

    def source(idx):  # the large-pool path (a callable source): each step's models counted
        draws.append(idx.clone())
        return thetas[idx]

    def progress(row):
        if kill_at is not None and row["step"] == kill_at:
            raise Killed

    from noisyor_bench.models.topics.logistic_normal import ape_prior

    enc = build_encoder(kind, 12, 3, hidden_units=8, seed=2, dtype=D)
    result = train_encoder(
        enc, docs, source, ape_prior(3, alpha=0.3), cfg, 7, docs[:6], thetas[0], n_models=10,
        device="cpu", progress=progress, checkpoint_path=checkpoint, checkpoint_every=4,
        fingerprint=fingerprint, resume_from=resume_from, stop_at=stop_at,
    )  # fmt: skip
    return enc, result, sum(len(d) for d in draws) // cfg.batch_size


def _same(a, b):
    (enc_a, res_a, _), (enc_b, res_b, _) = a, b
    for (name, x), y in zip(enc_a.state_dict().items(), enc_b.state_dict().values(), strict=True):
        assert torch.equal(x, y), name
    strip = [{k: v for k, v in r.items() if k != "elapsed_seconds"} for r in res_a.history]
    assert strip == [{k: v for k, v in r.items() if k != "elapsed_seconds"} for r in res_b.history]
    assert (res_a.steps, res_a.best_step, res_a.stop_reason) == (
        res_b.steps,
        res_b.best_step,
        res_b.stop_reason,
    )
    assert res_a.convergence.as_dict() == res_b.convergence.as_dict()


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
    _same(whole, segmented)
    assert steps == [10, 10, 10]  # each job trained its own share only


def test_a_killed_segment_resumes_its_own_checkpoint_not_the_previous_segments(tmp_path):
    whole = _run("model_aware")
    # segment 1 of 3 (steps 11-20) killed at step 18, its last checkpoint at step 16
    segmented, steps = _segments("model_aware", tmp_path, 3, kill=(1, 18))
    _same(whole, segmented)
    assert steps == [10, 4, 10]  # the retry trained steps 17-20


def test_early_stopping_inside_a_segment_carries_through_the_later_ones(tmp_path):
    cfg = dataclasses.replace(CFG, max_steps=60, patience=1, learning_rate=0.5)
    whole = _run("model_aware", cfg)
    assert whole[1].stop_reason == "patience" and whole[1].steps < 40
    segmented, steps = _segments("model_aware", tmp_path, 3, cfg)
    _same(whole, segmented)
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
