"""Runs of the APE-on-noisy-OR experiment, one directory each (results/README.md):

``results/runs/ape-noisyor/<family>/<method>/n<P_train>/seed<s>/`` with ``metrics.json``
(identity, ``converged`` / ``convergence`` from :mod:`noisyor_bench.inference.convergence`,
summary metrics, ``provenance``: the problem file, config and the sha256 of the run's other
files), ``curve.csv`` (encoders) and ``scores.npz``: ``elbo`` (P, C, N) the exact
ELBO of the method's ``q`` for every test row under every test candidate (2^K enumeration)
and ``seconds`` the wall time of computing those ``q`` (the inference time).

An encoder run trains across the training problems' models (:func:`~noisyor_bench.inference.noisyor.crossmodel.fit_across_models`);
a baseline run (SVI, LB-CDI) fits per-datapoint parameters on the test rows under each
candidate (deterministic: seed 0 only, ``converged`` null as for every held-out fit).
"""

from __future__ import annotations

import dataclasses
import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from noisyor_bench.evaluation.ranking import pairwise_agreement
from noisyor_bench.experiments.ape_noisyor.problems import problem_set
from noisyor_bench.experiments.ape_noisyor.settings import EXPERIMENT, EncoderSpec, Settings
from noisyor_bench.experiments.rundir import (
    RunKey,
    convergence_keys,
    curve_csv,
    fresh_partial_dir,
    json_safe,
    publish_run_dir,
    write_metrics,
)
from noisyor_bench.inference.convergence import NOT_APPLICABLE
from noisyor_bench.inference.fitting import EpochRecord
from noisyor_bench.inference.noisyor.crossmodel import ModelBank, fit_across_models, posterior_under
from noisyor_bench.inference.noisyor.registry import get_method
from noisyor_bench.inference.seeding import run_init_key
from noisyor_bench.infra import provenance
from noisyor_bench.infra.io import write_npz_atomic, write_text_atomic
from noisyor_bench.infra.version import __version__
from noisyor_bench.models.noisyor.exact import exact_elbo

log = logging.getLogger(__name__)


def run_key(family: str, method: str, n_train: int, seed: int) -> RunKey:
    """The key of a run: experiment ``ape-noisyor``, dataset = the problem family."""
    return RunKey(EXPERIMENT, family, method, n_train, seed)


def run_path(results_runs: str | Path, family: str, method: str, n_train: int, seed: int) -> Path:
    return Path(results_runs) / run_key(family, method, n_train, seed).path


def ranking_summary(elbo: np.ndarray, log_px: np.ndarray) -> dict[str, float]:
    """Mean over test problems of the pairwise agreement of the mean-ELBO ranking of the
    candidates with the exact log-likelihood ranking, and the mean ELBO gap (nats per row)."""
    agree = [pairwise_agreement(elbo[p].mean(-1), log_px[p].mean(-1)).fraction for p in range(elbo.shape[0])]
    return {"agreement_exact": float(np.mean(agree)), "gap_exact": float((log_px - elbo).mean())}


def _score(q_fn: Any, arrays: dict[str, np.ndarray]) -> tuple[np.ndarray, float, list[Any]]:
    """Exact ELBO (P, C, N) of ``q_fn(model, x)`` on every test candidate, and the seconds spent in ``q_fn``."""
    test = problem_set(arrays, "test")
    out = np.empty(arrays["test_log_px"].shape)
    seconds, infos = 0.0, []
    for p in range(test.n_problems):
        x = torch.as_tensor(test.x[p], dtype=torch.float64)
        for c in range(test.n_candidates):
            model = test.model(p, c)
            start = time.perf_counter()
            q, info = q_fn(model, x)
            seconds += time.perf_counter() - start
            infos.append(info)
            out[p, c] = exact_elbo(model, x, q).numpy()
    return out, seconds, infos


def _write_run(
    out: Path,
    metrics: dict[str, Any],
    elbo: np.ndarray,
    seconds: float,
    curve: str | None,
    record: _Record,
) -> None:
    work = fresh_partial_dir(out)
    write_npz_atomic(work / "scores.npz", elbo=elbo, seconds=np.asarray(seconds))
    if curve is not None:
        write_text_atomic(work / "curve.csv", curve)
    values = json_safe(metrics)
    values["provenance"] = record.finish(out, work)
    write_metrics(work / "metrics.json", values)
    publish_run_dir(work, out)


@dataclass
class _Record:
    """What a run's ``provenance`` record needs besides its files: the problem file it read
    (role ``dataset``: ``verify`` finds it there), its config and its own clock (one command
    trains every seed of an encoder)."""

    problems: str | Path | None
    config: dict[str, Any]
    clock: provenance.Stopwatch = field(default_factory=provenance.Stopwatch)

    def finish(self, out: Path, work: Path) -> dict[str, Any]:
        inputs = [] if self.problems is None else [provenance.file_entry(self.problems, "dataset", out)]
        rec = provenance.artifact_record(
            "run", inputs, [], out, self.config, self.clock, "cpu", torch.get_num_threads()
        )
        rec["outputs"] = provenance.run_outputs(work)
        return rec


