"""APE training resumes from its checkpoint: a run interrupted after a checkpoint and started
again ends bit-identical to an uninterrupted one, on the large-pool path (models drawn per step)."""

import pytest
from apetiny import CFG, assert_same_training, train_tiny

from noisyor_bench.inference.training import load_checkpoint


class Interrupted(Exception):
    """Stands for the kill at a wall-time limit."""


def _train(kind, checkpoint=None, stop_at=None, every=None, fingerprint=None):
    def progress(row):
        if stop_at is not None and row["step"] == stop_at:
            raise Interrupted

    return train_tiny(
        kind, progress=progress, checkpoint_path=checkpoint, checkpoint_every=every, fingerprint=fingerprint
    )


@pytest.mark.parametrize("kind", ["model_aware", "naive"])
def test_interrupted_training_resumes_bit_identical(tmp_path, kind):
    whole = _train(kind)
    checkpoint = tmp_path / "checkpoint.pt"
    with pytest.raises(Interrupted):
        _train(kind, checkpoint, stop_at=24, every=4)  # killed at step 24, last checkpoint at step 20
    saved = load_checkpoint(checkpoint)
    assert saved["loop"]["step"] == 20 and len(saved["records"]) == 3
    resumed = _train(kind, checkpoint, every=4)
    assert_same_training(whole, resumed)
    assert sum(len(d) for d in resumed[2]) == 10 * CFG.batch_size  # only steps 21-30 were trained again


def test_a_checkpoint_of_another_configuration_is_not_resumed(tmp_path):
    """A stale checkpoint (another dataset or method, here its fingerprint) is removed: the run
    starts afresh and ends as an uninterrupted one."""
    checkpoint = tmp_path / "checkpoint.pt"
    with pytest.raises(Interrupted):
        _train("model_aware", checkpoint, stop_at=24, every=4, fingerprint={"dataset": "a"})
    fresh = _train("model_aware", checkpoint, every=100, fingerprint={"dataset": "b"})
    assert sum(len(d) for d in fresh[2]) == CFG.max_steps * CFG.batch_size
    assert_same_training(_train("model_aware"), fresh)
