"""NUTS for APE's topic model: seeded, and its sample mean at the exact K = 2 posterior mean
(quadrature) within Monte Carlo error (effective sample size from pyro.ops.stats)."""

import random

import numpy as np
import pytest
import torch
from pyro.ops.stats import effective_sample_size
from torch.distributions import Multinomial, Normal

from noisyor_bench.inference.topics.ape_nuts import nuts_estimates, run_nuts, warm_start_from_q
from noisyor_bench.models.topics.logistic_normal import GaussianPrior, paper_prior

D = torch.float64


def _pair():
    theta = torch.tensor([[0.5, 0.3, 0.1, 0.05, 0.05], [0.05, 0.05, 0.2, 0.3, 0.4]], dtype=D)
    x = torch.tensor([[3.0, 1.0, 0.0, 2.0, 4.0]], dtype=D)
    prior = GaussianPrior(torch.tensor([0.3, -0.2], dtype=D), torch.tensor([1.0, 2.0], dtype=D))
    return x, theta, prior


def _posterior_moments(x, theta, prior):
    grid = torch.linspace(-9, 9, 721, dtype=D)
    h1, h2 = torch.meshgrid(grid, grid, indexing="ij")
    h = torch.stack([h1.reshape(-1), h2.reshape(-1)], -1)
    logw = Multinomial(int(x[0].sum()), probs=torch.softmax(h, -1) @ theta).log_prob(x[0])
    logw = logw + Normal(prior.mean, prior.variance.sqrt()).log_prob(h).sum(-1)
    post = torch.softmax(logw, 0)
    mean = (post[:, None] * h).sum(0)
    return mean, ((post[:, None] * (h - mean) ** 2).sum(0)).sqrt()


def test_seeded_and_leaves_global_rng_alone():
    x, theta, prior = _pair()
    torch.manual_seed(11)
    random.seed(11)
    np.random.seed(11)
    expected = (torch.rand(1), random.random(), np.random.rand())
    torch.manual_seed(11)
    random.seed(11)
    np.random.seed(11)
    a = run_nuts(x, theta, prior, seed=3, num_samples=15, warmup_steps=10)
    assert (torch.rand(1), random.random(), np.random.rand()) == expected
    b = run_nuts(x, theta, prior, seed=3, num_samples=15, warmup_steps=10)
    c = run_nuts(x, theta, prior, seed=4, num_samples=15, warmup_steps=10)
    assert a.samples.shape == (15, 1, 2)
    assert torch.equal(a.samples, b.samples) and not torch.equal(a.samples, c.samples)
    assert a.seconds > 0


def test_sample_mean_matches_the_exact_posterior_mean_k2():
    x, theta, prior = _pair()
    mean, sd = _posterior_moments(x, theta, prior)
    init = warm_start_from_q(mean[None], torch.log(sd)[None], torch.Generator().manual_seed(0))
    result = run_nuts(x, theta, prior, seed=0, init=init, num_samples=400, warmup_steps=150)
    draws = result.samples[:, 0, :]
    ess = effective_sample_size(draws[None], chain_dim=0, sample_dim=1)
    tolerance = 4 * sd / ess.sqrt()
    assert torch.all((draws.mean(0) - mean).abs() < tolerance), (draws.mean(0), mean, tolerance, ess)
    assert torch.all(ess > 30)
    out = nuts_estimates(x, theta, result.samples, paper_prior(2), prior, seed=1, is_samples=2000)
    assert set(out) == {"paper_per_word_mean", "paper_per_word_std", "clean_per_word"}
    assert all(np.isfinite(v) for v in out.values())


def test_bad_init_shape():
    x, theta, prior = _pair()
    with pytest.raises(Exception, match="init must be"):
        run_nuts(x, theta, prior, seed=0, init=torch.zeros(2, 2, dtype=D), num_samples=1, warmup_steps=0)


def test_potential_is_minus_the_log_joint():
    from noisyor_bench.inference.topics.ape_nuts import potential

    x, theta, prior = _pair()
    x = torch.cat([x, torch.tensor([[0.0, 0.0, 5.0, 0.0, 1.0]], dtype=D)])
    h = torch.randn(2, 2, dtype=D)
    reference = 0.0
    for b in range(2):
        probs = torch.softmax(h[b], -1) @ theta
        reference += Multinomial(int(x[b].sum()), probs=probs).log_prob(x[b])
        reference -= torch.lgamma(x[b].sum() + 1) - torch.lgamma(x[b] + 1).sum()
        reference += Normal(prior.mean, prior.variance.sqrt()).log_prob(h[b]).sum()
    torch.testing.assert_close(potential(x, theta, prior)({"h": h}), -reference)


def test_chain_diagnostics_flag_a_chain_that_did_not_move():
    from noisyor_bench.inference.topics.ape_nuts import chain_diagnostics

    gen = torch.Generator().manual_seed(0)
    iid = torch.randn((200, 3, 4), generator=gen, dtype=D)
    good = chain_diagnostics(iid, torch.ones(3, 4, dtype=D))
    assert not good["stuck"] and good["moved_fraction"] == 1.0
    assert good["ess_median"] > 100 and abs(good["rhat_median"] - 1.0) < 0.05
    assert abs(good["sd_ratio_median"] - 1.0) < 0.2
    frozen = iid[:1].expand(200, -1, -1).clone()
    frozen[100:] += 0.01  # one move in 199 transitions
    bad = chain_diagnostics(frozen)
    assert bad["stuck"] and bad["moved_fraction"] == 1 / 199
    narrow = chain_diagnostics(0.2 * iid, torch.ones(3, 4, dtype=D))  # moves, but a fifth of VI's scale
    assert narrow["stuck"] and narrow["moved_fraction"] == 1.0


def test_an_antithetic_coordinate_reads_the_ess_cap_not_a_negative_ess():
    """pyro's ESS of a coordinate alternating around its mean (lag-1 autocorrelation near -1) is
    negative; the diagnostics cap it at S log10 S (Stan's cap), the iid coordinate unchanged."""
    from pyro.ops.stats import effective_sample_size

    from noisyor_bench.inference.topics.ape_nuts import chain_diagnostics

    gen = torch.Generator().manual_seed(0)
    n = 200
    alternating = torch.tensor([(-1.0) ** i for i in range(n)], dtype=D) + 0.05 * torch.randn(
        n, generator=gen, dtype=D
    )
    iid = torch.randn(n, generator=gen, dtype=D)
    samples = torch.stack([iid, alternating], -1).reshape(n, 1, 2)
    raw = effective_sample_size(samples.unsqueeze(0), chain_dim=0, sample_dim=1).flatten()
    assert raw[1] < 0  # what pyro says of the antithetic coordinate
    diag = chain_diagnostics(samples)
    assert diag["ess_min"] == pytest.approx(float(raw[0]))  # the iid coordinate is the minimum
    assert diag["ess_min"] > 0


def test_run_records_acceptance_and_divergences():
    x, theta, prior = _pair()
    result = run_nuts(x, theta, prior, seed=1, num_samples=30, warmup_steps=30)
    assert 0.0 < result.acceptance <= 1.0
    assert 0 <= result.divergences <= 30
