"""The logistic-normal topic model of APE (Zhang & Hughes, eqs. 4-6 and appendix A).

    h_n ~ N(mu0, diag v0)           (v0, mu0: Laplace approximation of Dir(alpha), alpha = 0.01)
    x_n ~ Multinomial(T_n, softmax(h_n) theta)

``theta`` (K x V, rows on the simplex) is an *input*, never learned.  The approximate posterior
is q(h_n) = N(mu_n, diag sigma_n^2), passed everywhere as ``(mu, log_sigma)``.

Everything is batched over (document, theta) pairs: ``x`` is (B, V), ``theta`` is (B, K, V)
(one model per pair) or a shared (K, V); latent samples ``h`` are (..., B, K) with any
leading sample dimensions.  Per-pair results are (..., B).

The authors' evaluation differs from the clean quantities in documented ways (docs/ape.md):
:func:`paper_prior` builds their evaluation prior (the variance used as a standard
deviation) and :func:`paper_log_predictive_density` their posterior predictive density (the
prior term and the multinomial coefficient included, one log-sum-exp over the joint of all
pairs).  :func:`per_word_log_likelihood` is the clean metric (importance-sampled log p(x|theta)
per token, without the coefficient).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from noisyor_bench.infra.errors import DataError
from noisyor_bench.models.topics.dirichlet_laplace import laplace_dirichlet_prior

APE_ALPHA = 0.01
"""The paper's Dirichlet concentration (appendix A.1): alpha_k = 0.01 for every topic."""

# Largest number of (sample x pair x vocabulary) word probabilities materialised at once.
_CHUNK_ELEMENTS = 2**24


@dataclass(frozen=True)
class GaussianPrior:
    """N(mean, diag variance) on h; ``mean`` and ``variance`` are (K,) tensors."""

    mean: torch.Tensor
    variance: torch.Tensor

    @property
    def n_topics(self) -> int:
        return int(self.mean.shape[-1])

    def to(self, device: torch.device | str | None = None, dtype: torch.dtype | None = None) -> GaussianPrior:
        return GaussianPrior(
            self.mean.to(device=device, dtype=dtype), self.variance.to(device=device, dtype=dtype)
        )


def ape_prior(n_topics: int, alpha: float = APE_ALPHA, dtype: torch.dtype = torch.float64) -> GaussianPrior:
    """The model's prior: the Laplace approximation of Dir(alpha) in the softmax basis (eq. 5)."""
    mean, variance = laplace_dirichlet_prior(alpha, n_topics, dtype=dtype)
    return GaussianPrior(mean, variance)


def paper_prior(n_topics: int, alpha: float = APE_ALPHA, dtype: torch.dtype = torch.float64) -> GaussianPrior:
    """The prior the authors' Pyro evaluation used: ``Normal(mu0, v0)``, i.e. the Laplace
    *variance* v0 passed as the standard deviation, so the variance is v0**2 (their
    ``VAE_pyro.model``; their TensorFlow training loss used v0 correctly)."""
    prior = ape_prior(n_topics, alpha, dtype)
    return GaussianPrior(prior.mean, prior.variance**2)


# ----------------------------------------------------------------------------- checks
def _check_inputs(x: torch.Tensor, theta: torch.Tensor) -> None:
    if x.ndim != 2:
        raise DataError(f"x must be (B, V) word counts; got shape {tuple(x.shape)}")
    if theta.ndim not in (2, 3):
        raise DataError(f"theta must be (K, V) or (B, K, V); got shape {tuple(theta.shape)}")
    if theta.shape[-1] != x.shape[-1]:
        raise DataError(f"theta has vocabulary {theta.shape[-1]} but x has {x.shape[-1]} columns")
    if theta.ndim == 3 and theta.shape[0] != x.shape[0]:
        raise DataError(f"theta has {theta.shape[0]} models but x has {x.shape[0]} documents")


# ----------------------------------------------------------------------------- likelihood
def word_probabilities(h: torch.Tensor, theta: torch.Tensor) -> torch.Tensor:
    """softmax(h) theta: (..., B, K) with theta (B, K, V) or (K, V) -> (..., B, V)."""
    pi = torch.softmax(h, dim=-1)
    if theta.ndim == 2:
        return pi @ theta
    return torch.einsum("...bk,bkv->...bv", pi, theta)


