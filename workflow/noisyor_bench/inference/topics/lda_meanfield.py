"""Mean-field variational LDA through scikit-learn's ``LatentDirichletAllocation`` -- the
aviPAM paper's "LDA DMFVI" baseline ("we used the scikit-learn implementation").

The paper predates scikit-learn 0.20, whose default ``learning_method`` was ``"online"``
(Hoffman et al.'s stochastic variational inference); 0.20 changed it to ``"batch"``.  Both are
reported: ``learning_method`` has no default here, so every caller says which.  The other
defaults are scikit-learn's (unchanged since 0.17): ``max_iter=10`` passes, priors ``1/K``,
``batch_size=128``, ``learning_offset=10``, ``learning_decay=0.7``, ``total_samples=1e6``
(online only), no perplexity-based early stop (``evaluate_every=-1``).

With ``evaluate_every > 0`` scikit-learn computes its training perplexity (its own variational
bound, ``exp(-bound / tokens)``) every ``evaluate_every`` passes; the fit keeps those values as
``perplexity_trace`` (read from scikit-learn's ``verbose`` lines, the only place its fit loop
reports them; the fit is unchanged by it), so that the caller can judge convergence on the
method's own objective.

**Online, pass by pass** (``learning_method="online"``, ``evaluate_every > 0``, ``eval_docs``):
the fit drives the passes itself, one ``partial_fit(X)`` per pass.  That is what ``fit`` does
for the online method in scikit-learn 1.9.1 (``fit``: ``_init_latent_vars`` then, per pass, an
``_em_step`` per ``gen_batches(n, batch_size)`` slice with ``total_samples = n``;
``partial_fit``: ``_init_latent_vars`` on the first call, then the same ``_em_step`` calls with
``total_samples = self.total_samples`` -- so the estimator is built with ``total_samples = n``;
the learning rate ``(learning_offset + n_batch_iter_) ** -learning_decay`` continues through
``n_batch_iter_`` across calls; tests check ``components_`` equal to ``fit(max_iter=n)``).  The
perplexity is then evaluated on a fixed subset of ``eval_docs`` training documents (drawn with
``EVAL_SUBSET_SEED``, the same for every run seed) with ``perplexity(subset,
sub_sampling=True)``: scikit-learn's bound with the document terms scaled to the whole corpus,
an estimate of the full training perplexity at a fraction of its cost (a check over all 11,258
20 Newsgroups documents cost as much as the pass itself).  With ``stop_on_rule`` the fit stops
at the first check where the project's convergence rule
(:func:`noisyor_bench.inference.convergence.plateau_reached`, with the window and tolerance of
the run's ``budget``) holds on log perplexity (:func:`perplexity_records`, the curve the run's
convergence is judged on; stop reason ``"plateau"``, ``max_iter`` a cap); scikit-learn's
``perp_tol`` stop is not used on this path.

``train_seconds`` is the wall time of the passes alone (the checks excluded), under one BLAS/OpenMP thread
(``threadpoolctl``) and ``n_jobs=1``, like the one-worker Gibbs baselines.
"""

from __future__ import annotations

import contextlib
import io
import math
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from noisyor_bench.inference.convergence import plateau_reached
from noisyor_bench.inference.fitting import EpochRecord, FitBudget
from noisyor_bench.infra.errors import ConfigError, DataError

LEARNING_METHODS = ("online", "batch")
#: the subset of training documents the pass-by-pass online fit checks its perplexity on
EVAL_SUBSET_SEED = 20180603


@dataclass(frozen=True)
class LdaMeanFieldFit:
    topic_word: np.ndarray  # (K, V) rows sum to 1: the mean of q(beta_k) = lambda_k / sum(lambda_k)
    topic_word_lambda: np.ndarray  # (K, V) the variational Dirichlet parameters (components_)
    doc_topic: np.ndarray  # (D, K) rows sum to 1: normalised gamma (transform)
    learning_method: str
    n_iter: int  # passes over the data
    n_batch_iter: int  # EM steps (mini-batches for online)
    perplexity: float  # training-data perplexity (sklearn's bound); nan if not computed
    train_seconds: float  # wall time of fit, one thread
    seed: int
    doc_topic_prior: float
    topic_word_prior: float
    threads: int = 1
    max_iter: int = 0
    # True when scikit-learn stopped before max_iter by its own rule (evaluate_every > 0 and the
    # perplexity changed by less than perp_tol): convergence.assess's "converged" stop reason
    stopped_by_criterion: bool = False
    # (pass, training perplexity) at every evaluation (evaluate_every > 0), in order
    perplexity_trace: tuple[tuple[int, float], ...] = ()
    eval_docs: int = 0  # documents of the perplexity checks (0: all, scikit-learn's own loop)
    stop_reason: str = ""  # pass-by-pass path: "plateau" (rule held) | "max_epochs" (ran max_iter)


