"""The document constant the paper's Table 1 values would need, among random document sets."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from noisyor_bench.reporting.ape import offset as off

DOCS = np.array([[2, 1, 0], [1, 1, 1], [0, 0, 4], [5, 0, 1], [1, 0, 0]])
NORMALISER = -2.0


def _hand_constant(rows: list[int]) -> float:
    """(sum of log T!/prod x! + |S| * normaliser) / tokens, with math.factorial."""
    coefficient = sum(
        math.log(math.factorial(int(DOCS[d].sum())) / math.prod(math.factorial(int(c)) for c in DOCS[d]))
        for d in rows
    )
    return (coefficient + len(rows) * NORMALISER) / float(DOCS[rows].sum())


def test_set_constant_by_hand():
    terms = off.document_terms(DOCS, [0, 1], normaliser=NORMALISER)
    # documents 0 and 1: log 3 + log 6 - 4 over 6 tokens
    assert terms.constant([0, 1])[0] == pytest.approx((math.log(3) + math.log(6) - 4.0) / 6.0)
    assert terms.constant([[2, 3], [0, 4]]) == pytest.approx([_hand_constant([2, 3]), _hand_constant([0, 4])])


def test_authors_prior_normaliser_on_the_reviews():
    # Laplace variance of Dir(0.01), K = 30: 100 * (1 - 1/30); the authors' prior squares it
    variance = (100.0 * (1 - 1 / 30)) ** 2
    assert off.prior_normaliser(30) == pytest.approx(-15.0 * math.log(2 * math.pi * variance))
    assert off.prior_normaliser(30) == pytest.approx(-164.7, abs=0.05)  # docs/ape.md


def test_same_constant_as_the_evaluation_crossed_with_models():
    """A set crossed with every test model (the evaluation's pairs) has the same per-word constant."""
    torch = pytest.importorskip("torch")
    from noisyor_bench.models.topics.logistic_normal import paper_prior
    from noisyor_bench.models.topics.paper_metric import document_constant

    rng = np.random.default_rng(3)
    docs = rng.poisson(1.5, size=(12, 40))
    docs[docs.sum(1) == 0, 0] = 1
    terms = off.document_terms(docs, [1, 4, 7], n_topics=5)
    pairs = torch.as_tensor(np.repeat(docs[[1, 4, 7]], 10, axis=0), dtype=torch.float64)
    assert terms.constant([1, 4, 7])[0] == pytest.approx(document_constant(pairs, paper_prior(5)), rel=1e-9)


def test_percentile_counts_strictly_below():
    assert off.percentile_of(3.0, np.array([1.0, 2.0, 3.0, 4.0])) == 50.0
    assert off.percentile_of(9.0, np.array([1.0, 2.0])) == 100.0


def test_random_sets_approach_the_enumerated_distribution():
    terms = off.document_terms(DOCS, [0, 1], normaliser=NORMALISER)
    every = np.array([_hand_constant(list(c)) for c in itertools.combinations(range(5), 2)])
    sample = off.random_set_constants(terms, 2, 20_000, seed=1)
    assert set(np.round(sample, 9)) <= set(np.round(every, 9))  # only sets of 2 distinct documents
    for value in every:  # each of the 10 sets drawn with probability 1/10 (some share a constant)
        expected = np.mean(np.isclose(every, value))
        assert np.mean(np.isclose(sample, value)) == pytest.approx(expected, abs=0.01)
    whole = off.random_set_constants(terms, 5, 3, seed=1)
    assert whole == pytest.approx([_hand_constant([0, 1, 2, 3, 4])] * 3)


def test_offsets_and_the_constant_they_need():
    terms = off.document_terms(DOCS, [0, 1], normaliser=NORMALISER)
    own = _hand_constant([0, 1])
    every = np.array([_hand_constant(list(c)) for c in itertools.combinations(range(5), 2)])
    ours = {"vi": -6.0, "standard": -7.0}
    paper = {"vi": -5.5, "standard": math.nan}
    summary, methods = off.dataset_offsets(terms, ours, paper, slope=0.5, n_sets=20_000, seed=2)
    assert set(methods) == {"vi"}  # no paper value: no offset
    vi = methods["vi"]
    assert vi["paper_offset"] == pytest.approx(0.5)
    assert vi["paper_offset_doc"] == pytest.approx(0.5 * 3.0)  # documents 0 and 1: 3 tokens each
    assert vi["offset_constant_needed"] == pytest.approx(own + 0.5 / 0.5)
    exact = 100.0 * np.mean(every < own + 1.0)
    assert vi["offset_percentile"] == pytest.approx(exact, abs=1.5)
    assert summary["offset_own_constant"] == pytest.approx(own)
    assert summary["offset_own_percentile"] == pytest.approx(100.0 * np.mean(every < own), abs=1.5)
    assert summary["offset_set_size"] == 2 and summary["offset_documents"] == 5
    # without a measured slope the constant moves one for one
    _, flat = off.dataset_offsets(terms, ours, paper, n_sets=100)
    assert flat["vi"]["offset_constant_needed"] == pytest.approx(own + 0.5)


def test_caption_states_offset_constant_and_place():
    row = {
        "offset_sets": 20_000,
        "offset_set_size": 30,
        "offset_documents": 1585,
        "offset_own_constant": 1.03,
        "offset_own_percentile": 63.7,
        "offset_random_min": -2.03,
        "offset_random_median": 0.83,
        "offset_random_max": 2.62,
        "offset_slope": 0.94,
    }
    methods = {
        "vi": {
            "paper_offset": 1.09,
            "paper_offset_doc": 76.5,
            "offset_constant_needed": 2.19,
            "offset_percentile": 99.73,
        },
        "ape-model-aware": {
            "paper_offset": 1.35,
            "paper_offset_doc": 94.4,
            "offset_constant_needed": 2.66,
            "offset_percentile": 100.0,
        },
    }
    text = off.offset_caption(row, methods, {"vi": "VI"})
    assert "VI +1.09 nats/word (+76.5 nats per document) -> constant 2.19" in text
    assert "above 19,946 of 20,000 random sets (99.73%)" in text
    assert "above all 20,000 random sets" in text
    assert "ours + offset / 0.94" in text and "of the 1,585 documents" in text
    assert off.offset_caption({"offset_sets": math.nan}, methods, {}) == ""


def test_empty_document_is_refused():
    from noisyor_bench.infra.errors import DataError

    with pytest.raises(DataError):
        off.document_terms(np.array([[1, 0], [0, 0]]), [0], normaliser=-1.0)
