"""A tiny APE training on the large-pool path, shared by the resume and segment tests.

Ten models of K = 3 topics over 12 words and 24 documents, the same on every call (the global
generator is seeded first), trained through a callable source so that every model a step draws
is counted: a resumed training that retrains a step shows it in the draws."""

from __future__ import annotations

import torch

from noisyor_bench.inference.topics.ape_encoders import build_encoder
from noisyor_bench.inference.topics.ape_training import ApeTrainingConfig, train_encoder
from noisyor_bench.models.topics.logistic_normal import ape_prior

D = torch.float64
CFG = ApeTrainingConfig(max_steps=30, batch_size=8, eval_every=6, learning_rate=0.05)


def train_tiny(kind: str, cfg: ApeTrainingConfig = CFG, progress=None, **options):
    """(encoder, result, the index tensors the steps drew) of ``kind``'s training; ``options``
    go to :func:`train_encoder` (checkpoint_path, checkpoint_every, fingerprint, resume_from,
    stop_at)."""
    torch.manual_seed(5)
    thetas = torch.distributions.Dirichlet(torch.full((12,), 0.3, dtype=D)).sample((10, 3))
    docs = torch.randint(0, 4, (24, 12)).to(D)
    draws = []

    def source(idx):
        draws.append(idx.clone())
        return thetas[idx]

    enc = build_encoder(kind, 12, 3, hidden_units=8, seed=2, dtype=D)
    result = train_encoder(
        enc, docs, source, ape_prior(3, alpha=0.3), cfg, 7, docs[:6], thetas[0], n_models=10,
        device="cpu", progress=progress, **options,
    )  # fmt: skip
    return enc, result, draws


def assert_same_training(a, b) -> None:
    """Two trainings (``train_tiny``'s triples) ended bit-identical: parameters, history apart
    from wall time, validation records, steps, best step, stop reason and convergence."""
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
    assert res_a.convergence.as_dict() == res_b.convergence.as_dict()
