"""Held-out ``-log p(x)`` of a noisy-OR network: exact where affordable, AIS elsewhere.

A learned model's NELBO is a bound; judging it against the independent-Bernoulli baseline
needs its likelihood.  Per data point, with ``N`` its negative and ``P`` its positive
observations (parameterisation of :mod:`noisyor_bench.models.noisyor.model`):

    log p(x) = log p(x_N = 0) + log E_{pi0}[ f(z) ],   f(z) = prod_{i in P} (1 - exp(-a_i(z))),

where the negatives factorise and are absorbed in closed form:
``p(x_N = 0) = exp(-b) prod_k (1 - mu_k + mu_k exp(-c_k))`` with ``c = sum_{i in N} theta_i``,
``b = sum_{i in N} theta_i0``, and ``pi0`` (the posterior given the negatives only) is a product
of Bernoullis with ``logit q_k = logit mu_k - c_k``.  Only ``E_{pi0}[f]`` is hard.

Three paths, chosen per row (:func:`estimate_log_px`), recorded in ``path``:

* ``enumeration`` -- sum over the ``2^R`` states of the *relevant* latents (those with a
  positive rate to some positive observation; the others integrate out to 1).  All terms are
  positive: no cancellation.  Used when ``2^R (R + |P|)`` numbers fit ``exact_elements``.
* ``quickscore`` -- Heckerman's inclusion-exclusion over the subsets ``S`` of ``P``:
  ``E_{pi0}[f] = sum_S (-1)^|S| exp(-theta0_S) prod_k (1 - q_k + q_k exp(-theta_{S,k}))``.
  The alternating sum cancels when ``E[f]`` is small.  Guard: even and odd terms are summed
  separately (log-sum-exp) and the forward error bound
  ``sum_S ((K + |P| + 4) u |L_S| + (|P| + 1) u) exp(L_S) / (even - odd)`` (``L_S`` the log of a
  term, ``u`` the unit round-off) must be at most ``cancel_tol`` (1e-8) nats; a row failing it
  in float64 is recomputed in extended precision (``numpy.longdouble``), and one failing there
  too goes to AIS.  Used when ``2^|P| K`` numbers fit ``exact_elements``.
* ``ais`` -- annealed importance sampling (Neal, 2001) on the geometric path
  ``pi_beta ∝ pi0(z) f(z)^beta``, ``beta_t = (t / T)^power``, from ``pi0`` (sampled exactly) to
  the posterior, with one systematic-scan Gibbs sweep over the relevant latents per
  temperature; ``chains`` independent chains per row.  The row's estimate is the log-mean-exp of
  the chains' log weights; its Monte Carlo standard error is the delta method
  ``sd(w) / (sqrt(C) mean(w))``.  ``E[log Z_hat] <= log Z`` (Jensen), so an AIS ``-log p(x)`` is
  a stochastic *upper* bound: conservative wherever a model is claimed to beat a baseline.
  Convergence diagnostic: up to ``check_rows`` AIS rows are rerun with a schedule twice as long
  (fresh seeds); the schedule is declared converged when the mean change of ``log Z_hat`` is
  within ``check_tol`` nats per row (or within 3 standard errors of zero).

Everything runs on CPU in float64 with a generator seeded from ``seed``: the same inputs give
the same numbers bit for bit.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import torch

from noisyor_bench.evaluation.nll_labels import doubling_check_text, upper_bound_label
from noisyor_bench.infra.errors import ConfigError
from noisyor_bench.models.noisyor.exact import exact_posterior
from noisyor_bench.models.noisyor.model import NoisyOR, log1mexp

PATHS: tuple[str, ...] = ("enumeration", "quickscore", "cover-dp", "ais")
ROW_SUBSET_SEED = 20201212  # the fixed subset of test rows (SeedSequence entropy), as the baselines'
_PAD_RATE = 1.0e3  # rate of a padded positive: log(1 - exp(-1000)) = 0 exactly in float64


@dataclass(frozen=True)
class AISSchedule:
    """An AIS schedule: ``steps`` temperatures ``beta_t = (t / steps)^power``, ``chains`` per row."""

    steps: int = 100
    chains: int = 8
    power: float = 4.0
    check_rows: int = 8
    check_tol: float = 0.1

    def __post_init__(self) -> None:
        if self.steps < 1 or self.chains < 2:
            raise ConfigError(
                f"AIS needs steps >= 1 and chains >= 2; got steps={self.steps}, chains={self.chains}"
            )
        if not self.power > 0 or self.check_rows < 0 or not self.check_tol > 0:
            raise ConfigError(
                f"AIS needs power > 0, check_rows >= 0, check_tol > 0; got {self.power}, "
                f"{self.check_rows}, {self.check_tol}"
            )

    def betas(self, factor: int = 1) -> torch.Tensor:
        t = torch.arange(self.steps * factor + 1, dtype=torch.float64)
        return (t / (self.steps * factor)) ** self.power


@dataclass(frozen=True)
class LikelihoodConfig:
    """Which rows get which path, and how many rows are scored (:func:`scored_rows`).

    ``exact_elements``: numbers an exact path may form per row (2^22: ~0.1 s per row here).
    ``enumerate_k``: up to this K every row is scored by the batched 2^K enumeration.
    ``max_rows``: when scoring every row would cost more than ``row_budget`` (numbers, the
    per-row cost model of :func:`row_costs`), a fixed seeded subset of this many rows is
    scored instead -- the same rows for every model of the dataset, given its ``x`` and K.
    ``use_ais`` false: only rows an exact path can score (a cheap, labelled subset), and none
    when fewer than ``min_rows`` qualify (a mean over a handful of sparse rows says little).
    """

    exact_elements: int = 2**22
    enumerate_k: int = 16
    cancel_tol: float = 1e-8
    max_rows: int = 200
    row_budget: float = 1.0e8
    use_ais: bool = True
    min_rows: int = 30
    ais: AISSchedule = field(default_factory=AISSchedule)

    @classmethod
    def from_mapping(cls, spec: dict[str, Any] | None) -> LikelihoodConfig:
        """From a config mapping (``evaluation.nll`` / ``baselines.nll``); unknown keys are refused."""
        spec = dict(spec or {})
        ais = dict(spec.pop("ais", {}) or {})
        allowed = {f for f in cls.__dataclass_fields__ if f != "ais"}
        bad = sorted(set(spec) - allowed) + sorted(
            f"ais.{k}" for k in set(ais) - set(AISSchedule.__dataclass_fields__)
        )
        if bad:
            raise ConfigError(
                f"unknown likelihood setting(s) {bad}; allowed: {sorted(allowed)} and ais.{{steps, chains, power, check_rows, check_tol}}"
            )
        return cls(**spec, ais=AISSchedule(**ais))

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class LikelihoodResult:
    """Per-row ``log p(x)`` (N,), its Monte Carlo standard error (0 on exact rows) and path."""

    log_px: np.ndarray
    mc_se: np.ndarray
    path: np.ndarray
    diagnostics: dict[str, Any]

    def summary(self) -> dict[str, Any]:
        """The ``nll_*`` metrics of a set of rows (see results/README.md)."""
        nll = -self.log_px
        n = int(nll.size)
        counts = {p: int((self.path == p).sum()) for p in PATHS}
        used = [p for p in PATHS if counts[p]]
        label = "exact" if "ais" not in used else ("ais" if used == ["ais"] else "exact+ais")
        return {
            "nll_test": float(nll.mean()),
            "nll_test_se": float(nll.std(ddof=1) / math.sqrt(n)) if n > 1 else None,
            "nll_test_mc_se": float(math.sqrt(float((self.mc_se**2).sum())) / n),
            "nll_estimator": label,
            "nll_paths": counts,
            **{f"nll_ais_{k}": v for k, v in self.diagnostics.items()},
        }


# ---------------------------------------------------------------------------------- pieces
def absorb_negatives(model: NoisyOR, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``(log p(x_N = 0), logit q)`` per row: the negatives' closed form and ``pi0``'s log-odds (N, K)."""
    neg = 1.0 - x
    c = neg @ model.theta  # (N, K)
    b = neg @ model.theta0  # (N,)
    mu = model.mu
    log_neg = -b + torch.log1p(mu * torch.expm1(-c)).sum(-1)
    logit_q = torch.log(mu) - torch.log1p(-mu) - c
    return log_neg, logit_q


