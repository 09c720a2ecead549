"""APE's "toy bars" (Zhang & Hughes, Appendix B.1): a 10 x 10 vocabulary, 20 bar topics.

What is drawn, settled from the authors' code (tufts-ml/any_parameter_encoder, branch
``workshop``, ``run.py`` and ``data/``; branch ``ape``, ``dataset.py``; docs/ape.md has the details):

* **Bars.** Word ``v`` is pixel ``(v // 10, v % 10)`` of a 10 x 10 image.  Topic ``k < 10`` is
  column ``k`` (the words with ``v % 10 == k``, a vertical bar), topic ``k >= 10`` is row
  ``k - 10`` (a horizontal bar): 20 bars, the order of the authors' bar-biased prior.
* **Bar-biased prior** of a topic matrix: topic ``k`` ~ Dirichlet(beta_k) with beta_k = 1 on
  every word, 1000 on the bar's words, normalised to sum to 1, then the bar entries multiplied by
  5 (so ~0.50 on each of the 10 bar words and ~1e-4 elsewhere): a draw is a noisy, uneven bar.
  The 20 topics of a draw are put in a random order (the code shuffles each topic set).  The
  test models (the held-out thetas) are 10 such draws.
* **True topics** that generate the documents: one draw of the same bar-biased prior (the
  authors' code generates the documents from such a draw: ``test_topics[0]`` on ``workshop``,
  a seed-0 draw on ``ape``); ``true_topics: bars`` uses the exact uniform bars instead.
* **Documents**: proportions pi_d ~ Dir(doc_alpha = 0.01), length T_d ~ Poisson(50), words
  x_d ~ Multinomial(T_d, pi_d^T topics) (the code draws word by word: the same distribution).
* **Training thetas** (the APE's training models): K = 20 topics, each ~ symmetric Dir(0.1)
  over the 100 words (:mod:`noisyor_bench.data.synthetic.theta_pool`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from noisyor_bench.infra.errors import ConfigError

SIDE = 10  # the image is SIDE x SIDE pixels = words
BAR_WEIGHT = 1000.0  # the authors' unnormalised concentration on a bar's words
BAR_BOOST = 5.0  # ... multiplied after normalising


def bar_words(topic: int, side: int = SIDE) -> np.ndarray:
    """Word indices of bar ``topic``: column ``topic`` if ``topic < side``, else row ``topic - side``."""
    if not 0 <= topic < 2 * side:
        raise ConfigError(f"bar topic {topic} out of range [0, {2 * side})")
    words = np.arange(side * side)
    return words[words % side == topic] if topic < side else words[words // side == topic - side]


def bar_topics(side: int = SIDE) -> np.ndarray:
    """The exact bars: (2 side, side^2), each row uniform over its bar's ``side`` words."""
    topics = np.zeros((2 * side, side * side))
    for k in range(2 * side):
        topics[k, bar_words(k, side)] = 1.0 / side
    return topics


def bar_biased_concentration(side: int = SIDE) -> np.ndarray:
    """(2 side, side^2) Dirichlet concentrations of the authors' bar-biased prior (module docstring)."""
    beta = np.ones((2 * side, side * side))
    for k in range(2 * side):
        words = bar_words(k, side)
        beta[k, words] = BAR_WEIGHT
        beta[k] /= beta[k].sum()
        beta[k, words] *= BAR_BOOST
    return beta


def draw_bar_biased_thetas(n_models: int, rng: np.random.Generator, side: int = SIDE) -> np.ndarray:
    """``n_models`` topic matrices (n, 2 side, side^2) from the bar-biased prior, topic order shuffled."""
    if n_models < 1:
        raise ConfigError(f"n_models must be >= 1, got {n_models}")
    beta = bar_biased_concentration(side)
    thetas = np.empty((n_models, *beta.shape))
    for m in range(n_models):
        order = rng.permutation(beta.shape[0])
        thetas[m] = np.stack([rng.dirichlet(beta[k]) for k in order])
    return thetas


def draw_documents(
    topics: np.ndarray, n_documents: int, doc_alpha: float, mean_words: float, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """LDA documents from ``topics`` (K, V): counts (n, V) int64 and proportions (n, K)."""
    if n_documents < 1 or doc_alpha <= 0 or mean_words <= 0:
        raise ConfigError(
            f"documents: need n_documents >= 1, doc_alpha > 0, mean_words > 0 "
            f"(got {n_documents}, {doc_alpha}, {mean_words})"
        )
    n_topics, vocab = topics.shape
    proportions = rng.dirichlet(np.full(n_topics, float(doc_alpha)), size=n_documents)
    lengths = rng.poisson(mean_words, size=n_documents)
    counts = np.zeros((n_documents, vocab), dtype=np.int64)
    for d in range(n_documents):
        word_probs = proportions[d] @ topics
        counts[d] = rng.multinomial(int(lengths[d]), word_probs / word_probs.sum())
    return counts, proportions


@dataclass(frozen=True)
class ToyBarsSpec:
    """The config of the toy-bars data (``grids.<grid>.ape.datasets.toybars.data``)."""

    documents: int = 500
    doc_alpha: float = 0.01
    mean_words: float = 50.0
    test_models: int = 10
    true_topics: str = "prior-draw"  # or "bars"
    seed: int = 0


def build_toybars(spec: ToyBarsSpec) -> dict[str, np.ndarray]:
    """The arrays of ``results/data/ape-toybars.npz`` (except the training pool's, see the command).

    Independent random streams (SeedSequence children of ``spec.seed``) for the true topics,
    the documents and the test models, so changing one count never changes the others.
    """
    if spec.true_topics not in ("prior-draw", "bars"):
        raise ConfigError(f"toybars true_topics must be 'prior-draw' or 'bars', got {spec.true_topics!r}")
    truth_ss, docs_ss, test_ss = np.random.SeedSequence(spec.seed).spawn(3)
    bars = bar_topics()
    if spec.true_topics == "bars":
        true_topics = bars
    else:
        true_topics = draw_bar_biased_thetas(1, np.random.default_rng(truth_ss))[0]
    counts, proportions = draw_documents(
        true_topics, spec.documents, spec.doc_alpha, spec.mean_words, np.random.default_rng(docs_ss)
    )
    test_thetas = draw_bar_biased_thetas(spec.test_models, np.random.default_rng(test_ss))
    return {
        "documents": counts,
        "doc_topic": proportions,
        "true_topics": true_topics,
        "bars": bars,
        "test_thetas": test_thetas,
    }
