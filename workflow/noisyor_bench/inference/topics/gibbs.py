"""Collapsed Gibbs sampling for LDA through tomotopy, on a document-term count matrix.

APE draws its test topic matrices from several independently seeded collapsed-Gibbs LDA runs (the
paper used Mallet); aviPAM compares against collapsed Gibbs LDA.  Both call :func:`fit_lda_gibbs`
so that the library's conventions are mapped once:

* tomotopy takes documents as word strings; word ``v`` of the matrix is the string ``str(v)``, and
  the topic-word matrix is returned over the *whole* vocabulary (a word absent from the corpus
  gets the smoothed probability ``eta / (n_k + V eta)``, as the collapsed posterior mean would).
  :func:`add_documents` and :func:`topic_word_matrix` are these two mappings, shared with the
  4-PAM sampler (:mod:`noisyor_bench.inference.topics.pam_gibbs`).
* tomotopy re-estimates alpha every ``optim_interval`` iterations by default; Mallet's command
  line does not unless asked (``--optimize-interval 0``), so the default here is fixed
  hyperparameters (``optimize_interval=0``).
* one worker and ``ParallelScheme.NONE``: with a fixed seed the chain is reproducible.
* ``train_seconds`` is the wall time of the ``model.train`` calls alone (tomotopy initialises
  the chain in the first); ``trace`` holds ``(iteration, ll_per_word, train_seconds so far)``
  every ``trace_interval`` iterations: the chain runs in chunks of that many sweeps, which
  tomotopy continues into the same chain as one call (:func:`train_timed`).
* ``stop_on_rule``: the chain stops at the first trace point where the project's convergence
  rule holds (:func:`noisyor_bench.inference.convergence.plateau_reached`, like aviPAM's
  ``stop_on_plateau``) with the window and tolerance of the run's ``budget`` (the one its
  convergence is then judged with; ``None``: :class:`FitBudget`'s); ``iterations`` is then a
  cap, and the fit records the sweeps it ran and why it stopped.
* ``snapshot``: called at every trace point with the sweep and the posterior-mean topic-word
  matrix of the chain's state there (:func:`topic_word_matrix`, the rule the final topics use),
  e.g. to keep each topic's top words along the chain (the coherence curve).  It only reads the
  chain's counts: no random draw, no change to the chain, and its time is not training time.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from noisyor_bench.inference.convergence import plateau_reached
from noisyor_bench.inference.fitting import EpochRecord, FitBudget
from noisyor_bench.infra.errors import ConfigError, DataError


@dataclass(frozen=True)
class LdaGibbsFit:
    """The state of a collapsed Gibbs chain after its last iteration (posterior means)."""

    topic_word: np.ndarray  # (K, V) rows sum to 1: (n_kw + eta) / (n_k + V eta)
    doc_topic: np.ndarray  # (D, K) rows sum to 1: (n_dk + alpha) / (n_d + K alpha)
    log_likelihood_per_word: float  # tomotopy's ll_per_word (joint log-likelihood per token)
    iterations: int
    seed: int
    train_seconds: float = math.nan  # wall time of training only (workers threads)
    trace: tuple[tuple[int, float, float], ...] = ()  # (iteration, ll_per_word, seconds)
    workers: int = 1
    burn_in: int = 0
    sweeps: int = 0  # sweeps actually run (< iterations when the rule stopped the chain)
    stop_reason: str = "max_epochs"  # "plateau": stopped by the convergence rule (stop_on_rule)
    snapshot_seconds: float = 0.0  # wall time of the snapshots (not training: train_timed)
    cpu_seconds: float | None = None  # process CPU time of training only (ChainRun.cpu_seconds)
    cpu_trace: tuple[float, ...] = ()  # CPU seconds so far at every trace point


TracePoint = tuple[int, float, float]
#: Called at every trace point of a chain with the sweep and the (K, V) posterior-mean
#: topic-word matrix of the chain's state there (:func:`topic_word_matrix`)
Snapshot = Callable[[int, np.ndarray], None]


@dataclass(frozen=True)
class ChainRun:
    """How a tomotopy chain was trained: :func:`train_timed`'s result."""

    seconds: float  # wall time of model.train alone (trace and rule checks excluded)
    trace: tuple[TracePoint, ...]  # (sweep, ll_per_word, seconds so far) after every chunk
    sweeps: int  # sweeps actually run (tomotopy's global_step)
    stop_reason: str  # "plateau" (the rule held) | "max_epochs" (ran every sweep) | "time" (max_seconds)
    snapshot_seconds: float = 0.0  # wall time of the on_trace calls (not in ``seconds``)
    cpu_seconds: float | None = None  # process CPU time of model.train alone (every thread)
    cpu_trace: tuple[float, ...] = ()  # CPU seconds of model.train so far, at every trace point


def rule_holds(trace: Sequence[TracePoint], budget: FitBudget) -> bool:
    """The project's convergence rule (:func:`noisyor_bench.inference.convergence.plateau_reached`)
    on a chain's trace, judged on minus the log-likelihood per word (:func:`trace_records`, the
    values :func:`~noisyor_bench.inference.convergence.assess` judges) with ``budget``'s window
    and tolerance."""
    values = [r.train_nelbo for r in trace_records(trace)]
    return plateau_reached(values, budget.convergence_window, budget.convergence_rel_tol)


