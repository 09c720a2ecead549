"""Ranking candidate models against the exact log-likelihood on a hand-checkable case (APE on
noisy-OR): K = 1, D = 1, so p(x) is a two-term sum computed here by hand."""

from __future__ import annotations

import math

import numpy as np
import torch

from noisyor_bench.evaluation.ranking import pairwise_agreement
from noisyor_bench.models.noisyor.exact import exact_log_marginal
from noisyor_bench.models.noisyor.model import NoisyOR


def _p_on(theta: float, theta0: float, mu: float) -> float:
    # p(x=1) = (1 - mu) (1 - e^{-theta0}) + mu (1 - e^{-(theta0 + theta)})
    return (1 - mu) * (1 - math.exp(-theta0)) + mu * (1 - math.exp(-(theta0 + theta)))


def test_exact_ranking_of_three_candidates_by_hand() -> None:
    x = torch.tensor([[1.0], [1.0], [0.0]], dtype=torch.float64)  # two on, one off
    thetas = [0.1, 1.0, 3.0]
    exact = []
    for t in thetas:
        m = NoisyOR.from_numpy(np.array([[t]]), np.array([0.05]), np.array([0.5]))
        exact.append(float(exact_log_marginal(m, x).mean()))
    by_hand = []
    for t in thetas:
        p = _p_on(t, 0.05, 0.5)
        by_hand.append((2 * math.log(p) + math.log(1 - p)) / 3)
    np.testing.assert_allclose(exact, by_hand, rtol=1e-12)
    # by hand: the data are 2/3 on, so the candidate with p(x=1) nearest 2/3 ranks first
    p_on = [_p_on(t, 0.05, 0.5) for t in thetas]
    assert np.argmax(exact) == int(np.argmin([abs(p - 2 / 3) for p in p_on]))
    # a scorer that orders them alike agrees on all 3 pairs; reversing one pair costs one
    order = np.argsort(exact)
    assert pairwise_agreement(np.asarray(exact) * 2 + 1, exact).agree == 3
    swapped = np.asarray(exact, dtype=float).copy()
    swapped[order[0]], swapped[order[1]] = swapped[order[1]], swapped[order[0]]
    assert pairwise_agreement(swapped, exact).agree == 2
