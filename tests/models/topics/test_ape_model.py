"""The logistic-normal topic model of APE against independent computations (float64):
torch.distributions for the likelihood, the ELBO's definition by plain Monte Carlo, the
marginal likelihood by quadrature (K = 2), the authors' predictive density term by term."""

import math

import pytest
import torch
from torch.distributions import Multinomial, Normal

from noisyor_bench.infra.errors import DataError
from noisyor_bench.models.topics.logistic_normal import (
    BLOCK_GROWTH,
    BLOCK_MIN_PAIRS,
    GaussianPrior,
    SupportBlocks,
    ape_prior,
    elbo,
    gaussian_kl,
    log_likelihood,
    log_marginal_is,
    multinomial_log_coefficient,
    paper_log_predictive_density,
    paper_per_word_predictive,
    paper_prior,
    per_word_log_likelihood,
    per_word_log_likelihood_halves,
    sample_q,
)

D = torch.float64


def _problem(b=4, k=3, v=6, seed=0):
    gen = torch.Generator().manual_seed(seed)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        theta = torch.distributions.Dirichlet(torch.full((v,), 0.7, dtype=D)).sample((b, k))
    x = torch.randint(0, 4, (b, v), generator=gen).to(D)
    x[:, 0] += 1  # no empty document
    mu = torch.randn(b, k, generator=gen, dtype=D)
    log_sigma = -0.5 + 0.3 * torch.randn(b, k, generator=gen, dtype=D)
    return x, theta, mu, log_sigma


def _ll_reference(x, h, theta):
    """log Mult(x_b | T_b, softmax(h_b) theta_b) with torch.distributions, one pair at a time."""
    out = torch.empty(h.shape[:-1], dtype=D)
    for b in range(x.shape[0]):
        probs = torch.softmax(h[..., b, :], -1) @ theta[b]
        out[..., b] = Multinomial(int(x[b].sum()), probs=probs).log_prob(x[b])
    return out


def test_log_likelihood_matches_torch_multinomial():
    x, theta, mu, _ = _problem()
    h = mu + torch.randn(5, *mu.shape, dtype=D)
    torch.testing.assert_close(log_likelihood(x, h, theta), _ll_reference(x, h, theta))
    without = log_likelihood(x, h, theta, include_coefficient=False)
    coef = torch.stack([torch.lgamma(r.sum() + 1) - torch.lgamma(r + 1).sum() for r in x])
    torch.testing.assert_close(log_likelihood(x, h, theta) - without, coef.expand(5, -1))
    torch.testing.assert_close(multinomial_log_coefficient(x), coef)
    shared = log_likelihood(x, h, theta[0])
    torch.testing.assert_close(shared, _ll_reference(x, h, theta[0].expand_as(theta)))


def test_kl_matches_torch_distributions():
    _, _, mu, log_sigma = _problem(k=5)
    prior = ape_prior(5)
    ref = torch.distributions.kl_divergence(
        Normal(mu, log_sigma.exp()), Normal(prior.mean, prior.variance.sqrt())
    ).sum(-1)
    torch.testing.assert_close(gaussian_kl(mu, log_sigma, prior), ref)


def test_elbo_matches_monte_carlo_of_its_definition():
    x, theta, mu, log_sigma = _problem()
    prior = ape_prior(3, alpha=0.5)
    n = 100_000
    torch.manual_seed(1)
    q = Normal(mu, log_sigma.exp())
    h = q.sample((n,))
    p0 = Normal(prior.mean, prior.variance.sqrt())
    terms = _ll_reference(x, h, theta) + p0.log_prob(h).sum(-1) - q.log_prob(h).sum(-1)
    reference, se_ref = terms.mean(0), terms.std(0) / math.sqrt(n)
    ours = elbo(x, theta, mu, log_sigma, prior, n_samples=n, generator=torch.Generator().manual_seed(2))
    # our estimate's own MC error is at most the reference's (same likelihood term, exact KL)
    assert torch.all((ours - reference).abs() < 5 * math.sqrt(2) * se_ref), (ours, reference, se_ref)


def test_elbo_is_differentiable_and_reparameterised():
    x, theta, mu, log_sigma = _problem()
    mu.requires_grad_(True)
    log_sigma.requires_grad_(True)
    elbo(x, theta, mu, log_sigma, ape_prior(3), n_samples=3).sum().backward()
    assert mu.grad is not None and torch.all(torch.isfinite(mu.grad)) and mu.grad.abs().sum() > 0
    assert log_sigma.grad is not None and log_sigma.grad.abs().sum() > 0


