"""One training run -> one directory: the interface later stages and auditors read.

``results/runs/<experiment>/<dataset>/<method>/n<N_train>/seed<seed>/`` holds

* ``metrics.json`` -- held-out test metrics (:mod:`noisyor_bench.evaluation.heldout`), timings and
  the run's identity (dataset + sha256, method, mode, N_train, seed, hyperparameters, budget,
  device, versions) and its ``provenance`` record (:mod:`noisyor_bench.infra.provenance`);
* ``posterior_test.npz`` -- ``q`` (N_test x K, float64) and the generative parameters
  ``theta``, ``theta0``, ``mu`` used for evaluation: every test metric can be recomputed from
  this file and the dataset alone (``noisyor-bench evaluate``);
* ``curve.csv`` -- the training curve (one row per epoch / fixed-point round).

Protocol (paper Section 4.2): the method fits on the first ``N_train`` rows of the training
pool, selects its model on the validation split only, and is evaluated on the test split
once, at the end.  In learning mode the learned latents are matched to the true ones by the
Hungarian algorithm before F1/EM.  Real corpora (no ``theta``/``theta0``/``mu``/``z`` arrays,
paper Section 4.5, supplement 5.1) run in learning mode with an explicit ``n_latent``; their
truth-dependent metrics (F1/EM, exact, latent matching) are ``null``.

Atomicity and resume: everything is written into ``<out_dir>.partial/`` and renamed onto
``<out_dir>`` only when complete, so a killed run never leaves a directory that looks
finished.  An existing ``<out_dir>`` (a finished earlier run) is left untouched until the new
run is complete: :func:`~noisyor_bench.experiments.rundir.publish_run_dir` swaps the
directories at the end, so a rerun that is killed, diverges or fails keeps the finished run intact.  The partial directory keeps the
trainer's checkpoint; re-running the same spec resumes from it (a different spec discards it).
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import logging
import math
import os
import platform
import re
import shutil
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
import torch

from noisyor_bench.data.loading import ground_truth, has_truth, load_dataset, training_rows
from noisyor_bench.evaluation.heldout import (
    DEFAULT_IW_SAMPLES,
    DEFAULT_N_SAMPLES,
    nelbo,
)
from noisyor_bench.evaluation.run_metrics import evaluate_posterior
from noisyor_bench.experiments.acp.settings_key import resume_key
from noisyor_bench.experiments.rundir import (
    CHECKPOINT_FILE,
    CURVE_FILE,
    METRICS_FILE,
    POSTERIOR_FILE,
    SPEC_FILE,
    RunKey,
    claim_partial_dir,
    convergence_keys,
    curve_csv,
    empty_dir,
    json_safe,
    publish_run_dir,
    write_metrics,
)
from noisyor_bench.inference import deadline
from noisyor_bench.inference.convergence import Convergence, assess, rejudge_absolute
from noisyor_bench.inference.fitting import EpochRecord, FitBudget, check_budget
from noisyor_bench.inference.noisyor import registry as methods_pkg
from noisyor_bench.inference.noisyor.base import InferenceMethod
from noisyor_bench.inference.noisyor.registry import NON_AMORTIZED
from noisyor_bench.inference.progress import EpochProgress
from noisyor_bench.inference.seeding import derive_init_seed, stream_seed
from noisyor_bench.inference.training import NonFiniteLossError, checkpoint_epoch
from noisyor_bench.infra import provenance
from noisyor_bench.infra.device import describe, resolve_device, set_threads
from noisyor_bench.infra.errors import ConfigError, DataError, Interrupted
from noisyor_bench.infra.hashing import sha256_file
from noisyor_bench.infra.io import (
    link_or_copy_atomic,
    read_json,
    release_run_partial,
    write_json_atomic,
    write_npz_atomic,
    write_text_atomic,
)
from noisyor_bench.infra.version import __version__
from noisyor_bench.models.noisyor.exact import MAX_EXACT_K
from noisyor_bench.models.noisyor.model import NoisyOR

log = logging.getLogger(__name__)

SCHEMA_VERSION = 1

# Metrics recomputable from posterior_test.npz + the dataset (compared by `evaluate`).
RECOMPUTED_METRICS = (
    "nelbo",
    "nelbo_sem",
    "f1",
    "em",
    "f1_map",
    "em_map",
    "exact_nll",
    "exact_elbo",
    "exact_nelbo",
    "exact_gap",
    "mc_gap",
    "iw_nll",
    "latent_match_cosine",
    "nll_test",
    "nll_test_se",
    "nll_test_mc_se",
    "nll_rows",
)

Mode = Literal["inference", "learning"]
MODES: tuple[str, ...] = ("inference", "learning")


@dataclass
class RunSpec:
    """Everything that defines one run.

    ``out_dir`` is the final run directory (see :func:`run_dir`).  ``n_latent`` (learning
    mode only) overrides K, e.g. to learn more causes than the ground truth has; F1/EM are
    then ``None``.  ``nll`` (a likelihood config mapping, :mod:`noisyor_bench.evaluation.noisyor_likelihood`)
    adds the model's held-out ``-log p(x)`` (``nll_test``); ``None`` skips it.
    ``iw_samples=0`` skips the importance-weighted bound; ``val_metrics``
    adds the test-protocol NELBO on the validation split (``val_nelbo``, for model selection
    across runs, e.g. the hyperparameter search).  ``init_key`` (the grid's runs set it,
    :func:`~noisyor_bench.inference.seeding.run_init_key`: cell and search draw or ``final``) makes the
    run's initialisation and other training streams derive from (cell, draw-or-final, seed)
    rather than from the seed alone; ``None`` keeps them on the seed.
    """

    dataset: Path
    method: str
    mode: Mode
    n_train: int
    seed: int
    out_dir: Path
    dataset_name: str | None = None
    experiment: str = "default"
    hparams: dict[str, Any] = field(default_factory=dict)
    budget: FitBudget = field(default_factory=FitBudget)
    n_samples: int = DEFAULT_N_SAMPLES
    iw_samples: int = DEFAULT_IW_SAMPLES
    exact_max_k: int = MAX_EXACT_K
    nll: dict[str, Any] | None = None
    device: str = "auto"
    threads: int | None = None
    n_latent: int | None = None
    val_metrics: bool = True
    resume: bool = True
    evaluate_test: bool = True
    init_key: str | None = None

    def __post_init__(self) -> None:
        self.dataset = Path(self.dataset)
        self.out_dir = Path(self.out_dir)
        if self.dataset_name is None:
            self.dataset_name = self.dataset.stem

    def validate(self) -> None:
        """Argument checks that need no file access (ConfigError naming the field)."""
        if self.mode not in MODES:
            raise ConfigError(f"mode {self.mode!r} is not allowed; allowed values: {', '.join(MODES)}")
        _check_int("n_samples", self.n_samples, minimum=1)
        # N_train = 0: a non-amortized method in inference mode has no global parameters to
        # fit; it is optimised directly on the held-out data (paper Section 4.2).
        held_out_only = self.mode == "inference" and self.method in NON_AMORTIZED
        _check_int("n_train", self.n_train, minimum=0 if held_out_only else 1)
        _check_int("seed", self.seed, minimum=0)
        _check_int("iw_samples", self.iw_samples, minimum=0)
        _check_int("exact_max_k", self.exact_max_k, minimum=0)
        check_budget(self.budget, "budget.")
        if self.threads is not None:
            _check_int("threads", self.threads, minimum=1)
        if self.n_latent is not None:
            _check_int("n_latent", self.n_latent, minimum=1)
            if self.mode != "learning":
                raise ConfigError(
                    "n_latent (a K different from the dataset's) is only allowed in learning mode"
                )
        if self.init_key is not None and (not isinstance(self.init_key, str) or not self.init_key):
            raise ConfigError(f"init_key must be a non-empty string or None; got {self.init_key!r}")
        if not isinstance(self.hparams, Mapping):
            raise ConfigError(f"hparams must be a JSON object (mapping); got {type(self.hparams).__name__}")


def check_layout(spec: RunSpec) -> None:
    """If ``out_dir`` follows ``<experiment>/<dataset>/<method>/n<N>/seed<S>``, it must agree
    with the spec (the aggregation rejects disagreeing runs; fail before training instead)."""
    parts = spec.out_dir.parts
    if len(parts) < 5 or not re.fullmatch(r"n\d+", parts[-2]) or not re.fullmatch(r"seed\d+", parts[-1]):
        return
    expected = {
        "experiment": (parts[-5], spec.experiment, "--experiment"),
        "dataset": (parts[-4], spec.dataset_name, "--dataset-name"),
        "method": (parts[-3], spec.method, "--method"),
        "n_train": (parts[-2], f"n{spec.n_train}", "--n-train"),
        "seed": (parts[-1], f"seed{spec.seed}", "--seed"),
    }
    wrong = [f"{k}: path has {a!r}, run has {b!r} ({flag})" for k, (a, b, flag) in expected.items() if a != b]
    if wrong:
        raise ConfigError(f"output directory {spec.out_dir} disagrees with the run: " + "; ".join(wrong))


def _check_int(name: str, value: Any, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ConfigError(f"{name} must be an integer >= {minimum}; got {value!r}")


def initial_model(spec: RunSpec, data: Mapping[str, np.ndarray]) -> NoisyOR:
    """The model handed to the method: the truth, or a shape-only model for a chosen K.

    A dataset without ground truth (a real corpus, paper Section 4.5 / supplement 5.1) can
    only be *learned*, with an explicit number of latents; ConfigError otherwise.
    """
    if not has_truth(data):
        if spec.mode != "learning" or spec.n_latent is None:
            raise ConfigError(
                f"dataset {spec.dataset} has no ground truth (theta/theta0/mu): it needs mode 'learning' "
                f"and n_latent (K, --latents); got mode={spec.mode!r}, n_latent={spec.n_latent!r}"
            )
        return shape_model(int(data["x_train"].shape[1]), spec.n_latent)
    truth = ground_truth(data)
    if spec.n_latent is not None and spec.n_latent != truth.K:
        return shape_model(truth.D, spec.n_latent)
    return truth


def shape_model(d: int, k: int) -> NoisyOR:
    """A placeholder model carrying only the shape (D, K) for learning with a chosen K.

    Learning-mode methods use only ``model.D`` and ``model.K`` (see
    :func:`noisyor_bench.models.noisyor.generative.make_generative`); the values are neutral anyway.
    """
    return NoisyOR.from_numpy(np.full((d, k), 0.1), np.full(d, 0.05), np.full(k, 0.2))


def _check_posterior(q: torch.Tensor, n: int, k: int, method: str) -> np.ndarray:
    arr = (
        q.detach().cpu().double().numpy() if isinstance(q, torch.Tensor) else np.asarray(q, dtype=np.float64)
    )
    if arr.shape != (n, k):
        raise RuntimeError(
            f"method {method!r} returned a posterior of shape {arr.shape}, expected ({n}, {k})"
        )
    if not np.all((arr >= 0) & (arr <= 1)):
        raise RuntimeError(f"method {method!r} returned posterior values outside [0, 1] or NaN")
    return arr


# ---------------------------------------------------------------------------------- the fit
def _fit(
    method: InferenceMethod,
    x_train: torch.Tensor,
    x_val: torch.Tensor,
    budget: FitBudget,
    progress: Callable[[EpochRecord], None],
    checkpoint: Path,
) -> tuple[list[EpochRecord], bool]:
    """Call ``fit``, passing the checkpoint when the method supports one.

    Every registered method does (AVI/ACP through ``training.Trainer``, SVI/LB-CDI/UB-CDI
    through ``methods.fitloop``); the fallback keeps third-party methods working.  Returns
    the curve and whether the fit resumed from a checkpoint left by an interrupted run.
    """
    if "checkpoint_path" in inspect.signature(method.fit).parameters:
        resumed = checkpoint.exists()
        if resumed:
            log.info("resuming from checkpoint %s", checkpoint)
        return method.fit(x_train, x_val, budget, progress, checkpoint_path=checkpoint), resumed  # type: ignore[call-arg]
    log.info(
        "method %s does not support checkpoints; a killed run restarts from scratch", type(method).__name__
    )
    return method.fit(x_train, x_val, budget, progress), False


def _construct(
    method_cls: type[InferenceMethod], model: NoisyOR, spec: RunSpec, device: torch.device
) -> InferenceMethod:
    """The method for ``spec``, its streams derived from (seed, ``init_key``).

    Every registered method takes ``init_key``; a third-party method without the argument is
    accepted only for runs without a key (its streams then follow the seed as before).
    """
    if spec.init_key is None:
        return method_cls(model, spec.mode, dict(spec.hparams), spec.seed, device)
    if "init_key" not in inspect.signature(method_cls).parameters:
        raise ConfigError(
            f"method {spec.method!r} ({method_cls.__name__}) takes no init_key, so its initialisation cannot "
            f"follow the run's key {spec.init_key!r}; add the argument (see methods.base.InferenceMethod)"
        )
    return method_cls(model, spec.mode, dict(spec.hparams), spec.seed, device, init_key=spec.init_key)


def _diverged_run(spec: RunSpec, work: Path, err: NonFiniteLossError) -> NonFiniteLossError:
    """``err`` prefixed with the run's identity, saying what was kept and how to go on."""
    return NonFiniteLossError(
        f"run {RunKey(spec.experiment, spec.dataset_name, spec.method, spec.n_train, spec.seed).path} "
        f"(mode {spec.mode}, hparams {json.dumps(dict(spec.hparams), sort_keys=True)}) stopped: {err} "
        f"Kept for inspection: {work} (with the latest checkpoint, taken at a finite epoch, if any; re-running "
        "the same command resumes there and diverges again, a run with changed hyperparameters starts afresh)."
    )


