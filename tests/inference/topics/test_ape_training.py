"""Training an APE encoder on random (document, theta) pairs: schedule, seeding, a falling
validation NELBO that approaches per-pair VI, and the convergence record."""

import math

import pytest
import torch

from noisyor_bench.inference.topics.ape_encoders import build_encoder
from noisyor_bench.inference.topics.ape_training import (
    ApeTrainingConfig,
    learning_rate_at,
    total_steps,
    train_encoder,
    validation_nelbo,
)
from noisyor_bench.infra.errors import ConfigError
from noisyor_bench.models.topics.logistic_normal import ape_prior

D = torch.float64


def _data(n_docs=40, n_models=30, k=3, v=12, seed=0):
    """A tiny generator: thetas from Dir(0.3), documents from one of them with sparse proportions."""
    torch.manual_seed(seed)
    thetas = torch.distributions.Dirichlet(torch.full((v,), 0.3, dtype=D)).sample((n_models, k))
    pis = torch.distributions.Dirichlet(torch.full((k,), 0.3, dtype=D)).sample((n_docs,))
    docs = torch.stack([torch.distributions.Multinomial(30, probs=p @ thetas[0]).sample() for p in pis])
    return docs, thetas


def test_schedule_matches_appendix_b2():
    cfg = ApeTrainingConfig()
    assert (cfg.learning_rate, cfg.decay_rate, cfg.decay_steps, cfg.batch_size, cfg.epochs) == (
        0.01,
        0.8,
        50_000,
        100,
        2.0,
    )
    assert learning_rate_at(49_999, cfg) == 0.01
    assert learning_rate_at(50_000, cfg) == pytest.approx(0.008)
    assert learning_rate_at(120_000, cfg) == pytest.approx(0.01 * 0.8**2)
    # 500 documents x 50,000 models, batch 100, two epochs: 500,000 steps
    assert total_steps(500, 50_000, cfg) == 500_000
    assert total_steps(500, 50_000, ApeTrainingConfig(max_steps=7)) == 7
    with pytest.raises(ConfigError, match="batch_size"):
        ApeTrainingConfig(batch_size=0)


def test_training_lowers_the_validation_nelbo_is_seeded_and_records_convergence():
    docs, thetas = _data()
    prior = ape_prior(3, alpha=0.3)
    vx, vt = docs[:20].repeat(2, 1), thetas[-2:].repeat_interleave(20, 0)
    cfg = ApeTrainingConfig(max_steps=240, batch_size=32, eval_every=40, learning_rate=0.01)

    def run(seed):
        enc = build_encoder("model_aware", 12, 3, hidden_units=16, seed=seed, dtype=D)
        before = validation_nelbo(enc, vx, vt, prior, 10, 123)
        result = train_encoder(enc, docs, thetas[:-2], prior, cfg, seed, vx, vt, device="cpu")
        return enc, before, result

    enc, before, result = run(0)
    enc2, _, result2 = run(0)
    assert result.steps == 240 and len(result.records) == 6 and result.stop_reason == "max_epochs"
    vals = [r.val_nelbo for r in result.records]
    assert min(vals) < before - 1.0, (before, vals)
    assert result.convergence.monitored == "val_nelbo" and result.convergence.converged in (True, False)
    assert result.converged == result.convergence.converged
    assert result.best_step == 40 * (1 + vals.index(min(vals)))
    # the restored state is the best one: its validation NELBO is the curve's minimum
    seed_val = __import__("noisyor_bench.inference.seeding", fromlist=["stream_seed"]).stream_seed(
        0, "ape-validation"
    )
    assert validation_nelbo(enc, vx, vt, prior, cfg.val_mc_samples, seed_val) == pytest.approx(min(vals))
    for a, b in zip(enc.state_dict().values(), enc2.state_dict().values()):
        assert torch.equal(a, b)
    assert [r["val_nelbo"] for r in result.history] == [r["val_nelbo"] for r in result2.history]


