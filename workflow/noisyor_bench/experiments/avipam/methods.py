"""One adapter per aviPAM method: (training counts, settings, seed) -> :class:`TopicFit`.

The inference lives below (``inference/topics``: tomotopy collapsed Gibbs LDA and 4-PAM,
scikit-learn mean-field LDA, the aviPAM trainer); the adapters only map a grid cell's settings to
those calls and measure the training wall time the same way for every method
(``time.perf_counter`` around the fit call alone: no data loading, no evaluation).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp

from noisyor_bench.infra.errors import ConfigError


@dataclass
class TopicFit:
    """What a run keeps of a fit: topic-word matrices per component and the training record."""

    topics: dict[str, np.ndarray]  # component -> (K, V) rows sum to 1 ("sub"; MoLDA: "molda-10", ...)
    train_seconds: float
    curve: list[dict[str, float]] = field(default_factory=list)  # one row per evaluation
    convergence: dict[str, Any] | None = None  # inference.convergence.Convergence.as_dict()
    extra_metrics: dict[str, Any] = field(default_factory=dict)
    arrays: dict[str, np.ndarray] = field(default_factory=dict)  # saved in topics.npz (e.g. kl_per_dim)


Adapter = Callable[[sp.csr_matrix, Mapping[str, Any], int], TopicFit]


def _timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    start = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - start


def _convergence_dict(conv: Any) -> dict[str, Any] | None:
    if conv is None:
        return None
    return conv.as_dict() if hasattr(conv, "as_dict") else dict(conv)


def fit_lda_gibbs_cell(counts: sp.csr_matrix, settings: Mapping[str, Any], seed: int) -> TopicFit:
    """tomotopy collapsed Gibbs LDA (the paper: Mallet), K = the sub-topic count."""
    from noisyor_bench.inference.topics import gibbs

    g = settings["gibbs"]
    k = int(settings["sizes"]["sub"])
    fit, seconds = _timed(
        lambda: gibbs.fit_lda_gibbs(
            counts,
            n_topics=k,
            alpha=float(g.get("lda_alpha", 50.0 / k)),
            eta=float(g.get("eta", 0.01)),
            iterations=int(g["iterations"]),
            seed=seed,
        )
    )
    curve = [{"iteration": int(g["iterations"]), "log_likelihood_per_word": fit.log_likelihood_per_word}]
    return TopicFit(topics={"sub": fit.topic_word}, train_seconds=seconds, curve=curve)


ADAPTERS: dict[str, Adapter] = {"lda-gibbs": fit_lda_gibbs_cell}


def fit(method: str, counts: sp.csr_matrix, settings: Mapping[str, Any], seed: int) -> TopicFit:
    try:
        adapter = ADAPTERS[method]
    except KeyError:
        raise ConfigError(
            f"avipam: no fit adapter for method {method!r}; known: {sorted(ADAPTERS)}"
        ) from None
    return adapter(counts, settings, seed)