def _identity(
    spec: RunSpec, data: Mapping[str, np.ndarray], sha: str, device: torch.device, threads: int
) -> dict[str, Any]:
    return {
        "schema_version": SCHEMA_VERSION,
        "experiment": spec.experiment,
        "dataset": spec.dataset_name,
        "dataset_file": spec.dataset.name,
        "dataset_sha256": sha,
        "method": spec.method,
        "mode": spec.mode,
        "n_train": int(spec.n_train),
        "n_val": int(data["x_val"].shape[0]),
        "n_test": int(data["x_test"].shape[0]),
        "seed": int(spec.seed),
        "init_key": spec.init_key,
        "init_seed": derive_init_seed(spec.seed, spec.init_key),
        "D": int(data["x_train"].shape[1]),
        "K_true": int(data["theta"].shape[1]) if has_truth(data) else None,
        "hparams": dict(spec.hparams),
        "budget": dataclasses.asdict(spec.budget),
        "device": str(device),
        "device_name": describe(device),
        "threads": int(threads),
        "noisyor_bench_version": __version__,
        "torch_version": torch.__version__,
        "numpy_version": np.__version__,
        "python_version": platform.python_version(),
    }


def _resume_key(spec: RunSpec, sha: str, device: torch.device) -> dict[str, Any]:
    """What a checkpoint in the partial directory must agree on to be resumed."""
    return resume_key(spec, sha, device.type)