def train_timed(
    model: Any,
    iterations: int,
    workers: int,
    trace_interval: int = 0,
    stop_on_rule: bool = False,
    budget: FitBudget | None = None,
    max_seconds: float | None = None,
    on_trace: Callable[[int], None] | None = None,
) -> ChainRun:
    """Train ``model`` for at most ``iterations`` sweeps; with ``trace_interval > 0`` in chunks of
    ``trace_interval`` sweeps, recording ``(sweep, ll_per_word, training seconds)`` after each.

    Successive ``model.train(n)`` calls continue one chain: tomotopy counts ``global_step``,
    ``burn_in`` and ``optim_interval`` over all calls, and a chain trained in chunks reaches the
    same state as one ``train(iterations)`` call with the same seed (checked with tomotopy
    0.14.0: tests/inference/topics/test_gibbs_stop.py).  With ``stop_on_rule`` the chain stops
    after the first chunk at which :func:`rule_holds` on the trace with ``budget``'s window and
    tolerance (``None``: :class:`FitBudget`'s defaults; stop reason ``"plateau"``);
    ``iterations`` is then a cap.  ``max_seconds``: the chain also stops after the first chunk
    at which its training time reaches this (stop reason ``"time"``; a reference run's "longest
    chain that fits" on a shared machine).  Shared by every tomotopy baseline so that training
    time is measured one way: computing ``ll_per_word`` and checking the rule are not training time.
    ``on_trace``: called with the sweep after each trace point is recorded (its time is
    ``snapshot_seconds``, not training time); it must only read the model (a snapshot of its
    topics), never train or draw from it.
    """
    import tomotopy as tp

    if stop_on_rule and trace_interval < 1:
        raise ConfigError("train_timed: stop_on_rule needs a trace (trace_interval >= 1)")
    if on_trace is not None and trace_interval < 1:
        raise ConfigError("train_timed: a snapshot needs a trace (trace_interval >= 1)")
    budget = budget or FitBudget()
    parallel = tp.ParallelScheme.NONE if workers == 1 else tp.ParallelScheme.DEFAULT
    trace: list[TracePoint] = []
    seconds = snapshot_seconds = cpu_seconds = 0.0
    cpu_trace: list[float] = []
    done, stop_reason = 0, "max_epochs"
    chunk = trace_interval if trace_interval > 0 else iterations
    from noisyor_bench.infra.progress import Progress

    ticker = Progress(f"Gibbs chain ({type(model).__name__})", iterations, unit="sweeps")
    while done < iterations:
        n = min(chunk, iterations - done)
        t0, c0 = time.perf_counter(), time.process_time()
        model.train(n, workers=workers, parallel=parallel)
        seconds += time.perf_counter() - t0
        cpu_seconds += time.process_time() - c0
        done += n
        ticker.update(done, f"log-likelihood per word {float(model.ll_per_word):.4f}")
        if trace_interval > 0:
            trace.append((int(model.global_step), float(model.ll_per_word), seconds))
            cpu_trace.append(cpu_seconds)
            if on_trace is not None:
                t0 = time.perf_counter()
                on_trace(int(model.global_step))
                snapshot_seconds += time.perf_counter() - t0
            if stop_on_rule and done < iterations and rule_holds(trace, budget):
                stop_reason = "plateau"
                break
        if max_seconds is not None and done < iterations and seconds >= max_seconds:
            stop_reason = "time"
            break
    return ChainRun(
        seconds,
        tuple(trace),
        int(model.global_step),
        stop_reason,
        snapshot_seconds,
        cpu_seconds,
        tuple(cpu_trace),
    )


def trace_records(trace: Sequence[TracePoint]) -> list[EpochRecord]:
    """A Gibbs trace as the project's training curve, for :func:`noisyor_bench.inference.convergence.assess`:
    ``epoch`` = sweep, ``train_nelbo`` = -ll_per_word (the chain's negative joint log-likelihood
    per token; lower is better, as for a NELBO), no validation value, ``seconds`` = training time."""
    return [
        EpochRecord(epoch=int(it), train_nelbo=-float(ll), val_nelbo=None, seconds=float(sec))
        for it, ll, sec in trace
    ]


def word_documents(counts: sp.csr_matrix | np.ndarray) -> list[list[str]]:
    """D x V integer counts -> tomotopy documents (word ``v`` is the string ``str(v)``)."""
    matrix = sp.csr_matrix(counts)
    if matrix.nnz and (matrix.data.min() < 0 or not np.all(np.equal(np.mod(matrix.data, 1), 0))):
        raise DataError("collapsed Gibbs: counts must be non-negative integers")
    docs = []
    for row in range(matrix.shape[0]):
        start, end = matrix.indptr[row], matrix.indptr[row + 1]
        words = np.repeat(matrix.indices[start:end], matrix.data[start:end].astype(np.int64))
        docs.append([str(int(w)) for w in words])
    return docs