def test_callable_theta_source_and_early_stopping():
    docs, thetas = _data(n_models=10)
    prior = ape_prior(3, alpha=0.3)
    calls = []

    def source(idx):
        calls.append(idx.clone())
        return thetas[idx]

    enc = build_encoder("naive", 12, 3, hidden_units=8, seed=1, dtype=D)
    cfg = ApeTrainingConfig(max_steps=400, batch_size=8, eval_every=10, patience=2, learning_rate=0.05)
    result = train_encoder(enc, docs, source, prior, cfg, 3, docs[:8], thetas[0], n_models=10, device="cpu")
    assert calls and all(int(c.max()) < 10 for c in calls)
    if result.stop_reason == "patience":
        assert result.convergence.converged is True and result.steps < 400
    assert math.isfinite(result.records[-1].val_nelbo)


@pytest.mark.parametrize("n_models", [1, 7])
def test_a_compact_batch_gathers_each_pairs_model_at_its_documents_words(n_models):
    """The batch's topics are pool[model, k, word] at each document's words in order (padded
    with column 0), the same tensor, contiguous, as indexing the pool with all three indices;
    one model (the standard encoder) takes its own path."""
    from noisyor_bench.inference.topics.ape_training import _compact_batch
    from noisyor_bench.models.topics.logistic_normal import support_columns

    torch.manual_seed(4)
    v, k = 50, 3
    pool = torch.rand(n_models, k, v, dtype=D)
    docs = torch.zeros(12, v, dtype=D)
    for row in range(12):
        docs[row, torch.randperm(v)[: 1 + row % 6]] = torch.randint(1, 4, (1 + row % 6,)).to(D)
    enc = build_encoder("standard", v, k, hidden_units=4, seed=0, dtype=D)
    batch = _compact_batch(enc, docs, pool)
    doc_idx = torch.tensor([3, 0, 11, 3, 7])
    model_idx = torch.randint(0, n_models, (5,))
    features, counts, topics = batch(doc_idx, model_idx)
    columns, expected_counts = support_columns(docs)
    cols = columns[doc_idx]
    assert topics.is_contiguous() and topics.shape == (5, k, cols.shape[1])
    assert torch.equal(
        topics, pool[model_idx[:, None, None], torch.arange(k)[None, :, None], cols[:, None, :]]
    )
    for b, (d, m) in enumerate(zip(doc_idx.tolist(), model_idx.tolist())):
        words = torch.nonzero(docs[d]).flatten()
        assert torch.equal(topics[b, :, : len(words)], pool[m][:, words])
    assert torch.equal(counts, expected_counts[doc_idx]) and torch.equal(features, docs[doc_idx])


@pytest.mark.parametrize("kind", ["model_aware", "standard"])
def test_compact_steps_equal_the_dense_path(kind):
    """Sparse documents over a larger vocabulary: gathering only the documents' words gives
    the same training trajectory as the dense (B, K, V) path."""
    torch.manual_seed(1)
    v, k = 60, 3
    thetas = torch.distributions.Dirichlet(torch.full((v,), 0.3, dtype=D)).sample((6, k))
    docs = torch.zeros(20, v, dtype=D)
    for row in range(20):
        docs[row, torch.randperm(v)[:5]] = torch.randint(1, 4, (5,)).to(D)
    prior = ape_prior(k, alpha=0.3)
    cfg = ApeTrainingConfig(max_steps=15, batch_size=8, eval_every=5)
    results = []
    for compact in (True, False):
        enc = build_encoder(kind, v, k, hidden_units=8, seed=0, dtype=D)
        res = train_encoder(
            enc, docs, thetas, prior, cfg, 2, docs[:6], thetas[0], device="cpu", compact=compact
        )
        results.append((enc, res))
    (a, ra), (b, rb) = results
    for pa, pb in zip(a.state_dict().values(), b.state_dict().values()):
        torch.testing.assert_close(pa, pb)
    assert [r.val_nelbo for r in ra.records] == pytest.approx([r.val_nelbo for r in rb.records], rel=1e-10)