def _prepare_partial(spec: RunSpec, key: dict[str, Any]) -> Path:
    """Create ``<out_dir>.partial``; keep its checkpoint only if it belongs to this spec."""
    work = claim_partial_dir(spec.out_dir)  # locked: no second writer
    spec_path = work / SPEC_FILE
    if any(work.iterdir()):
        same = spec.resume and spec_path.exists() and _read_json_or_none(spec_path) == key
        if not same:
            log.info("discarding stale working directory %s", work)
            empty_dir(work)
    write_json_atomic(spec_path, key)
    return work


def _read_json_or_none(path: Path) -> Any:
    try:
        return read_json(path)
    except (OSError, ValueError):
        return None


# ---------------------------------------------------------------------------------- the run
@dataclass
class _PreparedRun:
    """A run up to its fit: data loaded, method built, working directory ready."""

    spec: RunSpec
    data: Mapping[str, np.ndarray]
    x_train: torch.Tensor
    x_val: torch.Tensor
    method: InferenceMethod
    device: torch.device
    threads: int
    sha: str
    work: Path
    clock: provenance.Stopwatch


def _prepare(spec: RunSpec) -> _PreparedRun:
    clock = provenance.Stopwatch()
    spec.validate()
    check_layout(spec)
    method_cls = methods_pkg.get_method(spec.method)  # ConfigError listing the allowed names
    data = load_dataset(spec.dataset)
    x_train = torch.as_tensor(training_rows(data, spec.n_train, spec.dataset))
    x_val = torch.as_tensor(data["x_val"])
    model_in = initial_model(spec, data)
    threads = set_threads(spec.threads)
    device = resolve_device(spec.device)
    sha = sha256_file(spec.dataset)
    method = _construct(method_cls, model_in, spec, device)
    # A finished run at out_dir stays until publish_run_dir replaces it (never removed up front).
    work = _prepare_partial(spec, _resume_key(spec, sha, device))
    log.info(
        "%s/%s/%s n_train=%d seed=%d mode=%s on %s (%d threads)",
        spec.experiment,
        spec.dataset_name,
        spec.method,
        spec.n_train,
        spec.seed,
        spec.mode,
        device,
        threads,
    )
    return _PreparedRun(spec, data, x_train, x_val, method, device, threads, sha, work, clock)