def _quadrature_log_marginal(x_row, theta_row, prior, half_width=9.0, n=901):
    grid = torch.linspace(-half_width, half_width, n, dtype=D)
    h1, h2 = torch.meshgrid(grid, grid, indexing="ij")
    h = torch.stack([h1.reshape(-1), h2.reshape(-1)], -1)
    probs = torch.softmax(h, -1) @ theta_row
    ll = Multinomial(int(x_row.sum()), probs=probs).log_prob(x_row)
    lp = Normal(prior.mean, prior.variance.sqrt()).log_prob(h).sum(-1)
    logw = ll + lp
    cell = (grid[1] - grid[0]) ** 2
    post = torch.softmax(logw, 0)
    mean = (post[:, None] * h).sum(0)
    sd = ((post[:, None] * (h - mean) ** 2).sum(0)).sqrt()
    return float(torch.logsumexp(logw, 0) + torch.log(cell)), mean, sd


@pytest.mark.parametrize("widen", [1.0, 1.8])
def test_importance_sampled_marginal_matches_quadrature_k2(widen):
    x, theta, _, _ = _problem(b=3, k=2, v=5, seed=3)
    prior = GaussianPrior(torch.tensor([0.3, -0.2], dtype=D), torch.tensor([1.0, 2.0], dtype=D))
    exact, mus, sds = [], [], []
    for b in range(3):
        value, mean, sd = _quadrature_log_marginal(x[b], theta[b], prior)
        exact.append(value)
        mus.append(mean)
        sds.append(sd * widen)
    mu, log_sigma = torch.stack(mus), torch.log(torch.stack(sds))
    estimate = log_marginal_is(
        x, theta, mu, log_sigma, prior, n_samples=40_000, generator=torch.Generator().manual_seed(5)
    )
    torch.testing.assert_close(estimate, torch.tensor(exact, dtype=D), atol=0.01, rtol=0)
    # and it is above the ELBO (Jensen), which is below the exact value
    bound = elbo(x, theta, mu, log_sigma, prior, n_samples=40_000, generator=torch.Generator().manual_seed(6))
    assert torch.all(bound < torch.tensor(exact, dtype=D))


def test_paper_prior_uses_the_variance_as_a_standard_deviation():
    clean, paper = ape_prior(20), paper_prior(20)
    torch.testing.assert_close(paper.mean, clean.mean)
    torch.testing.assert_close(paper.variance.sqrt(), clean.variance)
    # alpha = 0.01, K = 20: v0 = 100 * 0.9 + 20 * 100 / 400 = 95
    torch.testing.assert_close(clean.variance, torch.full((20,), 95.0, dtype=D))


def test_paper_predictive_density_term_by_term():
    x, theta, mu, log_sigma = _problem()
    prior = paper_prior(3)
    h = sample_q(mu, log_sigma, 7, torch.Generator().manual_seed(0))
    p0 = Normal(prior.mean, ape_prior(3).variance)  # scale = v0, the Laplace variance
    joint = (_ll_reference(x, h, theta) + p0.log_prob(h).sum(-1)).sum(-1)
    expected = torch.logsumexp(joint, 0) - math.log(7)
    torch.testing.assert_close(paper_log_predictive_density(x, theta, h, prior), expected)


def test_clean_and_paper_metric_differ_exactly_by_the_documented_terms():
    """With one shared draw h ~ q per pair the log-sum-exps are trivial, and
    paper - clean (per word) = [sum_n log p_paper(h_n) - log p(h_n) + log q(h_n) + log coef_n] / T."""
    x, theta, mu, log_sigma = _problem()
    clean_prior, quirk_prior = ape_prior(3), paper_prior(3)
    h = sample_q(mu, log_sigma, 1, torch.Generator().manual_seed(9))
    clean_value, _ = per_word_log_likelihood(
        x, theta, mu, log_sigma, clean_prior, n_samples=1, generator=torch.Generator().manual_seed(9)
    )
    paper_value = paper_per_word_predictive(x, theta, h, quirk_prior, n_draws=1, n_repeats=1)[0]
    q = Normal(mu, log_sigma.exp())
    documented = (
        Normal(quirk_prior.mean, clean_prior.variance).log_prob(h[0]).sum(-1)  # prior term, v0 as std
        - Normal(clean_prior.mean, clean_prior.variance.sqrt()).log_prob(h[0]).sum(-1)  # IS weight's prior
        + q.log_prob(h[0]).sum(-1)  # IS weight's proposal
        + multinomial_log_coefficient(x)  # the coefficient
    ).sum() / x.sum()
    torch.testing.assert_close(float(paper_value) - clean_value, float(documented), atol=1e-9, rtol=0)


