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


# aviPAM structures of the table methods: (kind of models.topics.pam.make_structure, sizes)
AVIPAM_STRUCTURES: dict[str, Callable[[Mapping[str, Any]], tuple[str, list[int]]]] = {
    "avipam-pam4": lambda z: ("pam4", [int(z["super"]), int(z["sub"])]),
    "avipam-pam5": lambda z: ("pam5", [int(z["superduper"]), int(z["super"]), int(z["sub"])]),
    "avipam-ctm": lambda z: ("ctm", [int(z["sub"])]),
    "avipam-molda": lambda z: ("molda", [int(k) for k in z["molda"]]),
    "avipam-lda": lambda z: ("lda", [int(z["sub"])]),
}


def avipam_config(settings: Mapping[str, Any]) -> Any:
    """The trainer's config: the grid's ``avi`` section, the corpus's overrides, and (collapse
    study) the run's normalisation variant, topic batch-norm and learning rate."""
    from noisyor_bench.inference.topics.avipam import config_from_mapping

    values = {**dict(settings.get("avi") or {}), **dict(settings.get("corpus") or {})}
    if "variant" in settings:
        values.update(output_norm=settings["variant"], topic_bn=bool(settings.get("topic_bn", True)))
        values["lr"] = float(settings["lr"])
    return config_from_mapping(values, where="grids.*.avipam.avi")


def fit_avipam_cell(counts: sp.csr_matrix, settings: Mapping[str, Any], seed: int) -> TopicFit:
    """aviPAM (models.topics.pam structure + inference.topics.avipam trainer).

    No validation split: the corpora have only train and test, and the test documents are the
    internal NPMI reference, so the trainer monitors the training NELBO (early stopping and the
    convergence rule on it)."""
    import dataclasses

    from noisyor_bench.inference.topics import avipam
    from noisyor_bench.models.topics.pam import make_structure

    method = str(settings["method"])
    kind, sizes = AVIPAM_STRUCTURES[method](settings["sizes"])
    structure = make_structure(kind, sizes)
    config = avipam_config(settings)
    result, seconds = _timed(lambda: avipam.fit_avipam(counts, None, structure, config, seed=seed))
    if kind == "molda":
        topics = {f"molda-{k}": m for k, m in zip(sizes, result.component_topic_words(), strict=True)}
    else:
        topics = {"sub": result.topic_word()}
    curve = [
        {"epoch": r.epoch, "train_nelbo": r.train_nelbo, "seconds": r.seconds, **r.extra}
        for r in result.history
    ]
    extra: dict[str, Any] = {"structure": structure.describe(), "avi_config": dataclasses.asdict(config)}
    arrays: dict[str, np.ndarray] = {}
    if method == "avipam-lda":  # the collapse study: KL per latent dimension on the training documents
        x = avipam.as_count_tensor(counts, avipam.DTYPES[config.dtype], "cpu")
        kl = avipam.kl_per_dimension(result.net, x, seed=seed)[-1]
        threshold = float(settings.get("collapse_threshold") or avipam.COLLAPSE_THRESHOLD)
        arrays["kl_per_dim"] = kl
        extra.update(
            kl_total=float(kl.sum()),
            n_collapsed=avipam.collapsed_dimensions(kl, threshold),
            collapse_threshold=threshold,
            latent_dims=int(kl.size),
            final_train_nelbo=float(result.history[-1].train_nelbo) if result.history else None,
        )
    return TopicFit(
        topics=topics,
        train_seconds=seconds,
        curve=curve,
        convergence=_convergence_dict(result.convergence),
        extra_metrics=extra,
        arrays=arrays,
    )


ADAPTERS: dict[str, Adapter] = {
    "lda-gibbs": fit_lda_gibbs_cell,
    **{name: fit_avipam_cell for name in AVIPAM_STRUCTURES},
}


def fit(method: str, counts: sp.csr_matrix, settings: Mapping[str, Any], seed: int) -> TopicFit:
    try:
        adapter = ADAPTERS[method]
    except KeyError:
        raise ConfigError(
            f"avipam: no fit adapter for method {method!r}; known: {sorted(ADAPTERS)}"
        ) from None
    return adapter(counts, settings, seed)
