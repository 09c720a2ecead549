"""APE's non-amortised baselines on the test combinations: VI from random initialisation and
NUTS warm-started from VI (appendix A.2), one run directory per (dataset, seed).

* ``results/runs/ape-vi/<dataset>/vi/n0/seed<s>/``: ``posterior.npz`` (``mu``, ``log_sigma``
  (P, K) of every combination), ``curve.csv`` (step, seconds, elbo per pair[, eval_elbo]),
  ``metrics.json`` (time, ``timing``: the time re-based on the per-step times, with its spread
  (:func:`noisyor_bench.infra.timing.cumulative_timing`), ``cpu_seconds`` / ``cpu_timing`` the
  same on the process's CPU time (``curve.csv`` column ``cpu_seconds``), ``threads``, steps, the
  A.2 stopping rule's verdict as ``converged``);
* ``results/runs/ape-nuts/<dataset>/nuts/n0/seed<s>/``: ``samples.npz`` (``h`` (S, P', K) on
  the P' combinations ``index`` (:func:`nuts_index`: distinct documents), ``init``),
  ``metrics.json`` (time, ``cpu_seconds``, ``threads``, P', their documents, step size, acceptance, divergences and
  ``diagnostics``: ESS, split R-hat, movement, spread against VI's sigma, ``stuck``).

VI and NUTS run in float32 (their times are Table 1's); the metrics are computed in float64
by :mod:`.evaluate`.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch

from noisyor_bench.experiments.ape.pairs import EvalCombinations, evaluation_combinations
from noisyor_bench.experiments.rundir import (
    fresh_partial_dir,
    publish_run_dir,
    read_metrics_record,
    write_metrics,
)
from noisyor_bench.inference.seeding import stream_seed
from noisyor_bench.infra import provenance
from noisyor_bench.infra.integrity import verified_run_file
from noisyor_bench.infra.io import load_npz, write_npz_atomic, write_text_atomic
from noisyor_bench.infra.timing import Timing, cumulative_timing

log = logging.getLogger(__name__)

VI_EXPERIMENT = "ape-vi"
NUTS_EXPERIMENT = "ape-nuts"
VI_EVAL_EVERY = 25  # steps between the fixed-noise ELBO points of Figure 1 (left), off the clock
VI_EVAL_SAMPLES = 10


def vi_config(section: Mapping[str, Any], warm: bool = False) -> Any:
    from noisyor_bench.inference.topics.ape_vi import ViConfig

    vi = dict(section.get("vi") or {})
    return ViConfig(
        learning_rate=float(vi.get("warm_lr", 0.0005) if warm else vi.get("lr", 0.01)),
        decay_steps=int(vi.get("decay_steps", 5000)),
        window=int(vi.get("window", 10)),
        rel_tol=float(vi.get("rel_tol", 1e-5)),
        min_steps=int(vi["min_steps"]) if vi.get("min_steps") else None,
        max_steps=int(vi.get("max_steps", 100_000)),
        n_mc_samples=int(vi.get("samples", 1)),
        init="random",
        eval_every=VI_EVAL_EVERY,
        eval_samples=VI_EVAL_SAMPLES,
    )


@dataclass
class GroupedVi:
    """VI on every combination, fitted model by model (:func:`fit_vi_grouped`)."""

    mu: torch.Tensor
    log_sigma: torch.Tensor
    steps: int  # the longest group's
    seconds: float  # summed over the groups
    converged: bool  # every group met the stopping rule
    stop_reason: str
    curve: list[dict[str, float]]
    convergence: Any
    timing: Timing | None = None  # seconds re-based on the per-step times (infra.timing)
    cpu_timing: Timing | None = None  # the same on the process's CPU time (None: not recorded)


def _step_timing(r: Any, clock: str = "seconds") -> Timing:
    """One fit_vi run's time re-based on its per-step times (its curve: cumulative seconds per
    step); ``clock="cpu_seconds"``: its CPU time the same way."""
    total = r.seconds if clock == "seconds" else r.cpu_seconds
    return cumulative_timing([row["step"] for row in r.curve], [row[clock] for row in r.curve], total)


def _cpu_timing(results: Sequence[Any]) -> Timing | None:
    """The CPU-time :class:`Timing` of fit_vi runs side by side (summed), ``None`` unless every
    run recorded its CPU time per step."""
    if not results or not all(math.isfinite(r.cpu_seconds) and "cpu_seconds" in r.curve[-1] for r in results):
        return None
    timings = [_step_timing(r, "cpu_seconds") for r in results]
    return sum(timings[1:], timings[0])


def fit_vi_grouped(
    combos: EvalCombinations,
    prior: Any,
    config: Any,
    seed: int,
    group_by_model: bool,
    init: tuple[torch.Tensor, torch.Tensor] | None = None,
) -> GroupedVi:
    """VI on all combinations at once, or (``group_by_model``) one vectorised problem per test
    model with its theta shared (K, V) instead of repeated per pair (P, K, V): the same
    per-pair optimisation (Adam is elementwise), 30x less memory traffic on the reviews.

    Grouped runs: the stopping rule applies per model; time is the sum; the curve is the
    lockstep curve (at step t, the mean ELBO over models of each model's step min(t, last)
    and the summed time), i.e. the curve of running the groups side by side.
    """
    from noisyor_bench.inference.topics.ape_vi import fit_vi

    if not group_by_model:
        r = fit_vi(combos.x, combos.theta, prior, config, seed=seed, init=init, progress=_vi_progress)
        return GroupedVi(
            r.mu,
            r.log_sigma,
            r.steps,
            r.seconds,
            r.converged,
            r.stop_reason,
            r.curve,
            r.convergence,
            _step_timing(r),
            _cpu_timing([r]),
        )
    mu = torch.empty(combos.x.shape[0], combos.theta.shape[1], dtype=combos.x.dtype)
    log_sigma = torch.empty_like(mu)
    results = []
    for m in range(combos.n_models):
        rows = torch.as_tensor(np.flatnonzero(combos.model_index == m))
        group_init = None if init is None else (init[0][rows], init[1][rows])
        r = fit_vi(
            combos.x[rows],
            combos.theta[rows[0]],
            prior,
            config,
            seed=stream_seed(seed, f"model-{m}"),
            init=group_init,
        )
        mu[rows], log_sigma[rows] = r.mu.to(mu.dtype), r.log_sigma.to(mu.dtype)
        results.append((r, rows.numel()))
        log.info(
            "VI model %d/%d: %d steps, %.1f s, converged %s",
            m + 1,
            combos.n_models,
            r.steps,
            r.seconds,
            r.converged,
        )
    curves = [pd.DataFrame(r.curve) for r, _ in results]
    weights = np.array([n for _, n in results], dtype=float) / sum(n for _, n in results)
    steps = sorted({float(s) for c in curves for s in c["step"]})
    lockstep = []
    for step in steps:
        row: dict[str, float] = {"step": step, "seconds": 0.0, "elbo": 0.0, "eval_elbo": 0.0}
        if all("cpu_seconds" in c for c in curves):
            row["cpu_seconds"] = 0.0
        for c, w in zip(curves, weights):
            upto = c[c["step"] <= step].iloc[-1]
            row["seconds"] += float(upto["seconds"])
            if "cpu_seconds" in row:
                row["cpu_seconds"] += float(upto["cpu_seconds"])
            row["elbo"] += w * float(upto["elbo"]) if np.isfinite(upto["elbo"]) else np.nan
            evals = (
                c[(c["step"] <= step)]["eval_elbo"].dropna() if "eval_elbo" in c else pd.Series(dtype=float)
            )
            row["eval_elbo"] += w * float(evals.iloc[-1]) if not evals.empty else np.nan
        lockstep.append(row)
    worst = next((r for r, _ in results if not r.converged), results[0][0])
    return GroupedVi(
        mu,
        log_sigma,
        max(r.steps for r, _ in results),
        sum(r.seconds for r, _ in results),
        all(r.converged for r, _ in results),
        "converged" if all(r.converged for r, _ in results) else "max_epochs",
        lockstep,
        worst.convergence,
        sum((_step_timing(r) for r, _ in results[1:]), _step_timing(results[0][0])),
        _cpu_timing([r for r, _ in results]),
    )


def _vi_progress(row: Mapping[str, float]) -> None:
    log.info("VI step %d: ELBO/pair %.3f, %.1f s", row["step"], row["elbo"], row["seconds"])


def _identity(experiment: str, dataset: str, method: str, seed: int) -> dict[str, Any]:
    return {"experiment": experiment, "dataset": dataset, "method": method, "n_train": 0, "seed": int(seed)}


def run_vi(
    dataset_path: str | Path, dataset: str, seed: int, section: Mapping[str, Any], out_dir: str | Path
) -> dict[str, Any]:
    """VI from random initialisation on every test combination; writes the run directory."""
    from noisyor_bench.models.topics.logistic_normal import ape_prior

    arrays = load_npz(dataset_path)
    combos = evaluation_combinations(arrays, torch.float32)
    n_topics = combos.theta.shape[1]
    config = vi_config(section)
    grouped = bool((section.get("vi") or {}).get("group_by_model", False))
    log.info(
        "%s seed %d: VI on %d combinations (max %d steps%s)",
        dataset,
        seed,
        combos.x.shape[0],
        config.max_steps,
        ", one problem per test model" if grouped else "",
    )
    result = fit_vi_grouped(
        combos, ape_prior(n_topics, dtype=torch.float32), config, stream_seed(seed, "ape-vi"), grouped
    )
    out = Path(out_dir)
    work = fresh_partial_dir(out)
    write_npz_atomic(
        work / "posterior.npz", mu=result.mu.cpu().numpy(), log_sigma=result.log_sigma.cpu().numpy()
    )
    write_text_atomic(work / "curve.csv", pd.DataFrame(result.curve).to_csv(index=False, lineterminator="\n"))
    metrics = {
        **_identity(VI_EXPERIMENT, dataset, "vi", seed),
        "mode": "inference",
        "combinations": int(combos.x.shape[0]),
        "steps": int(result.steps),
        "seconds": float(result.seconds),
        "timing": result.timing.as_dict() if result.timing else None,
        "cpu_seconds": result.cpu_timing.measured if result.cpu_timing else None,
        "cpu_timing": result.cpu_timing.as_dict() if result.cpu_timing else None,
        "threads": torch.get_num_threads(),
        "stop_reason": result.stop_reason,
        "epochs": int(result.steps),
        "converged": bool(result.converged),
        "convergence": result.convergence.as_dict() if result.convergence else None,
        "final_elbo": float(result.curve[-1].get("eval_elbo", result.curve[-1]["elbo"])),
        "vi": dict(section.get("vi") or {}),
        "grouped_by_model": grouped,
    }
    metrics["provenance"] = provenance.artifact_record(
        "run",
        [provenance.file_entry(dataset_path, "dataset", out)],
        [],
        out,
        config={"seed": seed, "vi": metrics["vi"]},
    )
    metrics["provenance"]["outputs"] = provenance.run_outputs(work)  # posterior.npz, curve.csv
    write_metrics(work / "metrics.json", metrics)
    publish_run_dir(work, out)
    log.info(
        "%s seed %d: VI %d steps, %.1f s, converged %s -> %s",
        dataset,
        seed,
        result.steps,
        result.seconds,
        result.converged,
        out,
    )
    return metrics


def nuts_index(combos: EvalCombinations, nuts: Mapping[str, Any]) -> np.ndarray:
    """The test combinations NUTS samples: with ``documents: n``, one combination of each of the
    first n evaluation documents, the models in turn (document d with model d mod M: n distinct
    documents, every model while n >= M); otherwise the first ``combinations`` (document-major)."""
    total = combos.x.shape[0]
    if nuts.get("documents"):
        docs = np.unique(combos.doc_index)  # ascending = the evaluation order (document-major)
        n_models = combos.n_models
        wanted = min(int(nuts["documents"]), docs.size)
        return np.array([d * n_models + d % n_models for d in range(wanted)], dtype=np.int64)
    return np.arange(min(int(nuts.get("combinations", 300)), total), dtype=np.int64)


def select_combinations(combos: EvalCombinations, index: np.ndarray) -> EvalCombinations:
    """The combinations ``index`` of ``combos``."""
    idx = torch.as_tensor(index)
    return EvalCombinations(
        combos.x[idx], combos.theta[idx], combos.doc_index[index], combos.model_index[index]
    )


def run_nuts(
    dataset_path: str | Path,
    dataset: str,
    seed: int,
    section: Mapping[str, Any],
    vi_dir: str | Path,
    out_dir: str | Path,
) -> dict[str, Any]:
    """NUTS on the combinations :func:`nuts_index` picks, started from a draw of VI's q; the
    chain's diagnostics (:func:`~noisyor_bench.inference.topics.ape_nuts.chain_diagnostics`,
    its spread against VI's sigma) in ``metrics.json``."""
    from noisyor_bench.inference.topics.ape_nuts import chain_diagnostics, warm_start_from_q
    from noisyor_bench.inference.topics.ape_nuts import run_nuts as sample
    from noisyor_bench.models.topics.logistic_normal import ape_prior

    nuts = dict(section.get("nuts") or {})
    arrays = load_npz(dataset_path)
    every = evaluation_combinations(arrays, torch.float32)
    index = nuts_index(every, nuts)
    combos = select_combinations(every, index)
    n = combos.x.shape[0]
    q = load_npz(verified_run_file(Path(vi_dir) / "posterior.npz"))
    mu, log_sigma = (torch.as_tensor(q[k][index], dtype=torch.float32) for k in ("mu", "log_sigma"))
    gen = torch.Generator().manual_seed(stream_seed(seed, "ape-nuts-init"))
    init = warm_start_from_q(mu, log_sigma, gen)
    log.info(
        "%s seed %d: NUTS on %d combinations (%d warm-up + %d samples, tree depth <= %d)",
        dataset,
        seed,
        n,
        int(nuts.get("warmup", 100)),
        int(nuts.get("samples", 100)),
        int(nuts.get("max_tree_depth", 10)),
    )
    result = sample(
        combos.x,
        combos.theta,
        ape_prior(combos.theta.shape[1], dtype=torch.float32),
        seed=stream_seed(seed, "ape-nuts"),
        init=init,
        num_samples=int(nuts.get("samples", 100)),
        warmup_steps=int(nuts.get("warmup", 100)),
        max_tree_depth=int(nuts.get("max_tree_depth", 10)),
    )
    out = Path(out_dir)
    work = fresh_partial_dir(out)
    write_npz_atomic(
        work / "samples.npz", h=result.samples.cpu().numpy(), init=result.init.cpu().numpy(), index=index
    )
    diagnostics = chain_diagnostics(result.samples, torch.exp(log_sigma))
    metrics = {
        **_identity(NUTS_EXPERIMENT, dataset, "nuts", seed),
        "mode": "inference",
        "combinations": int(n),
        "documents": int(np.unique(combos.doc_index).size),
        "combination_index": [int(i) for i in index],
        "seconds": float(result.seconds),
        "cpu_seconds": float(result.cpu_seconds) if math.isfinite(result.cpu_seconds) else None,
        "threads": torch.get_num_threads(),
        "step_size": float(result.step_size),
        "acceptance": float(result.acceptance) if math.isfinite(result.acceptance) else None,
        "divergences": int(result.divergences),
        # strict JSON: a statistic a chain cannot define (ESS of a chain that never moved) is null
        "diagnostics": {
            k: None if isinstance(v, float) and not math.isfinite(v) else v for k, v in diagnostics.items()
        },
        "converged": None,  # a sampler run for a fixed number of iterations: no convergence rule here
        "convergence": {"rule": "not-applicable", "converged": None, "stop_reason": "fixed-iterations"},
        "nuts": nuts,
    }
    metrics["provenance"] = provenance.artifact_record(
        "run",
        [
            provenance.file_entry(dataset_path, "dataset", out),
            provenance.file_entry(Path(vi_dir) / "posterior.npz", "warm start (VI)", out),
        ],
        [],
        out,
        config={"seed": seed, "nuts": nuts},
    )
    metrics["provenance"]["outputs"] = provenance.run_outputs(work)  # samples.npz
    write_metrics(work / "metrics.json", metrics)
    publish_run_dir(work, out)
    log.info(
        "%s seed %d: NUTS %.1f s, step size %.3g, acceptance %.2f, ESS median %.1f, split R-hat max %.2f%s -> %s",
        dataset,
        seed,
        result.seconds,
        result.step_size,
        result.acceptance,
        diagnostics["ess_median"],
        diagnostics["rhat_max"],
        " (STUCK: the chain barely moved)" if diagnostics["stuck"] else "",
        out,
    )
    return metrics


def read_run(run_dir: str | Path) -> dict[str, Any]:
    """A baseline run's record, its self-hash and metrics checked (:func:`read_metrics_record`)."""
    return read_metrics_record(run_dir)