def test_paper_per_word_predictive_draws_from_the_pool():
    x, theta, mu, log_sigma = _problem()
    pool = sample_q(mu, log_sigma, 1, torch.Generator().manual_seed(0)).expand(4, -1, -1)
    values = paper_per_word_predictive(x, theta, pool, paper_prior(3), n_repeats=3)
    assert values.shape == (3,)
    torch.testing.assert_close(values, values[:1].expand(3))  # identical pool -> identical repeats


def test_shape_errors_name_the_problem():
    x, theta, mu, _ = _problem()
    with pytest.raises(DataError, match="vocabulary"):
        log_likelihood(x[:, :5], mu, theta)
    with pytest.raises(DataError, match="models but x has"):
        log_likelihood(x[:2], mu[:2], theta)


def test_reconstruction_averages_decoded_draws():
    from noisyor_bench.models.topics.logistic_normal import posterior_mean_reconstruction

    x, theta, mu, log_sigma = _problem()
    h = sample_q(mu, log_sigma, 6, torch.Generator().manual_seed(0))
    rec = posterior_mean_reconstruction(h, theta)
    manual = torch.stack(
        [torch.stack([torch.softmax(h[s, b], -1) @ theta[b] for b in range(4)]) for s in range(6)]
    ).mean(0)
    torch.testing.assert_close(rec, manual)
    torch.testing.assert_close(rec.sum(-1), torch.ones(4, dtype=D))


def _sparse_pairs(b, k, v, words, max_count, seeds):
    """(theta (b, k, v) from a Dirichlet(0.5), x (b, v) with ``words(row)`` random words of counts
    1 to ``max_count``), from the global and a fresh generator seeded ``seeds``."""
    torch.manual_seed(seeds[0])
    theta = torch.distributions.Dirichlet(torch.full((v,), 0.5, dtype=D)).sample((b, k))
    gen = torch.Generator().manual_seed(seeds[1])
    x = torch.zeros(b, v, dtype=D)
    for row in range(b):
        chosen = torch.randperm(v, generator=gen)[: words(row)]
        x[row, chosen] = torch.randint(1, max_count + 1, (len(chosen),), generator=gen).to(D)
    return theta, x


def test_sparse_documents_give_the_same_likelihood_and_gradient():
    """Documents using few of many words take the compact path; check it against the reference."""
    b, k, v = 5, 4, 200
    theta, x = _sparse_pairs(b, k, v, lambda row: 3 + 4 * row, 3, seeds=(0, 2))
    h = torch.randn(3, b, k, dtype=D, requires_grad=True)
    ours = log_likelihood(x, h, theta)
    torch.testing.assert_close(ours, _ll_reference(x, h.detach(), theta))
    torch.testing.assert_close(
        log_likelihood(x, h, theta[0]), _ll_reference(x, h.detach(), theta[0].expand_as(theta))
    )
    (grad,) = torch.autograd.grad(ours.sum(), h)
    h2 = h.detach().clone().requires_grad_(True)
    dense = torch.xlogy(x, torch.einsum("sbk,bkv->sbv", torch.softmax(h2, -1), theta)).sum()
    (grad_ref,) = torch.autograd.grad(dense, h2)
    torch.testing.assert_close(grad, grad_ref)


