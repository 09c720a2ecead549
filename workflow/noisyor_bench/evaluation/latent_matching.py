"""Matching learned latents to true ones by their weights (numpy; scipy's assignment solver).

Apart from :mod:`noisyor_bench.evaluation.heldout` because the tables that match latents (the
ablation) read saved weights only: importing the held-out metrics would cost them torch's start-up.
``scipy.optimize`` is imported by the matching itself, so a run that matches nothing (inference
mode) does not pay for it either.
"""

from __future__ import annotations

import numpy as np


def weight_similarity(theta_a: np.ndarray, theta_b: np.ndarray) -> np.ndarray:
    """Cosine similarity (K_a, K_b) of the columns' activation probabilities ``1 - exp(-theta)``.

    Probabilities rather than rates: they live in [0, 1] like the patterns of Fig. 2, so a
    single huge rate cannot dominate.  An all-zero column has similarity 0 to everything.
    """
    pa = -np.expm1(-np.asarray(theta_a, dtype=np.float64))
    pb = -np.expm1(-np.asarray(theta_b, dtype=np.float64))
    na = np.linalg.norm(pa, axis=0)
    nb = np.linalg.norm(pb, axis=0)
    na = np.where(na > 0, na, 1.0)
    nb = np.where(nb > 0, nb, 1.0)
    return (pa / na).T @ (pb / nb)


def match_latents(theta_learned: np.ndarray, theta_true: np.ndarray) -> np.ndarray:
    """Permutation ``perm`` with learned column ``perm[j]`` matched to true column ``j``.

    Hungarian matching (``scipy.optimize.linear_sum_assignment``) maximising the summed
    :func:`weight_similarity`.  Apply as ``q[:, perm]`` to put ``q`` in the true order.
    Ties are broken by scipy's deterministic algorithm.
    """
    from scipy.optimize import linear_sum_assignment

    theta_learned = np.asarray(theta_learned)
    theta_true = np.asarray(theta_true)
    if theta_learned.shape != theta_true.shape:
        raise ValueError(
            f"cannot match latents: learned theta {theta_learned.shape} vs true theta {theta_true.shape}"
        )
    sim = weight_similarity(theta_learned, theta_true)  # (K_learned, K_true)
    rows, cols = linear_sum_assignment(sim, maximize=True)
    perm = np.empty(theta_true.shape[1], dtype=np.int64)
    perm[cols] = rows
    return perm