_PERPLEXITY_LINE = re.compile(r"iteration: (\d+) of max_iter: \d+, perplexity: ([0-9.eE+-]+|inf|nan)")


def parse_perplexity_trace(verbose_output: str) -> tuple[tuple[int, float], ...]:
    """``(pass, perplexity)`` of every evaluation line scikit-learn printed with ``verbose=1``."""
    return tuple((int(it), float(value)) for it, value in _PERPLEXITY_LINE.findall(verbose_output))


def fit_lda_meanfield(
    counts: sp.csr_matrix | np.ndarray,
    n_topics: int,
    learning_method: str,
    seed: int,
    max_iter: int = 10,
    doc_topic_prior: float | None = None,
    topic_word_prior: float | None = None,
    batch_size: int = 128,
    learning_decay: float = 0.7,
    learning_offset: float = 10.0,
    total_samples: float = 1e6,
    evaluate_every: int = -1,
    perp_tol: float = 0.1,
    mean_change_tol: float = 1e-3,
    max_doc_update_iter: int = 100,
    compute_perplexity: bool = True,
    eval_docs: int = 0,
    stop_on_rule: bool = False,
    budget: FitBudget | None = None,
) -> LdaMeanFieldFit:
    """Fit scikit-learn's mean-field LDA on ``counts`` (D x V); ``random_state=seed``.

    ``doc_topic_prior`` / ``topic_word_prior`` ``None`` -> scikit-learn's ``1 / n_topics``.
    ``eval_docs > 0`` with the online method and ``evaluate_every > 0``: the pass-by-pass path
    (module docstring), perplexity checked on that many training documents; ``stop_on_rule``
    (that path only) stops where the convergence rule holds with ``budget``'s window and
    tolerance (``None``: :class:`FitBudget`'s defaults).
    """
    from sklearn.decomposition import LatentDirichletAllocation
    from threadpoolctl import threadpool_limits

    if learning_method not in LEARNING_METHODS:
        raise ConfigError(
            f"learning_method: {learning_method!r} is not allowed; allowed values: {list(LEARNING_METHODS)}"
        )
    if n_topics < 1 or max_iter < 1:
        raise ConfigError(f"fit_lda_meanfield: n_topics={n_topics} and max_iter={max_iter} must be >= 1")
    x = sp.csr_matrix(counts, dtype=np.float64)
    if x.nnz and x.data.min() < 0:
        raise DataError("fit_lda_meanfield: counts must be non-negative")
    alpha = 1.0 / n_topics if doc_topic_prior is None else float(doc_topic_prior)
    eta = 1.0 / n_topics if topic_word_prior is None else float(topic_word_prior)
    if stop_on_rule and not (learning_method == "online" and evaluate_every > 0 and eval_docs > 0):
        raise ConfigError(
            "fit_lda_meanfield: stop_on_rule needs the online method, evaluate_every > 0 and eval_docs > 0"
        )
    if learning_method == "online" and evaluate_every > 0 and eval_docs > 0:
        return _fit_online_by_pass(
            x,
            n_topics,
            seed,
            max_iter,
            alpha,
            eta,
            batch_size,
            learning_decay,
            learning_offset,
            evaluate_every,
            mean_change_tol,
            max_doc_update_iter,
            compute_perplexity,
            eval_docs,
            stop_on_rule,
            budget or FitBudget(),
        )
    model = LatentDirichletAllocation(
        n_components=n_topics,
        doc_topic_prior=alpha,
        topic_word_prior=eta,
        learning_method=learning_method,
        learning_decay=learning_decay,
        learning_offset=learning_offset,
        max_iter=max_iter,
        batch_size=batch_size,
        evaluate_every=evaluate_every,
        total_samples=total_samples,
        perp_tol=perp_tol,
        mean_change_tol=mean_change_tol,
        max_doc_update_iter=max_doc_update_iter,
        n_jobs=1,
        random_state=int(seed),
        verbose=1 if evaluate_every > 0 else 0,
    )
    printed = io.StringIO()
    with threadpool_limits(limits=1):
        t0 = time.perf_counter()
        with contextlib.redirect_stdout(printed):
            model.fit(x)
        seconds = time.perf_counter() - t0
        doc_topic = model.transform(x)
        perplexity = float(model.perplexity(x)) if compute_perplexity else math.nan
    trace = parse_perplexity_trace(printed.getvalue())
    if evaluate_every > 0 and int(model.n_iter_) >= evaluate_every and not trace:
        raise DataError(
            "fit_lda_meanfield: scikit-learn printed no perplexity line although evaluate_every > 0 "
            "(its verbose format changed?): the convergence of this fit cannot be judged"
        )
    return _fit_record(
        model,
        doc_topic,
        learning_method=learning_method,
        n_iter=int(model.n_iter_),
        perplexity=perplexity,
        train_seconds=seconds,
        seed=int(seed),
        doc_topic_prior=alpha,
        topic_word_prior=eta,
        max_iter=int(max_iter),
        stopped_by_criterion=int(model.n_iter_) < int(max_iter),
        perplexity_trace=trace,
    )


