"""Pattern recovery score for learned noisy-OR weights (paper Section 4.3, Fig. 4; supplement Figs. 1-2).

The paper judges recovery by eye ("two patterns out of the eight are not recovered", "some
patterns are merged").  We make that a number:

1. Each weight column is turned into activation probabilities ``p_ik = 1 - exp(-theta_ik)``
   (= ``p(x_i = 1 | z_k = 1, no other cause, no leak)``, eq. 1), which is what the paper's
   pattern images show; it is bounded in [0, 1], so a few very large learned weights cannot
   dominate the comparison the way raw ``theta`` would.
2. Similarity between a true and a learned column is the cosine similarity of those vectors:
   invariant to an overall scale (a pattern learned with ``p = 0.6`` instead of 0.8 on its
   pixels is still the same pattern) and 0 for disjoint supports.  An all-zero column has
   similarity 0 with everything.
3. Learned columns are matched one-to-one to the true patterns by the Hungarian algorithm
   (``scipy.optimize.linear_sum_assignment``, maximising total similarity), because the
   latent dimensions of a learned model are an arbitrary permutation of the true ones.
4. A true pattern is *recovered* when its matched similarity is ``>= threshold``.

Threshold (default 0.8, a parameter): a learned column that merges two equally large disjoint
true patterns has cosine ``1/sqrt(2) ~= 0.707`` with each of them, so any threshold must exceed
0.707 for such a merge not to count as a recovery.  0.8 tolerates a learned column that misses
up to 36% of a binary pattern's pixels (``sqrt(1 - m) >= 0.8``) or carries extra mass of up to
56% of the pattern's squared norm elsewhere (``1/sqrt(1 + f) >= 0.8``); beyond that we would not
call it "the same pattern" when looking at the image either.  For the SYN-PATTERN shapes
(datasets/patterns.py: 8-9 pixels, some shared) the largest similarity of a true pattern with
the union of itself and any other one is 0.756, so no pairwise merge counts at 0.8.  The one-to-one matching alone
guarantees that two true patterns merged into one learned column never *both* count.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

DEFAULT_THRESHOLD = 0.8


def activation_probabilities(theta: np.ndarray) -> np.ndarray:
    """``p = 1 - exp(-theta)`` elementwise, float64 (computed as ``-expm1(-theta)`` for small theta)."""
    return -np.expm1(-np.asarray(theta, dtype=np.float64))


def cosine_similarity_matrix(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Cosine similarity of every column of ``a`` (D, Ka) with every column of ``b`` (D, Kb): (Ka, Kb).

    A zero column has similarity 0 with everything (instead of 0/0).
    """
    na = np.linalg.norm(a, axis=0)
    nb = np.linalg.norm(b, axis=0)
    dots = a.T @ b
    denom = np.outer(na, nb)
    with np.errstate(invalid="ignore", divide="ignore"):
        sim = np.where(denom > 0, dots / np.where(denom > 0, denom, 1.0), 0.0)
    return np.clip(sim, -1.0, 1.0)


@dataclass(frozen=True)
class Recovery:
    """Result of matching learned to true patterns.

    ``assignment[j]`` is the learned column matched to true pattern ``j`` (-1 if there are
    fewer learned columns than true patterns and ``j`` got none); ``matched[j]`` its similarity
    (0 when unmatched).
    """

    similarity: np.ndarray  # (K_true, K_learned)
    assignment: np.ndarray  # (K_true,) int
    matched: np.ndarray  # (K_true,) float
    recovered: np.ndarray  # (K_true,) bool
    threshold: float

    @property
    def n_true(self) -> int:
        return int(self.similarity.shape[0])

    @property
    def n_recovered(self) -> int:
        return int(self.recovered.sum())

    @property
    def mean_similarity(self) -> float:
        """Mean matched similarity over the true patterns (unmatched count as 0)."""
        return float(self.matched.mean())

    def order(self) -> np.ndarray:
        """Learned column indices for drawing: matched ones in the true patterns' order, then the rest."""
        matched = [int(c) for c in self.assignment if c >= 0]
        rest = [c for c in range(self.similarity.shape[1]) if c not in set(matched)]
        return np.asarray(matched + rest, dtype=int)


def match_patterns(
    theta_true: np.ndarray, theta_learned: np.ndarray, threshold: float = DEFAULT_THRESHOLD
) -> Recovery:
    """Hungarian matching of learned to true weight columns on cosine similarity of ``1 - exp(-theta)``."""
    t = np.asarray(theta_true, dtype=np.float64)
    lrn = np.asarray(theta_learned, dtype=np.float64)
    if t.ndim != 2 or lrn.ndim != 2 or t.shape[0] != lrn.shape[0]:
        raise ValueError(
            f"theta_true {t.shape} and theta_learned {lrn.shape} must be (D, K) arrays with equal D"
        )
    if not (np.isfinite(t).all() and np.isfinite(lrn).all()):
        raise ValueError("theta_true and theta_learned must be finite")
    if not 0.0 < threshold <= 1.0:
        raise ValueError(f"threshold must be in (0, 1], got {threshold}")
    # imported here: scipy.optimize costs ~0.4 s of start-up to the figure steps that import this
    # module for activation_probabilities only
    from scipy.optimize import linear_sum_assignment

    sim = cosine_similarity_matrix(activation_probabilities(t), activation_probabilities(lrn))
    rows, cols = linear_sum_assignment(sim, maximize=True)
    assignment = np.full(t.shape[1], -1, dtype=int)
    assignment[rows] = cols
    matched = np.zeros(t.shape[1], dtype=np.float64)
    matched[rows] = sim[rows, cols]
    return Recovery(
        similarity=sim,
        assignment=assignment,
        matched=matched,
        recovered=matched >= threshold,
        threshold=float(threshold),
    )