@pytest.mark.parametrize("shared", [False, True], ids=["per-pair-models", "shared-model"])
def test_pairs_cut_into_blocks_of_similar_support_give_each_pairs_likelihood_and_gradient(shared):
    """VI's fixed set of pairs (SupportBlocks): supports of 1 to 160 of 200 words in shuffled
    order, so the pairs fall into several blocks; every pair's log Mult against
    torch.distributions, the coefficient against lgamma by hand, the gradient in h against
    the dense formula over all 200 words, in the pairs' own order."""
    b, k, v = 3 * BLOCK_MIN_PAIRS, 4, 200
    words = torch.randperm(b, generator=torch.Generator().manual_seed(4)) * 160 // b + 1
    theta, x = _sparse_pairs(b, k, v, lambda row: int(words[row]), 3, seeds=(1, 3))
    theta = theta[0] if shared else theta
    pairs = SupportBlocks.of(x, theta)
    assert len(pairs.rows) > 1 and sorted(torch.cat(pairs.rows).tolist()) == list(range(b))
    for rows, counts in zip(pairs.rows, pairs.counts, strict=True):
        support = (x[rows] > 0).sum(-1)
        assert counts.shape[1] == int(support.max())  # padded to the block's own longest
        assert rows.numel() >= BLOCK_MIN_PAIRS or int(support.max()) <= BLOCK_GROWTH * int(support.min())
    by_hand = torch.tensor(
        [math.lgamma(r.sum() + 1) - sum(math.lgamma(c + 1) for c in r.tolist()) for r in x], dtype=D
    )
    torch.testing.assert_close(pairs.coefficient, by_hand, rtol=1e-12, atol=1e-9)
    h = torch.randn(2, b, k, dtype=D, generator=torch.Generator().manual_seed(5), requires_grad=True)
    ours = pairs.log_likelihood(h)
    full = theta.expand(b, k, v) if shared else theta
    torch.testing.assert_close(ours, _ll_reference(x, h.detach(), full), rtol=1e-12, atol=1e-9)
    torch.testing.assert_close(pairs.log_likelihood(h, include_coefficient=False), ours - by_hand)
    assert torch.equal(log_likelihood(pairs, h, None), ours)
    (grad,) = torch.autograd.grad(ours.sum(), h)
    h2 = h.detach().clone().requires_grad_(True)
    dense = torch.xlogy(x, torch.einsum("sbk,bkv->sbv", torch.softmax(h2, -1), full)).sum()
    (grad_ref,) = torch.autograd.grad(dense, h2)
    torch.testing.assert_close(grad, grad_ref, rtol=1e-12, atol=1e-12)
    with pytest.raises(DataError, match="h must be"):
        pairs.log_likelihood(h[:, :5])


def test_the_elbo_of_blocked_pairs_is_the_elbo_of_the_raw_pairs():
    b, k, v = 2 * BLOCK_MIN_PAIRS, 4, 200
    theta, x = _sparse_pairs(b, k, v, lambda row: 2 + row % 90, 4, seeds=(1, 3))
    mu, log_sigma = torch.randn(b, k, dtype=D), torch.full((b, k), -0.5, dtype=D)
    draws = [torch.Generator().manual_seed(9) for _ in range(2)]
    torch.testing.assert_close(
        elbo(SupportBlocks.of(x, theta), None, mu, log_sigma, ape_prior(k), 4, draws[0]),
        elbo(x, theta, mu, log_sigma, ape_prior(k), 4, draws[1]),
        rtol=1e-13,
        atol=1e-10,
    )


def test_the_halving_check_reuses_the_estimates_draws_and_its_first_half():
    x, theta, mu, log_sigma = _problem()
    prior = ape_prior(3)
    full, _ = per_word_log_likelihood(x, theta, mu, log_sigma, prior, 400, torch.Generator().manual_seed(4))
    same, half, per_pair = per_word_log_likelihood_halves(
        x, theta, mu, log_sigma, prior, 400, torch.Generator().manual_seed(4)
    )
    assert same == full  # the same draws: the recorded clean IS does not change
    # the half estimate, by hand: the first 200 of the same 400 draws of q
    h = sample_q(mu, log_sigma, 400, torch.Generator().manual_seed(4))[:200]
    q = Normal(mu, log_sigma.exp())
    weights = torch.stack(
        [
            _ll_reference(x, h[s], theta)
            + Normal(prior.mean, prior.variance.sqrt()).log_prob(h[s]).sum(-1)
            - q.log_prob(h[s]).sum(-1)
            - multinomial_log_coefficient(x)
            for s in range(200)
        ]
    )
    by_hand = float((torch.logsumexp(weights, 0) - math.log(200)).sum() / x.sum())
    assert half == pytest.approx(by_hand, abs=1e-9)
    assert per_pair.shape == (4,)
    with pytest.raises(ValueError, match="n_samples=1"):
        per_word_log_likelihood_halves(x, theta, mu, log_sigma, prior, 1)
