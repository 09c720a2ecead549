"""Agreement of two rankings of the same candidate models, pair by pair (APE, Table 1).

APE scores a method by "the fraction of the 45 pairs of 10 test models that the method ranks as
VI does": for every unordered pair (i, j) the two score vectors agree when they order i and j
the same way.  A pair tied in both counts as agreeing; tied in one only, as disagreeing (a tie
is a ranking too, and a method that cannot tell two models apart has not ranked them as the
reference does).  Ties are decided with a tolerance, since the scores are noisy floats.

An agreement is only as good as its reference: :func:`reference_ceilings` measures how far
independent re-estimates of the reference (VI across seeds) agree with each other, and
:func:`ceiling_sufficient` says whether that ceiling (>= 40 of 45 pairs) lets an
agreement claim be judged at all.
"""

from __future__ import annotations

import itertools
from collections.abc import Hashable, Mapping, Sequence
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


# --------------------------------------------------------------------------- the reference's own noise
CEILING_THRESHOLD = 40 / 45
"""An agreement claim is judged only when the reference agrees with itself on at least 40 of 45
pairs: below that, a method's agreement with VI measures VI's noise as much as the method."""


def reference_ceilings(references: Mapping[Hashable, Sequence[float] | np.ndarray]) -> dict[Hashable, float]:
    """The VI-vs-VI ceiling of every run: the median, over the other runs, of the pairs that its
    reference ranking (per-model totals) orders as the other run's does.

    ``references`` maps a run (a seed) to its reference's per-model totals; the runs differ in
    everything a reference's noise comes from (VI's initialisation and optimisation, the ELBO's
    Monte Carlo draws), so their agreement is the most any method can agree with one of them by
    ranking the models as the true ELBOs do.  One run alone has no ceiling here ({}): use an
    independent re-estimate of its totals (:func:`pairwise_agreement` of the two samples)."""
    keys = list(references)
    if len(keys) < 2:
        return {}
    agree = {
        (a, b): pairwise_agreement(references[a], references[b]).agree
        for a, b in itertools.combinations(keys, 2)
    }
    return {k: float(np.median([agree[(a, b)] for (a, b) in agree if k in (a, b)])) for k in keys}


def ceiling_sufficient(ceiling: float, pairs: int, threshold: float = CEILING_THRESHOLD) -> bool:
    """Whether a ceiling of ``ceiling`` agreeing pairs out of ``pairs`` lets an agreement be judged
    (>= 40 of 45; the same fraction for another number of models)."""
    if not pairs or not np.isfinite(ceiling):
        return False
    return ceiling >= threshold * pairs - 1e-9
