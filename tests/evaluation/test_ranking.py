"""Pairwise ranking agreement (APE Table 1's "agreement") on hand-made rankings."""

import numpy as np
import pytest

from noisyor_bench.evaluation.ranking import pairwise_agreement
from noisyor_bench.infra.errors import DataError


def test_identical_and_reversed_rankings():
    ref = [3.0, 1.0, 2.0, 5.0, 4.0]
    assert pairwise_agreement(ref, ref).agree == 10
    reversed_scores = [-v for v in ref]
    assert pairwise_agreement(reversed_scores, ref).agree == 0
    assert pairwise_agreement(reversed_scores, ref).pairs == 10


def test_one_swapped_pair_of_ten_models():
    # reference order 0 < 1 < ... < 9; the method swaps models 4 and 5 only: 44 of 45 pairs agree
    ref = np.arange(10.0)
    scores = ref.copy()
    scores[[4, 5]] = scores[[5, 4]]
    result = pairwise_agreement(scores, ref)
    assert (result.agree, result.pairs) == (44, 45)
    assert result.fraction == pytest.approx(44 / 45)


def test_monotone_transform_does_not_change_agreement():
    rng = np.random.default_rng(1)
    ref = rng.normal(size=8)
    assert pairwise_agreement(np.exp(ref) * 3 - 7, ref).agree == 28


def test_ties_count_only_when_tied_on_both_sides():
    # pair (0, 1) tied in both: agrees; pair (0, 2) tied in scores only: disagrees
    scores = [1.0, 1.0, 1.0]
    ref = [2.0, 2.0, 3.0]
    assert pairwise_agreement(scores, ref).agree == 1
    assert pairwise_agreement([1.0, 1.05, 3.0], ref, tie_tolerance=0.1).agree == 3


def test_bad_input_is_named():
    with pytest.raises(DataError, match="one length"):
        pairwise_agreement([1.0, 2.0], [1.0, 2.0, 3.0])
    with pytest.raises(DataError, match="finite"):
        pairwise_agreement([1.0, float("nan")], [1.0, 2.0])
