"""Held-out evaluation of a factorised posterior ``q(z | x)`` (paper Section 4.2, supplement
"Implementation details").

Metrics, all computed on CPU in float64 so that they are reproducible bit for bit from the
stored ``posterior_test.npz`` on any machine:

* ``nelbo`` -- the negative ELBO (eq. 16) with ``n_samples`` *discrete* Bernoulli draws from
  ``q`` per data point ("during testing, we use the true discrete samples from the posterior
  and sample 100 times"): the positive-observation term by Monte Carlo, the negative term and
  the KL in closed form.
* ``f1`` / ``em`` -- macro F1 and exact match (percent) between the true ``z`` and
  ``z_hat ~ q(z | x)`` (Section 4.2).  The paper draws ``z_hat`` from ``q``; we report the
  expectation of the score over ``z_hat ~ q``, estimated with ``n_samples`` draws (same target,
  less Monte Carlo noise), plus ``f1_map`` / ``em_map`` for the deterministic decision
  ``z_hat = [q > 0.5]``.
* ``exact_nll``, ``exact_elbo``, ``exact_nelbo``, ``exact_gap`` -- by 2^K enumeration when
  ``K <= exact_max_k``: ``exact_gap = exact_nelbo - exact_nll`` is the mean
  ``KL(q || p(z | x)) >= 0`` exactly; ``mc_gap = nelbo - exact_nll`` is its Monte Carlo
  counterpart (can be slightly negative).
* ``iw_nll`` -- minus the importance-weighted bound (Burda et al., 2016) with proposal ``q``.
* ``nll_test`` (+ ``nll_test_se``, ``nll_estimator``, ``nll_rows``, ...) -- the model's held-out
  ``-log p(x)``, exact (Quickscore / a forward pass / enumeration) or by AIS, independent of ``q``
  (:mod:`noisyor_bench.evaluation.noisyor_likelihood`).

In learning mode the learned latent dimensions are an arbitrary permutation of the true ones;
:func:`match_latents` recovers it by Hungarian matching before F1/EM are computed.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np
import torch

from noisyor_bench.evaluation.latent_matching import match_latents, weight_similarity
from noisyor_bench.models.noisyor.elbo import negative_term
from noisyor_bench.models.noisyor.exact import MAX_EXACT_K, exact_elbo, exact_posterior
from noisyor_bench.models.noisyor.model import NoisyOR, bernoulli_kl
from noisyor_bench.models.noisyor.sparse import ActiveSet, positive_loglik

# Numbers per (samples x points x D) intermediate tensor; fixes the chunking, hence the
# order in which random numbers are drawn (part of the definition of "same seed, same value").
CHUNK_ELEMENTS = 2**22

F1_ZERO_DIVISION = 1.0
"""F1 of a latent dimension with no positives in both truth and prediction.

