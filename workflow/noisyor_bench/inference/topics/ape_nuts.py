"""NUTS on h for the logistic-normal topic model (APE's sampling baseline), with pyro-ppl.

The target is p(h | x, theta) proportional to N(h; prior) Mult(x | T, softmax(h) theta) on
R^K per pair; a batch of B pairs is sampled as one chain on the product space (the pairs are
independent; the authors ran one chain over all 300 pairs this way).  Pyro's NUTS with its
defaults, as the paper: initial step size 1 adapted by dual averaging during warm-up
(diagonal mass matrix adapted too), 100 warm-up steps and 100 samples (the authors' code).

Warm start, as the authors' code: the chain starts from one draw of VI's q
(``nuts_kernel.initial_trace = svi.exec_traces[-1]``, the last of the posterior traces drawn
from the fitted guide): :func:`warm_start_from_q`.

Table 1's NUTS row is the posterior predictive per-word log-likelihood of the samples
(:func:`nuts_estimates`: the paper's metric, and beyond the paper an importance-sampled
log p(x | theta) with the diagonal Gaussian fitted to the samples as the proposal) and the time.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass

import numpy as np
import pyro
import torch
from pyro.infer import MCMC, NUTS

from noisyor_bench.infra.errors import ConfigError, DataError
from noisyor_bench.models.topics.logistic_normal import (
    GaussianPrior,
    compacted,
    log_likelihood,
    moment_matched_q,
    paper_per_word_predictive,
    per_word_log_likelihood,
    sample_q,
)

NUTS_WARMUP_STEPS = 100
NUTS_SAMPLES = 100


@dataclass
class NutsResult:
    """Posterior draws of h, (num_samples, B, K), and the sampler's wall time."""

    samples: torch.Tensor
    seconds: float
    step_size: float
    init: torch.Tensor  # (B, K) the chain's start


def warm_start_from_q(
    mu: torch.Tensor, log_sigma: torch.Tensor, generator: torch.Generator | None = None
) -> torch.Tensor:
    """One draw from q = N(mu, diag sigma^2), (B, K): the authors' NUTS initialisation."""
    with torch.no_grad():
        return sample_q(mu, log_sigma, 1, generator)[0]


def potential(x: torch.Tensor, theta: torch.Tensor, prior: GaussianPrior):
    """U(h) = -log p(x, h | theta) (without the multinomial coefficient) summed over the
    pairs, for Pyro's ``potential_fn``.  A lean closure (the leapfrog steps evaluate it
    thousands of times): the inputs are checked and compacted once, here."""
    log_likelihood(x, prior.mean.expand(x.shape[0], -1), theta)  # validates shapes once
    counts, topics = compacted(x, theta)
    if topics.ndim == 2:
        topics = topics.expand(x.shape[0], -1, -1)
    mean, precision = prior.mean, 1.0 / prior.variance
    log_norm = -0.5 * torch.log(2 * torch.pi * prior.variance).sum() * x.shape[0]

    def energy(params: dict[str, torch.Tensor]) -> torch.Tensor:
        h = params["h"]
        probs = torch.bmm(torch.softmax(h, -1).unsqueeze(1), topics).squeeze(1)
        log_lik = torch.xlogy(counts, probs).sum()
        log_p0 = log_norm - 0.5 * ((h - mean) ** 2 * precision).sum()
        return -(log_lik + log_p0)

    return energy


def run_nuts(
    x: torch.Tensor,
    theta: torch.Tensor,
    prior: GaussianPrior,
    seed: int,
    init: torch.Tensor | None = None,
    num_samples: int = NUTS_SAMPLES,
    warmup_steps: int = NUTS_WARMUP_STEPS,
    step_size: float = 1.0,
    max_tree_depth: int = 10,
) -> NutsResult:
    """Sample h for the pairs ``x`` (B, V) / ``theta`` (B, K, V) or (K, V) (B = 1: one pair).
    ``init`` (B, K) starts the chain (default: the prior mean).  Seeded without touching the
    caller's global random state (torch, numpy, random are restored afterwards)."""
    if num_samples < 1 or warmup_steps < 0:
        raise ConfigError(
            f"NUTS needs num_samples >= 1 and warmup_steps >= 0; got {num_samples}, {warmup_steps}"
        )
    if x.ndim != 2:
        raise DataError(f"x must be (B, V); got shape {tuple(x.shape)}")
    dtype = x.dtype
    prior = prior.to(x.device, dtype)
    theta = theta.to(dtype)
    start = prior.mean.expand(x.shape[0], -1).clone() if init is None else init.detach().to(dtype).clone()
    if start.shape != (x.shape[0], prior.n_topics):
        raise DataError(f"NUTS init must be ({x.shape[0]}, {prior.n_topics}); got {tuple(start.shape)}")
    states = (random.getstate(), np.random.get_state())
    with torch.random.fork_rng(devices=[x.device] if x.device.type == "cuda" else []):
        pyro.set_rng_seed(int(seed) % 2**32)
        kernel = NUTS(
            potential_fn=potential(x, theta, prior),
            step_size=step_size,
            adapt_step_size=True,
            max_tree_depth=max_tree_depth,
        )
        mcmc = MCMC(
            kernel,
            num_samples=num_samples,
            warmup_steps=warmup_steps,
            initial_params={"h": start},
            disable_progbar=True,
        )
        tick = time.perf_counter()
        mcmc.run()
        seconds = time.perf_counter() - tick
        samples = mcmc.get_samples()["h"].detach()
    random.setstate(states[0])
    np.random.set_state(states[1])
    return NutsResult(samples=samples, seconds=seconds, step_size=float(kernel.step_size), init=start)


def nuts_estimates(
    x: torch.Tensor,
    theta: torch.Tensor,
    samples: torch.Tensor,
    paper_prior_: GaussianPrior,
    clean_prior: GaussianPrior,
    seed: int,
    is_samples: int = 1000,
    n_draws: int = 10,
    n_repeats: int = 10,
) -> dict[str, float]:
    """Table 1's NUTS quantities from ``samples`` (S, B, K): the paper's per-word posterior
    predictive (mean and std over ``n_repeats``, under ``paper_prior_``) and the clean
    per-word IS log p(x | theta) with the moment-matched Gaussian as proposal (``clean_prior``)."""
    gen = torch.Generator(device=samples.device).manual_seed(int(seed))
    paper = paper_per_word_predictive(x, theta, samples, paper_prior_, n_draws, n_repeats, gen)
    mu, log_sigma = moment_matched_q(samples)
    clean, _ = per_word_log_likelihood(x, theta, mu, log_sigma, clean_prior, is_samples, gen)
    return {
        "paper_per_word_mean": float(paper.mean()),
        "paper_per_word_std": float(paper.std()) if n_repeats > 1 else 0.0,
        "clean_per_word": clean,
    }


__all__ = [
    "NUTS_SAMPLES",
    "NUTS_WARMUP_STEPS",
    "NutsResult",
    "nuts_estimates",
    "potential",
    "run_nuts",
    "warm_start_from_q",
]