def execute_run(spec: RunSpec, previous: Path | None = None) -> Path:
    """Train, select on validation, evaluate on test once, write the run directory; return it.

    ``previous``: the fit's state at the end of the training's last segment job
    (:func:`execute_segment`), to continue from."""
    run = _prepare(spec)
    _adopt(previous, run.work / CHECKPOINT_FILE)
    t0 = time.perf_counter()
    records, resumed = _guarded_fit(run)
    return _finish(run, records, resumed, time.perf_counter() - t0)


def _guarded_fit(run: _PreparedRun) -> tuple[list[EpochRecord], bool]:
    """:func:`_fit` of a prepared run with its epoch progress; a divergence or Ctrl-C says what
    was kept and how to go on (the checkpoint in the working directory is exact)."""
    spec = run.spec
    progress = EpochProgress(
        spec.budget.max_epochs, f"{spec.method} n{spec.n_train} s{spec.seed}", logger=log
    )
    try:
        return _fit(run.method, run.x_train, run.x_val, spec.budget, progress, run.work / CHECKPOINT_FILE)
    except NonFiniteLossError as err:
        raise _diverged_run(spec, run.work, err) from err
    except KeyboardInterrupt:  # Ctrl-C / SIGINT: the checkpoint in work is exact
        raise Interrupted(f"interrupted; the same command resumes from {run.work}") from None
    finally:
        progress.close()