``2TP / (2TP + FP + FN)`` is 0/0 there; predicting "never" for a cause that never occurs is
perfect agreement, so we score it 1 (sklearn ``zero_division=1.0``).  This keeps
``macro_f1(z, z) == 100`` for every ``z``.  It never triggers on the benchmark's test sets
(every cause occurs among >= 1000 test points), only on tiny subsets.
"""

from noisyor_bench.infra.constants import DEFAULT_IW_SAMPLES, DEFAULT_N_SAMPLES  # noqa: E402  (re-exported)


# ---------------------------------------------------------------------------------- helpers
def _as_tensor(a: Any, dtype: torch.dtype = torch.float64) -> torch.Tensor:
    """CPU float64 copy of a numpy array or tensor (evaluation is device-independent)."""
    if isinstance(a, torch.Tensor):
        return a.detach().to(device="cpu", dtype=dtype)
    return torch.as_tensor(np.asarray(a), dtype=dtype)


def _prepare(model: NoisyOR, x: Any, q: Any) -> tuple[NoisyOR, torch.Tensor, torch.Tensor]:
    model = model.detach().to(dtype=torch.float64, device="cpu")
    x_t, q_t = _as_tensor(x), _as_tensor(q)
    if x_t.ndim != 2 or x_t.shape[1] != model.D:
        raise ValueError(f"x has shape {tuple(x_t.shape)}, expected (N, D={model.D})")
    if q_t.shape != (x_t.shape[0], model.K):
        raise ValueError(f"q has shape {tuple(q_t.shape)}, expected ({x_t.shape[0]}, K={model.K})")
    if not bool(((q_t >= 0) & (q_t <= 1)).all()):
        raise ValueError("q must hold probabilities in [0, 1] (found values outside or NaN)")
    return model, x_t, q_t


def _samples_per_chunk(q: torch.Tensor, n_samples: int, chunk_elements: int) -> int:
    n, k = q.shape
    return max(1, min(n_samples, chunk_elements // max(1, n * k)))


def _sample_chunks(
    q: torch.Tensor, n_samples: int, generator: torch.Generator | None, chunk_elements: int
) -> Iterator[torch.Tensor]:
    """Discrete draws ``z ~ q`` as (s, N, K) float64 0/1 chunks, ``n_samples`` in total."""
    n, k = q.shape
    per_chunk = _samples_per_chunk(q, n_samples, chunk_elements)
    done = 0
    while done < n_samples:
        s = min(per_chunk, n_samples - done)
        u = torch.rand((s, n, k), generator=generator, dtype=q.dtype)
        yield (u < q).to(q.dtype)  # u in [0, 1): q = 1 always gives 1, q = 0 always 0
        done += s


class _LogLik:
    """``log p(x | z)`` for many discrete samples, exploiting sparse ``x`` (eq. 6).

    The negative-observation part is linear in ``z``:
    ``-sum_{i: x_i=0} a_i = -(b_n + z . c_n)`` with ``c = (1-x) theta``, ``b = (1-x) theta0``
    (attributes used by the IW bound; the NELBO takes it at ``z = q`` in closed form).
    Only the positive part needs the rates, and only at the (n, i) pairs with ``x_ni = 1``
    (80-98% of the benchmark's observations are zeros): :func:`noisyor_bench.models.noisyor.sparse.positive_loglik`
    evaluates them in O(s * nnz * K).  Blocks of rows keep its intermediates (the s-fold
    stacked pattern and the rates at its s * nnz entries) below ``chunk_elements`` numbers.
    """

    def __init__(self, model: NoisyOR, x: torch.Tensor, max_samples: int, chunk_elements: int) -> None:
        self.model = model
        n, d = x.shape
        active = ActiveSet.of(x)
        # A block's s * nnz stacked entries are at most rows * width * s <= rows * width * max(K, s).
        width = max(1, active.width)
        rows = max(1, chunk_elements // (width * max(model.K, max_samples)))
        self.blocks: list[tuple[slice, ActiveSet]] = []
        for start in range(0, n, rows):
            sl = slice(start, min(start + rows, n))
            self.blocks.append((sl, active.select(sl)))
        neg = 1.0 - x
        self.c = neg @ model.theta  # (N, K)
        self.b = neg @ model.theta0  # (N,)

    def positive(self, z: torch.Tensor) -> torch.Tensor:
        """``sum_{i: x_i=1} log(1 - exp(-a_i(z)))`` for z (s, N, K): (s, N)."""
        out = torch.zeros(z.shape[:2], dtype=z.dtype)
        for sl, active in self.blocks:
            if active.width:
                out[:, sl] = positive_loglik(self.model.theta, self.model.theta0, z[:, sl], active)
        return out


def _generator(seed: int | None) -> torch.Generator | None:
    return None if seed is None else torch.Generator(device="cpu").manual_seed(int(seed))


def child_seeds(seed: int, n: int) -> list[int]:
    """``n`` independent 63-bit seeds derived from ``seed`` (numpy SeedSequence)."""
    states = [c.generate_state(1, np.uint64)[0] for c in np.random.SeedSequence(seed).spawn(n)]
    return [int(s) & (2**63 - 1) for s in states]


# ---------------------------------------------------------------------------------- bounds
@torch.no_grad()
def nelbo(
    model: NoisyOR,
    x: Any,
    q: Any,
    n_samples: int = DEFAULT_N_SAMPLES,
    generator: torch.Generator | None = None,
    chunk_elements: int = CHUNK_ELEMENTS,
) -> torch.Tensor:
    """Per-point negative ELBO (eq. 16) with discrete samples, shape (N,), float64.

    ``-ELBO = -E_q[sum_{i:x_i=1} log(1-exp(-a_i))] + sum_{i:x_i=0} (theta_i0 + theta_i.q)
    + KL(q || p(z))``; only the first expectation is estimated (``n_samples`` Bernoulli draws
    per point), the rest is exact.  Finite for ``q in {0, 1}``; ``+inf`` only if a drawn ``z``
    makes an observed ``x_i = 1`` impossible (zero rate), where the true ELBO is ``-inf`` too.
    """
    if n_samples < 1:
        raise ValueError(f"n_samples must be >= 1, got {n_samples}")
    model, x, q = _prepare(model, x, q)
    loglik = _LogLik(model, x, _samples_per_chunk(q, n_samples, chunk_elements), chunk_elements)
    pos_sum = torch.zeros(x.shape[0], dtype=torch.float64)
    for z in _sample_chunks(q, n_samples, generator, chunk_elements):
        pos_sum += loglik.positive(z).sum(0)
    elbo = pos_sum / n_samples + negative_term(model, x, q) - bernoulli_kl(q, model.mu)
    return -elbo


@torch.no_grad()
def iw_log_likelihood(
    model: NoisyOR,
    x: Any,
    q: Any,
    n_samples: int = DEFAULT_IW_SAMPLES,
    generator: torch.Generator | None = None,
    chunk_elements: int = CHUNK_ELEMENTS,
) -> torch.Tensor:
    """Importance-weighted lower bound ``log (1/S) sum_s p(x, z_s) / q(z_s)``, ``z_s ~ q``: (N,).

    A stochastic lower bound on ``log p(x)`` whose expectation increases with ``S`` (Burda et
    al., 2016); with ``S = 1`` its expectation is the ELBO.  Summed in log space with a
    streaming log-sum-exp over sample chunks, so memory does not grow with ``S``.
    """
    if n_samples < 1:
        raise ValueError(f"n_samples must be >= 1, got {n_samples}")
    model, x, q = _prepare(model, x, q)
    loglik = _LogLik(model, x, _samples_per_chunk(q, n_samples, chunk_elements), chunk_elements)
    # Everything but the positive term is linear in z: log p(z) - log q(z) - sum_{x_i=0} a_i
    # = z . w_n + const_n.  log q uses 0 for the impossible value of a saturated q_k (never drawn).
    log_q1 = torch.where(q > 0, torch.log(q), torch.zeros_like(q))
    log_q0 = torch.where(q < 1, torch.log1p(-q), torch.zeros_like(q))
    log_mu1, log_mu0 = torch.log(model.mu), torch.log1p(-model.mu)
    w = (log_mu1 - log_mu0) - (log_q1 - log_q0) - loglik.c  # (N, K)
    const = log_mu0.sum() - log_q0.sum(-1) - loglik.b  # (N,)
    partial: list[torch.Tensor] = []
    for z in _sample_chunks(q, n_samples, generator, chunk_elements):
        log_w = loglik.positive(z) + (z * w).sum(-1) + const  # (s, N)
        partial.append(torch.logsumexp(log_w, dim=0))
    return torch.logsumexp(torch.stack(partial), dim=0) - math.log(n_samples)


# ---------------------------------------------------------------------------------- accuracy
def _as_bool(z: Any) -> np.ndarray:
    arr = z.detach().cpu().numpy() if isinstance(z, torch.Tensor) else np.asarray(z)
    return arr.astype(bool)


def _f1_from_counts(tp: np.ndarray, fp: np.ndarray, fn: np.ndarray) -> np.ndarray:
    """Per-dimension F1 ``2TP / (2TP + FP + FN)`` with the :data:`F1_ZERO_DIVISION` rule."""
    denom = 2 * tp + fp + fn
    with np.errstate(invalid="ignore", divide="ignore"):
        f1 = np.where(denom > 0, 2 * tp / np.maximum(denom, 1), F1_ZERO_DIVISION)
    return f1


def macro_f1(z_true: Any, z_hat: Any) -> float:
    """Macro F1 in percent: F1 per latent dimension (column), averaged over dimensions.

    Equals ``100 * sklearn.metrics.f1_score(z_true, z_hat, average="macro",
    zero_division=1.0)`` (see :data:`F1_ZERO_DIVISION`).
    """
    t, p = _as_bool(z_true), _as_bool(z_hat)
    if t.shape != p.shape or t.ndim != 2:
        raise ValueError(f"z_true {t.shape} and z_hat {p.shape} must be equal (N, K) arrays")
    tp = (t & p).sum(0)
    fp = (~t & p).sum(0)
    fn = (t & ~p).sum(0)
    return float(100.0 * _f1_from_counts(tp, fp, fn).mean())


def exact_match(z_true: Any, z_hat: Any) -> float:
    """Exact match in percent: share of points whose whole latent vector is recovered."""
    t, p = _as_bool(z_true), _as_bool(z_hat)
    if t.shape != p.shape or t.ndim != 2:
        raise ValueError(f"z_true {t.shape} and z_hat {p.shape} must be equal (N, K) arrays")
    return float(100.0 * (t == p).all(1).mean())


@torch.no_grad()
def sampled_accuracy(
    z_true: Any,
    q: Any,
    n_samples: int,
    generator: torch.Generator | None = None,
    chunk_elements: int = CHUNK_ELEMENTS,
) -> tuple[float, float]:
    """``(E[macro F1], E[EM])`` over ``z_hat ~ q`` estimated with ``n_samples`` draws (percent)."""
    t = torch.as_tensor(_as_bool(z_true))
    q_t = _as_tensor(q)
    f1_sum, em_sum = 0.0, 0.0
    for z in _sample_chunks(q_t, n_samples, generator, chunk_elements):
        p = z.bool()  # (s, N, K)
        tp = (t & p).sum(1).numpy()
        fp = (~t & p).sum(1).numpy()
        fn = (t & ~p).sum(1).numpy()
        f1_sum += float(_f1_from_counts(tp, fp, fn).mean(-1).sum())
        em_sum += float((p == t).all(-1).double().mean(-1).sum())
    return 100.0 * f1_sum / n_samples, 100.0 * em_sum / n_samples


# ---------------------------------------------------------------------------------- all metrics
def _kl_gap(log_px: torch.Tensor, elbo_exact: torch.Tensor) -> torch.Tensor:
    """Per-point ``log p(x) - ELBO = KL(q || p(z|x)) >= 0``, rounding noise clipped to 0.

    A clearly negative value cannot come from rounding and means a bug, so it raises.
    """
    gap = log_px - elbo_exact
    tol = 1e-9 * (1.0 + log_px.abs())
    if bool((gap < -tol).any()):
        raise RuntimeError(f"exact ELBO exceeds exact log p(x) (min gap {float(gap.min()):.3e}): a bug")
    return gap.clamp_min(0.0)


def evaluate(
    model: NoisyOR,
    x: Any,
    q: Any,
    z_true: Any | None = None,
    n_samples: int = DEFAULT_N_SAMPLES,
    iw_samples: int | None = DEFAULT_IW_SAMPLES,
    seed: int = 0,
    exact_max_k: int = MAX_EXACT_K,
    permutation: np.ndarray | None = None,
    nll: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """All held-out metrics of ``q`` (N, K) on ``x`` (N, D) under ``model``; deterministic in ``seed``.

    ``nll`` (a :class:`~noisyor_bench.evaluation.noisyor_likelihood.LikelihoodConfig` mapping, ``{}``
    for the defaults) adds the model's held-out ``-log p(x)`` (``nll_test``, exact or AIS, on the
    rows that config picks; ``None`` skips it): the likelihood of the model, independent of ``q``.

    ``permutation`` (from :func:`match_latents`) maps true latent ``j`` to column
    ``permutation[j]`` of ``q`` for F1/EM only (the bounds do not depend on the order).
    F1/EM are ``None`` without ``z_true`` or when its K differs from ``q``'s; exact metrics are
    ``None`` above ``exact_max_k``; ``iw_nll`` is ``None`` when ``iw_samples`` is 0/None.
    Non-finite values (an impossible observation) are kept as ``inf`` here.
    """
    model, x_t, q_t = _prepare(model, x, q)
    seed_nelbo, seed_acc, seed_iw = child_seeds(seed, 3)
    n = x_t.shape[0]
    out: dict[str, Any] = {"n_points": n, "n_samples": n_samples, "iw_samples": iw_samples or None}
    out["eval_seed"] = int(seed)

    neg = nelbo(model, x_t, q_t, n_samples, _generator(seed_nelbo))
    out["nelbo"] = float(neg.mean())
    out["nelbo_sem"] = float(neg.std() / math.sqrt(n)) if n > 1 else None

    out.update(f1=None, em=None, f1_map=None, em_map=None)
    if z_true is not None:
        z_arr = _as_bool(z_true)
        if z_arr.shape == tuple(q_t.shape):
            perm = np.arange(model.K) if permutation is None else np.asarray(permutation, dtype=np.int64)
            q_m = q_t[:, torch.as_tensor(perm)]
            f1, em = sampled_accuracy(z_arr, q_m, n_samples, _generator(seed_acc))
            z_map = (q_m > 0.5).numpy()
            out.update(f1=f1, em=em, f1_map=macro_f1(z_arr, z_map), em_map=exact_match(z_arr, z_map))

    out.update(exact_nll=None, exact_elbo=None, exact_nelbo=None, exact_gap=None, mc_gap=None)
    if model.K <= exact_max_k:
        log_px = exact_posterior(model, x_t, max_k=exact_max_k).log_px
        elbo_exact = exact_elbo(model, x_t, q_t, max_k=exact_max_k)
        exact_nll = float(-log_px.mean())
        exact_nelbo = float(-elbo_exact.mean())
        out.update(
            exact_nll=exact_nll,
            exact_elbo=-exact_nelbo,
            exact_nelbo=exact_nelbo,
            exact_gap=float(_kl_gap(log_px, elbo_exact).mean()),  # = exact_nelbo - exact_nll
            mc_gap=out["nelbo"] - exact_nll,
        )

    out["iw_nll"] = None
    if iw_samples:
        out["iw_nll"] = float(-iw_log_likelihood(model, x_t, q_t, iw_samples, _generator(seed_iw)).mean())
    if nll is not None:
        out.update(heldout_nll(model, x_t, nll, child_seeds(seed, 4)[3], per_row_nelbo=neg))
    return out


def heldout_nll(
    model: NoisyOR,
    x: torch.Tensor,
    nll: Mapping[str, Any],
    seed: int,
    per_row_nelbo: Any | None = None,
) -> dict[str, Any]:
    """``nll_test`` and its companions (:func:`noisyor_bench.evaluation.noisyor_likelihood.score`),
    with the config used (``nll_config``, what ``verify`` recomputes with) and the seconds it took.

    ``per_row_nelbo`` (the NELBO of every test row) adds ``nll_rows_nelbo``: the NELBO's mean over
    the rows the NLL scored, so that NELBO - NLL is a bound's gap on the same rows (``nelbo``
    averages every test row, ``nll_test`` perhaps a subset: their difference is not a gap).

    ``nll_per_row`` is each scored row's ``-log p(x)`` in the order of the rows (``null`` where
    infinite) and ``nll_rows_digest`` the fingerprint of those rows
    (:func:`~noisyor_bench.evaluation.noisyor_likelihood.rows_digest`): the tables pair them row by
    row with the independent baseline's per-row NLL on the same rows, for the ``weak_learning``
    qualifier's CI over rows and seeds (:mod:`noisyor_bench.reporting.claims`)."""
    import time

    from noisyor_bench.evaluation.noisyor_likelihood import LikelihoodConfig, rows_digest, score, scored_rows

    config = LikelihoodConfig.from_mapping(dict(nll))
    t0 = time.perf_counter()
    x_np = x.numpy()
    rows, label = scored_rows(x_np, model.K, config)  # chosen once: the NLL's and the NELBO's rows
    result, record = score(model, x_np, config, seed=seed, rows=rows)
    record["nll_rows_label"] = label
    record["nll_rows_digest"] = rows_digest(rows)
    record["nll_per_row"] = [float(-v) if math.isfinite(v) else None for v in result.log_px.tolist()]
    record["nll_config"] = dict(nll)
    record["nll_seconds"] = time.perf_counter() - t0
    record["nll_rows_nelbo"] = None
    if per_row_nelbo is not None and record.get("nll_test") is not None:
        record["nll_rows_nelbo"] = float(np.asarray(per_row_nelbo, dtype=np.float64)[rows].mean())
    return record


@torch.no_grad()
def elbo_of_q(
    model: NoisyOR,
    x: torch.Tensor,
    q: torch.Tensor,
    exact_max_k: int,
    n_samples: int = DEFAULT_N_SAMPLES,
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """ELBO of a factorised ``q`` per data point, (N,) float64: exact by enumeration when ``K <= exact_max_k``.

    Otherwise the benchmark's evaluation protocol (:func:`noisyor_bench.evaluation.heldout.nelbo`,
    on CPU): ``n_samples`` exact Bernoulli draws for the positive term, the negative term and
    KL in closed form.  ``generator``: a CPU generator.
    """
    if model.K <= exact_max_k:
        return exact_elbo(model.to(dtype=torch.float64), x.to(torch.float64), q.to(torch.float64))
    return -nelbo(model, x, q, n_samples, generator).to(x.device)


__all__ = [
    "elbo_of_q",
    "CHUNK_ELEMENTS",
    "F1_ZERO_DIVISION",
    "child_seeds",
    "evaluate",
    "exact_match",
    "iw_log_likelihood",
    "macro_f1",
    "match_latents",
    "nelbo",
    "sampled_accuracy",
    "weight_similarity",
]
