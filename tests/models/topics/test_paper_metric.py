"""The paper-style metric splits exactly into word term + multinomial coefficient + prior
normaliser, checked against scipy's multinomial and normal densities."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from scipy.special import logsumexp
from scipy.stats import multinomial, norm

from noisyor_bench.models.topics.logistic_normal import paper_per_word_predictive, paper_prior
from noisyor_bench.models.topics.paper_metric import document_constant, paper_metric_terms, prior_normaliser


def _tiny(seed: int = 0):
    gen = torch.Generator().manual_seed(seed)
    k, v, b, s = 3, 6, 4, 12
    theta = torch.distributions.Dirichlet(torch.ones(v, dtype=torch.float64)).sample((b, k))
    x = torch.tensor(
        [[3, 0, 1, 0, 0, 2], [0, 1, 0, 0, 0, 0], [5, 5, 0, 1, 0, 9], [1, 1, 1, 1, 1, 1]], dtype=torch.float64
    )
    pool = 2.0 * torch.randn((s, b, k), generator=gen, dtype=torch.float64)
    return x, theta, pool, paper_prior(k)


def _scipy_joint(x, theta, h, prior) -> np.ndarray:
    """sum_n log N(h_n; prior) + log Mult(x_n | softmax(h_n) theta_n), per draw, with scipy."""
    mean, sd = prior.mean.numpy(), np.sqrt(prior.variance.numpy())
    out = np.zeros(h.shape[0])
    for s in range(h.shape[0]):
        for n in range(x.shape[0]):
            pi = np.exp(h[s, n].numpy()) / np.exp(h[s, n].numpy()).sum()
            p = pi @ theta[n].numpy()
            out[s] += multinomial.logpmf(x[n].numpy(), int(x[n].sum()), p / p.sum())
            out[s] += norm.logpdf(h[s, n].numpy(), mean, sd).sum()
    return out


def test_terms_sum_exactly_to_the_metric() -> None:
    x, theta, pool, prior = _tiny()
    metric = paper_per_word_predictive(x, theta, pool, prior, 5, 4, torch.Generator().manual_seed(7))
    terms = paper_metric_terms(x, theta, pool, prior, 5, 4, torch.Generator().manual_seed(7))
    assert torch.allclose(terms["words"] + terms["coefficient"] + terms["prior"], metric, rtol=0, atol=1e-12)
    assert torch.allclose(terms["total"], metric, rtol=0, atol=1e-12)


def test_terms_match_scipy() -> None:
    x, theta, pool, prior = _tiny(1)
    tokens = float(x.sum())
    terms = paper_metric_terms(x, theta, pool, prior, pool.shape[0], 1, torch.Generator().manual_seed(3))
    idx = torch.randint(pool.shape[0], (pool.shape[0],), generator=torch.Generator().manual_seed(3))
    joint = _scipy_joint(x, theta, pool[idx], prior)
    total = (logsumexp(joint) - math.log(len(joint))) / tokens
    assert float(terms["total"][0]) == pytest.approx(total, abs=1e-10)
    coefficient = (
        sum(math.lgamma(float(r.sum()) + 1) - sum(math.lgamma(float(c) + 1) for c in r) for r in x) / tokens
    )
    assert float(terms["coefficient"][0]) == pytest.approx(coefficient, abs=1e-12)
    sd = np.sqrt(prior.variance.numpy())
    normaliser = norm.logpdf(prior.mean.numpy(), prior.mean.numpy(), sd).sum()  # the density at its mean
    assert prior_normaliser(prior) == pytest.approx(normaliser, abs=1e-10)
    assert float(terms["prior"][0]) == pytest.approx(x.shape[0] * normaliser / tokens, abs=1e-12)
    assert document_constant(x, prior) == pytest.approx(
        coefficient + x.shape[0] * normaliser / tokens, abs=1e-12
    )


def test_short_documents_have_a_much_lower_constant() -> None:
    """The constant is what moves absolute values with the documents: a 1-word document carries the
    whole prior normaliser on one word."""
    _, _, _, prior = _tiny()
    short = torch.tensor([[0, 1, 0, 0, 0, 0]], dtype=torch.float64)
    long = torch.tensor([[20, 10, 5, 5, 5, 5]], dtype=torch.float64)
    assert document_constant(short, prior) < document_constant(long, prior) - 1.0
