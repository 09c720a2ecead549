"""One APE training run: an encoder (Standard, APE naive, APE model-aware) for one seed.

Run directory ``results/runs/ape-train/<dataset>/<method>/n<M>/seed<s>/`` (M = training models:
the pool size, 1 for the Standard encoder) with ``metrics.json`` (identity, budget, the
convergence verdict of :mod:`noisyor_bench.inference.convergence`, provenance), ``curve.csv``
(one row per validation evaluation) and ``encoder.pt`` (the weights with the best validation
NELBO).  The directory is written as ``<dir>.partial`` and published when complete
(:func:`noisyor_bench.experiments.rundir.publish_run_dir`).  While the training runs, its
checkpoint (every :data:`~noisyor_bench.inference.topics.ape_training.CHECKPOINT_SECONDS`) lives
there too: a run killed at its wall-time limit continues from it on the retry.  A training the
cost model puts over ``ape.max_job_hours`` runs as segments (:mod:`~noisyor_bench.experiments.ape.segments`):
:func:`train_segment` writes the loop state at its last step, and the run directory's job
starts from the last segment's (``previous``).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch

from noisyor_bench.data.synthetic.theta_pool import ThetaPool
from noisyor_bench.experiments.ape import pairs
from noisyor_bench.experiments.ape import segments as segments_of
from noisyor_bench.experiments.ape.steps import training_section
from noisyor_bench.experiments.rundir import (
    CHECKPOINT_FILE,
    RunKey,
    claim_partial_dir,
    publish_run_dir,
    write_metrics,
)
from noisyor_bench.experiments.segments import check_segment
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


@dataclass
class _Setup:
    """One training's inputs, as every segment of it builds them."""

    encoder: Any
    documents: np.ndarray
    thetas: Any
    models: int  # models the steps draw from (the pool's size, 1 for the Standard encoder)
    valid: tuple[torch.Tensor, torch.Tensor]
    budget: Mapping[str, Any]
    config: Any
    epoch_steps: int
    steps: int
    device: torch.device
    n_topics: int

    @property
    def n_docs(self) -> int:
        return int(self.documents.shape[0])

    @property
    def vocab(self) -> int:
        return int(self.documents.shape[1])


def _prepare(
    dataset_path: str | Path, dataset: str, method: str, seed: int, section: Mapping[str, Any], device: str
) -> _Setup:
    from noisyor_bench.inference.topics.ape_encoders import build_encoder, count_parameters

    if method not in ENCODER_KINDS:
        raise ConfigError(f"unknown APE encoder {method!r}; choose one of {', '.join(ENCODER_KINDS)}")
    arrays = load_npz(dataset_path)
    documents = np.asarray(arrays["documents"], dtype=np.float32)
    pool = ThetaPool.from_arrays(arrays)
    n_docs, vocab = documents.shape
    standard = method == "standard"
    budget = training_section(section, method)
    config, epoch_steps, steps = training_config(budget, n_docs, n_models(method, pool.size))
    dev = resolve_device(device)
    # the pool held on the training device when it fits there (pairs.hold_pool), else drawn per batch
    thetas, m = (torch.from_numpy(pool.draw([0])), 1) if standard else pairs.training_models(pool, dev)
    valid = pairs.validation_pairs(documents, pool, int(budget.get("validation_pairs", 500)), standard)
    encoder = build_encoder(
        ENCODER_KINDS[method], vocab, pool.n_topics, seed=stream_seed(seed, f"ape-encoder-init-{method}")
    )
    log.info(
        "%s %s seed %d: %d parameters, %d documents x %d models, %d steps (epochs' steps %d), device %s",
        dataset, method, seed, count_parameters(encoder), n_docs, m, steps, epoch_steps, dev,
    )  # fmt: skip
    return _Setup(
        encoder, documents, thetas, m, valid, budget, config, epoch_steps, steps, dev, pool.n_topics
    )


def _fit(
    setup: _Setup,
    dataset_path: str | Path,
    method: str,
    seed: int,
    checkpoint: Path,
    previous: str | Path | None,
    stop_at: int | None,
) -> Any:
    """``train_encoder`` on the setup: checkpoints to ``checkpoint``, from ``previous``, to ``stop_at``."""
    from noisyor_bench.inference.topics.ape_training import train_encoder
    from noisyor_bench.models.topics.logistic_normal import ape_prior

    def progress(row: Mapping[str, float]) -> None:
        log.info(
            "step %d/%d: train NELBO %.3f, validation NELBO %.3f, lr %.2e, %.1f s",
            row["step"], row["total_steps"], row["train_nelbo"], row["val_nelbo"], row["lr"],
            row["elapsed_seconds"],
        )  # fmt: skip

    return train_encoder(
        setup.encoder,
        torch.from_numpy(setup.documents),
        setup.thetas,
        ape_prior(setup.n_topics, dtype=torch.float32),
        setup.config,
        seed=stream_seed(seed, f"ape-train-{method}"),
        valid_x=setup.valid[0],
        valid_theta=setup.valid[1],
        n_models=setup.models,
        device=setup.device,
        progress=progress,
        checkpoint_path=checkpoint,
        fingerprint={"dataset_sha256": sha256_file(dataset_path), "method": method},
        resume_from=previous,
        stop_at=stop_at,
    )


def train_segment(
    dataset_path: str | Path,
    dataset: str,
    method: str,
    seed: int,
    section: Mapping[str, Any],
    segment: int,
    segments: int,
    out: str | Path,
    previous: str | Path | None = None,
    device: str = "cpu",
) -> int:
    """Segment ``segment`` (0-based, before the last of ``segments``) of the training: from
    ``previous`` (segment ``segment - 1``'s output; None for the first) to its last step
    (:func:`~noisyor_bench.experiments.ape.segments.segment_stops`), the loop state written to
    ``out`` (published atomically; a killed attempt's checkpoint beside it is resumed); the step reached."""
    check_segment(segment, segments, previous is not None, "ape-train --previous")
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    work = out.with_name(out.name + ".partial")  # kept: a killed attempt resumes from it
    setup = _prepare(dataset_path, dataset, method, seed, section, device)
    stop = segments_of.segment_stops(setup.steps, segments)[segment]
    result = _fit(setup, dataset_path, method, seed, work, previous, stop)
    work.replace(out)
    log.info("%s %s seed %d: segment %d of %d done at step %d -> %s", dataset, method, seed, segment + 1,
             segments, result.steps, out)  # fmt: skip
    return int(result.steps)


def train_run(
    dataset_path: str | Path,
    dataset: str,
    method: str,
    seed: int,
    section: Mapping[str, Any],
    out_dir: str | Path,
    device: str = "cpu",
    previous: str | Path | None = None,
) -> dict[str, Any]:
    """Train ``method``'s encoder on ``dataset`` with ``seed`` (from ``previous``, the last
    segment's output, when the training runs as segments); write the run directory; its metrics."""
    from noisyor_bench.inference.topics.ape_encoders import count_parameters

    out = Path(out_dir)
    setup = _prepare(dataset_path, dataset, method, seed, section, device)
    work = claim_partial_dir(out)  # kept: a killed attempt's checkpoint is resumed
    result = _fit(setup, dataset_path, method, seed, work / CHECKPOINT_FILE, previous, None)
    encoder, budget, dev = setup.encoder, setup.budget, setup.device
    vocab, n_topics, n_docs, m = setup.vocab, setup.n_topics, setup.n_docs, setup.models
    epoch_steps, steps = setup.epoch_steps, setup.steps
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
        "n_train": m,
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
        "segmented": previous is not None,  # resumed from its last segment job's state
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
