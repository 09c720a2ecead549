"""Collapsed Gibbs sampling for the four-level PAM (root -> S super-topics -> K sub-topics ->
words) through tomotopy's ``PAModel`` -- the aviPAM paper's "4-PAM Gibbs" baseline.

The paper ran Mallet's ``PAM4L``.  tomotopy's PA sampler is the same joint super/sub sampler:
for each token it draws the pair (s, k) with probability proportional to

    (n_ds + alpha_s) * (n_dsk + subalpha_sk) / (n_ds + sum_k subalpha_sk)
                     * (n_kw + eta) / (n_k + V eta)

(Mallet's ``sampleTopicsForOneDoc``; tomotopy's ``PAModel::getZLikelihoods``).  Mallet's
defaults (``PAM4L(superTopics, subTopics)`` and its ``main``) and how they map:

| Mallet PAM4L | value | tomotopy ``PAModel`` |
|---|---|---|
| ``alphaSum`` (root -> super), symmetric ``alpha_s = alphaSum / S`` | 50.0 | ``alpha = 50 / S`` (per super-topic) |
| ``subAlphas`` (super -> sub), initial | 1.0 | ``subalpha = 1.0`` |
| ``beta`` (sub-topic -> word) | 0.001 | ``eta = 0.001`` |
| ``optimizeInterval`` (``main``: ``estimate(..., 50, ...)``): re-estimate the sub-alphas (Minka's fixed point) every 50 sweeps; the root alpha stays fixed | 50 | ``optim_interval = 50``; tomotopy's PA also re-estimates only the sub-alphas (checked: ``alpha`` unchanged after training) |
| optimisation burn-in | none (from sweep 50 on) | ``burn_in`` (default 0; the paper's "burn-in 2000" of Table 2 maps here) |

Differences that remain: Mallet runs 200 fixed-point iterations on count histograms per
re-estimation, tomotopy 5 digamma fixed-point steps (its ``DirichletEstIteration``); random
number generators differ, so chains are not comparable draw by draw.

Outputs are posterior means of the final state, over the *whole* vocabulary (a word absent
from the corpus gets ``eta / (n_k + V eta)``), and ``train_seconds`` is measured as for every
tomotopy baseline (:func:`noisyor_bench.inference.topics.gibbs.train_timed`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from noisyor_bench.inference.fitting import FitBudget
from noisyor_bench.inference.topics.gibbs import (
    Snapshot,
    add_documents,
    snapshot_hook,
    topic_word_matrix,
    train_timed,
)
from noisyor_bench.infra.errors import ConfigError

#: Mallet PAM4L's defaults (alphaSum, beta, initial sub-alpha, optimizeInterval of its main)
MALLET_PAM4L = {"alpha_sum": 50.0, "beta": 0.001, "sub_alpha": 1.0, "optimize_interval": 50}


@dataclass(frozen=True)
class PamGibbsFit:
    """Posterior means after the last sweep of a 4-PAM collapsed Gibbs chain."""

    sub_topic_word: np.ndarray  # (K, V) rows sum to 1: (n_kw + eta) / (n_k + V eta)
    super_sub: np.ndarray  # (S, K) rows sum to 1: (n_sk + subalpha_sk) / (n_s + sum_k subalpha_sk)
    doc_super: np.ndarray  # (D, S) rows sum to 1: (n_ds + alpha_s) / (n_d + sum alpha)
    doc_sub: np.ndarray  # (D, K) rows sum to 1: tomotopy's get_sub_topic_dist
    alpha: np.ndarray  # (S,) root -> super Dirichlet parameters (fixed)
    subalpha: np.ndarray  # (S, K) super -> sub Dirichlet parameters (re-estimated)
    log_likelihood_per_word: float
    iterations: int
    seed: int
    train_seconds: float
    trace: tuple[tuple[int, float, float], ...]  # (iteration, ll_per_word, seconds)
    workers: int
    burn_in: int
    optimize_interval: int
    eta: float
    sweeps: int = 0  # sweeps actually run (< iterations when the rule stopped the chain)
    stop_reason: str = "max_epochs"  # "plateau": stopped by the convergence rule (stop_on_rule)
    snapshot_seconds: float = 0.0  # wall time of the snapshots (not training: gibbs.train_timed)
    cpu_seconds: float | None = None  # process CPU time of training only (ChainRun.cpu_seconds)
    cpu_trace: tuple[float, ...] = ()  # CPU seconds so far at every trace point


def fit_pam_gibbs(
    counts: sp.csr_matrix | np.ndarray,
    n_super: int,
    n_sub: int,
    iterations: int,
    seed: int,
    alpha_sum: float = MALLET_PAM4L["alpha_sum"],
    sub_alpha: float = MALLET_PAM4L["sub_alpha"],
    eta: float = MALLET_PAM4L["beta"],
    optimize_interval: int = int(MALLET_PAM4L["optimize_interval"]),
    burn_in: int = 0,
    workers: int = 1,
    trace_interval: int = 0,
    stop_on_rule: bool = False,
    budget: FitBudget | None = None,
    max_seconds: float | None = None,
    snapshot: Snapshot | None = None,
) -> PamGibbsFit:
    """Run ``iterations`` sweeps of tomotopy's 4-PAM sampler on ``counts`` (D x V integers), or
    fewer with ``stop_on_rule`` (the convergence rule with ``budget``'s window and tolerance)
    or ``max_seconds`` (a training-time limit; :func:`noisyor_bench.inference.topics.gibbs.train_timed`).

    Defaults are Mallet PAM4L's (module docstring).  ``workers=1`` (``ParallelScheme.NONE``)
    makes the chain a function of ``seed``.  ``snapshot``: called at every trace point with the
    sweep and the sub-topic-word matrix there (:data:`~noisyor_bench.inference.topics.gibbs.Snapshot`;
    needs ``trace_interval >= 1``); the chain is the same with or without it.
    """
    import tomotopy as tp  # imported here: a compiled library only the topic-model papers need

    if n_super < 1 or n_sub < 1 or iterations < 1:
        raise ConfigError(
            f"fit_pam_gibbs: n_super={n_super}, n_sub={n_sub} and iterations={iterations} must be >= 1"
        )
    if alpha_sum <= 0 or sub_alpha <= 0 or eta <= 0:
        raise ConfigError(
            f"fit_pam_gibbs: alpha_sum={alpha_sum}, sub_alpha={sub_alpha}, eta={eta} must be positive"
        )
    if optimize_interval < 0 or burn_in < 0 or workers < 1:
        raise ConfigError(
            f"fit_pam_gibbs: optimize_interval={optimize_interval}, burn_in={burn_in} must be >= 0, workers={workers} >= 1"
        )
    vocab_size = int(np.shape(counts)[1])
    model = tp.PAModel(
        k1=n_super, k2=n_sub, alpha=alpha_sum / n_super, subalpha=sub_alpha, eta=eta, seed=int(seed)
    )
    model.optim_interval = int(optimize_interval)
    model.burn_in = int(burn_in)
    n_docs, kept = add_documents(model, counts, "fit_pam_gibbs")  # empty ones: the prior's mean below
    on_trace = snapshot_hook(model, n_sub, vocab_size, eta, snapshot)  # PA: topic k = sub-topic k
    chain = train_timed(
        model, iterations, workers, trace_interval, stop_on_rule, budget, max_seconds, on_trace
    )

    sub_topic_word = topic_word_matrix(model, n_sub, vocab_size, eta)  # PA: topic k = sub-topic k

    super_sub = np.zeros((n_super, n_sub), dtype=np.float64)
    for s in range(n_super):
        for k, p in model.get_sub_topics(s, top_n=n_sub):
            super_sub[s, k] = p
    super_sub /= super_sub.sum(axis=1, keepdims=True)

    alpha = np.asarray(model.alpha, dtype=np.float64).reshape(n_super)
    subalpha = np.asarray(model.subalpha, dtype=np.float64).reshape(n_super, n_sub)
    doc_super = np.tile(alpha / alpha.sum(), (n_docs, 1))
    doc_sub = np.tile(subalpha.sum(axis=0) / subalpha.sum(), (n_docs, 1))
    for row, doc in zip(kept, model.docs, strict=True):
        doc_super[row] = np.asarray(doc.get_topic_dist(), dtype=np.float64)
        doc_sub[row] = np.asarray(doc.get_sub_topic_dist(), dtype=np.float64)
    doc_super /= doc_super.sum(axis=1, keepdims=True)
    doc_sub /= doc_sub.sum(axis=1, keepdims=True)
    ll = float(model.ll_per_word)
    return PamGibbsFit(
        sub_topic_word=sub_topic_word,
        super_sub=super_sub,
        doc_super=doc_super,
        doc_sub=doc_sub,
        alpha=alpha,
        subalpha=subalpha,
        log_likelihood_per_word=ll if math.isfinite(ll) else math.nan,
        iterations=int(iterations),
        seed=int(seed),
        train_seconds=chain.seconds,
        trace=chain.trace,
        workers=int(workers),
        burn_in=int(burn_in),
        optimize_interval=int(optimize_interval),
        eta=float(eta),
        sweeps=chain.sweeps,
        stop_reason=chain.stop_reason,
        snapshot_seconds=chain.snapshot_seconds,
        cpu_seconds=chain.cpu_seconds,
        cpu_trace=chain.cpu_trace,
    )
