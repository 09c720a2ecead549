"""SYN-RANDOM generating parameters (paper Section 4.1 "Data with Random Weights", Table 3).

The paper: "theta, theta0 and mu are sampled from BETA(alpha_theta, beta_theta) and
BETA(alpha_mu, beta_mu) ... s is the probability of removing the connection between z_k and
x_i by setting theta_ik = 0 ... we randomly add connections to the latent and observed
variables which do not have any connection."  The reading implemented here is the one that
reproduces Table 3's Sparsity column best (docs/syn_random.md has the comparison):

* ``theta_ik = b_ik * m_ik`` with ``b_ik ~ Beta(alpha_theta, beta_theta)`` taken as the
  *rate* itself (not as ``p_ik = 1 - exp(-theta_ik)``) and ``m_ik ~ Bernoulli(1 - s)``.
* No Beta-distributed leak: ``theta_i0 = LEAK_FLOOR`` (1e-4) for every i.  The text says
  theta0 is Beta-drawn too, but any Beta leak -- dense, or removed with probability s like
  an edge -- makes every row denser than Table 3 (docs/syn_random.md, readings A, C, D).
* ``mu_k ~ Beta(alpha_mu, beta_mu)`` independently per latent, clipped to
  ``[MU_CLIP, 1 - MU_CLIP]``.
* Orphan repair, latents first: every latent k without an edge gets one edge to a uniformly
  chosen observed i with a fresh Beta(alpha_theta, beta_theta) weight; then every observed i
  without an edge gets one edge to a uniformly chosen latent k, likewise.  The leak never
  counts as a connection: every x_i has at least one latent parent.

Why a floor rather than theta_i0 = 0: with no leak an observation with no active parent has
p(x_i = 1) = 0.  That is a legitimate model and never contradicts data sampled from it, but
any Monte Carlo ELBO under the true parameters (inference experiments, Sections 4.2-4.3) is
``-inf`` as soon as one sampled ``z`` leaves a positive ``x_i`` without an active parent.
1e-4 keeps those terms finite (log 1e-4 = -9.2 nats) and moves the expected sparsity by
0.01 percentage points.

Row 6 of Table 3 (D = K = 500, Beta(1, 10), s = 0.95, Sparsity 73.6%) is not reproduced by
this or any other reading tried: its parameters give 82-83% here.  See docs/syn_random.md.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from numbers import Integral, Real
from typing import Any

import numpy as np

from noisyor_bench.data.synthetic.sparsity import expected_sparsity
from noisyor_bench.infra.errors import ConfigError

__all__ = ["LEAK_FLOOR", "MU_CLIP", "SPEC_KEYS", "expected_sparsity", "params_rng", "random_parameters"]

#: theta_i0 of every observation (see module docstring: a floor, not a Beta draw).
LEAK_FLOOR = 1e-4
#: mu is clipped to [MU_CLIP, 1 - MU_CLIP] so log mu and log(1 - mu) stay finite.
MU_CLIP = 1e-6
#: Keys of a SYN-RANDOM config entry that this module reads.
SPEC_KEYS = ("D", "K", "alpha_theta", "beta_theta", "alpha_mu", "beta_mu", "s")
# Kept Beta draws are floored here so "kept" always means theta_ik > 0 (a draw can underflow
# to 0.0 for small alpha; the floor only touches draws below 2.2e-308).
_TINY = np.finfo(np.float64).tiny


def params_rng(seed: int) -> np.random.Generator:
    """The generator for a dataset's parameters: ``SeedSequence([seed, 0])``.

    The dataset builder draws its splits from ``SeedSequence([seed, 1])``, so parameters and
    samples never share a stream, and tests reproduce the builder's parameters exactly.
    (numpy pads entropy with zeros, so this equals ``default_rng(seed)``.)
    """
    if isinstance(seed, bool) or not isinstance(seed, Integral) or seed < 0:
        raise ConfigError(f"seed: expected a non-negative integer, got {seed!r}")
    return np.random.default_rng(np.random.SeedSequence([int(seed), 0]))


def _validated(spec: Mapping[str, Any], name: str) -> dict[str, Any]:
    """The spec's numeric keys, checked; ConfigError names dataset and key otherwise."""
    where = f"datasets.{name}"
    out: dict[str, Any] = {}
    for key in SPEC_KEYS:
        if key not in spec:
            raise ConfigError(f"{where}.{key}: missing (a SYN-RANDOM entry needs {', '.join(SPEC_KEYS)})")
        value = spec[key]
        if key in ("D", "K"):
            if isinstance(value, bool) or not isinstance(value, Integral) or value < 1:
                raise ConfigError(f"{where}.{key}: expected a positive integer, got {value!r}")
            out[key] = int(value)
            continue
        if isinstance(value, bool) or not isinstance(value, Real) or not math.isfinite(float(value)):
            raise ConfigError(f"{where}.{key}: expected a finite number, got {value!r}")
        value = float(value)
        if key == "s":
            if not 0.0 <= value < 1.0:
                raise ConfigError(
                    f"{where}.s: the removal probability must satisfy 0 <= s < 1, got {value!r}"
                )
        elif value <= 0.0:
            raise ConfigError(f"{where}.{key}: Beta parameters must be > 0, got {value!r}")
        out[key] = value
    return out


def _repair_orphans(theta: np.ndarray, rng: np.random.Generator, a: float, b: float) -> None:
    """Give every latent and then every observed variable without an edge one random edge.

    Latents first: their new edges can only remove observed orphans, and the second pass adds
    edges to rows only, so neither pass can create an orphan (in place, fresh Beta weights).
    """
    d, k = theta.shape
    lonely_k = np.flatnonzero(~(theta > 0).any(axis=0))
    if lonely_k.size:
        rows = rng.integers(0, d, size=lonely_k.size)
        theta[rows, lonely_k] = np.maximum(rng.beta(a, b, size=lonely_k.size), _TINY)
    lonely_i = np.flatnonzero(~(theta > 0).any(axis=1))
    if lonely_i.size:
        cols = rng.integers(0, k, size=lonely_i.size)
        theta[lonely_i, cols] = np.maximum(rng.beta(a, b, size=lonely_i.size), _TINY)


def random_parameters(
    spec: Mapping[str, Any], rng: np.random.Generator, *, name: str | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(theta (D,K), theta0 (D,), mu (K,))`` for one Table 3 row; see the module docstring.

    Deterministic given ``rng``'s state (draw order: weights, edge mask, mu, orphan repair).
    ``name`` (default ``spec["name"]`` or ``"syn-random"``) only labels error messages.
    """
    label = name if name is not None else str(spec.get("name", "syn-random"))
    p = _validated(spec, label)
    d, k, s = p["D"], p["K"], p["s"]
    a_t, b_t = p["alpha_theta"], p["beta_theta"]

    weights = np.maximum(rng.beta(a_t, b_t, size=(d, k)), _TINY)
    keep = rng.random((d, k)) >= s
    theta = np.where(keep, weights, 0.0)

    theta0 = np.full(d, LEAK_FLOOR)
    mu = np.clip(rng.beta(p["alpha_mu"], p["beta_mu"], size=k), MU_CLIP, 1.0 - MU_CLIP)

    _repair_orphans(theta, rng, a_t, b_t)
    return theta.astype(np.float64), theta0.astype(np.float64), mu.astype(np.float64)
