"""Training an APE (or Standard) encoder: maximise the ELBO over random (document, theta) pairs.

The paper's eq. (3): every step draws ``batch_size`` documents and ``batch_size`` models
independently and uniformly (with replacement, as the authors' ``create_minibatch`` does),
takes a reparameterised ELBO with the model *fixed* (theta is an input, the decoder has no
weights), and makes one Adam step on the encoder.  The schedule is appendix B.2's: Adam with
learning rate 0.01 decayed by 0.8 every 50,000 steps (staircase), batch 100, two epochs,
where an epoch is (documents x models) / batch_size steps.  Adam's beta1 = 0.99 comes from
the authors' code (the paper does not state it).

Every ``eval_every`` steps the encoder (in eval mode: BatchNorm running statistics) is scored on
a fixed validation set of pairs: the mean NELBO per pair with fresh-but-identical noise each
time (a generator re-seeded per evaluation), so evaluations are comparable.  These
evaluations are the curve (:class:`~noisyor_bench.inference.fitting.EpochRecord`, one per
evaluation) that :func:`noisyor_bench.inference.convergence.assess` judges; the best-validation
state is restored at the end (``restore_best``).  Optional early stopping: ``patience``
evaluations without a new best.

Seeds: the pair draws use stream ``"ape-pairs"``, the ELBO noise ``"ape-elbo-samples"``, the
validation noise ``"ape-validation"`` (:func:`noisyor_bench.inference.seeding.stream_seed`);
the encoder's initialisation is the caller's (``build_encoder(..., seed=...)``).

Checkpoints: with ``checkpoint_path`` the whole loop state (weights, Adam, both generators, the
curve, the best state, the step) is saved every ``checkpoint_seconds`` of wall time, so a run of
the paper grid's pool (days of steps) killed at its wall-time limit continues on its retry instead
of starting again; the resumed run ends bit-identical to an uninterrupted one (only the timings
differ).  A checkpoint of another configuration is stale: it is removed and the run starts afresh.

Segments: a training longer than one cluster job may run (the paper grid's naive encoder on the
reviews: days of one core) runs as consecutive jobs.  ``stop_at`` ends a job's share at that
step, with the loop state saved to ``checkpoint_path`` (result ``stop_reason == "paused"``);
``resume_from`` starts the next job from the previous one's checkpoint (one of another
configuration is an error there, never a fresh start).  The segments together are the
uninterrupted run, bit for bit.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import torch

from noisyor_bench.inference.adam import Adam
from noisyor_bench.inference.convergence import Convergence, assess
from noisyor_bench.inference.fitting import EpochRecord, FitBudget
from noisyor_bench.inference.seeding import stream_generator, stream_seed
from noisyor_bench.inference.topics.ape_encoders import ApeEncoder, model_aware_statistic
from noisyor_bench.inference.training import (
    CHECKPOINT_VERSION,
    NonFiniteLossError,
    read_checkpoint,
    write_checkpoint,
)
from noisyor_bench.infra.errors import ConfigError, DataError
from noisyor_bench.models.topics.logistic_normal import GaussianPrior, elbo, support_columns

LOGGER = logging.getLogger(__name__)

#: Wall seconds between two checkpoints of a training with ``checkpoint_path``.
CHECKPOINT_SECONDS = 600.0

ThetaSource = torch.Tensor | Callable[[torch.Tensor], torch.Tensor]
"""Training models: a (M, K, V) tensor, or a function from model indices (B,) (int64, CPU) to
their thetas (B, K, V) -- for pools too large to pass as a tensor (the paper's M = 50,000 on
V = 3000): drawn per batch, or gathered from a pool held on the training device
(:func:`noisyor_bench.experiments.ape.pairs.training_models`)."""


@dataclass(frozen=True)
class ApeTrainingConfig:
    """The optimisation schedule (defaults: the paper's appendix B.2) and the evaluation cadence."""

    learning_rate: float = 0.01
    decay_rate: float = 0.8
    decay_steps: int = 50_000
    batch_size: int = 100
    epochs: float = 2.0
    max_steps: int | None = None  # overrides epochs when set
    n_mc_samples: int = 1
    adam_beta1: float = 0.99
    adam_beta2: float = 0.999
    eval_every: int = 500
    val_mc_samples: int = 10
    patience: int | None = None  # None: the fixed budget, as the paper
    restore_best: bool = True
    convergence_window: int = 5
    convergence_rel_tol: float = 1e-3

    def __post_init__(self) -> None:
        positive_ints = (
            "decay_steps",
            "batch_size",
            "n_mc_samples",
            "eval_every",
            "val_mc_samples",
            "convergence_window",
        )
        for name in positive_ints:
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ConfigError(f"APE training {name} must be an integer >= 1; got {value!r}")
        for name in ("learning_rate", "decay_rate", "epochs", "convergence_rel_tol"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
                raise ConfigError(f"APE training {name} must be a number > 0; got {value!r}")
        if self.batch_size < 2:
            raise ConfigError("APE training batch_size must be >= 2 (BatchNorm needs two pairs per batch)")
        if self.max_steps is not None and (not isinstance(self.max_steps, int) or self.max_steps < 1):
            raise ConfigError(
                f"APE training max_steps must be an integer >= 1 or None; got {self.max_steps!r}"
            )
        if self.patience is not None and (not isinstance(self.patience, int) or self.patience < 1):
            raise ConfigError(f"APE training patience must be an integer >= 1 or None; got {self.patience!r}")
        for name in ("adam_beta1", "adam_beta2"):
            if not 0 <= getattr(self, name) < 1:
                raise ConfigError(f"APE training {name} must be in [0, 1); got {getattr(self, name)!r}")


@dataclass
class ApeTrainingResult:
    """The finished fit: its validation curve, the convergence verdict and the budget used."""

    records: list[EpochRecord]
    convergence: Convergence
    steps: int
    seconds: float
    best_step: int
    stop_reason: str  # "max_epochs" (the step budget), "patience", or "paused" (at ``stop_at``)
    history: list[dict[str, float]] = field(default_factory=list)  # per evaluation: step, lr, train/val NELBO

    @property
    def converged(self) -> bool | None:
        return self.convergence.converged


def total_steps(n_documents: int, n_models: int, config: ApeTrainingConfig) -> int:
    """Optimiser steps of the run: ``max_steps`` if set, else epochs x ceil(N M / batch_size)."""
    if config.max_steps is not None:
        return int(config.max_steps)
    per_epoch = math.ceil(n_documents * n_models / config.batch_size)
    return max(1, math.ceil(config.epochs * per_epoch))


def learning_rate_at(step: int, config: ApeTrainingConfig) -> float:
    """Staircase exponential decay: lr * decay_rate ** floor(step / decay_steps)."""
    return config.learning_rate * config.decay_rate ** (step // config.decay_steps)


def default_device() -> torch.device:
    """CUDA when present (a free GPU claimed through the project's GPU lock), else the CPU."""
    from noisyor_bench.infra.device import resolve_device

    return resolve_device("auto")


def _theta_lookup(thetas: ThetaSource, n_models: int | None, device: torch.device, dtype: torch.dtype):
    if isinstance(thetas, torch.Tensor):
        if thetas.ndim != 3:
            raise DataError(f"training thetas must be (M, K, V); got shape {tuple(thetas.shape)}")
        pool = thetas.to(device=device, dtype=dtype)
        return pool.shape[0], lambda idx: pool[idx.to(device)]
    if n_models is None or n_models < 1:
        raise ConfigError("a callable theta source needs n_models >= 1")
    return int(n_models), lambda idx: thetas(idx).to(device=device, dtype=dtype)


def validation_nelbo(
    encoder: ApeEncoder,
    x: torch.Tensor,
    theta: torch.Tensor,
    prior: GaussianPrior,
    n_samples: int,
    seed: int,
    chunk: int = 2048,
) -> float:
    """Mean NELBO per pair of the encoder (eval mode, no gradients) with noise from a generator
    seeded ``seed`` afresh, so repeated calls on the same weights give the same value."""
    was_training = encoder.training
    encoder.eval()
    device = x.device
    gen = torch.Generator(device=device).manual_seed(seed)
    total = 0.0
    with torch.no_grad():
        for start in range(0, x.shape[0], chunk):
            xb = x[start : start + chunk]
            tb = theta if theta.ndim == 2 else theta[start : start + chunk]
            mu, log_sigma = encoder(xb, tb)
            total += float(-elbo(xb, tb, mu, log_sigma, prior, n_samples, gen).sum())
    encoder.train(was_training)
    return total / x.shape[0]


BatchFn = Callable[[torch.Tensor, torch.Tensor], tuple[torch.Tensor | None, torch.Tensor, torch.Tensor]]


def _dense_batch(docs: torch.Tensor, lookup: Callable[[torch.Tensor], torch.Tensor]) -> BatchFn:
    """(None, x (B, V), theta (B, K, V)) of the drawn pairs: the encoder sees the raw inputs."""
    return lambda doc_idx, model_idx: (None, docs[doc_idx], lookup(model_idx))


def _compact_batch(encoder: ApeEncoder, docs: torch.Tensor, pool: torch.Tensor) -> BatchFn:
    """(features, counts (B, U), topics (B, K, U)) of the drawn pairs, gathering only each
    document's words from its model; the statistic is the encoder's (x for the standard one,
    normalised theta x for the model-aware one, equal on the compacted columns)."""
    columns, counts = support_columns(docs)
    n_models, n_topics, vocab = pool.shape
    offsets = (torch.arange(n_topics, device=pool.device) * vocab)[None, :, None]

    def gather(model_idx: torch.Tensor, cols: torch.Tensor) -> torch.Tensor:
        """pool[model_idx[b], k, cols[b, u]] as (B, K, U): one model's topic rows each gathered
        at once (the standard encoder's single model), else one flat gather (torch.take); the
        same values as three-index advanced indexing, in a fraction of its time (its measured
        effect on the quick trainings is in docs/history.md)."""
        cols = cols.to(pool.device)
        if n_models == 1:
            b, u = cols.shape
            rows = pool[0].index_select(1, cols.reshape(-1)).view(n_topics, b, u)
            return rows.permute(1, 0, 2).contiguous()
        flat = (model_idx.to(pool.device) * (n_topics * vocab))[:, None, None] + offsets + cols[:, None, :]
        return torch.take(pool, flat)

    def batch(doc_idx: torch.Tensor, model_idx: torch.Tensor):
        topics = gather(model_idx, columns[doc_idx])
        xb = counts[doc_idx]
        features = docs[doc_idx] if encoder.kind == "standard" else model_aware_statistic(xb, topics)
        return features, xb, topics

    return batch


def train_encoder(
    encoder: ApeEncoder,
    documents: torch.Tensor,
    thetas: ThetaSource,
    prior: GaussianPrior,
    config: ApeTrainingConfig,
    seed: int,
    valid_x: torch.Tensor,
    valid_theta: torch.Tensor,
    n_models: int | None = None,
    device: torch.device | str | None = None,
    progress: Callable[[dict[str, float]], None] | None = None,
    compact: bool = True,
    checkpoint_path: str | Path | None = None,
    checkpoint_seconds: float = CHECKPOINT_SECONDS,
    checkpoint_every: int | None = None,
    fingerprint: Mapping[str, Any] | None = None,
    resume_from: str | Path | None = None,
    stop_at: int | None = None,
) -> ApeTrainingResult:
    """Train ``encoder`` in place (moved to ``device``, default CUDA if present) on random pairs
    of ``documents`` (N, V) and training ``thetas``; monitor the NELBO of the fixed validation
    pairs ``valid_x`` (Bv, V) / ``valid_theta`` (Bv, K, V) or shared (K, V).  A Standard encoder
    is trained with a single model: ``thetas`` of shape (1, K, V).

    ``compact`` (default): for the standard and model-aware encoders with a tensor pool and
    sparse documents, each step gathers only the batch documents' words from the models (the
    ELBO and the model-aware statistic need no other column), instead of copying (B, K, V)
    thetas; the same objective, ~V/U times less memory traffic.  ``False``: the dense path.

    ``checkpoint_path`` / ``resume_from`` / ``stop_at``: the module docstring's checkpoints and
    segments (a paused run's encoder is left at its current weights, not the best ones)."""
    dev = torch.device(device) if device is not None else default_device()
    dtype = next(encoder.parameters()).dtype
    encoder.to(dev)
    docs = documents.to(device=dev, dtype=dtype)
    if docs.ndim != 2 or docs.shape[0] < 1:
        raise DataError(f"documents must be a non-empty (N, V) count matrix; got shape {tuple(docs.shape)}")
    m, lookup = _theta_lookup(thetas, n_models, dev, dtype)
    vx, vt = valid_x.to(device=dev, dtype=dtype), valid_theta.to(device=dev, dtype=dtype)
    prior = prior.to(dev, dtype)
    n_steps = total_steps(docs.shape[0], m, config)
    pair_gen = stream_generator(seed, "ape-pairs")
    noise_gen = stream_generator(seed, "ape-elbo-samples", dev)
    val_seed = stream_seed(seed, "ape-validation")
    optimizer = Adam(
        encoder.parameters(), lr=config.learning_rate, betas=(config.adam_beta1, config.adam_beta2)
    )
    planned_evals = math.ceil(n_steps / config.eval_every)
    budget = FitBudget(
        max_epochs=planned_evals,
        patience=config.patience or planned_evals + 1,
        batch_size=config.batch_size,
        convergence_window=config.convergence_window,
        convergence_rel_tol=config.convergence_rel_tol,
    )
    records: list[EpochRecord] = []
    history: list[dict[str, float]] = []
    best_value, best_step, best_eval, bad = math.inf, 0, None, 0
    best_state = {k: v.detach().clone() for k, v in encoder.state_dict().items()}
    stop_reason, stopped = "max_epochs", False
    start = time.perf_counter()
    chunk_start, train_sum, train_count = start, 0.0, 0
    encoder.train()
    step = 0
    batch_pairs = _dense_batch(docs, lookup)
    if compact and encoder.kind != "naive" and isinstance(thetas, torch.Tensor):
        if 4 * int((docs > 0).sum(-1).max()) < docs.shape[-1]:
            batch_pairs = _compact_batch(encoder, docs, thetas.to(device=dev, dtype=dtype))
    generators = {"pairs": pair_gen, "noise": noise_gen}
    checkpoint = Path(checkpoint_path) if checkpoint_path is not None else None
    print_ = {
        **dict(fingerprint or {}),
        "encoder": encoder.kind,
        "config": asdict(config),
        "seed": int(seed),
        "models": int(m),
        "documents": list(docs.shape),
        "device_type": dev.type,
        "dtype": str(dtype),
    }
    if stop_at is not None and not 0 < int(stop_at) <= n_steps:
        raise ConfigError(f"APE training stop_at must be a step in 1..{n_steps}; got {stop_at!r}")
    if checkpoint is None and (stop_at is not None and stop_at < n_steps):
        raise ConfigError("APE training stop_at before the last step needs a checkpoint_path to pause to")
    saved_at = time.perf_counter()
    payload = None
    if checkpoint is not None and checkpoint.exists():
        try:
            payload = read_checkpoint(checkpoint, print_)
        except ConfigError as err:  # another configuration's: stale, never resumed
            LOGGER.warning("%s; removing it, the run starts afresh", err)
            checkpoint.unlink()
        else:
            source = checkpoint
    if payload is None and resume_from is not None:
        # the previous segment's: another configuration's is an error, a fresh start would be wrong
        payload, source = read_checkpoint(resume_from, print_), Path(resume_from)
    if payload is not None:
        encoder.load_state_dict(payload["module"])
        optimizer.load_state_dict(payload["optimizer"])
        for name, g in generators.items():
            g.set_state(payload["generators"][name])
        best_state = payload["best_state"]
        loop = payload["loop"]
        step, bad, best_eval = int(loop["step"]), int(loop["bad"]), loop["best_eval"]
        stop_reason = str(loop.get("stop_reason") or stop_reason)
        best_value, best_step = float(loop["best_value"]), int(loop["best_step"])
        train_sum, train_count = float(loop["train_sum"]), int(loop["train_count"])
        records = [EpochRecord(**r) for r in payload["records"]]
        history = list(payload["history"])
        now = time.perf_counter()
        start, chunk_start = now - float(loop["elapsed"]), now - float(loop["chunk_elapsed"])
        stopped = bool(loop.get("stopped", False))  # early-stopped in an earlier segment
        LOGGER.info("resuming APE training at step %d of %d from %s", step, n_steps, source)

    def save() -> None:
        now = time.perf_counter()
        loop = dict(step=step, bad=bad, best_eval=best_eval, best_value=best_value, best_step=best_step,
                    train_sum=train_sum, train_count=train_count, elapsed=now - start,
                    chunk_elapsed=now - chunk_start, stop_reason=stop_reason,
                    stopped=stopped)  # fmt: skip
        write_checkpoint(
            checkpoint,  # type: ignore[arg-type]
            {
                "version": CHECKPOINT_VERSION,
                "fingerprint": print_,
                "module": encoder.state_dict(),
                "optimizer": optimizer.state_dict(),
                "generators": {name: g.get_state() for name, g in generators.items()},
                "best_state": best_state,
                "loop": loop,
                "records": [asdict(r) for r in records],
                "history": history,
            },
        )

    from noisyor_bench.infra.progress import Progress

    ticker = Progress(f"APE training ({encoder.kind})", n_steps)  # a log line every 20 s
    end = n_steps if stop_at is None else int(stop_at)
    while step < end and not stopped:
        ticker.update(step)
        lr = learning_rate_at(step, config)
        for group in optimizer.param_groups:
            group["lr"] = lr
        doc_idx = torch.randint(docs.shape[0], (config.batch_size,), generator=pair_gen)
        model_idx = torch.randint(m, (config.batch_size,), generator=pair_gen)
        features, xb, tb = batch_pairs(doc_idx.to(dev), model_idx)
        mu, log_sigma = encoder.head(features) if features is not None else encoder(xb, tb)
        loss = -elbo(xb, tb, mu, log_sigma, prior, config.n_mc_samples, noise_gen).mean()
        value = float(loss.detach())
        if not math.isfinite(value):
            raise NonFiniteLossError(
                f"APE training diverged at step {step + 1} (NELBO {value}); lower the learning rate"
            )
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        step += 1
        train_sum, train_count = train_sum + value, train_count + 1
        if step % config.eval_every == 0 or step == n_steps:
            val = validation_nelbo(encoder, vx, vt, prior, config.val_mc_samples, val_seed)
            if not math.isfinite(val):
                raise NonFiniteLossError(f"APE validation NELBO is {val} at step {step}")
            now = time.perf_counter()
            records.append(
                EpochRecord(
                    epoch=len(records) + 1,
                    train_nelbo=train_sum / train_count,
                    val_nelbo=val,
                    seconds=now - chunk_start,
                    extra={"step": float(step), "lr": lr},
                )
            )
            row = {
                "step": float(step),
                "lr": lr,
                "train_nelbo": train_sum / train_count,
                "val_nelbo": val,
                "elapsed_seconds": now - start,
                "total_steps": float(n_steps),
            }
            history.append(row)
            if progress is not None:
                progress(row)
            chunk_start, train_sum, train_count = now, 0.0, 0
            if val < best_value:
                best_value, best_step, best_eval, bad = val, step, len(records), 0
                best_state = {k: v.detach().clone() for k, v in encoder.state_dict().items()}
            else:
                bad += 1
                if config.patience is not None and bad >= config.patience:
                    stop_reason, stopped = "patience", True
                    break
        if checkpoint is not None and step < end:
            due = step % checkpoint_every == 0 if checkpoint_every else False
            if due or (not checkpoint_every and time.perf_counter() - saved_at >= checkpoint_seconds):
                save()
                saved_at = time.perf_counter()
    seconds = time.perf_counter() - start
    if end < n_steps:  # a segment's share done: the whole loop state for the next one
        save()
        LOGGER.info("APE training paused at step %d of %d: %s", step, n_steps, checkpoint)
        convergence = assess(records, "paused", best_eval, budget, applicable=False)
        return ApeTrainingResult(records, convergence, step, seconds, best_step, "paused", history)
    if config.restore_best:
        encoder.load_state_dict(best_state)
    else:
        best_step = step
    encoder.eval()
    convergence = assess(records, stop_reason, best_eval, budget)
    return ApeTrainingResult(records, convergence, step, seconds, best_step, stop_reason, history)


__all__ = [
    "CHECKPOINT_SECONDS",
    "ApeTrainingConfig",
    "ApeTrainingResult",
    "ThetaSource",
    "default_device",
    "learning_rate_at",
    "total_steps",
    "train_encoder",
    "validation_nelbo",
]