def execute_segment(spec: RunSpec, seconds: float, out: Path, previous: Path | None = None) -> int:
    """One segment of a training that runs as several jobs (:mod:`noisyor_bench.experiments.segments`):
    fit from ``previous`` (the last segment's output; None: from the start) until the first
    epoch end ``seconds`` later or the fit's end, then hand its exact checkpoint to ``out``.
    Returns the epoch reached.  The run's test split is not touched: the last segment is the
    training job itself (:func:`execute_run` with ``previous``)."""
    run = _prepare(spec)
    checkpoint = run.work / CHECKPOINT_FILE
    _adopt(previous, checkpoint)
    try:
        with deadline.pause_after(seconds):
            records, _ = _guarded_fit(run)
        epoch, how = (records[-1].epoch if records else 0), "the fit finished"
    except deadline.Paused as paused:
        epoch, how = paused.epoch, f"paused after {seconds:.0f} s"
    if not checkpoint.exists():
        raise ConfigError(
            f"method {spec.method!r} wrote no checkpoint, so its training cannot run as segments; "
            "train it as one job (no max_job_hours)"
        )
    link_or_copy_atomic(checkpoint, out)
    release_run_partial(run.work)
    log.info("segment at epoch %d (%s) -> %s", epoch, how, out)
    return epoch


