"""APE training resumes from its checkpoint: a run interrupted after a checkpoint and started
again ends bit-identical to an uninterrupted one, on the large-pool path (models drawn per step)."""

import pytest
import torch

from noisyor_bench.inference.topics.ape_encoders import build_encoder
from noisyor_bench.inference.topics.ape_training import ApeTrainingConfig, train_encoder
from noisyor_bench.inference.training import load_checkpoint
from noisyor_bench.models.topics.logistic_normal import ape_prior

D = torch.float64
CFG = ApeTrainingConfig(max_steps=30, batch_size=8, eval_every=6, learning_rate=0.05)


class Interrupted(Exception):
    """Stands for the kill at a wall-time limit."""


def _data():
    """The same tiny pool and documents on every call (the global generator seeded first)."""
    torch.manual_seed(5)
    thetas = torch.distributions.Dirichlet(torch.full((12,), 0.3, dtype=D)).sample((10, 3))
    docs = torch.randint(0, 4, (24, 12)).to(D)
    return docs, thetas


def _train(kind, checkpoint=None, stop_at=None, every=None, fingerprint=None):
    docs, thetas = _data()
    draws = []

    def source(idx):  # the large-pool path: each step draws its models
        draws.append(idx.clone())
        return thetas[idx]

    def progress(row):
        if stop_at is not None and row["step"] == stop_at:
            raise Interrupted

    enc = build_encoder(kind, 12, 3, hidden_units=8, seed=2, dtype=D)
    result = train_encoder(
        enc, docs, source, ape_prior(3, alpha=0.3), CFG, 7, docs[:6], thetas[0], n_models=10,
        device="cpu", progress=progress, checkpoint_path=checkpoint, checkpoint_every=every,
        fingerprint=fingerprint,
    )  # fmt: skip
    return enc, result, draws


def _same(a, b):
    (enc_a, res_a, _), (enc_b, res_b, _) = a, b
    for (name, x), y in zip(enc_a.state_dict().items(), enc_b.state_dict().values(), strict=True):
        assert torch.equal(x, y), name
    strip = [{k: v for k, v in r.items() if k != "elapsed_seconds"} for r in res_a.history]
    assert strip == [{k: v for k, v in r.items() if k != "elapsed_seconds"} for r in res_b.history]
    assert [r.val_nelbo for r in res_a.records] == [r.val_nelbo for r in res_b.records]
    assert (res_a.steps, res_a.best_step, res_a.stop_reason) == (
        res_b.steps,
        res_b.best_step,
        res_b.stop_reason,
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
    _same(whole, resumed)
    assert sum(len(d) for d in resumed[2]) == 10 * CFG.batch_size  # only steps 21-30 were trained again


def test_a_checkpoint_of_another_configuration_is_not_resumed(tmp_path):
    """A stale checkpoint (another dataset or method, here its fingerprint) is removed: the run
    starts afresh and ends as an uninterrupted one."""
    checkpoint = tmp_path / "checkpoint.pt"
    with pytest.raises(Interrupted):
        _train("model_aware", checkpoint, stop_at=24, every=4, fingerprint={"dataset": "a"})
    fresh = _train("model_aware", checkpoint, every=100, fingerprint={"dataset": "b"})
    assert sum(len(d) for d in fresh[2]) == CFG.max_steps * CFG.batch_size
    _same(_train("model_aware"), fresh)