def add_documents(model: Any, counts: sp.csr_matrix | np.ndarray, caller: str) -> tuple[int, list[int]]:
    """Add the rows of ``counts`` (D x V integers) to the tomotopy ``model``; return (D, the row
    indices added).  Empty rows are skipped (tomotopy rejects empty documents; the caller gives
    them the prior's mean); a DataError naming ``caller`` if every row is empty."""
    docs = word_documents(counts)
    kept = []
    for index, words in enumerate(docs):
        if words:
            model.add_doc(words)
            kept.append(index)
    if not kept:
        raise DataError(f"{caller}: every document is empty")
    return len(docs), kept


def topic_word_matrix(model: Any, n_topics: int, vocab_size: int, eta: float) -> np.ndarray:
    """The (n_topics, vocab_size) posterior-mean topic-word matrix of a trained tomotopy model,
    over the *whole* vocabulary: ``(n_kw + eta) / (n_k + V eta)``; a word the model never saw
    (absent from every document) gets ``eta / (n_k + V eta)``.  Rows sum to 1."""
    columns = np.array([int(w) for w in model.used_vocabs])
    topic_word = np.full((n_topics, vocab_size), eta, dtype=np.float64)
    for k in range(n_topics):
        topic_word[k, columns] = np.asarray(model.get_topic_word_dist(k, normalize=False), dtype=np.float64)
    topic_word /= topic_word.sum(axis=1, keepdims=True)
    return topic_word


def snapshot_hook(
    model: Any, n_topics: int, vocab_size: int, eta: float, snapshot: Snapshot | None
) -> Callable[[int], None] | None:
    """:func:`train_timed`'s ``on_trace`` for a ``snapshot``: the sweep and the model's
    topic-word matrix (:func:`topic_word_matrix`, read only); ``None`` without a snapshot."""
    if snapshot is None:
        return None
    return lambda sweep: snapshot(sweep, topic_word_matrix(model, n_topics, vocab_size, eta))


def fit_lda_gibbs(
    counts: sp.csr_matrix | np.ndarray,
    n_topics: int,
    alpha: float,
    eta: float,
    iterations: int,
    seed: int,
    optimize_interval: int = 0,
    workers: int = 1,
    burn_in: int = 0,
    trace_interval: int = 0,
    stop_on_rule: bool = False,
    budget: FitBudget | None = None,
    max_seconds: float | None = None,
    snapshot: Snapshot | None = None,
) -> LdaGibbsFit:
    """Run ``iterations`` sweeps of tomotopy's collapsed Gibbs LDA on ``counts`` (D x V), or
    fewer with ``stop_on_rule`` (stop at the first trace point where the convergence rule
    holds with ``budget``'s window and tolerance: :func:`train_timed`).

    ``burn_in``: sweeps before the first hyperparameter re-estimation (tomotopy's
    ``burn_in``, Mallet's ``--optimize-burn-in``); only matters with ``optimize_interval > 0``.
    ``snapshot``: called at every trace point with the sweep and the topic-word matrix there
    (:data:`Snapshot`; needs ``trace_interval >= 1``); the chain is the same with or without it.
    """
    import tomotopy as tp  # imported here: a compiled library only the topic-model papers need

    if n_topics < 1 or iterations < 1:
        raise ConfigError(f"fit_lda_gibbs: n_topics={n_topics} and iterations={iterations} must be >= 1")
    if alpha <= 0 or eta <= 0:
        raise ConfigError(f"fit_lda_gibbs: alpha={alpha} and eta={eta} must be positive")
    vocab_size = int(np.shape(counts)[1])
    model = tp.LDAModel(k=n_topics, alpha=alpha, eta=eta, seed=int(seed))
    model.optim_interval = int(optimize_interval)
    model.burn_in = int(burn_in)
    n_docs, kept = add_documents(model, counts, "fit_lda_gibbs")  # empty ones: the prior's mean below
    on_trace = snapshot_hook(model, n_topics, vocab_size, eta, snapshot)
    chain = train_timed(
        model, iterations, workers, trace_interval, stop_on_rule, budget, max_seconds, on_trace
    )

    topic_word = topic_word_matrix(model, n_topics, vocab_size, eta)
    doc_topic = np.full((n_docs, n_topics), 1.0 / n_topics)
    for row, doc in zip(kept, model.docs, strict=True):
        doc_topic[row] = np.asarray(doc.get_topic_dist(), dtype=np.float64)
    return LdaGibbsFit(
        topic_word=topic_word,
        doc_topic=doc_topic,
        log_likelihood_per_word=float(model.ll_per_word),
        iterations=iterations,
        seed=int(seed),
        train_seconds=chain.seconds,
        trace=chain.trace,
        workers=workers,
        burn_in=int(burn_in),
        sweeps=chain.sweeps,
        stop_reason=chain.stop_reason,
        snapshot_seconds=chain.snapshot_seconds,
        cpu_seconds=chain.cpu_seconds,
        cpu_trace=chain.cpu_trace,
    )
