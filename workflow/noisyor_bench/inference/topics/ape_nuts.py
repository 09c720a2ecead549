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

Chain diagnostics, :func:`chain_diagnostics`: the adapted step size, the mean
acceptance probability (the statistic pyro's step-size adaptation targets, 0.8) and the
divergences of the sampling phase, the
effective sample size and split R-hat of every coordinate (``pyro.ops.stats``: one chain, split in
halves), the fraction of transitions that moved the state, and the samples' spread against a
reference scale (VI's sigma).  A chain is flagged ``stuck`` when it barely moved: under half of its
transitions moved, or the median ESS is below :data:`MIN_ESS`, or its spread is under half of the
reference's (the quick grid's 30 + 30, depth-5 chains: posterior sd 2-3 against VI's sigma 6.3).
"""

from __future__ import annotations

import math
import random
import time
from dataclasses import dataclass

import numpy as np
import pyro
import torch
from pyro.infer import MCMC, NUTS
from pyro.ops.stats import effective_sample_size, split_gelman_rubin

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
MIN_ESS = 10.0  # median effective sample size below which a chain is flagged stuck
MIN_MOVED = 0.5  # fraction of transitions that must change the state
MIN_SD_RATIO = 0.5  # samples' sd / reference sd (VI's sigma), median over coordinates


@dataclass
class NutsResult:
    """Posterior draws of h, (num_samples, B, K), and the sampler's wall and CPU time."""

    samples: torch.Tensor
    seconds: float
    step_size: float
    init: torch.Tensor  # (B, K) the chain's start
    acceptance: float = float("nan")  # mean acceptance probability of the sampling phase (pyro's)
    divergences: int = 0  # divergent transitions of the sampling phase
    cpu_seconds: float = float("nan")  # the process's CPU time over the same run as ``seconds``


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
        accept_probs: list[float] = []  # the kernel's running mean, read after every sample

        from noisyor_bench.infra.progress import Progress

        ticker = Progress("NUTS", warmup_steps + num_samples, unit="draws")  # every 20 s

        def record(kernel_: NUTS, _params: object, stage: str, _i: int) -> None:
            ticker.update(len(accept_probs) + (_i if stage != "Sample" else warmup_steps), stage.lower())
            if stage == "Sample":
                accept_probs.append(float(getattr(kernel_, "_mean_accept_prob", float("nan"))))

        mcmc = MCMC(
            kernel,
            num_samples=num_samples,
            warmup_steps=warmup_steps,
            initial_params={"h": start},
            disable_progbar=True,
            hook_fn=record,
        )
        tick, cpu_tick = time.perf_counter(), time.process_time()
        mcmc.run()
        seconds, cpu_seconds = time.perf_counter() - tick, time.process_time() - cpu_tick
        samples = mcmc.get_samples()["h"].detach()
        diag = mcmc.diagnostics()
    random.setstate(states[0])
    np.random.set_state(states[1])
    # the mean acceptance probability of the sampling phase (the statistic dual averaging
    # targets, 0.8); pyro's "acceptance rate" counts moves, ~1 for NUTS's multinomial sampling
    accept = accept_probs[-1] if accept_probs else float("nan")
    divergences = diag.get("divergences", {}).get("chain 0", [])
    return NutsResult(
        samples=samples,
        seconds=seconds,
        step_size=float(kernel.step_size),
        init=start,
        acceptance=float(accept),
        divergences=len(divergences),
        cpu_seconds=cpu_seconds,
    )


def capped_ess(ess: torch.Tensor, draws: int) -> torch.Tensor:
    """Effective sample sizes capped at ``draws * log10(draws)``, as Stan caps them. An
    antithetic coordinate (lag-1 autocorrelation near -1) has an integrated autocorrelation time
    near or below 0, for which ``pyro.ops.stats.effective_sample_size`` returns a huge or a
    *negative* ESS; such a coordinate is super-efficient, not stuck, so it reads the cap."""
    cap = draws * math.log10(max(draws, 2))
    return torch.where(
        torch.isnan(ess), ess, torch.where((ess < 0) | (ess > cap), torch.full_like(ess, cap), ess)
    )


def chain_diagnostics(
    samples: torch.Tensor, reference_sd: torch.Tensor | None = None
) -> dict[str, float | bool]:
    """ESS, split R-hat, movement and spread of one chain's ``samples`` (S, B, K) (module
    docstring); ``reference_sd`` (B, K) the scale the spread is compared with (VI's sigma)."""
    s = samples.double()
    chain = s.unsqueeze(0)  # (chains=1, S, B, K)
    ess = capped_ess(effective_sample_size(chain, chain_dim=0, sample_dim=1), s.shape[0])
    rhat = split_gelman_rubin(chain, chain_dim=0, sample_dim=1)
    moved = (s[1:] != s[:-1]).flatten(1).any(1).double().mean() if s.shape[0] > 1 else torch.tensor(0.0)
    out: dict[str, float | bool] = {
        "ess_median": float(torch.nanmedian(ess)),
        "ess_min": float(torch.nan_to_num(ess, nan=0.0).min()),
        "rhat_median": float(torch.nanmedian(rhat)),
        "rhat_max": float(torch.nan_to_num(rhat, nan=float("inf")).max()),
        "moved_fraction": float(moved),
        "sd_median": float(s.std(0).median()),
    }
    ratio = float("nan")
    if reference_sd is not None:
        ratio = float((s.std(0) / reference_sd.double()).median())
    out["sd_ratio_median"] = ratio
    out["stuck"] = bool(
        out["moved_fraction"] < MIN_MOVED
        or not out["ess_median"] >= MIN_ESS
        or (math.isfinite(ratio) and ratio < MIN_SD_RATIO)
    )
    return out


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
    "MIN_ESS",
    "MIN_MOVED",
    "MIN_SD_RATIO",
    "NUTS_SAMPLES",
    "NUTS_WARMUP_STEPS",
    "NutsResult",
    "chain_diagnostics",
    "nuts_estimates",
    "potential",
    "run_nuts",
    "warm_start_from_q",
]