def _adopt(previous: Path | None, checkpoint: Path) -> None:
    """Start the fit from ``previous`` unless the working directory's own checkpoint is at least
    as far along (this job's retry after a kill).  Either is exact: every checkpoint of one run
    lies on the same trajectory, so the further one loses nothing.  A ``previous`` of another
    run configuration is refused when the fit reads it (its fingerprint)."""
    if previous is None:
        return
    previous = Path(previous)
    if not previous.is_file():
        raise DataError(f"--previous {previous}: no such file (the training's last segment writes it)")
    if checkpoint.exists():
        if os.path.samefile(previous, checkpoint) or checkpoint_epoch(checkpoint) >= checkpoint_epoch(
            previous
        ):
            log.info("continuing from %s (at least as far along as %s)", checkpoint, previous)
            return
    link_or_copy_atomic(previous, checkpoint)
    log.info("continuing from the previous segment's state %s", previous)


def fit_only(spec: RunSpec) -> list[EpochRecord]:
    """The fit of ``spec`` alone (no selection, test evaluation or run directory; its partial
    directory is left for the caller): what a calibration slice times, epoch by epoch."""
    run = _prepare(spec)
    records, _ = _fit(
        run.method, run.x_train, run.x_val, spec.budget, lambda _r: None, run.work / CHECKPOINT_FILE
    )
    return records


def _finish(
    run: _PreparedRun,
    records: list[EpochRecord],
    resumed: bool,
    train_seconds: float,
    batch: Mapping[str, Any] | None = None,
) -> Path:
    """Select on validation, evaluate on test once, write and publish the run directory."""
    spec, data, method = run.spec, run.data, run.method
    x_val = run.x_val
    generative = method.generative.detach()
    # Validation split with the test protocol: a method-independent selection criterion.
    t0 = time.perf_counter()
    val_nelbo = None
    if spec.val_metrics:
        q_val = _check_posterior(method.posterior(x_val), x_val.shape[0], generative.K, spec.method)
        gen_val = torch.Generator().manual_seed(stream_seed(spec.seed, "evaluation-val"))
        val_nelbo = float(nelbo(generative, data["x_val"], q_val, spec.n_samples, gen_val).mean())
    val_seconds = time.perf_counter() - t0

    # Test split: touched once, at the end, with the selected model -- and never by a
    # hyperparameter-search draw (evaluate_test=False), whose only output is val_nelbo.
    arrays: dict[str, np.ndarray] | None = None
    metrics: dict[str, Any] = {"val_nelbo": val_nelbo, "test_evaluated": spec.evaluate_test}
    posterior_seconds = eval_seconds = 0.0
    if spec.evaluate_test:
        t0 = time.perf_counter()
        q_test = _check_posterior(
            method.posterior(torch.as_tensor(data["x_test"])),
            data["x_test"].shape[0],
            generative.K,
            spec.method,
        )
        posterior_seconds = time.perf_counter() - t0
        arrays = {"q": q_test, **generative.numpy()}
        eval_seed = stream_seed(spec.seed, "evaluation")
        t0 = time.perf_counter()
        metrics.update(
            evaluate_posterior(
                arrays,
                data,
                spec.mode,
                spec.n_samples,
                spec.iw_samples,
                spec.exact_max_k,
                eval_seed,
                nll=spec.nll,
            )
        )
        eval_seconds = time.perf_counter() - t0

    vals = [r.val_nelbo for r in records if r.val_nelbo is not None and math.isfinite(r.val_nelbo)]
    out: dict[str, Any] = _identity(spec, data, run.sha, run.device, run.threads)
    out.update(json_safe(metrics))
    out.update(
        K=int(generative.K),
        n_latent=spec.n_latent,
        exact_max_k=int(spec.exact_max_k) if has_truth(data) else 0,
        hparams_resolved=_resolved_hparams(method),
        epochs=int(records[-1].epoch) if records else 0,
        best_epoch=_opt_int(getattr(method, "best_epoch", None)),
        stop_reason=getattr(method, "stop_reason", None),
        best_curve_val_nelbo=min(vals) if vals else None,
        **convergence_keys(run_convergence(method, records, spec)),
        resumed=bool(resumed),
        train_seconds=train_seconds,
        val_seconds=val_seconds,
        posterior_seconds=posterior_seconds,
        eval_seconds=eval_seconds,
    )
    if batch is not None:
        out["batch"] = dict(batch)
    if arrays is not None:
        write_npz_atomic(run.work / POSTERIOR_FILE, **arrays)
    write_text_atomic(run.work / CURVE_FILE, curve_csv(records))
    out["provenance"] = provenance.run_record(spec, run.sha, run.device, run.threads, run.work, run.clock)
    write_metrics(run.work / METRICS_FILE, out)
    publish_run_dir(run.work, spec.out_dir, drop=(CHECKPOINT_FILE, SPEC_FILE))
    log.info("wrote %s", spec.out_dir)
    return spec.out_dir


