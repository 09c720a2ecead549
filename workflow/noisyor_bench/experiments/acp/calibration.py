"""Calibration panel of one synthetic dataset: what the generating model allows a paper's row to report.

Why: a reported NELBO, F1 or EM is only interpretable against what is reachable on the data.
Per dataset, on the test split, in the tables' units (nats per test data point, percent):

* ``truth_nll`` -- the truth's ``-log p(x)``: 2^K enumeration on the panel's rows where
  ``K <= exact_max_k``, else the panel's own AIS where the grid sets ``calibration.truth_nll``
  (more rows than the baselines score), else the baselines' estimate (exact or AIS,
  ``true_model.nll`` of ``results/baselines/<dataset>.json``); its estimator named;
* ``meanfield_nelbo`` -- the best factorised ``q`` with the true parameters: per row the
  optimum of the exact ELBO by coordinate ascent from several starts
  (:mod:`noisyor_bench.models.noisyor.meanfield_exact`); no factorised posterior of the true
  model, amortized or not, has a lower NELBO;
* ``near_exact_f1`` / ``near_exact_em`` -- the paper's F1/EM protocol (``z_hat`` drawn from the
  posterior) with the exact joint posterior: EM's expectation exactly (the mean of
  ``p(z_true | x)``), F1 from ``samples`` draws;
* ``map_f1`` / ``map_em`` -- the posterior mode, the decision with the highest expected exact
  match: no inference can expect a higher EM;
* ``indep_entropy`` -- ``sum_i H(p(x_i))`` with the generator's exact pixel marginals: the
  expected ``-log p(x)`` of the best independent-Bernoulli model, what learning nothing costs.

Above ``exact_max_k`` the enumerated quantities are not estimated: the record says why.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from typing import Any

import numpy as np
import torch

from noisyor_bench.evaluation.noisyor_likelihood import doubling_check_text, upper_bound_label
from noisyor_bench.infra.constants import CALIBRATION_MAX_ROWS, DEFAULT_N_SAMPLES, MAX_EXACT_K
from noisyor_bench.infra.errors import ConfigError, DataError

MEANFIELD_STARTS = ("prior", "exact marginals", "posterior mode", "random x 3")
"""Starts of the coordinate ascent (:func:`meanfield_starts`); the best optimum per row is kept."""
RANDOM_STARTS = 3
START_CONFIDENCE = 0.99  # the posterior-mode start: q_k = 0.99 where the mode has z_k = 1, else 0.01


def indep_entropy(data: Mapping[str, np.ndarray]) -> float:
    """Entropy (nats) of the independent Bernoulli with the generator's exact pixel marginals."""
    from noisyor_bench.data.synthetic.sparsity import independent_entropy

    return independent_entropy(data["theta"], data["theta0"], data["mu"])


def meanfield_starts(
    mu: torch.Tensor, marginals: torch.Tensor, mode: torch.Tensor, seed: int
) -> list[torch.Tensor]:
    """Logit starts (N, K) for the coordinate ascent, in the order of :data:`MEANFIELD_STARTS`."""
    n, k = marginals.shape
    eps = 1e-6
    starts = [
        torch.logit(mu.to(torch.float64)).expand(n, k).clone(),
        torch.logit(marginals.clamp(eps, 1 - eps)),
        torch.where(mode.bool(), 1.0, -1.0).to(torch.float64)
        * math.log(START_CONFIDENCE / (1 - START_CONFIDENCE)),
    ]
    gen = torch.Generator().manual_seed(seed)
    starts += [
        torch.logit(torch.rand((n, k), generator=gen, dtype=torch.float64).clamp(eps, 1 - eps))
        for _ in range(RANDOM_STARTS)
    ]
    return starts


def _se(values: np.ndarray) -> float | None:
    v = np.asarray(values, dtype=np.float64)
    return float(v.std(ddof=1) / math.sqrt(v.size)) if v.size > 1 else None


def enumerated_panel(
    data: Mapping[str, np.ndarray], rows: np.ndarray, samples: int, seed: int
) -> dict[str, Any]:
    """The enumerated part of the panel on the test rows ``rows`` (K <= the enumeration limit)."""
    from noisyor_bench.data.loading import ground_truth
    from noisyor_bench.evaluation.heldout import exact_match, macro_f1
    from noisyor_bench.models.noisyor import joint_posterior, meanfield_exact
    from noisyor_bench.models.noisyor.exact import log_joint_table

    truth = ground_truth(data)
    x = torch.as_tensor(np.asarray(data["x_test"])[rows], dtype=torch.float64)
    z_true = np.asarray(data["z_test"])[rows].astype(bool)
    t0 = time.perf_counter()
    states, log_joint = log_joint_table(truth, x)
    log_px = torch.logsumexp(log_joint, dim=-1)
    posterior = joint_posterior.posterior_table(log_joint)
    marginals = posterior @ states
    mode = joint_posterior.mode(states, log_joint)
    p_true = joint_posterior.probability_of(log_joint, torch.as_tensor(z_true)).numpy()
    gen = torch.Generator().manual_seed(seed)
    drawn = joint_posterior.draws(states, log_joint, samples, gen).numpy()
    f1_draws = np.array([macro_f1(z_true, d) for d in drawn])
    starts = meanfield_starts(truth.mu, marginals, mode, seed)
    best_elbo, _ = meanfield_exact.best_of(states, log_joint, starts)
    nll = -log_px.numpy()
    mf_nelbo = -best_elbo.numpy()
    map_hit = (mode.numpy().astype(bool) == z_true).all(-1).astype(np.float64)
    return {
        "truth_nll": float(nll.mean()),
        "truth_se": _se(nll),
        "truth_estimator": f"exact (2^{truth.K} enumeration)",
        "meanfield_nelbo": float(mf_nelbo.mean()),
        "meanfield_se": _se(mf_nelbo),
        "meanfield_gap": float((mf_nelbo - nll).mean()),
        "meanfield_starts": ", ".join(MEANFIELD_STARTS),
        "near_exact_f1": float(f1_draws.mean()),
        "near_exact_f1_mc_se": _se(f1_draws),
        "near_exact_em": float(100.0 * p_true.mean()),
        "near_exact_em_se": None if _se(p_true) is None else 100.0 * _se(p_true),
        "map_f1": macro_f1(z_true, mode.numpy()),
        "map_em": exact_match(z_true, mode.numpy()),
        "map_em_se": None if _se(map_hit) is None else 100.0 * _se(map_hit),
        "samples": int(samples),
        "seconds": time.perf_counter() - t0,
    }


