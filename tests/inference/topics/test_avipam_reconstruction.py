"""The reconstruction of aviPAM, each choice against an independent computation: the
encoder batch-norm without gain (the default), the top-word rule by the decoder weights (a
constructed case where it and the beta ranking differ), the collapse flag, the coherence
plateau, and the Gibbs chains' time limit."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from noisyor_bench.inference.topics import gibbs
from noisyor_bench.inference.topics.avipam import (
    KL_COLLAPSE_NATS,
    AviPamConfig,
    AviPamNet,
    coherence_plateau,
    kl_collapsed,
    topic_ranking,
)
from noisyor_bench.inference.topics.avipam_norm import ShiftedBatchNorm
from noisyor_bench.inference.topics.gibbs import fit_lda_gibbs, train_timed
from noisyor_bench.infra.errors import ConfigError, DataError
from noisyor_bench.models.topics import pam

F64 = {"dtype": "float64", "encoder_dropout": 0.0, "theta_dropout": 0.0, "hidden": (7,)}


def _net(structure: pam.PamStructure, vocab: int = 6, **changes) -> AviPamNet:
    return AviPamNet(structure, vocab, AviPamConfig(**{**F64, **changes}), torch.Generator().manual_seed(0))


def test_default_encoder_norm_is_batchnorm_without_a_scale_parameter() -> None:
    assert AviPamConfig().output_norm == "batchnorm-nogain"
    net = _net(pam.make_structure("pam4", [2, 3]))
    for head in net.heads:
        for norm in (head.mean_norm, head.logvar_norm):
            assert isinstance(norm, ShiftedBatchNorm)
            # the only learnable parameter is the shift: no gain (gamma / weight) anywhere
            assert [name for name, _ in norm.named_parameters()] == ["shift"]
            assert norm.norm.weight is None and not norm.norm.affine
    # the ablation keeps the gain: BatchNorm1d's weight is learnable
    gain = _net(pam.make_structure("pam4", [2, 3]), output_norm="batchnorm")
    assert gain.heads[0].mean_norm.weight is not None and gain.heads[0].mean_norm.weight.requires_grad
    # a unit's output after the no-gain norm in training mode has batch mean = shift and
    # variance var/(var + eps) (no rescaling), computed by hand
    norm = net.heads[0].mean_norm.train()
    with torch.no_grad():
        norm.shift.copy_(torch.tensor([0.5, -1.0], dtype=torch.float64)[: norm.shift.numel()])
    x = torch.tensor([[1.0, 2.0], [3.0, 6.0], [5.0, 1.0]], dtype=torch.float64)[:, : norm.shift.numel()]
    out = norm(x)
    var = x.var(0, unbiased=False)
    expected = (x - x.mean(0)) / torch.sqrt(var + 1e-3) + norm.shift
    assert torch.allclose(out, expected)


def _constructed_net() -> AviPamNet:
    """3 topics over 6 words; word 0 is a background word: a large shared shift (+5) lifts it in
    every topic's probabilities, although its standardised weight is no topic's largest."""
    net = _net(pam.make_structure("lda", [3]))
    weights = torch.tensor(
        [
            [0.0, 3.0, 0.0, 1.0, 0.0, 0.0],
            [0.1, 0.0, 2.0, 0.0, 1.0, 0.0],
            [-0.1, 0.0, 0.0, 0.0, 0.0, 4.0],
        ],
        dtype=torch.float64,
    )
    with torch.no_grad():
        net.topic_logits.copy_(weights)
        net.topic_norm.shift.copy_(torch.tensor([[5.0, 0.0, 0.0, 0.0, 0.0, 0.0]], dtype=torch.float64))
    return net


def test_top_word_rule_ranks_by_the_weights_and_ignores_a_shared_per_word_shift() -> None:
    net = _constructed_net()
    w = net.topic_logits.detach().numpy()
    # independent: standardise each word's column across topics (population variance, eps 1e-3)
    standardised = (w - w.mean(0)) / np.sqrt(w.var(0) + 1e-3)
    by_weights = topic_ranking(net, "weights")
    np.testing.assert_allclose(by_weights, standardised, atol=1e-12)
    top_w = np.argsort(-by_weights, axis=1, kind="stable")[:, 0]
    assert top_w.tolist() == [1, 2, 5]
    # the probabilities put the background word 0 first in topics 0 and 1: the rankings differ
    beta = topic_ranking(net, "beta")
    np.testing.assert_allclose(beta.sum(1), 1.0)
    top_b = np.argsort(-beta, axis=1, kind="stable")[:, 0]
    assert top_b.tolist()[:2] == [0, 0] and top_b.tolist() != top_w.tolist()
    # a different shared shift changes beta's order but not the weights' scores
    with torch.no_grad():
        net.topic_norm.shift.copy_(torch.tensor([[-3.0, 7.0, 0.0, 2.0, 0.0, 1.0]], dtype=torch.float64))
    np.testing.assert_allclose(topic_ranking(net, "weights"), standardised, atol=1e-12)
    assert not np.array_equal(np.argsort(-topic_ranking(net, "beta"), axis=1), np.argsort(-beta, axis=1))
    with pytest.raises(ConfigError, match="top-word rule"):
        topic_ranking(net, "gamma")


def test_top_word_rule_without_topic_batchnorm_is_the_raw_weights_and_molda_blocks_separately() -> None:
    net = _net(pam.make_structure("lda", [3]), topic_bn=False)
    np.testing.assert_array_equal(topic_ranking(net, "weights"), net.topic_logits.detach().numpy())
    molda = _net(pam.make_structure("molda", [2, 3]))
    w = molda.topic_logits.detach().numpy()
    blocks = [w[:2], w[2:]]
    expected = np.concatenate([(b - b.mean(0)) / np.sqrt(b.var(0) + 1e-3) for b in blocks])
    np.testing.assert_allclose(topic_ranking(molda, "weights"), expected, atol=1e-12)


def test_collapse_flag_is_a_kl_below_ten_nats_a_document() -> None:
    assert KL_COLLAPSE_NATS == 10.0
    assert kl_collapsed(6.2) is True  # the gain variant's KL (6-10 nats)
    assert kl_collapsed(59.0) is False  # without the gain
    assert kl_collapsed(10.0) is False and kl_collapsed(9.999) is True
    assert kl_collapsed(None) is None and kl_collapsed(math.nan) is None
    assert kl_collapsed(12.0, threshold=15.0) is True


def test_coherence_plateau_is_the_first_checkpoint_no_later_one_beats_by_tol() -> None:
    epochs = [10, 20, 30, 40, 50, 60, 70]
    # rises to 0.20 by epoch 40, then wobbles within 0.005
    values = [0.10, 0.15, 0.185, 0.200, 0.204, 0.199, 0.203]
    assert coherence_plateau(epochs, values, 0.01) == 40  # 0.204 - 0.185 = 0.019 >= tol at 30
    assert coherence_plateau(epochs, values, 0.02) == 30
    # a flat stretch must follow: 3 checkpoints by default, here only 2 after epoch 50
    assert coherence_plateau(epochs[:6], values[:6], 0.01, min_after=3) is None
    assert coherence_plateau(epochs[:6], values[:6], 0.01, min_after=2) == 40
    # a peak then a decline: the peak's neighbourhood is the plateau (no later gain)
    assert coherence_plateau([10, 20, 30, 40, 50], [0.1, 0.2, 0.15, 0.12, 0.11], 0.01, min_after=1) == 20
    # still rising at the end: no plateau
    assert coherence_plateau([10, 20, 30, 40, 50], [0.1, 0.2, 0.3, 0.4, 0.5], 0.01) is None
    assert coherence_plateau([10], [0.1], 0.01) is None
    with pytest.raises(DataError, match="epochs"):
        coherence_plateau([10, 20], [0.1], 0.01)


def _corpus() -> np.ndarray:
    rng = np.random.default_rng(0)
    topics = np.zeros((2, 20))
    topics[0, :10] = 0.1
    topics[1, 10:] = 0.1
    return np.stack([rng.multinomial(40, rng.dirichlet([0.2, 0.2]) @ topics) for _ in range(60)])


def test_gibbs_chain_stops_at_its_time_limit_after_a_whole_chunk() -> None:
    # a limit of 0 s is reached by the first chunk: the chain stops there, reason "time"
    fit = fit_lda_gibbs(_corpus(), 2, 0.1, 0.01, iterations=100, seed=1, trace_interval=5, max_seconds=0.0)
    assert fit.stop_reason == "time" and fit.sweeps == 5 and len(fit.trace) == 1
    # a limit never reached: every sweep
    full = fit_lda_gibbs(_corpus(), 2, 0.1, 0.01, iterations=20, seed=1, trace_interval=5, max_seconds=1e6)
    assert full.stop_reason == "max_epochs" and full.sweeps == 20
    # the stopped chain is the first chunk of the full one (same seed)
    assert full.trace[0][1] == fit.trace[0][1]


def test_train_timed_counts_training_seconds_against_the_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = [0.0]

    class Clocked:
        """A stand-in model whose every train call takes 1 s of (fake) time."""

        global_step, ll_per_word = 0, -1.0

        def train(self, n: int, workers: int, parallel: object) -> None:
            self.global_step += n
            clock[0] += 1.0

    monkeypatch.setattr(gibbs.time, "perf_counter", lambda: clock[0])
    run = train_timed(Clocked(), 50, 1, trace_interval=10, max_seconds=2.5)
    # after chunks 1, 2 (2 s < 2.5) it goes on; after chunk 3 (3 s) it stops
    assert run.stop_reason == "time" and run.sweeps == 30 and run.seconds == 3.0


def test_avipam_time_limit_stops_after_the_first_epoch_past_it() -> None:
    from noisyor_bench.inference.topics.avipam import config_from_mapping, fit_avipam

    counts = _corpus()[:40]
    structure = pam.make_structure("lda", [2])
    config = AviPamConfig(**{**F64, "batch_size": 10, "max_epochs": 5, "patience": 5, "max_minutes": 1e-9})
    fit = fit_avipam(counts, None, structure, config, seed=0)
    assert fit.time_limited and len(fit.history) == 1 and fit.summary()["time_limited"] is True
    free = fit_avipam(
        counts, None, structure, AviPamConfig(**{**F64, "batch_size": 10, "max_epochs": 3}), seed=0
    )
    assert not free.time_limited and len(free.history) == 3
    with pytest.raises(ConfigError, match="max_minutes"):
        config_from_mapping({"max_minutes": 0})