def _log_q(logit_q: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    return torch.nn.functional.logsigmoid(logit_q), torch.nn.functional.logsigmoid(-logit_q)


def enumerate_row(theta_p: np.ndarray, theta0_p: np.ndarray, logit_q: np.ndarray) -> float:
    """``log E_{pi0}[f]`` by summing over the 2^R relevant-latent states (R = columns of ``theta_p``)."""
    r = theta_p.shape[1]
    states = ((np.arange(2**r)[:, None] >> np.arange(r)) & 1).astype(np.float64)  # (2^R, R)
    a = torch.as_tensor(theta0_p[None, :] + states @ theta_p.T)  # (2^R, P)
    log_f = log1mexp(a).sum(-1).numpy()
    lq1, lq0 = (t.numpy() for t in _log_q(torch.as_tensor(logit_q)))
    log_w = states @ lq1 + (1.0 - states) @ lq0
    return float(_lse(log_w + log_f))


def _lse(v: np.ndarray, axis: int = -1) -> np.ndarray:
    m = np.max(v, axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    with np.errstate(divide="ignore"):  # an all -inf slice is log(0) = -inf
        return np.squeeze(m, axis) + np.log(np.sum(np.exp(v - m), axis=axis))


def quickscore_rows(
    theta_p: np.ndarray, theta0_p: np.ndarray, q: np.ndarray, cancel_tol: float, dtype: Any = np.float64
) -> tuple[np.ndarray, np.ndarray]:
    """``log E_{pi0}[f]`` by inclusion-exclusion for rows with the same number p of positives.

    ``theta_p`` (n, p, K) rates of the positives, ``theta0_p`` (n, p), ``q`` (n, K) = pi0.
    Returns the estimates (n,) and whether each passed the cancellation guard (module docstring).
    """
    n, p, k = theta_p.shape
    theta_p, theta0_p, q = (np.asarray(a, dtype=dtype) for a in (theta_p, theta0_p, q))
    subsets = ((np.arange(2**p)[:, None] >> np.arange(p)) & 1).astype(dtype)  # (2^p, p)
    sign_odd = subsets.sum(1) % 2 == 1
    t = np.einsum("sp,npk->nsk", subsets, theta_p)  # (n, 2^p, K)
    log_terms = np.log1p(q[:, None, :] * np.expm1(-t)).sum(-1) - theta0_p @ subsets.T  # (n, 2^p)
    even = _lse(np.where(sign_odd, -np.inf, log_terms))
    odd = _lse(np.where(sign_odd, log_terms, -np.inf))
    with np.errstate(divide="ignore", invalid="ignore"):
        diff = np.where(odd < even, even + np.log(-np.expm1(odd - even)), -np.inf)
        u = float(np.finfo(dtype).eps) / 2
        err = ((k + p + 4) * u * np.abs(log_terms) + (p + 1) * u) * np.exp(log_terms - diff[:, None])
        bound = err.sum(1)
    ok = np.isfinite(diff) & (bound <= cancel_tol)
    return diff.astype(np.float64), ok


def cover_dp_rows(theta_p: np.ndarray, theta0_p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """``log E_{pi0}[f]`` for rows with the same number p of positives, without cancellation.

    ``f(z)`` is the probability that every positive fires, each active latent k firing positive
    i independently with probability ``1 - exp(-theta_ik)`` (and the leak with
    ``1 - exp(-theta_i0)``).  A forward pass over the latents carries the distribution of the
    set of positives fired so far (a vector of ``2^p`` probabilities): latent k leaves it
    unchanged with probability ``1 - q_k`` and otherwise applies the product over positives of
    the 2x2 kernels ``[[g, 1 - g], [0, 1]]`` (``g = exp(-theta_ik)``), one axis at a time; the
    answer is the probability of the full set after the leaks.  All numbers are non-negative
    probabilities (no cancellation); cost ``O(K p 2^p)`` per row.
    """
    n, p, k = theta_p.shape
    v = np.zeros((n, 2**p))
    v[:, 0] = 1.0
    g_all = np.exp(-np.asarray(theta_p, dtype=np.float64))  # (n, p, K)
    shape = (n,) + (2,) * p

    def kernel(w: np.ndarray, g: np.ndarray) -> np.ndarray:
        w = w.reshape(shape).copy()
        for i in range(p):
            gi = g[:, i].reshape((n,) + (1,) * (p - 1))
            lo = np.take(w, 0, axis=i + 1)
            hi = np.take(w, 1, axis=i + 1)
            idx_lo = (slice(None),) * (i + 1) + (0,)
            idx_hi = (slice(None),) * (i + 1) + (1,)
            w[idx_hi] = hi + lo * (1.0 - gi)
            w[idx_lo] = lo * gi
        return w.reshape(n, -1)

    relevant = np.flatnonzero((g_all < 1.0).any((0, 1)))
    for j in relevant:
        qj = q[:, j : j + 1]
        v = (1.0 - qj) * v + qj * kernel(v, g_all[:, :, j])
    v = kernel(v, np.exp(-np.asarray(theta0_p, dtype=np.float64)))
    with np.errstate(divide="ignore"):
        return np.log(v[:, -1])


# ---------------------------------------------------------------------------------- AIS
def _padded_positives(
    model: NoisyOR, x: torch.Tensor, rel: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Rates of each row's positives to the latents ``rel``: (n, Pmax, R), and leaks (n, Pmax), padded."""
    n = x.shape[0]
    counts = x.sum(1).long()
    pmax = max(1, int(counts.max()))
    theta_p = torch.zeros((n, pmax, rel.numel()), dtype=torch.float64)
    theta0_p = torch.full((n, pmax), _PAD_RATE, dtype=torch.float64)
    sub = model.theta[:, rel]
    for r in range(n):
        idx = torch.nonzero(x[r] > 0).flatten()
        theta_p[r, : idx.numel()] = sub[idx]
        theta0_p[r, : idx.numel()] = model.theta0[idx]
    return theta_p, theta0_p


@torch.no_grad()
def ais_rows(
    model: NoisyOR,
    x: torch.Tensor,
    logit_q: torch.Tensor,
    schedule: AISSchedule,
    generator: torch.Generator,
    factor: int = 1,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """AIS estimates of ``log E_{pi0}[f]`` for rows ``x`` (n, D): ``(estimate, mc_se, ess)``, each (n,).

    ``factor`` multiplies the number of temperatures (the convergence check uses 2).
    """
    n, c = x.shape[0], schedule.chains
    pos_any = x.sum(0) > 0
    rel = torch.nonzero((model.theta[pos_any] > 0).any(0)).flatten()
    theta_p, theta0_p = _padded_positives(model, x, rel)  # (n, P, R), (n, P)
    lq = logit_q[:, rel]  # (n, R)
    z = (
        torch.rand((n, c, rel.numel()), generator=generator, dtype=torch.float64)
        < torch.sigmoid(lq)[:, None, :]
    ).double()
    log_w = torch.zeros((n, c), dtype=torch.float64)
    betas = schedule.betas(factor)
    # Per positive i the state keeps e_i = exp(-a_i) (its chance to stay off); latent j
    # multiplies it by g_ij = exp(-theta_ij) when on.  Rates are clamped at 300 in g only, so
    # e / g never divides by an underflowed zero.
    cols = [theta_p[:, None, :, j] for j in range(rel.numel())]  # (n, 1, P) views
    fire = [-torch.expm1(-th) for th in cols]  # 1 - g_ij
    ginv_m1 = [torch.expm1(th.clamp(max=300.0)) for th in cols]  # 1/g_ij - 1
    for t in range(1, betas.numel()):
        beta = float(betas[t])
        a = theta0_p[:, None, :] + z @ theta_p.transpose(1, 2)  # exact rates, once per temperature
        log_w += (beta - float(betas[t - 1])) * log1mexp(a).sum(-1)
        e = torch.exp(-a)
        u = torch.rand((n, c, rel.numel()), generator=generator, dtype=torch.float64)
        for j in range(len(cols)):
            e_off = e * (1.0 + z[:, :, j : j + 1] * ginv_m1[j])
            # log f(z_j = 1) - log f(z_j = 0) = sum_i log(1 + e_off (1 - g_ij) / (1 - e_off))
            delta = torch.log(1.0 + e_off * fire[j] / (1.0 - e_off)).sum(-1)  # (n, C)
            on = (u[:, :, j] < torch.sigmoid(lq[:, j : j + 1] + beta * delta)).double()
            z[:, :, j] = on
            e = e_off * (1.0 - on[:, :, None] * fire[j])
    lw = log_w.numpy()
    est = _lse(lw, axis=1) - math.log(c)
    w = np.exp(lw - lw.max(1, keepdims=True))
    mean = w.mean(1)
    se = w.std(1, ddof=1) / math.sqrt(c) / mean
    ess = w.sum(1) ** 2 / (w**2).sum(1)
    return est, se, ess


# ---------------------------------------------------------------------------------- rows
def exact_affordable(positives: np.ndarray, k: int, config: LikelihoodConfig) -> np.ndarray:
    """Rows whose number of positives lets an exact path run for any model with K latents: the
    cancellation-free forward pass (``2^|P| |P| K <= 4 exact_elements``), which also catches the
    rows whose Quickscore (``2^|P| K <= exact_elements``) fails its guard."""
    p = np.asarray(positives, dtype=np.float64)
    return (2.0**p) * np.maximum(p, 1.0) * k <= 4 * config.exact_elements


def row_costs(x: np.ndarray, k: int, config: LikelihoodConfig) -> np.ndarray:
    """Work per row (numbers formed) in the cost model used to choose the scored rows:
    ``2^|P| |P| K`` where an exact path fits, else the AIS cost ``chains * steps * K * |P|``."""
    p = np.asarray(x).sum(1).astype(np.float64)
    exact = (2.0**p) * np.maximum(p, 1.0) * k
    ais = config.ais.chains * config.ais.steps * k * np.maximum(p, 1.0)
    return np.where(exact_affordable(p, k, config), exact, ais)


def scored_rows(x: np.ndarray, k: int, config: LikelihoodConfig) -> tuple[np.ndarray, str]:
    """Indices of the rows scored and their label; they depend on ``x``, K and the config only,
    so every model of a dataset (learned or true, and the baseline beside it) gets the same rows.

    K <= ``enumerate_k``: every row (enumerated).  With ``use_ais``: every row when the cost model allows, else a fixed seeded subset of
    ``max_rows``.  Without: the rows an exact path can score (:func:`exact_affordable`), or a
    fixed seeded subset of ``max_rows`` of them -- a subset biased towards sparse rows, labelled.
    """
    x = np.asarray(x)
    n = int(x.shape[0])
    pool = np.arange(n)
    what = "test rows"
    if k <= config.enumerate_k:  # 2^K enumeration of every row: cheap whatever the rows
        return pool, "all test rows"
    if not config.use_ais:
        pool = np.flatnonzero(exact_affordable(x.sum(1), k, config))
        p_max = int(x[pool].sum(1).max()) if pool.size else 0
        what = f"test rows with <= {p_max} positives (exact paths only)"
        if pool.size < config.min_rows:
            return pool[
                :0
            ], f"not scored: only {pool.size} of {n} test rows allow an exact path (< {config.min_rows})"
        if pool.size <= config.max_rows:
            if pool.size == n:
                return pool, "all test rows"
            return pool, f"all {pool.size} exactly computable of {n} test rows (<= {p_max} positives)"
    elif n <= config.max_rows or float(row_costs(x, k, config).sum()) <= config.row_budget:
        return pool, "all test rows"
    rng = np.random.default_rng(np.random.SeedSequence(ROW_SUBSET_SEED))
    rows = np.sort(rng.choice(pool, size=config.max_rows, replace=False))
    of = f"{n} test rows" if pool.size == n else f"the {pool.size} {what} of {n}"
    return (
        rows,
        f"fixed seeded subset of {config.max_rows} of {of} (seed {ROW_SUBSET_SEED})",
    )


def rows_digest(rows: Any) -> str:
    """A short fingerprint of a set of row indices (sha256 of the sorted int64 indices, 16 hex
    digits): what a run's per-row ``-log p(x)`` and the baseline's per-row NLL must share before
    they are paired row by row."""
    import hashlib

    idx = np.sort(np.asarray(rows, dtype=np.int64).ravel())
    return hashlib.sha256(idx.tobytes()).hexdigest()[:16]


def estimate_log_px(
    model: NoisyOR,
    x: Any,
    config: LikelihoodConfig | None = None,
    seed: int = 0,
    force: str | None = None,
) -> LikelihoodResult:
    """``log p(x)`` of every row of ``x`` (N, D) under ``model`` (module docstring).

    ``force`` ("enumeration", "quickscore", "ais") uses one path on every row (tests); a
    forced exact path that does not fit ``exact_elements`` or fails the guard raises.
    """
    config = config or LikelihoodConfig()
    if force is not None and force not in PATHS:
        raise ConfigError(f"unknown likelihood path {force!r}; allowed: {', '.join(PATHS)}")
    model = model.detach().to(dtype=torch.float64, device="cpu")
    x_t = torch.as_tensor(np.asarray(x), dtype=torch.float64)
    if x_t.ndim != 2 or x_t.shape[1] != model.D:
        raise ConfigError(f"x has shape {tuple(x_t.shape)}, expected (N, D={model.D})")
    n = x_t.shape[0]
    log_neg, logit_q = absorb_negatives(model, x_t)
    q = torch.sigmoid(logit_q).numpy()
    theta, theta0 = model.theta.numpy(), model.theta0.numpy()
    xb = x_t.numpy() > 0
    hard = np.zeros(n)
    se = np.zeros(n)
    path = np.full(n, "", dtype=object)
    done = np.zeros(n, dtype=bool)
    counts = xb.sum(1)
    if force in (None, "enumeration") and model.K <= config.enumerate_k:
        # small K: every row by the batched 2^K enumeration of the whole model
        log_px = exact_posterior(model, x_t).log_px.numpy()
        return LikelihoodResult(log_px, np.zeros(n), np.full(n, "enumeration"), {})

    def enumerate_rows(rows: np.ndarray, strict: bool) -> None:
        for r in rows:
            pos = np.flatnonzero(xb[r])
            rel = np.flatnonzero((theta[pos] > 0).any(0))
            if (2.0**rel.size) * (rel.size + pos.size) > config.exact_elements:
                if strict:
                    raise ConfigError(
                        f"row {r}: enumeration over {rel.size} relevant latents exceeds exact_elements"
                    )
                continue
            hard[r] = enumerate_row(theta[np.ix_(pos, rel)], theta0[pos], logit_q[r, rel].numpy())
            path[r], done[r] = "enumeration", True

    if force == "enumeration":
        enumerate_rows(np.arange(n), strict=True)
    if force in (None, "quickscore"):
        for p in np.unique(counts):
            rows = np.flatnonzero(~done & (counts == p))
            if rows.size == 0 or (2.0**p) * model.K > config.exact_elements:
                if force == "quickscore":
                    raise ConfigError(f"quickscore over {p} positives exceeds exact_elements")
                continue
            per_chunk = max(1, config.exact_elements // int((2**p) * model.K))
            for s in range(0, rows.size, per_chunk):
                chunk = rows[s : s + per_chunk]
                pos = (
                    np.stack([np.flatnonzero(xb[r]) for r in chunk]) if p else np.zeros((chunk.size, 0), int)
                )
                th_p = theta[pos]  # (m, p, K)
                rel = np.flatnonzero((th_p > 0).any((0, 1)))  # other latents give factors of 1
                val, ok = quickscore_rows(th_p[:, :, rel], theta0[pos], q[chunk][:, rel], config.cancel_tol)
                if force == "quickscore" and not ok.all():
                    raise ConfigError(
                        f"quickscore failed its cancellation guard on rows {chunk[~ok].tolist()}"
                    )
                hard[chunk[ok]] = val[ok]
                path[chunk[ok]] = "quickscore"
                done[chunk[ok]] = True
    if force in (None, "cover-dp"):  # the cancellation-free forward pass, p times Quickscore's cost
        for p in np.unique(counts):
            rows = np.flatnonzero(~done & (counts == p))
            work = (2.0**p) * max(p, 1)
            if rows.size == 0 or work * model.K > 4 * config.exact_elements:
                if force == "cover-dp":
                    raise ConfigError(f"cover-dp over {p} positives exceeds exact_elements")
                continue
            per_chunk = max(1, int(config.exact_elements // work))
            for s in range(0, rows.size, per_chunk):
                chunk = rows[s : s + per_chunk]
                pos = (
                    np.stack([np.flatnonzero(xb[r]) for r in chunk]) if p else np.zeros((chunk.size, 0), int)
                )
                val = cover_dp_rows(theta[pos], theta0[pos], q[chunk])
                ok = np.isfinite(val)
                hard[chunk[ok]] = val[ok]
                path[chunk[ok]] = "cover-dp"
                done[chunk[ok]] = True
    if force is None:  # what Quickscore could not do: enumeration over the relevant latents, if small
        enumerate_rows(np.flatnonzero(~done), strict=False)
    diagnostics: dict[str, Any] = {}
    todo = np.flatnonzero(~done)
    if todo.size:
        gen = torch.Generator().manual_seed(int(seed))
        est, mc, ess = ais_rows(model, x_t[todo], logit_q[todo], config.ais, gen)
        hard[todo], se[todo], path[todo] = est, mc, "ais"
        diagnostics = _ais_check(model, x_t, logit_q, todo, est, config.ais, seed)
        diagnostics.update(
            rows=int(todo.size),
            steps=config.ais.steps,
            chains=config.ais.chains,
            power=config.ais.power,
            ess_min=float(ess.min()),
            ess_median=float(np.median(ess)),
        )
    log_px = log_neg.numpy() + hard
    return LikelihoodResult(log_px=log_px, mc_se=se, path=path.astype(str), diagnostics=diagnostics)


def _ais_check(
    model: NoisyOR,
    x: torch.Tensor,
    logit_q: torch.Tensor,
    todo: np.ndarray,
    est: np.ndarray,
    schedule: AISSchedule,
    seed: int,
) -> dict[str, Any]:
    """Rerun up to ``check_rows`` AIS rows with twice the temperatures: mean change of log Z_hat."""
    m = min(schedule.check_rows, todo.size)
    if m == 0:
        return {"check_rows": 0, "check_delta": None, "check_delta_se": None, "converged": None}
    pick = np.linspace(0, todo.size - 1, m).round().astype(int)
    gen = torch.Generator().manual_seed(int(seed) + 1)
    long, _, _ = ais_rows(model, x[todo[pick]], logit_q[todo[pick]], schedule, gen, factor=2)
    delta = long - est[pick]
    d_se = float(delta.std(ddof=1) / math.sqrt(m)) if m > 1 else float("inf")
    mean = float(delta.mean())
    return {
        "check_rows": int(m),
        "check_delta": mean,
        "check_delta_se": d_se if math.isfinite(d_se) else None,
        "converged": bool(abs(mean) <= schedule.check_tol and (m == 1 or d_se <= schedule.check_tol)),
    }


def score(
    model: NoisyOR,
    x: Any,
    config: LikelihoodConfig | None = None,
    seed: int = 0,
    rows: Sequence[int] | None = None,
) -> tuple[LikelihoodResult, dict[str, Any]]:
    """Estimate on the scored rows (:func:`scored_rows` unless ``rows`` given) and the ``nll_*`` record."""
    config = config or LikelihoodConfig()
    x_arr = np.asarray(x)
    if rows is None:
        idx, label = scored_rows(x_arr, model.K, config)
    else:
        idx = np.asarray(rows, dtype=np.int64)
        label = "all test rows" if idx.size == x_arr.shape[0] else f"{idx.size} of {x_arr.shape[0]} test rows"
    if idx.size == 0:
        empty = LikelihoodResult(np.zeros(0), np.zeros(0), np.zeros(0, dtype=str), {})
        return empty, {
            "nll_test": None,
            "nll_test_se": None,
            "nll_test_mc_se": None,
            "nll_estimator": None,
            "nll_rows": 0,
            "nll_rows_label": label,
        }
    result = estimate_log_px(model, x_arr[idx], config, seed)
    record = result.summary()
    record.update(nll_rows=int(idx.size), nll_rows_label=label)
    return result, record


__all__ = [
    "AISSchedule",
    "LikelihoodConfig",
    "LikelihoodResult",
    "PATHS",
    "absorb_negatives",
    "ais_rows",
    "doubling_check_text",
    "enumerate_row",
    "estimate_log_px",
    "quickscore_rows",
    "row_costs",
    "rows_digest",
    "score",
    "scored_rows",
    "upper_bound_label",
]