def _fit_record(model: Any, doc_topic: np.ndarray, **fields: Any) -> LdaMeanFieldFit:
    """The fit's record from a trained scikit-learn model: the topic-word matrix (normalised and
    as lambda), float64 document proportions and the batch-iteration count, plus ``fields``."""
    lam = np.asarray(model.components_, dtype=np.float64)
    return LdaMeanFieldFit(
        topic_word=lam / lam.sum(axis=1, keepdims=True),
        topic_word_lambda=lam,
        doc_topic=np.asarray(doc_topic, dtype=np.float64),
        n_batch_iter=int(model.n_batch_iter_),
        **fields,
    )


def perplexity_records(trace: Sequence[tuple[int, float]]) -> list[EpochRecord]:
    """A perplexity trace as the project's training curve, for
    :func:`noisyor_bench.inference.convergence.assess`: ``epoch`` = passes, ``train_nelbo`` = log
    perplexity (scikit-learn's bound per token, a NELBO per word; NaN for a non-positive
    perplexity, left out by the rule), no validation value, no time."""
    return [
        EpochRecord(epoch=int(p), train_nelbo=math.log(v) if v > 0 else math.nan, val_nelbo=None, seconds=0.0)
        for p, v in trace
    ]


def _rule_holds(trace: Sequence[tuple[int, float]], budget: FitBudget) -> bool:
    """The convergence rule on the log-perplexity curve so far, with ``budget``'s window and tolerance."""
    values = [r.train_nelbo for r in perplexity_records(trace)]
    return plateau_reached(values, budget.convergence_window, budget.convergence_rel_tol)


def eval_subset(n_docs: int, eval_docs: int) -> np.ndarray:
    """The sorted row indices of the perplexity checks: ``eval_docs`` of ``n_docs`` training
    documents drawn without replacement with :data:`EVAL_SUBSET_SEED` (all if fewer)."""
    if eval_docs >= n_docs:
        return np.arange(n_docs)
    return np.sort(np.random.default_rng(EVAL_SUBSET_SEED).choice(n_docs, size=eval_docs, replace=False))


def _fit_online_by_pass(
    x: sp.csr_matrix,
    n_topics: int,
    seed: int,
    max_iter: int,
    alpha: float,
    eta: float,
    batch_size: int,
    learning_decay: float,
    learning_offset: float,
    evaluate_every: int,
    mean_change_tol: float,
    max_doc_update_iter: int,
    compute_perplexity: bool,
    eval_docs: int,
    stop_on_rule: bool,
    budget: FitBudget,
) -> LdaMeanFieldFit:
    """Online LDA one ``partial_fit`` per pass, perplexity on a fixed subset (module docstring)."""
    from sklearn.decomposition import LatentDirichletAllocation
    from threadpoolctl import threadpool_limits

    n_docs = x.shape[0]
    subset = x[eval_subset(n_docs, eval_docs)]
    model = LatentDirichletAllocation(
        n_components=n_topics,
        doc_topic_prior=alpha,
        topic_word_prior=eta,
        learning_method="online",
        learning_decay=learning_decay,
        learning_offset=learning_offset,
        batch_size=batch_size,
        total_samples=n_docs,  # fit's online passes use total_samples = n (module docstring)
        mean_change_tol=mean_change_tol,
        max_doc_update_iter=max_doc_update_iter,
        n_jobs=1,
        random_state=int(seed),
    )
    trace: list[tuple[int, float]] = []
    seconds, passes, stop_reason = 0.0, 0, "max_epochs"
    with threadpool_limits(limits=1):
        while passes < max_iter:
            t0 = time.perf_counter()
            model.partial_fit(x)
            seconds += time.perf_counter() - t0
            passes += 1
            if passes % evaluate_every:
                continue
            trace.append((passes, float(model.perplexity(subset, sub_sampling=True))))
            if stop_on_rule and passes < max_iter and _rule_holds(trace, budget):
                stop_reason = "plateau"
                break
        doc_topic = model.transform(x)
        perplexity = float(model.perplexity(x)) if compute_perplexity else math.nan
    return _fit_record(
        model,
        doc_topic,
        learning_method="online",
        n_iter=passes,
        perplexity=perplexity,
        train_seconds=seconds,
        seed=int(seed),
        doc_topic_prior=alpha,
        topic_word_prior=eta,
        max_iter=int(max_iter),
        stopped_by_criterion=False,
        perplexity_trace=tuple(trace),
        eval_docs=int(subset.shape[0]),
        stop_reason=stop_reason,
    )