BATCH_DIR = "batch.partial"
"""Working directory of a batch, beside its runs' seed directories (``.../n<N>/batch.partial``)."""


def batchable(specs: Sequence[RunSpec]) -> bool:
    """Whether :func:`execute_runs_batched` can train ``specs`` as one computation: two or more
    runs of one amortized method on one dataset, mode, N_train, budget and K."""
    if len(specs) < 2:
        return False
    first = specs[0]
    same = all(
        (s.dataset, s.method, s.mode, s.n_train, s.budget, s.n_latent, s.device)
        == (
            first.dataset,
            first.method,
            first.mode,
            first.n_train,
            first.budget,
            first.n_latent,
            first.device,
        )
        for s in specs
    )
    return (
        same and first.method in methods_pkg.METHOD_NAMES and methods_pkg.method_info(first.method).amortized
    )


def batch_groups(specs: Sequence[RunSpec]) -> list[list[int]]:
    """Indices of ``specs`` grouped into batches :func:`execute_runs_batched` can train together
    (same cell, budget and shape-fixing hyperparameters, e.g. the search draws with one encoder
    size); a run that cannot be batched is a group of its own.  Groups in order of first index."""
    from noisyor_bench.inference.noisyor.amortized import parse_hparams
    from noisyor_bench.inference.noisyor.batched import SHARED_HPARAMS

    groups: dict[Any, list[int]] = {}
    for index, spec in enumerate(specs):
        key: Any = ("alone", index)
        if spec.method in methods_pkg.METHOD_NAMES and methods_pkg.method_info(spec.method).amortized:
            hp = parse_hparams(spec.hparams)
            shape = tuple(getattr(hp, k) for k in SHARED_HPARAMS)
            key = (
                spec.dataset,
                spec.method,
                spec.mode,
                spec.n_train,
                tuple(sorted(dataclasses.asdict(spec.budget).items())),
                spec.n_latent,
                spec.device,
                shape,
            )
        groups.setdefault(key, []).append(index)
    return list(groups.values())


def execute_runs_batched(specs: Sequence[RunSpec]) -> list[Path | NonFiniteLossError]:
    """Train ``specs`` as one batched computation (:func:`~noisyor_bench.inference.noisyor.batched.fit_batched`),
    then evaluate and write each run's directory exactly as :func:`execute_run` does.

    The runs share the wall time of the batch: each records ``train_seconds`` = its share
    (batch time / runs) and ``batch`` = {runs, wall_seconds, index}.  A diverged run yields its
    error (the others are written); the batch checkpoint (in the first run's working directory,
    keyed by every run's resume key) lets an interrupted batch resume.
    """
    from noisyor_bench.inference.noisyor.batched import SHARED_HPARAMS, fit_batched

    if not batchable(specs):
        raise ConfigError(
            "execute_runs_batched: the runs do not share method, dataset, mode, N_train and budget"
        )
    runs = [_prepare(spec) for spec in specs]
    shapes = {tuple(getattr(r.method.hp, k) for k in SHARED_HPARAMS) for r in runs}  # type: ignore[attr-defined]
    if len(shapes) > 1:
        raise ConfigError(
            f"execute_runs_batched: the runs differ in {', '.join(SHARED_HPARAMS)}: {sorted(shapes)}"
        )
    first = runs[0]
    batch_dir = first.spec.out_dir.parent / BATCH_DIR
    checkpoint = batch_dir / CHECKPOINT_FILE
    fingerprint = {"runs": [_resume_key(r.spec, r.sha, r.device) for r in runs]}
    if checkpoint.exists() and not (first.spec.resume and _read_batch_key(batch_dir) == fingerprint):
        log.info("discarding stale batch checkpoint %s", checkpoint)
        shutil.rmtree(batch_dir)
    batch_dir.mkdir(parents=True, exist_ok=True)
    write_json_atomic(batch_dir / SPEC_FILE, fingerprint)
    resumed = checkpoint.exists()
    if resumed:
        log.info("resuming the batch from checkpoint %s", checkpoint)
    progress = EpochProgress(
        first.spec.budget.max_epochs,
        f"{first.spec.method} n{first.spec.n_train} x{len(runs)} runs",
        logger=log,
    )
    lead = {"epoch": 0}

    def on_epoch(index: int, record: EpochRecord) -> None:
        if record.epoch > lead["epoch"]:
            lead["epoch"] = record.epoch
            progress(record)

    t0 = time.perf_counter()
    try:
        results = fit_batched(
            [r.method for r in runs],  # type: ignore[misc]
            first.x_train,
            first.x_val,
            first.spec.budget,
            progress=on_epoch,
            checkpoint_path=checkpoint,
            fingerprint=fingerprint,
        )
    except KeyboardInterrupt:
        raise Interrupted(f"interrupted; the same command resumes the batch from {checkpoint}") from None
    finally:
        progress.close()
    wall = time.perf_counter() - t0
    out: list[Path | NonFiniteLossError] = []
    for index, (run, result) in enumerate(zip(runs, results, strict=True)):
        if result.error is not None:
            out.append(_diverged_run(run.spec, run.work, result.error))
            continue
        batch = {"runs": len(runs), "index": index, "wall_seconds": wall}
        out.append(_finish(run, result.history, resumed, wall / len(runs), batch=batch))
    shutil.rmtree(batch_dir, ignore_errors=True)
    return out


