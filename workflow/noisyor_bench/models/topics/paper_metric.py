"""The APE authors' Table 1 metric split into its three terms.

:func:`~noisyor_bench.models.topics.logistic_normal.paper_per_word_predictive` is, per repeat,

    (1/T) [ log (1/S) sum_s exp( sum_n log p0(h_sn) + log Mult(x_n | T_n, softmax(h_sn) theta_n) ) ]

with p0 the authors' evaluation prior N(mu0, diag var).  Two parts of the exponent do not depend
on h and leave the log-sum-exp exactly:

* the **multinomial coefficient** sum_n log(T_n! / prod_v x_nv!), and
* the **prior normaliser** B * (-1/2) sum_k log(2 pi var_k) (-164.7 nats per pair on the reviews,
  K = 30, the authors' prior),

so the metric = ``words`` + ``coefficient`` + ``prior`` exactly, where ``words`` is the only term
inference moves: the log-sum-exp of the token log-likelihood plus the prior's quadratic term.
The two inference-free terms, per word, make the **document constant** of a set of pairs: it
ranges over several nats per word between short and long documents, which is why absolute
paper-style values are not comparable across document sets, and gaps to VI on the same
combinations are (docs/ape.md).
"""

from __future__ import annotations

import math

import torch

from noisyor_bench.models.topics.logistic_normal import (
    GaussianPrior,
    log_likelihood,
    multinomial_log_coefficient,
)

TERMS = ("words", "coefficient", "prior")


def prior_normaliser(prior: GaussianPrior) -> float:
    """-1/2 sum_k log(2 pi var_k): the h-free part of log N(h; mean, diag var), nats per pair."""
    return float(-0.5 * torch.log(2 * math.pi * prior.variance.double()).sum())


def document_constant(x: torch.Tensor, prior: GaussianPrior) -> float:
    """The inference-free part of the paper-style metric per word on the pairs ``x`` (B, V):
    (sum_n log(T_n! / prod x_nv!) + B * prior normaliser) / sum_n T_n."""
    coefficient = float(multinomial_log_coefficient(x.double()).sum())
    return (coefficient + x.shape[0] * prior_normaliser(prior)) / float(x.sum())


def paper_metric_terms(
    x: torch.Tensor,
    theta: torch.Tensor,
    h_pool: torch.Tensor,
    prior: GaussianPrior,
    n_draws: int = 10,
    n_repeats: int = 10,
    generator: torch.Generator | None = None,
) -> dict[str, torch.Tensor]:
    """The paper-style metric per repeat and its three terms, each (n_repeats,) nats per word:
    ``total`` (equal to :func:`paper_per_word_predictive` called with a generator in the same
    state: the same draws are picked), ``words``, ``coefficient`` and ``prior``, with
    ``total == words + coefficient + prior``."""
    tokens = float(x.sum())
    coefficient = float(multinomial_log_coefficient(x).sum()) / tokens
    prior_term = x.shape[0] * prior_normaliser(prior) / tokens
    words = []
    for _ in range(n_repeats):
        idx = torch.randint(h_pool.shape[0], (n_draws,), generator=generator, device=h_pool.device)
        h = h_pool[idx]
        quadratic = -0.5 * (((h - prior.mean) ** 2) / prior.variance).sum(-1)
        joint = (log_likelihood(x, h, theta, include_coefficient=False) + quadratic).sum(-1)
        words.append((torch.logsumexp(joint, 0) - math.log(n_draws)) / tokens)
    w = torch.stack(words)
    c = torch.full_like(w, coefficient)
    p = torch.full_like(w, prior_term)
    return {"total": w + c + p, "words": w, "coefficient": c, "prior": p}


__all__ = ["TERMS", "document_constant", "paper_metric_terms", "prior_normaliser"]
