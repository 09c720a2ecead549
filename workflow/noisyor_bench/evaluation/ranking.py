"""Agreement of two rankings of the same candidate models, pair by pair (APE, Table 1).

APE scores a method by "the fraction of the 45 pairs of 10 test models that the method ranks as
VI does": for every unordered pair (i, j) the two score vectors agree when they order i and j
the same way.  A pair tied in both counts as agreeing; tied in one only, as disagreeing (a tie
is a ranking too, and a method that cannot tell two models apart has not ranked them as the
reference does).  Ties are decided with a tolerance, since the scores are noisy floats.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from noisyor_bench.infra.errors import DataError


@dataclass(frozen=True)
class PairAgreement:
    """How many of the candidate pairs two score vectors order alike."""

    agree: int
    pairs: int

    @property
    def fraction(self) -> float:
        return self.agree / self.pairs if self.pairs else float("nan")


def _order(a: float, b: float, tie_tolerance: float) -> int:
    diff = a - b
    if abs(diff) <= tie_tolerance:
        return 0
    return 1 if diff > 0 else -1


def pairwise_agreement(
    scores: Sequence[float] | np.ndarray,
    reference: Sequence[float] | np.ndarray,
    tie_tolerance: float = 0.0,
) -> PairAgreement:
    """Pairs (i < j) that ``scores`` orders as ``reference`` does (higher = better for both)."""
    s = np.asarray(scores, dtype=float)
    r = np.asarray(reference, dtype=float)
    if s.shape != r.shape or s.ndim != 1:
        raise DataError(f"scores and reference must be vectors of one length, got {s.shape} and {r.shape}")
    if not (np.all(np.isfinite(s)) and np.all(np.isfinite(r))):
        raise DataError("pairwise_agreement: scores and reference must be finite")
    agree = 0
    pairs = 0
    for i, j in itertools.combinations(range(len(s)), 2):
        pairs += 1
        agree += _order(s[i], s[j], tie_tolerance) == _order(r[i], r[j], tie_tolerance)
    return PairAgreement(agree=agree, pairs=pairs)