def _read_batch_key(batch_dir: Path) -> Any:
    return _read_json_or_none(batch_dir / SPEC_FILE)


def run_convergence(method: InferenceMethod, records: list[EpochRecord], spec: RunSpec) -> Convergence:
    """The method's own verdict (every registered method sets ``convergence`` in ``fit``), else
    the same rule applied here to the curve (a third-party method); judged in nats per data point
    (:func:`~noisyor_bench.inference.convergence.rejudge_absolute`)."""
    verdict = getattr(method, "convergence", None)
    if isinstance(verdict, Convergence):
        return rejudge_absolute(verdict)
    held_out = spec.mode == "inference" and spec.method in NON_AMORTIZED
    best = getattr(method, "best_epoch", None)
    stop = getattr(method, "stop_reason", None)
    return rejudge_absolute(assess(records, stop, best, spec.budget, applicable=not held_out))


def _opt_int(v: Any) -> int | None:
    return None if v is None else int(v)


def _resolved_hparams(method: InferenceMethod) -> dict[str, Any] | None:
    """The method's hyperparameters after defaults (:meth:`InferenceMethod.resolved_hparams`);
    for a method outside the base class, its dataclass ``hp`` or its ``hparams`` dict."""
    hp = getattr(method, "hp", None)
    if isinstance(method, InferenceMethod):
        values = method.resolved_hparams()
    elif hp is not None and dataclasses.is_dataclass(hp) and not isinstance(hp, type):
        values = dataclasses.asdict(hp)
    elif isinstance(getattr(method, "hparams", None), Mapping):
        values = dict(method.hparams)
    else:
        return None
    return {
        str(k): v if v is None or isinstance(v, (bool, int, float, str)) else str(v)
        for k, v in values.items()
    }


TIMING_KEYS = ("train_seconds", "val_seconds", "posterior_seconds", "eval_seconds")
HEADLINE_KEYS = ("nelbo", "f1", "em", "exact_nll", "exact_gap", "iw_nll", "nll_test", "val_nelbo")


def headline(metrics: Mapping[str, Any]) -> str:
    """One line of the main metrics for the terminal."""

    def fmt(v: Any) -> str:
        return "n/a" if v is None else f"{v:.4f}" if isinstance(v, float) else str(v)

    return ", ".join(f"{k}={fmt(metrics.get(k))}" for k in HEADLINE_KEYS)


__all__ = [
    "RECOMPUTED_METRICS",
    "RunSpec",
    "execute_run",
    "execute_segment",
    "fit_only",
    "headline",
]
