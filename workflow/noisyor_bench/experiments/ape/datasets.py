"""``results/data/ape-<name>.npz``: the documents, test models and training-model pool of APE.

Arrays of both files (results/README.md, section APE):

* ``documents`` (D, V) int64 word counts;
* ``test_thetas`` (10, K, V) the held-out models (toy bars: bar-biased prior draws; reviews:
  collapsed-Gibbs LDA topic-word matrices, one per independently seeded run);
* ``eval_documents`` (n_eval,) int64: the documents of the test combinations (the first
  ``n_eval``, as the authors' ``itertools.product(documents, topics)[:300]``);
* ``theta_pool_seed``, ``theta_pool_size``, ``theta_pool_alpha`` (0-d): the training models
  (:class:`noisyor_bench.data.synthetic.theta_pool.ThetaPool`), ``train_theta_example`` (K, V)
  its model 0 (the Standard encoder's model, Figure 2b);
* toy bars also ``true_topics`` (K, V), ``bars`` (K, V) exact bars, ``doc_topic`` (D, K);
* reviews also ``vocab`` (V,) words, ``split`` (D,) the authors' split of each document,
  ``lda_seeds`` (10,), ``lda_log_likelihood_per_word`` (10,) of the Gibbs runs.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from noisyor_bench.data.synthetic.theta_pool import ThetaPool
from noisyor_bench.data.synthetic.toybars import ToyBarsSpec, build_toybars
from noisyor_bench.infra.errors import ConfigError

log = logging.getLogger(__name__)

DATASETS = ("toybars", "mdreviews")
TOYBARS_TOPICS = 20


def _pool(pool: Mapping[str, Any], n_topics: int, vocab_size: int) -> ThetaPool:
    return ThetaPool(
        seed=int(pool["seed"]),
        size=int(pool["size"]),
        n_topics=n_topics,
        vocab_size=vocab_size,
        alpha=float(pool.get("alpha", 0.1)),
    )


def _eval_documents(n_documents: int, n_eval: int) -> np.ndarray:
    if not 1 <= n_eval <= n_documents:
        raise ConfigError(f"evaluation documents {n_eval} not in [1, {n_documents}]")
    return np.arange(n_eval, dtype=np.int64)


def toybars_arrays(section: Mapping[str, Any]) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """Arrays and sidecar facts of ape-toybars from the dataset's config section."""
    data = dict(section["data"])
    spec = ToyBarsSpec(**data)
    arrays = build_toybars(spec)
    n_topics, vocab = arrays["true_topics"].shape
    arrays.update(_pool(section["theta_pool"], n_topics, vocab).arrays())
    arrays["eval_documents"] = _eval_documents(spec.documents, int(section["evaluation"]["documents"]))
    facts = {
        "documents": spec.documents,
        "vocabulary": vocab,
        "topics": n_topics,
        "tokens": int(arrays["documents"].sum()),
        "mean_length": float(arrays["documents"].sum(1).mean()),
        "test_models": spec.test_models,
        "true_topics": spec.true_topics,
    }
    return arrays, facts


def mdreviews_arrays(
    section: Mapping[str, Any], raw_paths: Mapping[str, Path]
) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """Arrays and sidecar facts of ape-mdreviews: the corpus subset and its Gibbs test models."""
    from noisyor_bench.data.corpora import mdreviews
    from noisyor_bench.inference.topics.gibbs import fit_lda_gibbs

    data = dict(section["data"])
    splits = {s: mdreviews.read_csr(raw_paths[s]) for s in mdreviews.SPLITS}
    vocabulary = mdreviews.read_vocabulary(raw_paths["vocab"])
    counts, words, split, stats = mdreviews.build_reviews(splits, vocabulary, int(data["vocabulary"]))
    n_topics = int(data["topics"])
    alpha = float(data["gibbs_alpha_sum"]) / n_topics  # Mallet's --alpha is the sum over topics
    seeds = [int(data["seed"]) + i for i in range(int(data["test_models"]))]
    thetas, lls = [], []
    for i, seed in enumerate(seeds):
        start = time.perf_counter()
        fit = fit_lda_gibbs(
            counts, n_topics, alpha, float(data["gibbs_eta"]), int(data["gibbs_iterations"]), seed
        )
        thetas.append(fit.topic_word)
        lls.append(fit.log_likelihood_per_word)
        log.info(
            "Gibbs LDA run %d/%d (seed %d, %d iterations): ll/word %.4f, %.1f s",
            i + 1,
            len(seeds),
            seed,
            fit.iterations,
            fit.log_likelihood_per_word,
            time.perf_counter() - start,
        )
    arrays: dict[str, np.ndarray] = {
        "documents": counts,
        "test_thetas": np.stack(thetas),
        "vocab": np.asarray(words, dtype=str),
        "split": np.asarray(split, dtype=str),
        "lda_seeds": np.asarray(seeds, dtype=np.int64),
        "lda_log_likelihood_per_word": np.asarray(lls),
    }
    arrays.update(_pool(section["theta_pool"], n_topics, len(words)).arrays())
    arrays["eval_documents"] = _eval_documents(counts.shape[0], int(section["evaluation"]["documents"]))
    facts = {
        **stats,
        "topics": n_topics,
        "test_models": len(seeds),
        "gibbs": {
            "alpha_per_topic": alpha,
            "alpha_sum": float(data["gibbs_alpha_sum"]),
            "eta": float(data["gibbs_eta"]),
            "iterations": int(data["gibbs_iterations"]),
            "library": "tomotopy (collapsed Gibbs; the paper used Mallet)",
        },
        "paper": mdreviews.PAPER,
        "subset_note": mdreviews.SUBSET_NOTE,
    }
    return arrays, facts