def truth_record(nll: Mapping[str, Any] | None, missing: str) -> dict[str, Any]:
    """The panel's truth columns from an ``nll_*`` record (a baselines' ``true_model.nll`` or the
    panel's own :func:`ais_truth`), its estimator named with its rows and AIS checks; ``missing``:
    the estimator text where the record holds no estimate."""
    if not nll or nll.get("nll_test") is None:
        return {"truth_nll": None, "truth_se": None, "truth_estimator": f"not computed ({missing})"}
    estimator = f"{nll['nll_estimator']}, {nll.get('nll_rows_label', '')}".rstrip(", ")
    if upper_bound_label(nll):
        estimator += f", {upper_bound_label(nll)}"
    if doubling_check_text(nll):
        estimator += f"; {doubling_check_text(nll)}"
    return {
        "truth_nll": float(nll["nll_test"]),
        "truth_se": nll.get("nll_test_se"),
        "truth_estimator": estimator,
        "truth_rows": nll.get("nll_rows"),
    }


def baselines_truth(baselines: Mapping[str, Any] | None) -> dict[str, Any]:
    """The truth's ``-log p(x)`` from a baselines record (``true_model.nll``), estimator named."""
    return truth_record(((baselines or {}).get("true_model") or {}).get("nll"), "no baselines record")


def ais_truth(data: Mapping[str, np.ndarray], nll: Mapping[str, Any], seed: int = 0) -> dict[str, Any]:
    """The truth's ``-log p(x)`` estimated by the panel itself under the likelihood settings
    ``nll`` (``evaluation.nll``'s keys: AIS on a fixed seeded subset of ``max_rows`` test rows
    where every row costs too much), for a panel that needs more rows than the baselines'
    (whose rows are shared with every learned model's NLL and stay small)."""
    from noisyor_bench.data.loading import ground_truth
    from noisyor_bench.evaluation.noisyor_likelihood import LikelihoodConfig, score

    t0 = time.perf_counter()
    _, record = score(
        ground_truth(data), np.asarray(data["x_test"]), LikelihoodConfig.from_mapping(dict(nll)), seed
    )
    return {
        **truth_record(record, str(record.get("nll_rows_label"))),
        "truth_seconds": time.perf_counter() - t0,
    }


def panel(
    data: Mapping[str, np.ndarray],
    name: str,
    baselines: Mapping[str, Any] | None = None,
    *,
    exact_max_k: int = 12,
    max_rows: int | None = CALIBRATION_MAX_ROWS,
    samples: int = DEFAULT_N_SAMPLES,
    seed: int = 0,
    truth_nll: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """One dataset's panel record (see the module docstring); deterministic in ``seed``.

    ``truth_nll``: likelihood settings under which the panel estimates the truth's ``-log p(x)``
    itself where K is beyond enumeration (:func:`ais_truth`); ``None``: the baselines' estimate."""
    from noisyor_bench.data.loading import has_truth
    from noisyor_bench.experiments.acp.baselines import SUBSET_STREAM, scored_rows

    if not has_truth(data) or "z_test" not in data:
        raise DataError(
            f"{name}: the calibration panel needs a synthetic dataset (theta, theta0, mu, z_test)"
        )
    if exact_max_k > MAX_EXACT_K:
        raise ConfigError(f"exact_max_k={exact_max_k} exceeds the enumeration limit {MAX_EXACT_K}")
    d, k = np.asarray(data["theta"]).shape
    n_test = int(np.asarray(data["x_test"]).shape[0])
    record: dict[str, Any] = {"dataset": name, "K": int(k), "D": int(d), "n_test": n_test}
    record["indep_entropy"] = indep_entropy(data)
    if k <= exact_max_k:
        rows = scored_rows(n_test, max_rows)
        record["rows"] = int(rows.size)
        record["rows_label"] = (
            "all test rows"
            if rows.size == n_test
            else f"fixed seeded subset of {rows.size} of {n_test} test rows (seed {SUBSET_STREAM})"
        )
        record.update(enumerated_panel(data, rows, samples, seed))
        return record
    why = f"not computed (K = {k})"  # 2^K states: beyond enumeration, and not estimated silently
    truth = ais_truth(data, truth_nll, seed) if truth_nll else baselines_truth(baselines)
    record.update(rows=None, rows_label=why, **truth)
    for key in ("meanfield_nelbo", "near_exact_f1", "near_exact_em", "map_f1", "map_em"):
        record[key] = None
    record["enumerated"] = why
    return record
