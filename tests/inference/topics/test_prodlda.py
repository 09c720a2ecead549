"""ProdLDA / NVLDA as AVITM trains them (the calibration rows of aviPAM Table 1): the
pieces against independent computations (torch.distributions' KL, AVITM's prior formula with a
vector alpha, batch-norm by hand), the config against AVITM's command lines, and a small
recovery run (two topics on disjoint words)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
import torch

from noisyor_bench.inference.topics import prodlda
from noisyor_bench.infra.errors import ConfigError, DataError


def test_laplace_prior_is_avitms_formula() -> None:
    """AVITM: a = alpha * ones(K); mu2 = log a - mean(log a); var2 = (1/a)(1 - 2/K) + sum(1/a)/K^2."""
    for k, alpha in [(50, 1.0), (7, 0.3)]:
        a = np.full(k, alpha)
        mu2 = np.log(a) - np.log(a).mean()
        var2 = (1.0 / a) * (1 - 2.0 / k) + (1.0 / (k * k)) * np.sum(1.0 / a)
        mean, var = prodlda.laplace_prior(k, alpha)
        assert mean == pytest.approx(mu2[0], abs=1e-15) and var == pytest.approx(var2[0], rel=1e-12)
    assert prodlda.laplace_prior(50, 1.0)[1] == pytest.approx(1 - 1 / 50)


def test_kl_equals_torch_distributions() -> None:
    g = torch.Generator().manual_seed(0)
    mu, logvar = (
        torch.randn(4, 5, generator=g, dtype=torch.float64),
        torch.randn(4, 5, generator=g, dtype=torch.float64),
    )
    pm, pv = torch.full((5,), 0.3, dtype=torch.float64), torch.full((5,), 0.8, dtype=torch.float64)
    q = torch.distributions.Normal(mu, torch.exp(0.5 * logvar))
    p = torch.distributions.Normal(pm, pv.sqrt())
    expected = torch.distributions.kl_divergence(q, p).sum(1)
    assert torch.allclose(prodlda.kl_to_prior(mu, logvar, pm, pv), expected, rtol=1e-12)


def test_batch_norm_has_a_shift_and_no_gain() -> None:
    bn = prodlda.CenteredBatchNorm(3)
    assert [name for name, _ in bn.named_parameters()] == ["beta"]
    with torch.no_grad():
        bn.beta.copy_(torch.tensor([0.5, -1.0, 2.0]))
    x = torch.tensor([[1.0, 2.0, 3.0], [3.0, 2.5, -1.0], [0.0, 7.0, 4.0], [2.0, 1.0, 1.0]])
    xn = x.numpy()
    expected = (xn - xn.mean(0)) / np.sqrt(xn.var(0) + prodlda.BN_EPS) + np.array([0.5, -1.0, 2.0])
    assert np.allclose(bn(x).detach().numpy(), expected, atol=1e-6)


def test_config_is_avitms_command_lines() -> None:
    p = prodlda.config_from_mapping({})
    assert (p.decoder, p.topics, p.hidden, p.lr, p.beta1, p.batch_size, p.epochs, p.keep_prob, p.alpha) == (
        "prodlda",
        50,
        (100, 100),
        0.002,
        0.99,
        200,
        200,
        0.4,
        1.0,
    )
    n = prodlda.config_from_mapping({"decoder": "nvlda"})
    assert (n.lr, n.epochs, n.keep_prob) == (0.005, 300, 0.75)
    assert prodlda.config_from_mapping({"epochs": 3, "hidden": [8, 4]}).hidden == (8, 4)
    with pytest.raises(ConfigError, match="unknown keys"):
        prodlda.config_from_mapping({"epoch": 3})
    with pytest.raises(ConfigError, match="decoder"):
        prodlda.config_from_mapping({"decoder": "lda"})
    with pytest.raises(ConfigError, match="epochs"):
        prodlda.config_from_mapping({"epochs": 0})


def two_topic_corpus(n_docs: int = 300, seed: int = 0) -> sp.csr_matrix:
    """Half the documents draw 30 tokens from words 0-4, half from words 5-9."""
    rng = np.random.default_rng(seed)
    x = np.zeros((n_docs, 10))
    for d in range(n_docs):
        words = np.arange(5) + (5 if d % 2 else 0)
        x[d] = np.bincount(rng.choice(words, size=30), minlength=10)
    return sp.csr_matrix(x)


def test_prodlda_recovers_two_disjoint_topics_and_is_seeded() -> None:
    counts = two_topic_corpus()
    config = prodlda.config_from_mapping(
        {"topics": 2, "hidden": [10, 10], "batch_size": 50, "epochs": 60, "keep_prob": 1.0, "lr": 0.01}
    )
    fit = prodlda.fit_prodlda(counts, config, seed=3)
    assert fit.weights.shape == (2, 10) and len(fit.history) == 60
    assert np.allclose(fit.topic_word.sum(axis=1), 1.0)
    # topic_word ranks words as the decoder weights do (AVITM's print_top_words)
    assert (np.argsort(-fit.topic_word, axis=1) == np.argsort(-fit.weights, axis=1)).all()
    tops = sorted(tuple(sorted(np.argsort(-row)[:5].tolist())) for row in fit.weights)
    assert tops == [(0, 1, 2, 3, 4), (5, 6, 7, 8, 9)]
    assert fit.history[-1].train_nelbo < fit.history[0].train_nelbo
    again = prodlda.fit_prodlda(counts, config, seed=3)
    assert np.array_equal(again.weights, fit.weights)
    assert not np.array_equal(prodlda.fit_prodlda(counts, config, seed=4).weights, fit.weights)


def test_bad_counts_are_refused() -> None:
    with pytest.raises(DataError, match="non-negative"):
        prodlda.fit_prodlda(np.array([[1.0, -1.0]]), prodlda.config_from_mapping({"topics": 2, "epochs": 1}))
    with pytest.raises(DataError, match="non-empty"):
        prodlda.fit_prodlda(np.zeros((0, 3)), prodlda.config_from_mapping({"topics": 2, "epochs": 1}))


def test_nvlda_decoder_is_a_mixture_of_normalised_topics() -> None:
    """NVLDA's word probabilities are theta @ softmax(BN(W)): rows of a convex combination of
    distributions, so they sum to one for any theta (no dropout: keep 1)."""
    config = prodlda.config_from_mapping(
        {"decoder": "nvlda", "topics": 3, "hidden": [4, 4], "keep_prob": 1.0}
    )
    net = prodlda.ProdLdaNet(6, config, torch.Generator().manual_seed(0))
    beta = torch.softmax(net.bn_decoder(net.weights), dim=1)
    assert torch.allclose(beta.sum(1), torch.ones(3))
    w = net.weights.detach().numpy()
    manual = (w - w.mean(0)) / np.sqrt(w.var(0) + prodlda.BN_EPS)  # BN over the K rows, shift 0
    expected = np.exp(manual) / np.exp(manual).sum(1, keepdims=True)
    assert np.allclose(beta.detach().numpy(), expected, atol=1e-6)
    fit = prodlda.fit_prodlda(
        two_topic_corpus(40),
        prodlda.config_from_mapping(
            {"decoder": "nvlda", "topics": 3, "hidden": [4, 4], "batch_size": 20, "epochs": 2}
        ),
        seed=1,
    )
    assert fit.weights.shape == (3, 10) and np.isfinite(fit.weights).all()


def test_cost_model_epochs_are_avitms() -> None:
    from noisyor_bench.experiments.avipam.costs import AVITM_EPOCHS

    assert AVITM_EPOCHS == {name: config.epochs for name, config in prodlda.AVITM.items()}


@pytest.mark.parametrize("decoder", prodlda.DECODERS)
def test_the_loss_on_the_non_zero_counts_equals_the_dense_loss_with_its_gradients(decoder) -> None:
    """A CSR minibatch (the fit's path on the text corpora) against the dense formula, float64:
    the same dropout and draws from one seed, the same loss, KL and gradient of every weight."""
    from noisyor_bench.models.topics.counts import CountRows

    counts = two_topic_corpus(12).toarray()
    counts[3] = 0.0  # an empty document
    config = prodlda.config_from_mapping({"decoder": decoder, "topics": 3, "hidden": [5, 4]})
    net = prodlda.ProdLdaNet(counts.shape[1], config, torch.Generator().manual_seed(0)).double()
    rows = torch.tensor([5, 3, 0, 11, 7])
    results = []
    for density in (1.0, 0.0):
        batch = CountRows.of(counts, torch.float64, "cpu", max_density=density).take(rows)
        net.zero_grad()
        loss, kl = net.loss(batch, torch.Generator().manual_seed(4))
        loss.backward()
        results.append((loss.detach(), kl.detach(), {n: p.grad.clone() for n, p in net.named_parameters()}))
    (loss_s, kl_s, grads_s), (loss_d, kl_d, grads_d) = results
    torch.testing.assert_close(loss_s, loss_d, rtol=1e-12, atol=0)
    torch.testing.assert_close(kl_s, kl_d, rtol=1e-12, atol=0)
    for name, grad in grads_d.items():
        torch.testing.assert_close(grads_s[name], grad, rtol=1e-10, atol=1e-12, msg=name)
