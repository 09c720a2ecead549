"""aviPAM's ELBO, KL per dimension, normalisations, training and seeding, each against an
independent computation (torch.distributions, Monte Carlo, explicit softmaxes, a known model)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch.distributions import MultivariateNormal, Normal, kl_divergence

from noisyor_bench.inference.convergence import RULES
from noisyor_bench.inference.topics.avipam import (
    AviPamConfig,
    AviPamNet,
    collapsed_dimensions,
    config_from_mapping,
    evaluate,
    fit_avipam,
    kl_per_dimension,
    posterior_proportions,
    with_overrides,
)
from noisyor_bench.inference.topics.avipam_norm import L2GainNorm, TopicBatchNorm, output_norm
from noisyor_bench.infra.errors import ConfigError, DataError
from noisyor_bench.models.topics import pam

F64 = {"dtype": "float64", "encoder_dropout": 0.0, "theta_dropout": 0.0, "hidden": (7,)}


def _net(structure: pam.PamStructure, vocab: int = 9, **changes) -> AviPamNet:
    config = AviPamConfig(**{**F64, **changes})
    net = AviPamNet(structure, vocab, config, torch.Generator().manual_seed(0))
    net.eval()
    return net


def _counts(n_docs: int = 3, vocab: int = 9, seed: int = 1) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, 5, (n_docs, vocab), generator=g).double()


def _word_probs(structure: pam.PamStructure, latents: list[torch.Tensor], beta: torch.Tensor) -> torch.Tensor:
    """Explicit softmaxes and einsums per structure (no masks, no batched matmul)."""
    if structure.kind in ("lda", "ctm"):
        return torch.softmax(latents[0], -1) @ beta
    if structure.kind == "pam4":
        s = structure.levels[0].n_children
        root = torch.softmax(latents[0], -1)
        sup = torch.softmax(latents[1].reshape(*latents[1].shape[:-1], s, -1), -1)
        return torch.einsum("...s,...sk,kv->...v", root, sup, beta)
    if structure.kind == "pam5":
        r, s = structure.levels[0].n_children, structure.levels[1].n_children
        top = torch.softmax(latents[0], -1)
        mid = torch.softmax(latents[1].reshape(*latents[1].shape[:-1], r, s), -1)
        sup = torch.softmax(latents[2].reshape(*latents[2].shape[:-1], s, -1), -1)
        return torch.einsum("...r,...rs,...sk,kv->...v", top, mid, sup, beta)
    if structure.kind == "molda":
        pi = torch.softmax(latents[0], -1)
        out, start = 0.0, 0
        for m, k in enumerate(structure.topic_blocks):
            theta_m = torch.softmax(latents[1][..., start : start + k], -1)
            out = out + pi[..., m : m + 1] * (theta_m @ beta[start : start + k])
            start += k
        return out
    raise AssertionError(structure.kind)


@pytest.mark.parametrize(
    "structure",
    [
        pam.pam4_structure(2, 3),
        pam.pam5_structure(2, 3, 4),
        pam.molda_structure((2, 3)),
        pam.ctm_structure(3),
    ],
    ids=["pam4", "pam5", "molda", "ctm"],
)
def test_elbo_matches_monte_carlo_of_its_definition(structure):
    """ELBO = E_q[log p(w | h) + log p(h) - log q(h)], the expectation by 20,000 draws of
    torch.distributions; the net's own estimate (its draws, closed-form KL) must agree within
    5 combined standard errors."""
    net = _net(structure)
    if structure.kind == "ctm":
        with torch.no_grad():
            net.ctm_prior.off_diag.normal_(generator=torch.Generator().manual_seed(3), std=0.3)
            net.ctm_prior.mean.normal_(generator=torch.Generator().manual_seed(4), std=0.3)
    x = _counts()
    n = 20000
    with torch.no_grad():
        posterior = net.encode(x)
        beta = net.topic_word()
        draws, log_q, log_p = [], 0.0, 0.0
        for level, (mean, logvar) in enumerate(posterior):
            q = Normal(mean, torch.exp(0.5 * logvar))
            h = q.sample((n,))  # (n, B, D)
            draws.append(h)
            log_q = log_q + q.log_prob(h).sum(-1)
            if net.ctm_prior is not None:
                prior = MultivariateNormal(net.ctm_prior.mean, covariance_matrix=net.ctm_prior.covariance())
                log_p = log_p + prior.log_prob(h)
            else:
                p_mean, p_var = net.prior(level)
                log_p = log_p + Normal(p_mean, p_var.sqrt()).log_prob(h).sum(-1)
        probs = _word_probs(structure, draws, beta)
        log_lik = (x * torch.log(probs + pam.LOG_FLOOR)).sum(-1)
        samples = log_lik + log_p - log_q  # (n, B)
        mc, mc_se = samples.mean(0), samples.std(0) / n**0.5
        terms = net.elbo_terms(x, n, torch.Generator().manual_seed(9))
        # the net's estimate: its log-likelihood average over n draws (SE ~ that of log_lik)
        net_se = log_lik.std(0) / n**0.5
    elbo = terms.loglik - terms.kl
    np.testing.assert_array_less((elbo - mc).abs().numpy(), (5 * (mc_se + net_se)).numpy())
    # the closed-form KL against the Monte Carlo KL of the same definition
    np.testing.assert_allclose(
        terms.kl.numpy(),
        (log_q - log_p).mean(0).numpy(),
        atol=float(5 * (log_q - log_p).std(0).max()) / n**0.5,
    )


def test_kl_per_dimension_matches_torch_distributions():
    structure = pam.pam4_structure(2, 3)
    net = _net(structure)
    x = _counts(6)
    got = kl_per_dimension(net, x)
    with torch.no_grad():
        for level, (mean, logvar) in enumerate(net.encode(x)):
            p_mean, p_var = net.prior(level)
            expected = kl_divergence(
                Normal(mean, torch.exp(0.5 * logvar)), Normal(p_mean, p_var.sqrt())
            ).mean(0)
            np.testing.assert_allclose(got[level], expected.numpy(), rtol=1e-12)
    assert [len(k) for k in got] == [2, 6]
    assert collapsed_dimensions(np.array([0.001, 0.5, 0.009, 2.0])) == 2
    assert collapsed_dimensions(np.array([0.001, 0.5]), threshold=1e-4) == 0


def test_norm_variant_is_unit_norm_times_gain_without_centring_or_batch_statistics():
    norm = L2GainNorm(4).double()
    np.testing.assert_allclose(norm.gain.detach().numpy(), 2.0)  # sqrt(4): unit RMS, batch-norm's scale
    with torch.no_grad():
        norm.gain.fill_(1.0)
    x = torch.tensor([[10.0, 11.0, 12.0, 13.0], [-1.0, 2.0, 0.5, 0.25]], dtype=torch.float64)
    y = norm(x).detach()
    np.testing.assert_allclose(
        torch.linalg.vector_norm(y, dim=-1).numpy(), 1.0, rtol=1e-3
    )  # unit norm, gain 1
    cosine = (y * x).sum(-1) / (y.norm(dim=-1) * x.norm(dim=-1))
    np.testing.assert_allclose(cosine.numpy(), 1.0, rtol=1e-12)  # same direction: no centring
    assert bool((y[0] > 0).all())  # a centring transform would make some entries of row 0 negative
    with torch.no_grad():
        norm.gain.copy_(torch.tensor([1.0, 2.0, 3.0, 4.0]))
    y2 = norm(x).detach()
    np.testing.assert_allclose((y2 / y).numpy(), np.tile([1.0, 2.0, 3.0, 4.0], (2, 1)), rtol=1e-12)
    np.testing.assert_allclose(norm(x[1:]).detach().numpy(), y2[1:].numpy())  # no batch statistics


def test_batchnorm_variant_centres_and_scales_by_the_batch_with_gain_and_shift():
    bn = output_norm("batchnorm", 3).double().train()
    with torch.no_grad():
        bn.weight.copy_(torch.tensor([0.5, 2.0, 3.0]))
        bn.bias.copy_(torch.tensor([1.0, -1.0, 0.0]))
    x = torch.randn(50, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(0)) * 4 + 7
    y = bn(x).detach()
    np.testing.assert_allclose(y.mean(0).numpy(), [1.0, -1.0, 0.0], atol=1e-12)
    np.testing.assert_allclose(y.std(0, unbiased=False).numpy(), [0.5, 2.0, 3.0], rtol=1e-3)
    nogain = output_norm("batchnorm-nogain", 3).double().train()
    with torch.no_grad():
        nogain.shift.copy_(torch.tensor([1.0, -1.0, 0.0]))
    y = nogain(x).detach()
    np.testing.assert_allclose(y.mean(0).numpy(), [1.0, -1.0, 0.0], atol=1e-12)
    np.testing.assert_allclose(y.std(0, unbiased=False).numpy(), 1.0, rtol=1e-3)
    assert not any("weight" in name for name, _ in nogain.named_parameters())
    x2 = torch.randn(5, 3, dtype=torch.float64)
    assert torch.equal(output_norm("none", 3)(x2), x2)
    with pytest.raises(ConfigError, match="normalisation"):
        output_norm("layernorm", 3)


def test_topic_batchnorm_standardises_each_word_across_each_blocks_topics():
    tbn = TopicBatchNorm((2, 3), vocab_size=4).double()
    with torch.no_grad():
        tbn.shift.copy_(torch.tensor([[0.0, 1.0, 2.0, 3.0], [5.0, 5.0, 5.0, 5.0]]))
    w = torch.randn(5, 4, dtype=torch.float64, generator=torch.Generator().manual_seed(1)) * 3
    y = tbn(w).detach()
    for rows, shift in ((slice(0, 2), [0.0, 1.0, 2.0, 3.0]), (slice(2, 5), [5.0] * 4)):
        np.testing.assert_allclose(y[rows].mean(0).numpy(), shift, atol=1e-12)
        np.testing.assert_allclose(y[rows].var(0, unbiased=False).numpy(), 1.0, rtol=1e-2)
    net_on = _net(pam.lda_structure(3))
    net_off = _net(pam.lda_structure(3), topic_bn=False)
    np.testing.assert_allclose(
        net_off.topic_word().detach().numpy(), torch.softmax(net_off.topic_logits, -1).detach().numpy()
    )
    np.testing.assert_allclose(net_on.topic_word().sum(-1).detach().numpy(), 1.0)


def _known_pam4(seed: int = 0):
    """A 4-PAM with 6 sub-topics on disjoint 5-word bars (V = 30), 2 super-topics."""
    k, v = 6, 30
    beta = torch.full((k, v), 0.002, dtype=torch.float64)
    for t in range(k):
        beta[t, 5 * t : 5 * t + 5] = 1.0
    beta /= beta.sum(1, keepdim=True)
    structure = pam.pam4_structure(2, k)
    g = torch.Generator().manual_seed(seed)
    counts, _ = pam.sample_documents(structure, [1.0, 0.3], beta, [60] * 700, g)
    return structure, beta, counts


def test_training_on_a_known_4pam_improves_held_out_bound_and_recovers_topics():
    structure, beta, counts = _known_pam4()
    train, val, test = counts[:500], counts[500:600], counts[600:]
    # no dropout here: on 6 topics AVITM's 25% dropout of the proportions blurs the bars
    config = AviPamConfig(
        hidden=(30, 30), batch_size=50, max_epochs=60, patience=8, encoder_dropout=0.0, theta_dropout=0.0
    )
    fit = fit_avipam(train.numpy(), val.numpy(), structure, config, seed=0)
    untrained = fit_avipam(
        train.numpy(), val.numpy(), structure, with_overrides(config, max_epochs=1), seed=0
    )
    after, before = evaluate(fit.net, test, seed=1), evaluate(untrained.net, test, seed=1)
    assert after.nelbo_per_word < before.nelbo_per_word - 0.3
    # every true bar is matched by a learned topic (cosine similarity of the word distributions)
    learned = fit.topic_word()
    cos = (beta.numpy() @ learned.T) / np.outer(
        np.linalg.norm(beta.numpy(), axis=1), np.linalg.norm(learned, axis=1)
    )
    assert cos.max(1).min() > 0.9
    # the convergence record
    c = fit.convergence
    assert c.rule in RULES and isinstance(c.converged, bool)
    assert c.epochs == len(fit.history) and c.max_epochs == 60
    assert c.converged == (c.rule in ("early-stopping", "plateau"))
    assert fit.train_seconds > 0 and all(r.val_nelbo is not None for r in fit.history)
    for r in fit.history:  # the curve's ELBO terms add up to the trainer's NELBO
        assert r.extra["train_nll"] + r.extra["train_kl"] == pytest.approx(r.train_nelbo, rel=1e-5)
        assert r.extra["val_kl"] > 0
    summary = fit.summary()
    assert summary["converged"] == c.converged and summary["epochs"] == len(fit.history)


def test_fits_are_reproducible_from_the_seed():
    structure = pam.molda_structure((2, 3))
    x = _counts(40, vocab=12, seed=3).numpy()
    config = AviPamConfig(hidden=(8,), batch_size=10, max_epochs=3, dtype="float64")
    a = fit_avipam(x[:30], x[30:], structure, config, seed=5)
    b = fit_avipam(x[:30], x[30:], structure, config, seed=5)
    c = fit_avipam(x[:30], x[30:], structure, config, seed=6)
    assert [r.val_nelbo for r in a.history] == [r.val_nelbo for r in b.history]
    assert np.array_equal(a.topic_word(), b.topic_word())
    assert not np.array_equal(a.topic_word(), c.topic_word())
    assert [m.shape for m in a.component_topic_words()] == [(2, 12), (3, 12)]


def test_bad_data_gives_a_clear_error():
    x = _counts(10, vocab=6).numpy()
    structure = pam.lda_structure(2)
    with pytest.raises(DataError, match="validation set is empty"):
        fit_avipam(x, x[:0], structure, AviPamConfig(max_epochs=1))
    with pytest.raises(DataError, match="validation vocabulary"):
        fit_avipam(x, x[:, :5], structure, AviPamConfig(max_epochs=1))
    with pytest.raises(DataError, match="non-negative"):
        fit_avipam(-x, None, structure, AviPamConfig(max_epochs=1))


def test_config_errors_name_the_key():
    with pytest.raises(ConfigError, match="unknown key"):
        config_from_mapping({"learning_rate": 0.1})
    with pytest.raises(ConfigError, match="output_norm"):
        config_from_mapping({"output_norm": "layer"})
    with pytest.raises(ConfigError, match="encoder_dropout"):
        config_from_mapping({"encoder_dropout": 1.0})
    assert config_from_mapping({"hidden": [50, 50], "alpha": [1.0, 0.5]}).hidden == (50, 50)
    with pytest.raises(ConfigError, match="alpha has 2 values"):
        AviPamConfig(alpha=(1.0, 0.5)).alphas(3)


def test_posterior_proportions_are_the_softmax_of_the_posterior_means():
    structure = pam.pam4_structure(2, 3)
    net = _net(structure)
    x = _counts(5)
    got = posterior_proportions(net, x)
    with torch.no_grad():
        (m0, _), (m1, _) = net.encode(x)
    root = torch.softmax(m0, -1)
    sup = torch.softmax(m1.reshape(5, 2, 3), -1)
    np.testing.assert_allclose(got["levels"][0][:, 0], root.numpy(), rtol=1e-12)
    np.testing.assert_allclose(got["levels"][1], sup.numpy(), rtol=1e-12)
    np.testing.assert_allclose(got["subtopics"], torch.einsum("bs,bsk->bk", root, sup).numpy(), rtol=1e-12)


@pytest.mark.parametrize("norm", ["batchnorm", "batchnorm-nogain", "norm", "none"])
@pytest.mark.parametrize("encoder", ["per-level", "shared"])
def test_every_normalisation_and_encoder_layout_trains(norm, encoder):
    x = _counts(30, vocab=10, seed=4).numpy()
    config = AviPamConfig(
        hidden=(6,), batch_size=10, max_epochs=2, output_norm=norm, encoder=encoder, topic_bn=norm != "none"
    )
    fit = fit_avipam(x[:20], x[20:], pam.pam4_structure(2, 3), config, seed=0)
    assert all(np.isfinite(r.val_nelbo) for r in fit.history)
    assert len(fit.net.trunks) == (2 if encoder == "per-level" else 1)
    assert (fit.net.topic_norm is not None) == (norm != "none")


def test_an_interrupted_fit_resumes_from_its_checkpoint_to_the_same_result(tmp_path):
    x = _counts(30, vocab=10, seed=5).numpy()
    config = AviPamConfig(hidden=(6,), batch_size=10, max_epochs=4)
    structure = pam.pam4_structure(2, 3)
    plain = fit_avipam(x[:20], x[20:], structure, config, seed=2)
    path = tmp_path / "ckpt.pt"

    class Stop(Exception):
        pass

    def interrupt(record):
        if record.epoch == 2:
            raise Stop

    with pytest.raises(Stop):
        fit_avipam(x[:20], x[20:], structure, config, seed=2, checkpoint_path=path, progress=interrupt)
    resumed = fit_avipam(x[:20], x[20:], structure, config, seed=2, checkpoint_path=path)
    assert [r.val_nelbo for r in resumed.history] == [r.val_nelbo for r in plain.history]
    assert np.array_equal(resumed.topic_word(), plain.topic_word())