def _config(settings: Settings, family: str, method: str, seed: int) -> dict[str, Any]:
    return {"family": family, "method": method, "seed": int(seed), "settings": dataclasses.asdict(settings)}


def _identity(
    family: str, method: str, settings: Settings, seed: int, mode: str = "inference"
) -> dict[str, Any]:
    return {
        "experiment": EXPERIMENT,
        "dataset": family,
        "method": method,
        "mode": mode,
        "n_train": settings.n_train,
        "seed": int(seed),
        "version": __version__,
    }


def train_encoder(
    arrays: dict[str, np.ndarray],
    settings: Settings,
    family: str,
    encoder: EncoderSpec,
    seed: int,
    out: str | Path,
    problems_path: str | Path | None = None,
) -> Path:
    """Train ``encoder`` across the training models with ``seed``, score it on the test problems;
    write the run folder ``out`` (:func:`run_key`'s place).

    ``problems_path``: the problem file ``arrays`` was read from, recorded in the run's provenance."""
    record = _Record(problems_path, _config(settings, family, encoder.name, seed))
    dtype = torch.float64 if settings.hparams.get("dtype") == "float64" else torch.float32
    train = ModelBank.from_numpy(
        arrays["train_theta"], arrays["train_x"], arrays["theta0"], arrays["mu"], dtype
    )
    val = ModelBank.from_numpy(arrays["val_theta"], arrays["val_x"], arrays["theta0"], arrays["mu"], dtype)
    anchor = problem_set(arrays, "train").model(0, 0)  # shape only: the model is an input per pair
    cls = get_method(encoder.method)
    method = cls(
        anchor,
        "inference",
        settings.hparams,
        seed,
        init_key=run_init_key(EXPERIMENT, family, settings.n_train),
        encoder_input=encoder.encoder_input,
    )
    start = time.perf_counter()
    label = f"{family}/{encoder.name}/seed{seed}"

    def progress(r: EpochRecord) -> None:
        log.info(
            "%s: epoch %d/%d, train NELBO %.4f, val NELBO (exact) %.4f, elapsed %.0f s",
            label,
            r.epoch,
            settings.budget.max_epochs,
            r.train_nelbo,
            r.val_nelbo if r.val_nelbo is not None else float("nan"),
            time.perf_counter() - start,
        )

    history = fit_across_models(
        method, train, val, settings.budget, settings.rows_per_model, settings.rows["val"], progress
    )
    train_seconds = time.perf_counter() - start
    elbo, seconds, _ = _score(lambda m, x: (posterior_under(method, m, x), None), arrays)
    verdict = method.convergence
    metrics = {
        **_identity(family, encoder.name, settings, seed),
        "base_method": encoder.method,
        "encoder_input": encoder.encoder_input,
        "epochs": len(history),
        "best_epoch": method.best_epoch,
        "stop_reason": method.stop_reason,
        **(convergence_keys(verdict) if verdict is not None else {}),
        "train_seconds": train_seconds,
        "inference_seconds": seconds,
        **ranking_summary(elbo, arrays["test_log_px"]),
    }
    out = Path(out)
    _write_run(out, metrics, elbo, seconds, curve_csv(history), record)
    log.info(
        "%s/%s seed %d: agreement %.3f, gap %.3f nats, converged %s, %.1f s training",
        family,
        encoder.name,
        seed,
        metrics["agreement_exact"],
        metrics["gap_exact"],
        metrics.get("converged"),
        train_seconds,
    )
    return out


def run_baseline(
    arrays: dict[str, np.ndarray],
    settings: Settings,
    family: str,
    method_name: str,
    out: str | Path,
    problems_path: str | Path | None = None,
) -> Path:
    """Per-datapoint ``method_name`` (SVI or LB-CDI) on every test candidate's rows; write the
    run folder ``out``."""
    record = _Record(problems_path, _config(settings, family, method_name, 0))
    cls = get_method(method_name)
    hparams = settings.baseline_hparams.get(method_name, {})  # else the method's defaults

    def q_fn(model: Any, x: torch.Tensor) -> tuple[torch.Tensor, Any]:
        m = cls(model, "inference", hparams, 0)
        q = m.posterior(x)
        return q, m.posterior_progress

    elbo, seconds, infos = _score(q_fn, arrays)
    converged = sum(bool(i is not None and i.converged) for i in infos)
    metrics = {
        **_identity(family, method_name, settings, 0),
        "converged": None,
        # per-datapoint inference on the test rows with the model given: no training budget to judge
        "convergence": {"rule": NOT_APPLICABLE, "converged": None, "stop_reason": None},
        "posterior_fits": len(infos),
        "posterior_fits_converged": converged,
        "inference_seconds": seconds,
        **ranking_summary(elbo, arrays["test_log_px"]),
    }
    out = Path(out)
    _write_run(out, metrics, elbo, seconds, None, record)
    log.info(
        "%s/%s: agreement %.3f, gap %.3f nats, %.1f s",
        family,
        method_name,
        metrics["agreement_exact"],
        metrics["gap_exact"],
        seconds,
    )
    return out


__all__ = ["ranking_summary", "run_baseline", "run_path", "train_encoder"]
