"""One APE training run: an encoder (Standard, APE naive, APE model-aware) for one seed.

Run directory ``results/runs/ape-train/<dataset>/<method>/n<M>/seed<s>/`` (M = training models:
the pool size, 1 for the Standard encoder) with ``metrics.json`` (identity, budget, the
convergence verdict of :mod:`noisyor_bench.inference.convergence`, provenance), ``curve.csv``
(one row per validation evaluation) and ``encoder.pt`` (the weights with the best validation
NELBO).  The directory is written as ``<dir>.partial`` and published when complete
(:func:`noisyor_bench.experiments.rundir.publish_run_dir`).  While the training runs, its
checkpoint (every :data:`~noisyor_bench.inference.topics.ape_training.CHECKPOINT_SECONDS`) lives
there too: a run killed at its wall-time limit continues from it on the retry.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch

from noisyor_bench.data.synthetic.theta_pool import ThetaPool
from noisyor_bench.experiments.ape import pairs
from noisyor_bench.experiments.ape.steps import training_section
from noisyor_bench.experiments.rundir import (
    CHECKPOINT_FILE,
    RunKey,
    claim_partial_dir,
    publish_run_dir,
    write_metrics,
)
from noisyor_bench.inference.seeding import stream_seed
from noisyor_bench.inference.training import write_checkpoint
from noisyor_bench.infra import provenance
from noisyor_bench.infra.device import resolve_device
from noisyor_bench.infra.errors import ConfigError
from noisyor_bench.infra.hashing import sha256_file
from noisyor_bench.infra.io import load_npz, write_text_atomic

log = logging.getLogger(__name__)

EXPERIMENT = "ape-train"
ENCODER_KINDS = {"standard": "standard", "ape-naive": "naive", "ape-model-aware": "model_aware"}
ENCODER_FILE = "encoder.pt"


def n_models(method: str, pool_size: int) -> int:
    """The ``n<M>`` of a training run's directory: models it trains on."""
    return 1 if method == "standard" else int(pool_size)


def train_dir(results: str | Path, dataset: str, method: str, pool_size: int, seed: int) -> Path:
    return RunKey(EXPERIMENT, dataset, method, n_models(method, pool_size), seed).directory(results)


def training_config(section: Mapping[str, Any], n_documents: int, models: int) -> tuple[Any, int, int]:
    """(ApeTrainingConfig, steps of the configured epochs, steps run = min(epochs' steps, max_steps))."""
    from noisyor_bench.inference.topics.ape_training import ApeTrainingConfig

    batch = int(section.get("batch_size", 100))
    epoch_steps = max(1, math.ceil(float(section.get("epochs", 2)) * math.ceil(n_documents * models / batch)))
    steps = min(epoch_steps, int(section["max_steps"])) if section.get("max_steps") else epoch_steps
    config = ApeTrainingConfig(
        learning_rate=float(section.get("lr", 0.01)),
        decay_rate=float(section.get("decay_rate", 0.8)),
        decay_steps=int(section.get("decay_steps", 50_000)),
        batch_size=batch,
        max_steps=steps,
        eval_every=min(int(section.get("eval_every", 500)), steps),
        convergence_window=int(section.get("window", 5)),
        convergence_rel_tol=float(section.get("rel_tol", 1e-3)),
        patience=int(section["patience"]) if section.get("patience") else None,
    )
    return config, epoch_steps, steps


