"""Many noisy-OR problems for the APE question on noisy-OR (docs/ape_noisyor.md).

A *problem* is one true noisy-OR drawn from a family generator, data sampled from it, and
``C`` candidate models to be ranked: the truth (candidate 0) and ``C - 1`` perturbations of
its rates, ``theta_c = theta * exp(s_c * eps_c)`` with ``eps_c`` iid standard normal on the
edges (``theta_ik > 0``) and scales ``s_c = perturbation * c / (C - 1)`` growing with ``c``.
Every candidate keeps the truth's graph, leak and prior, so candidates differ only in
``theta`` (APE's setting: the model is ``theta``); neighbouring scales give candidates whose
log-likelihoods differ by a fraction of a nat per data point, comparable to amortization
gaps, so ranking them is a real test.

Families (the project's synthetic generators, small K so that 2^K states can be enumerated):

* ``pattern``: the SYN-PATTERN shapes (:func:`~noisyor_bench.data.synthetic.patterns.syn_patterns`,
  8 patterns on 8 x 8 pixels); each problem draws a firing probability ``p_ik ~ U(p_low,
  p_high)`` for every pattern pixel and adds ``extra_pixels`` random off-pattern pixels per
  latent (the analogue of APE's bar-biased test topics);
* ``random``: SYN-RANDOM (:func:`~noisyor_bench.data.synthetic.synrandom.random_parameters`),
  one draw per problem.

In both, ``mu`` is the family's constant and the leak ``theta0 = -log(1 - leak_prob)`` on
every observation (fixed across problems: only ``theta`` varies, as in APE).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from noisyor_bench.data.synthetic.patterns import rate, syn_patterns
from noisyor_bench.data.synthetic.synrandom import random_parameters
from noisyor_bench.infra.errors import ConfigError
from noisyor_bench.models.noisyor.model import NoisyOR

FAMILIES = ("pattern", "random")
SPLIT_INDEX = {"train": 0, "val": 1, "test": 2}


@dataclass(frozen=True)
class ProblemSet:
    """The problems of one split: candidate rates (P, C, D, K), data (P, N, D) 0/1, shared theta0, mu."""

    theta: np.ndarray
    x: np.ndarray
    theta0: np.ndarray
    mu: np.ndarray

    @property
    def n_problems(self) -> int:
        return int(self.theta.shape[0])

    @property
    def n_candidates(self) -> int:
        return int(self.theta.shape[1])

    def model(self, problem: int, candidate: int, dtype: torch.dtype = torch.float64) -> NoisyOR:
        """Candidate ``candidate`` of problem ``problem`` as a :class:`NoisyOR`."""
        return NoisyOR.from_numpy(self.theta[problem, candidate], self.theta0, self.mu, dtype=dtype)


def _family(spec: Mapping[str, Any]) -> str:
    family = spec.get("family")
    if family not in FAMILIES:
        raise ConfigError(f"ape_noisyor family {family!r} is not allowed; allowed: {', '.join(FAMILIES)}")
    return str(family)


def true_theta(spec: Mapping[str, Any], rng: np.random.Generator) -> np.ndarray:
    """One true rate matrix (D, K) of the family (module docstring)."""
    if _family(spec) == "pattern":
        shapes = syn_patterns().astype(bool)  # (64, 8)
        d, k = shapes.shape
        extra = int(spec.get("extra_pixels", 0))
        mask = shapes.copy()
        for j in range(k):
            off = np.flatnonzero(~shapes[:, j])
            mask[rng.choice(off, size=min(extra, off.size), replace=False), j] = True
        probs = rng.uniform(float(spec["p_low"]), float(spec["p_high"]), size=(d, k))
        return np.where(mask, -np.log1p(-probs), 0.0)
    theta, _, _ = random_parameters(spec, rng, name="ape_noisyor")
    return theta


def family_prior(spec: Mapping[str, Any], d: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The family's fixed ``theta0`` (D,) and ``mu`` (K,)."""
    return np.full(d, rate(float(spec["leak_prob"]))), np.full(k, float(spec["mu"]))


def candidates(
    theta: np.ndarray, n_candidates: int, perturbation: float, rng: np.random.Generator
) -> np.ndarray:
    """The truth and ``n_candidates - 1`` log-normal perturbations of its edges: (C, D, K)."""
    if n_candidates < 2:
        raise ConfigError(f"ape_noisyor candidates must be >= 2; got {n_candidates}")
    out = np.empty((n_candidates, *theta.shape))
    out[0] = theta
    for c in range(1, n_candidates):
        scale = perturbation * c / (n_candidates - 1)
        out[c] = theta * np.exp(scale * rng.standard_normal(theta.shape))
    return out


def problem_rng(seed: int, split: str, problem: int) -> np.random.Generator:
    """The stream of one problem: ``SeedSequence([seed, split index, problem])`` (splits never share)."""
    return np.random.default_rng(np.random.SeedSequence([int(seed), SPLIT_INDEX[split], int(problem)]))


def make_problems(
    spec: Mapping[str, Any],
    split: str,
    n_problems: int,
    n_rows: int,
    n_candidates: int,
    perturbation: float,
    seed: int,
) -> ProblemSet:
    """``n_problems`` problems of ``split`` with ``n_rows`` data rows each, sampled from the truth."""
    thetas, xs = [], []
    theta0 = mu = None
    for p in range(n_problems):
        rng = problem_rng(seed, split, p)
        theta = true_theta(spec, rng)
        theta0, mu = family_prior(spec, *theta.shape)
        thetas.append(candidates(theta, n_candidates, perturbation, rng))
        truth = NoisyOR.from_numpy(theta, theta0, mu)
        gen = torch.Generator().manual_seed(int(rng.integers(2**62)))
        _, x = truth.sample(n_rows, gen)
        xs.append(x.numpy().astype(np.uint8))
    if theta0 is None or mu is None:
        raise ConfigError(f"ape_noisyor: {split} needs at least one problem")
    return ProblemSet(theta=np.stack(thetas), x=np.stack(xs), theta0=theta0, mu=mu)


__all__ = [
    "FAMILIES",
    "ProblemSet",
    "candidates",
    "family_prior",
    "make_problems",
    "problem_rng",
    "true_theta",
]