def multinomial_log_coefficient(x: torch.Tensor) -> torch.Tensor:
    """log T! - sum_v log x_v! per row of ``x`` (B, V) -> (B,)."""
    return torch.lgamma(x.sum(-1) + 1.0) - torch.lgamma(x + 1.0).sum(-1)


def support_columns(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(columns (B, U), counts (B, U)): each row's nonzero columns in order, padded to the
    longest support U with column 0 and count 0 (x_v log p_v = 0 there)."""
    rows, cols = torch.nonzero(x > 0, as_tuple=True)  # row-major: rows ascending
    support = torch.bincount(rows, minlength=x.shape[0])
    width = max(1, int(support.max())) if rows.numel() else 1
    starts = torch.cumsum(support, 0) - support
    slot = torch.arange(rows.numel(), device=x.device) - starts[rows]
    order = torch.zeros((x.shape[0], width), dtype=torch.long, device=x.device)
    order[rows, slot] = cols
    counts = torch.zeros((x.shape[0], width), dtype=x.dtype, device=x.device)
    counts[rows, slot] = x[rows, cols]
    return order, counts


def compact_support(x: torch.Tensor, theta: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The words each document uses, padded to the longest support U: (counts (B, U),
    theta restricted to them (B, K, U)).  The likelihood only needs these columns (x_v log p_v
    is 0 where x_v = 0), so a (B, V) problem becomes (B, U), U << V for text."""
    order, counts = support_columns(x)
    if theta.ndim == 2:
        selected = theta[:, order].permute(1, 0, 2)
    else:
        selected = torch.gather(theta, 2, order[:, None, :].expand(-1, theta.shape[1], -1))
    return counts, selected


def compacted(x: torch.Tensor, theta: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``(x, theta)`` or, for sparse documents, :func:`compact_support`'s (counts, topics): the
    same likelihood, ELBO and IS values (and gradients in h) from fewer columns.  Compute it
    once for a fixed set of pairs (VI, NUTS) instead of at every call."""
    if 4 * int((x > 0).sum(-1).max()) < x.shape[-1]:
        return compact_support(x, theta)
    return x, theta


#: :class:`SupportBlocks` starts a new block where the support has grown by this factor ...
BLOCK_GROWTH = 2.0
#: ... once the block holds this many pairs (a block costs a few kernel launches a step).
BLOCK_MIN_PAIRS = 64


@dataclass(frozen=True)
class SupportBlocks:
    """A fixed set of pairs compacted once and cut into blocks of similar support length.

    :func:`compact_support` pads every document to the longest support of the set: on the
    reviews (supports of 5-361 words, median 41) a set of 1,200 pairs then carries ~6x more
    (pair, topic, word) entries than it has.  Sorted by support and cut where a block's longest
    support exceeds :data:`BLOCK_GROWTH` x its shortest (blocks of >= :data:`BLOCK_MIN_PAIRS`),
    each block is padded to its own longest: the same per-pair sums (padding adds exact zeros)
    from a fraction of the work.  Built once by a loop over a fixed set (VI)."""

    n_pairs: int
    rows: tuple[torch.Tensor, ...]  # per block, the pairs it holds
    counts: tuple[torch.Tensor, ...]  # per block (b, U_b)
    topics: tuple[torch.Tensor, ...]  # per block (b, K, U_b)
    position: torch.Tensor  # (B,): where each pair sits in the blocks' concatenation
    coefficient: torch.Tensor  # (B,): log(T! / prod x_v!) of each pair

    @classmethod
    def of(cls, x: torch.Tensor, theta: torch.Tensor) -> SupportBlocks:
        """From counts ``x`` (B, V) and models ``theta`` (B, K, V) or (K, V)."""
        _check_inputs(x, theta)
        counts, topics = compact_support(x, theta)
        support = (counts > 0).sum(-1)
        order = torch.argsort(support, stable=True)
        ordered = support[order].tolist()
        cuts, start = [], 0
        for i in range(1, len(ordered) + 1):
            grown = i < len(ordered) and ordered[i] > BLOCK_GROWTH * max(1, ordered[start])
            if i == len(ordered) or (grown and i - start >= BLOCK_MIN_PAIRS):
                cuts.append((start, i))
                start = i
        rows = tuple(order[a:b] for a, b in cuts)
        widths = [max(1, ordered[b - 1]) for _, b in cuts]
        position = torch.empty_like(order)
        position[order] = torch.arange(order.numel(), device=order.device)
        return cls(
            n_pairs=int(x.shape[0]),
            rows=rows,
            counts=tuple(counts[r, :w].contiguous() for r, w in zip(rows, widths, strict=True)),
            topics=tuple(topics[r, :, :w].contiguous() for r, w in zip(rows, widths, strict=True)),
            position=position,
            coefficient=multinomial_log_coefficient(counts),
        )

    def log_likelihood(self, h: torch.Tensor, include_coefficient: bool = True) -> torch.Tensor:
        """:func:`log_likelihood` of every pair: h (..., B, K) -> (..., B)."""
        if h.shape[-2] != self.n_pairs:
            raise DataError(f"h must be (..., {self.n_pairs}, K); got {tuple(h.shape)}")
        parts = []
        for rows, counts, topics in zip(self.rows, self.counts, self.topics, strict=True):
            parts.append(_word_terms(counts, h.index_select(-2, rows), topics))
        out = torch.cat(parts, -1).index_select(-1, self.position)
        return out + self.coefficient if include_coefficient else out


def _word_terms(counts: torch.Tensor, h: torch.Tensor, topics: torch.Tensor) -> torch.Tensor:
    """``sum_v counts_v log p_v`` of every pair, h (..., B, K) -> (..., B), materialising at most
    :data:`_CHUNK_ELEMENTS` word probabilities at once."""
    flat = h.reshape(-1, *h.shape[-2:])
    per_chunk = max(1, _CHUNK_ELEMENTS // max(1, counts.numel()))
    parts = [torch.xlogy(counts, word_probabilities(c, topics)).sum(-1) for c in torch.split(flat, per_chunk)]
    return torch.cat(parts).reshape(*h.shape[:-1])


def log_likelihood(
    x: torch.Tensor | SupportBlocks,
    h: torch.Tensor,
    theta: torch.Tensor | None,
    include_coefficient: bool = True,
) -> torch.Tensor:
    """log Mult(x | T, softmax(h) theta): x (B, V), h (..., B, K) -> (..., B).

    ``include_coefficient=False`` drops log(T! / prod x_v!), giving the log-probability of
    the token sequence (the per-word convention).  Sparse documents are evaluated on their
    words only (:func:`compact_support`).  ``x`` may be a :class:`SupportBlocks`, a fixed set
    compacted once (``theta`` then unused)."""
    if isinstance(x, SupportBlocks):
        return x.log_likelihood(h, include_coefficient)
    assert theta is not None
    _check_inputs(x, theta)
    if h.shape[-2:] != (x.shape[0], theta.shape[-2]):
        raise DataError(f"h must be (..., {x.shape[0]}, {theta.shape[-2]}); got {tuple(h.shape)}")
    counts, topics = compacted(x, theta)
    out = _word_terms(counts, h, topics)
    if include_coefficient:
        out = out + multinomial_log_coefficient(counts)
    return out


def log_prior(h: torch.Tensor, prior: GaussianPrior) -> torch.Tensor:
    """log N(h; mean, diag variance) summed over topics: (..., B, K) -> (..., B)."""
    var = prior.variance
    return -0.5 * (((h - prior.mean) ** 2) / var + torch.log(2 * math.pi * var)).sum(-1)


def log_q(h: torch.Tensor, mu: torch.Tensor, log_sigma: torch.Tensor) -> torch.Tensor:
    """log N(h; mu, diag exp(2 log_sigma)): h (..., B, K), mu/log_sigma (B, K) -> (..., B)."""
    z = (h - mu) * torch.exp(-log_sigma)
    return (-0.5 * z**2 - log_sigma - 0.5 * math.log(2 * math.pi)).sum(-1)


def gaussian_kl(mu: torch.Tensor, log_sigma: torch.Tensor, prior: GaussianPrior) -> torch.Tensor:
    """KL(N(mu, diag sigma^2) || prior) in closed form: (B, K) -> (B,)."""
    var_q = torch.exp(2 * log_sigma)
    v0 = prior.variance
    return 0.5 * (var_q / v0 + (mu - prior.mean) ** 2 / v0 - 1.0 + torch.log(v0) - 2 * log_sigma).sum(-1)


def sample_q(
    mu: torch.Tensor, log_sigma: torch.Tensor, n_samples: int, generator: torch.Generator | None = None
) -> torch.Tensor:
    """Reparameterised draws h = mu + sigma * eps: (n_samples, B, K), differentiable in mu, log_sigma."""
    eps = torch.randn((n_samples, *mu.shape), generator=generator, device=mu.device, dtype=mu.dtype)
    return mu + torch.exp(log_sigma) * eps


# ----------------------------------------------------------------------------- bounds and estimates
def elbo(
    x: torch.Tensor | SupportBlocks,
    theta: torch.Tensor | None,
    mu: torch.Tensor,
    log_sigma: torch.Tensor,
    prior: GaussianPrior,
    n_samples: int = 1,
    generator: torch.Generator | None = None,
    include_coefficient: bool = True,
) -> torch.Tensor:
    """The ELBO per pair, (B,): a reparameterised ``n_samples`` Monte Carlo average of
    log p(x | h, theta) under q minus the closed-form KL(q || prior).  Differentiable.
    ``x`` may be a :class:`SupportBlocks` (``theta`` then unused)."""
    h = sample_q(mu, log_sigma, n_samples, generator)
    expected_ll = log_likelihood(x, h, theta, include_coefficient).mean(0)
    return expected_ll - gaussian_kl(mu, log_sigma, prior)


def importance_log_weights(
    x: torch.Tensor,
    theta: torch.Tensor,
    mu: torch.Tensor,
    log_sigma: torch.Tensor,
    prior: GaussianPrior,
    n_samples: int,
    generator: torch.Generator | None = None,
    include_coefficient: bool = True,
) -> torch.Tensor:
    """log p(x | h_s) + log p(h_s) - log q(h_s) for h_s ~ q: (n_samples, B)."""
    h = sample_q(mu, log_sigma, n_samples, generator)
    return log_likelihood(x, h, theta, include_coefficient) + log_prior(h, prior) - log_q(h, mu, log_sigma)


def is_estimate(w: torch.Tensor) -> torch.Tensor:
    """The importance-sampled log marginal from log-weights ``w`` (S, B): logsumexp_s w_s - log S."""
    return torch.logsumexp(w, 0) - math.log(w.shape[0])


def log_marginal_is(
    x: torch.Tensor,
    theta: torch.Tensor,
    mu: torch.Tensor,
    log_sigma: torch.Tensor,
    prior: GaussianPrior,
    n_samples: int = 1000,
    generator: torch.Generator | None = None,
    include_coefficient: bool = True,
) -> torch.Tensor:
    """Importance-sampled log p(x | theta) per pair with q as proposal, (B,):
    logsumexp_s w_s - log S over ``n_samples`` draws (a stochastic lower bound in expectation,
    consistent as S grows)."""
    with torch.no_grad():
        w = importance_log_weights(x, theta, mu, log_sigma, prior, n_samples, generator, include_coefficient)
    return is_estimate(w)


def per_word_log_likelihood(
    x: torch.Tensor,
    theta: torch.Tensor,
    mu: torch.Tensor,
    log_sigma: torch.Tensor,
    prior: GaussianPrior,
    n_samples: int = 1000,
    generator: torch.Generator | None = None,
    include_coefficient: bool = False,
) -> tuple[float, torch.Tensor]:
    """The clean per-word held-out log-likelihood: (sum_n log p^(x_n | theta_n)) / (sum_n T_n)
    with the importance-sampled :func:`log_marginal_is`, without the multinomial coefficient
    by default (the token sequence's probability).  Returns (per-word value, per-pair (B,))."""
    per_pair = log_marginal_is(x, theta, mu, log_sigma, prior, n_samples, generator, include_coefficient)
    return float(per_pair.sum() / x.sum()), per_pair


def per_word_log_likelihood_halves(
    x: torch.Tensor,
    theta: torch.Tensor,
    mu: torch.Tensor,
    log_sigma: torch.Tensor,
    prior: GaussianPrior,
    n_samples: int = 1000,
    generator: torch.Generator | None = None,
) -> tuple[float, float, torch.Tensor]:
    """:func:`per_word_log_likelihood` (the same draws, the same value) and the same estimate
    from the first half of its draws: (per word, per word from n_samples // 2 draws, per pair).
    An importance-sampled estimate is biased low and rises with the draws; how far halving
    them moves it says whether ``n_samples`` is enough (the convergence check of the clean IS)."""
    if n_samples < 2:
        raise ValueError(f"per_word_log_likelihood_halves: n_samples={n_samples} must be >= 2")
    with torch.no_grad():
        w = importance_log_weights(x, theta, mu, log_sigma, prior, n_samples, generator, False)
    per_pair, per_pair_half = is_estimate(w), is_estimate(w[: n_samples // 2])
    tokens = x.sum()
    return float(per_pair.sum() / tokens), float(per_pair_half.sum() / tokens), per_pair


def paper_log_predictive_density(
    x: torch.Tensor, theta: torch.Tensor, h_samples: torch.Tensor, prior: GaussianPrior
) -> torch.Tensor:
    """The authors' "posterior predictive log likelihood" of the whole set of pairs, a scalar:

        log (1/S) sum_s exp( sum_n [ log prior(h_sn) + log Mult(x_n | T_n, softmax(h_sn) theta_n) ] )

    with ``h_samples`` (S, B, K) drawn from the posterior approximation (one draw per pair per
    s, jointly), the prior term and the multinomial coefficient included, and one
    log-sum-exp over the joint of all B pairs (Pyro ``TracePredictive`` +
    ``tr.log_prob_sum()``).  Pass :func:`paper_prior` to reproduce their numbers."""
    joint = (log_likelihood(x, h_samples, theta, True) + log_prior(h_samples, prior)).sum(-1)
    return torch.logsumexp(joint, 0) - math.log(h_samples.shape[0])


def paper_per_word_predictive(
    x: torch.Tensor,
    theta: torch.Tensor,
    h_pool: torch.Tensor,
    prior: GaussianPrior,
    n_draws: int = 10,
    n_repeats: int = 10,
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """The paper's Table 1 metric, (n_repeats,): ``n_repeats`` times, ``n_draws`` joint
    posterior draws picked uniformly with replacement from ``h_pool`` (S_pool, B, K) (their
    100 posterior traces), :func:`paper_log_predictive_density` divided by the total number
    of tokens.  The paper reports mean +- std over the repeats."""
    total_tokens = x.sum()
    values = []
    for _ in range(n_repeats):
        idx = torch.randint(h_pool.shape[0], (n_draws,), generator=generator, device=h_pool.device)
        values.append(paper_log_predictive_density(x, theta, h_pool[idx], prior) / total_tokens)
    return torch.stack(values)


def posterior_mean_reconstruction(h_samples: torch.Tensor, theta: torch.Tensor) -> torch.Tensor:
    """E[softmax(h) theta] over the draws: (S, B, K) -> (B, V) word probabilities, the
    reconstructions of Figure 2 (the authors average the decoded draws, not decode the mean)."""
    return word_probabilities(h_samples, theta).mean(0)


def moment_matched_q(h_samples: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(mu, log_sigma) of the diagonal Gaussian with the samples' mean and standard deviation
    per pair: (S, B, K) -> (B, K) each.  Turns a sampler's output (NUTS) into an importance
    proposal for :func:`log_marginal_is`."""
    if h_samples.shape[0] < 2:
        raise DataError("moment matching needs at least 2 samples")
    return h_samples.mean(0), 0.5 * torch.log(h_samples.var(0, unbiased=True))


__all__ = [
    "APE_ALPHA",
    "BLOCK_GROWTH",
    "BLOCK_MIN_PAIRS",
    "GaussianPrior",
    "SupportBlocks",
    "ape_prior",
    "compact_support",
    "compacted",
    "support_columns",
    "elbo",
    "gaussian_kl",
    "importance_log_weights",
    "log_likelihood",
    "log_marginal_is",
    "log_prior",
    "log_q",
    "moment_matched_q",
    "multinomial_log_coefficient",
    "paper_log_predictive_density",
    "paper_per_word_predictive",
    "paper_prior",
    "per_word_log_likelihood",
    "per_word_log_likelihood_halves",
    "posterior_mean_reconstruction",
    "sample_q",
    "word_probabilities",
]
