"""Reference scores for the NELBO tables: what a learned noisy-OR must beat, and what it can reach.

Two references per dataset, in the tables' units (nats per test data point, test split):

* **Independent Bernoulli** -- one Bernoulli rate per pixel (word), fitted on a learning-mode
  cell's training rows (the first ``N_train`` rows of the pool, :func:`noisyor_bench.data.loading.training_rows`),
  scored as the exact negative log-likelihood ``-sum_i [x_i log p_i + (1 - x_i) log(1 - p_i)]``
  averaged over the test rows.  A model with latent causes that scores worse than this has
  learned nothing the pixel marginals do not already say.  The rates are smoothed with the
  Jeffreys (Krichevsky-Trofimov) estimator ``p_i = (count_i + 1/2) / (N + 1)``
  (:data:`PSEUDO_COUNT`): a pixel never (or always) on in training keeps a finite loss, and
  the estimator shrinks less towards 1/2 than Laplace's ``(count + 1) / (N + 2)`` -- on the
  sparse benchmark data (most pixel rates of a few percent) and N_train = 10-30, Laplace
  would charge every unseen pixel ``log(N + 2)`` per test row where it is on, a needlessly
  weak baseline (docs/baselines.md).
* **True model** (synthetic data only) -- the ground-truth noisy-OR: its held-out ``-log p(x)``
  exact (Quickscore, a forward pass, enumeration) or by AIS on the rows a likelihood config
  picks, beside the independent baseline on the same rows (``true_model.nll``,
  :func:`true_model_nll`); its exact ``-log p(x)``
  by 2^K enumeration where ``K <= exact_max_k`` (:mod:`noisyor_bench.models.noisyor.exact`); and,
  with ``bounds`` (superseded, off in the grids), minus its
  importance-weighted bound (:func:`noisyor_bench.evaluation.heldout.iw_log_likelihood`); and, always,
  its NELBO under converged per-datapoint mean-field inference: LB-CDI's E-step run to
  convergence with the truth fixed (the posterior the inference-mode LB-CDI runs use), scored
  by the tables' NELBO protocol (:func:`noisyor_bench.evaluation.heldout.nelbo`, discrete samples).
  The last is what mean-field learning could reach at best with the true parameters; it
  can be worse than the independent baseline (mean-field is pulled towards collapsed latents).

Per-datapoint inference at D = 500 costs about a second per test row on one CPU thread
(docs/baselines.md), so the IW bound and the ELBO may be scored on a fixed, seeded subset of
the test rows (``max_rows``); the record says how many rows were scored (``n_test_scored``).
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from noisyor_bench.infra.constants import (
    BASELINE_IW_SAMPLES,
    BASELINE_MAX_ROUNDS,
    BASELINE_MAX_ROWS,
    DEFAULT_N_SAMPLES,
)
from noisyor_bench.infra.errors import ConfigError, DataError

PSEUDO_COUNT = 0.5
"""Pseudo-count per outcome of the smoothed rate ``(count + a) / (N + 2a)``: a = 1/2 (Jeffreys)."""
SMOOTHING = "jeffreys: p = (count + 0.5) / (N_train + 1)"
TRUE_MODEL_INFERENCE = "lb-cdi"
SUBSET_STREAM = 20201212  # fixed seed of the test-row subset (SeedSequence entropy)


# ---------------------------------------------------------------------------------- independent Bernoulli
def bernoulli_rates(x_train: np.ndarray, pseudo_count: float = PSEUDO_COUNT) -> np.ndarray:
    """Smoothed per-column rates ``(count + a) / (N + 2a)`` of a binary (N, D) array."""
    x = np.asarray(x_train)
    if x.ndim != 2:
        raise DataError(f"training rows must be an (N, D) array, got shape {x.shape}")
    if pseudo_count <= 0:
        raise ConfigError(
            f"pseudo_count must be > 0 (a zero count would give an infinite loss), got {pseudo_count}"
        )
    counts = x.astype(np.float64).sum(axis=0)
    return (counts + pseudo_count) / (x.shape[0] + 2.0 * pseudo_count)


def independent_nll(rates: np.ndarray, x_test: np.ndarray) -> np.ndarray:
    """Per-row ``-log p(x)`` under independent Bernoulli rates, shape (N_test,), float64."""
    p = np.asarray(rates, dtype=np.float64)
    x = np.asarray(x_test, dtype=np.float64)
    if x.ndim != 2 or x.shape[1] != p.shape[0]:
        raise DataError(f"test rows have shape {x.shape}, expected (N, D={p.shape[0]})")
    return -(x @ np.log(p) + (1.0 - x) @ np.log1p(-p))


def independent_baselines(
    data: Mapping[str, np.ndarray],
    n_train_values: Sequence[int],
    path: str,
    run_rows: np.ndarray | None = None,
) -> list[dict[str, Any]]:
    """One record per N_train: the independent-Bernoulli NLL on the whole test split and, with
    ``run_rows``, on the rows the runs' ``nll_test`` is scored on (``nll_rows_nll``, ``nll_rows_se``:
    the baseline beside a learned model's likelihood, on the same rows; ``nll_rows_values``: its
    NLL on each of those rows, in their order, which the tables pair row by row with each run's
    ``nll_per_row`` for the ``weak_learning`` qualifier)."""
    from noisyor_bench.data.loading import training_rows

    out = []
    for n in sorted({int(v) for v in n_train_values}):
        if n < 1:
            raise ConfigError(f"--n-train values must be >= 1 (a baseline needs training rows), got {n}")
        rates = bernoulli_rates(training_rows(data, n, path))
        nll = independent_nll(rates, data["x_test"])
        row: dict[str, Any] = {
            "n_train": n,
            "nelbo": float(nll.mean()),
            "nelbo_sem": _sem(nll),
            "n_test_scored": int(nll.shape[0]),
        }
        if run_rows is not None:
            sub = nll[run_rows]
            row.update(
                nll_rows=int(sub.size),
                nll_rows_nll=float(sub.mean()) if sub.size else None,
                nll_rows_se=_sem(sub),
                nll_rows_values=[float(v) for v in sub.tolist()],
            )
        out.append(row)
    return out


def run_nll_rows(data: Mapping[str, np.ndarray], nll: Mapping[str, Any]) -> tuple[np.ndarray, str]:
    """The test rows a learned model's ``nll_test`` is scored on under the runs' likelihood config
    (:func:`noisyor_bench.evaluation.noisyor_likelihood.scored_rows`, with the dataset's true K)."""
    from noisyor_bench.evaluation.noisyor_likelihood import LikelihoodConfig, scored_rows

    k = int(np.asarray(data["theta"]).shape[1])
    return scored_rows(np.asarray(data["x_test"]), k, LikelihoodConfig.from_mapping(dict(nll)))


def true_model_nll(
    data: Mapping[str, np.ndarray],
    nll: Mapping[str, Any],
    n_train_values: Sequence[int],
    path: str,
    seed: int = 0,
) -> dict[str, Any]:
    """The truth's held-out ``-log p(x)`` (exact or AIS, :mod:`noisyor_bench.evaluation.noisyor_likelihood`)
    and, on the same rows, the independent-Bernoulli baseline of every N_train with the paired
    difference ``truth - baseline`` and its standard error (Gibbs' inequality: it is <= 0 in
    expectation over data drawn from the truth)."""
    from noisyor_bench.data.loading import ground_truth, training_rows
    from noisyor_bench.evaluation.noisyor_likelihood import LikelihoodConfig, estimate_log_px, scored_rows

    truth = ground_truth(data)
    config = LikelihoodConfig.from_mapping(dict(nll))
    x_all = np.asarray(data["x_test"])
    rows, label = scored_rows(x_all, truth.K, config)
    t0 = time.perf_counter()
    result = estimate_log_px(truth, x_all[rows], config, seed)
    out: dict[str, Any] = result.summary()
    out.update(
        nll_rows=int(rows.size),
        nll_rows_label=label,
        nll_config=dict(nll),
        nll_seconds=time.perf_counter() - t0,
    )
    per_row = -result.log_px
    comparisons = []
    for n in sorted({int(v) for v in n_train_values}):
        base = independent_nll(bernoulli_rates(training_rows(data, n, path)), x_all[rows])
        diff = per_row - base
        comparisons.append(
            {
                "n_train": n,
                "baseline_nll": float(base.mean()),
                "baseline_nll_se": _sem(base),
                "diff": float(diff.mean()),
                "diff_se": _sem(diff),
            }
        )
    out["baseline"] = comparisons
    return out


# ---------------------------------------------------------------------------------- true model
def scored_rows(n_test: int, max_rows: int | None, seed: int = SUBSET_STREAM) -> np.ndarray:
    """Indices of the test rows scored: all of them, or a fixed seeded subset of ``max_rows`` (sorted)."""
    if max_rows is None or max_rows >= n_test:
        return np.arange(n_test)
    if max_rows < 1:
        raise ConfigError(f"max_rows must be >= 1, got {max_rows}")
    rng = np.random.default_rng(np.random.SeedSequence(seed))
    return np.sort(rng.choice(n_test, size=max_rows, replace=False))


def true_model_scores(
    data: Mapping[str, np.ndarray],
    *,
    exact_max_k: int,
    max_rows: int | None = BASELINE_MAX_ROWS,
    n_samples: int = DEFAULT_N_SAMPLES,
    iw_samples: int = BASELINE_IW_SAMPLES,
    max_rounds: int = BASELINE_MAX_ROUNDS,
    seed: int = 0,
    bounds: bool = True,
    nll: Mapping[str, Any] | None = None,
    n_train_values: Sequence[int] = (),
    path: str = "dataset",
) -> dict[str, Any]:
    """Scores of the ground-truth model on the test split (see the module docstring).

    ``nll`` (a likelihood config mapping): the truth's exact or AIS ``-log p(x)`` beside the
    independent baseline of each of ``n_train_values`` on the same rows (``nll``:
    :func:`true_model_nll`).  ``bounds=False`` skips the IW bound and the mean-field NELBO
    (superseded by ``nll``; they are loose by up to 16 nats at D = 500).

    ``exact_nll`` on every test row when ``K <= exact_max_k`` (else None; then also
    ``exact_nll_scored_rows``, the same on the scored rows); ``iw_nll`` (only when not
    enumerable) and ``elbo_nelbo`` on the rows :func:`scored_rows` picks; seconds of each
    part.  Deterministic in ``seed``.
    """
    import torch

    from noisyor_bench.data.loading import ground_truth, has_truth
    from noisyor_bench.evaluation.heldout import child_seeds, iw_log_likelihood, nelbo
    from noisyor_bench.inference.noisyor.lbcdi import LBCDI
    from noisyor_bench.models.noisyor.exact import exact_posterior

    if not has_truth(data):
        raise DataError("the dataset has no ground truth (theta/theta0/mu): no true-model scores")
    truth = ground_truth(data)
    x_all = np.asarray(data["x_test"])
    out: dict[str, Any] = {
        "K": int(truth.K),
        "D": int(truth.D),
        "n_test": int(x_all.shape[0]),
        "exact_max_k": int(exact_max_k),
        "exact_nll": None,
        "exact_n_test_scored": None,
        "exact_seconds": None,
        "iw_nll": None,
        "iw_samples": None,
    }
    if truth.K <= exact_max_k:
        t0 = time.perf_counter()
        log_px = exact_posterior(truth, torch.as_tensor(x_all), max_k=exact_max_k).log_px
        out.update(
            exact_nll=float(-log_px.mean()),
            exact_nll_sem=_sem(-log_px.numpy()),
            exact_n_test_scored=int(x_all.shape[0]),
            exact_seconds=time.perf_counter() - t0,
        )
    if nll is not None:
        out["nll"] = true_model_nll(data, nll, n_train_values, path, seed)
    if not bounds:
        out.update(elbo_nelbo=None, n_test_scored=None, rows=None)
        return out
    rows = scored_rows(x_all.shape[0], max_rows)
    x = torch.as_tensor(x_all[rows])
    seed_nelbo, seed_iw = child_seeds(seed, 2)
    t0 = time.perf_counter()
    method = LBCDI(truth, "inference", {"max_rounds": int(max_rounds)}, seed)
    q = method.posterior(x)
    out["inference_seconds"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    neg = nelbo(truth, x, q, n_samples, torch.Generator().manual_seed(seed_nelbo))
    out.update(
        elbo_nelbo=float(neg.mean()),
        elbo_nelbo_sem=_sem(neg.numpy()),
        n_samples=int(n_samples),
        n_test_scored=int(rows.shape[0]),
        inference={"method": TRUE_MODEL_INFERENCE, "hparams": dict(method.hparams)},
    )
    if out["exact_nll"] is None and iw_samples > 0:
        iw = -iw_log_likelihood(truth, x, q, iw_samples, torch.Generator().manual_seed(seed_iw))
        out.update(iw_nll=float(iw.mean()), iw_nll_sem=_sem(iw.numpy()), iw_samples=int(iw_samples))
    if out["exact_nll"] is not None:  # the same rows as the ELBO, for a like-for-like gap
        out["exact_nll_scored_rows"] = float(-log_px[torch.as_tensor(rows)].mean())
    out["score_seconds"] = time.perf_counter() - t0
    out["rows"] = (
        "all test rows"
        if rows.shape[0] == x_all.shape[0]
        else (f"fixed seeded subset of {rows.shape[0]} of {x_all.shape[0]} test rows (seed {SUBSET_STREAM})")
    )
    return out


def _sem(values: np.ndarray) -> float | None:
    v = np.asarray(values, dtype=np.float64)
    return float(v.std(ddof=1) / math.sqrt(v.size)) if v.size > 1 else None


def baselines_record(
    data: Mapping[str, np.ndarray],
    name: str,
    path: str,
    n_train_values: Sequence[int],
    true_model: Mapping[str, Any] | None,
    run_nll: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The ``results/baselines/<dataset>.json`` content (without its provenance sidecar).

    ``run_nll``: the runs' likelihood config (``evaluation.nll``); the baseline is then also
    scored on the rows of the runs' ``nll_test`` (synthetic data only), per row too, with the
    rows' fingerprint (``nll_rows_digest``) that a run's per-row NLL must share to be paired."""
    from noisyor_bench.data.loading import has_truth

    indep: dict[str, Any] = {"smoothing": SMOOTHING, "pseudo_count": PSEUDO_COUNT}
    rows = None
    if run_nll is not None and has_truth(data):
        from noisyor_bench.evaluation.noisyor_likelihood import rows_digest

        rows, label = run_nll_rows(data, run_nll)
        indep.update(
            nll_rows=int(rows.size),
            nll_rows_label=label,
            nll_rows_digest=rows_digest(rows),
            nll_config=dict(run_nll),
        )
    indep["rows"] = independent_baselines(data, n_train_values, path, rows)
    return {
        "dataset": name,
        "n_test": int(np.asarray(data["x_test"]).shape[0]),
        "units": "nats per test data point (test split), as the tables' NELBO",
        "independent_bernoulli": indep,
        "true_model": None if true_model is None else dict(true_model),
    }