def train_run(
    dataset_path: str | Path,
    dataset: str,
    method: str,
    seed: int,
    section: Mapping[str, Any],
    out_dir: str | Path,
    device: str = "cpu",
) -> dict[str, Any]:
    """Train ``method``'s encoder on ``dataset`` with ``seed``; write the run directory; its metrics."""
    from noisyor_bench.inference.topics.ape_encoders import build_encoder, count_parameters
    from noisyor_bench.inference.topics.ape_training import train_encoder
    from noisyor_bench.models.topics.logistic_normal import ape_prior

    if method not in ENCODER_KINDS:
        raise ConfigError(f"unknown APE encoder {method!r}; choose one of {', '.join(ENCODER_KINDS)}")
    arrays = load_npz(dataset_path)
    documents = np.asarray(arrays["documents"], dtype=np.float32)
    pool = ThetaPool.from_arrays(arrays)
    n_docs, vocab = documents.shape
    n_topics = pool.n_topics
    standard = method == "standard"
    budget = training_section(section, method)
    models = n_models(method, pool.size)
    config, epoch_steps, steps = training_config(budget, n_docs, models)
    dev = resolve_device(device)
    # the pool held on the training device when it fits there (pairs.hold_pool), else drawn per batch
    thetas, m = (torch.from_numpy(pool.draw([0])), 1) if standard else pairs.training_models(pool, dev)
    valid_x, valid_theta = pairs.validation_pairs(
        documents, pool, int(budget.get("validation_pairs", 500)), standard
    )
    encoder = build_encoder(
        ENCODER_KINDS[method], vocab, n_topics, seed=stream_seed(seed, f"ape-encoder-init-{method}")
    )
    log.info(
        "%s %s seed %d: %d parameters, %d documents x %d models, %d steps (epochs' steps %d), device %s",
        dataset,
        method,
        seed,
        count_parameters(encoder),
        n_docs,
        m,
        steps,
        epoch_steps,
        dev,
    )

    def progress(row: Mapping[str, float]) -> None:
        log.info(
            "step %d/%d: train NELBO %.3f, validation NELBO %.3f, lr %.2e, %.1f s",
            row["step"],
            row["total_steps"],
            row["train_nelbo"],
            row["val_nelbo"],
            row["lr"],
            row["elapsed_seconds"],
        )

    out = Path(out_dir)
    work = claim_partial_dir(out)  # kept: a killed attempt's checkpoint is resumed
    result = train_encoder(
        encoder,
        torch.from_numpy(documents),
        thetas,
        ape_prior(n_topics, dtype=torch.float32),
        config,
        seed=stream_seed(seed, f"ape-train-{method}"),
        valid_x=valid_x,
        valid_theta=valid_theta,
        n_models=m,
        device=dev,
        progress=progress,
        checkpoint_path=work / CHECKPOINT_FILE,
        fingerprint={"dataset_sha256": sha256_file(dataset_path), "method": method},
    )
    (work / CHECKPOINT_FILE).unlink(missing_ok=True)  # trained: not an output of the run
    write_checkpoint(
        work / ENCODER_FILE, {k: v.cpu() for k, v in encoder.state_dict().items()}
    )  # atomic torch.save
    write_text_atomic(
        work / "curve.csv", pd.DataFrame(result.history).to_csv(index=False, lineterminator="\n")
    )
    best_val = min((r.val_nelbo for r in result.records if r.val_nelbo is not None), default=float("nan"))
    metrics: dict[str, Any] = {
        "experiment": EXPERIMENT,
        "dataset": dataset,
        "method": method,
        "n_train": models,
        "seed": int(seed),
        "mode": "training",
        "encoder_kind": ENCODER_KINDS[method],
        "vocab_size": int(vocab),
        "n_topics": int(n_topics),
        "parameters": int(count_parameters(encoder)),
        "documents": int(n_docs),
        "training_models": int(m),
        "steps": int(result.steps),
        "planned_steps": int(steps),
        "epoch_steps": int(epoch_steps),
        "step_capped": bool(steps < epoch_steps),
        "best_step": int(result.best_step),
        "stop_reason": result.stop_reason,
        "epochs": len(result.records),  # evaluations: the convergence table's unit
        "best_epoch": int(np.argmin([r.val_nelbo for r in result.records])) + 1 if result.records else None,
        "val_nelbo": best_val,
        "train_seconds": float(result.seconds),
        "converged": result.converged,
        "convergence": result.convergence.as_dict(),
        "budget": dict(budget),
        "device": str(dev),
    }
    metrics["provenance"] = provenance.artifact_record(
        "run",
        [provenance.file_entry(dataset_path, "dataset", out)],
        [],
        out,
        config={"method": method, "seed": seed, "budget": dict(budget)},
        device=dev,
    )
    metrics["provenance"]["outputs"] = provenance.run_outputs(work)  # encoder.pt, curve.csv
    write_metrics(work / "metrics.json", metrics)
    publish_run_dir(work, out)
    log.info(
        "%s %s seed %d: best validation NELBO %.3f at step %d, converged %s (%s), %.1f s -> %s",
        dataset,
        method,
        seed,
        best_val,
        result.best_step,
        result.converged,
        result.convergence.rule,
        result.seconds,
        out,
    )
    return metrics


def load_encoder(run_dir: str | Path) -> Any:
    """The trained encoder of a run directory (eval mode, float64 for evaluation): its record's
    self-hash and the weights' recorded sha256 checked before anything is loaded."""
    from noisyor_bench.inference.topics.ape_encoders import build_encoder
    from noisyor_bench.infra.integrity import read_verified_json, verified_run_file

    run = Path(run_dir)
    meta = read_verified_json(run / "metrics.json", "not found (did the encoder's training finish?)")
    weights = verified_run_file(run / ENCODER_FILE)
    encoder = build_encoder(meta["encoder_kind"], meta["vocab_size"], meta["n_topics"])
    encoder.load_state_dict(torch.load(weights, map_location="cpu", weights_only=True))
    return encoder.double().eval()
