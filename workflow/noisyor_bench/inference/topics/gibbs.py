"""Collapsed Gibbs sampling for LDA through tomotopy, on a document-term count matrix.

APE draws its test topic matrices from several independently seeded collapsed-Gibbs LDA runs (the
paper used Mallet); aviPAM compares against collapsed Gibbs LDA.  Both call :func:`fit_lda_gibbs`
so that the library's conventions are mapped once:

* tomotopy takes documents as word strings; word ``v`` of the matrix is the string ``str(v)``, and
  the topic-word matrix is returned over the *whole* vocabulary (a word absent from the corpus
  gets the smoothed probability ``eta / (n_k + V eta)``, as the collapsed posterior mean would).
* tomotopy re-estimates alpha every ``optim_interval`` iterations by default; Mallet's command
  line does not unless asked (``--optimize-interval 0``), so the default here is fixed
  hyperparameters (``optimize_interval=0``).
* one worker and ``ParallelScheme.NONE``: with a fixed seed the chain is reproducible.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from noisyor_bench.infra.errors import ConfigError, DataError


@dataclass(frozen=True)
class LdaGibbsFit:
    """The state of a collapsed Gibbs chain after its last iteration (posterior means)."""

    topic_word: np.ndarray  # (K, V) rows sum to 1: (n_kw + eta) / (n_k + V eta)
    doc_topic: np.ndarray  # (D, K) rows sum to 1: (n_dk + alpha) / (n_d + K alpha)
    log_likelihood_per_word: float  # tomotopy's ll_per_word (joint log-likelihood per token)
    iterations: int
    seed: int


def _documents(counts: sp.csr_matrix | np.ndarray) -> list[list[str]]:
    matrix = sp.csr_matrix(counts)
    if matrix.nnz and (matrix.data.min() < 0 or not np.all(np.equal(np.mod(matrix.data, 1), 0))):
        raise DataError("fit_lda_gibbs: counts must be non-negative integers")
    docs = []
    for row in range(matrix.shape[0]):
        start, end = matrix.indptr[row], matrix.indptr[row + 1]
        words = np.repeat(matrix.indices[start:end], matrix.data[start:end].astype(np.int64))
        docs.append([str(int(w)) for w in words])
    return docs


def fit_lda_gibbs(
    counts: sp.csr_matrix | np.ndarray,
    n_topics: int,
    alpha: float,
    eta: float,
    iterations: int,
    seed: int,
    optimize_interval: int = 0,
    workers: int = 1,
) -> LdaGibbsFit:
    """Run ``iterations`` sweeps of tomotopy's collapsed Gibbs LDA on ``counts`` (D x V)."""
    import tomotopy as tp  # imported here: a compiled library only the topic-model papers need

    if n_topics < 1 or iterations < 1:
        raise ConfigError(f"fit_lda_gibbs: n_topics={n_topics} and iterations={iterations} must be >= 1")
    if alpha <= 0 or eta <= 0:
        raise ConfigError(f"fit_lda_gibbs: alpha={alpha} and eta={eta} must be positive")
    docs = _documents(counts)
    vocab_size = int(np.shape(counts)[1])
    model = tp.LDAModel(k=n_topics, alpha=alpha, eta=eta, seed=int(seed))
    model.optim_interval = int(optimize_interval)
    kept = []
    for index, words in enumerate(docs):
        if words:  # tomotopy rejects empty documents; they get the prior's mean below
            model.add_doc(words)
            kept.append(index)
    if not kept:
        raise DataError("fit_lda_gibbs: every document is empty")
    parallel = tp.ParallelScheme.NONE if workers == 1 else tp.ParallelScheme.DEFAULT
    model.train(iterations, workers=workers, parallel=parallel)

    columns = np.array([int(w) for w in model.used_vocabs])
    topic_word = np.full((n_topics, vocab_size), eta, dtype=np.float64)
    for k in range(n_topics):
        topic_word[k, columns] = np.asarray(model.get_topic_word_dist(k, normalize=False), dtype=np.float64)
    topic_word /= topic_word.sum(axis=1, keepdims=True)

    doc_topic = np.full((len(docs), n_topics), 1.0 / n_topics)
    for row, doc in zip(kept, model.docs, strict=True):
        doc_topic[row] = np.asarray(doc.get_topic_dist(), dtype=np.float64)
    return LdaGibbsFit(
        topic_word=topic_word,
        doc_topic=doc_topic,
        log_likelihood_per_word=float(model.ll_per_word),
        iterations=iterations,
        seed=int(seed),
    )
