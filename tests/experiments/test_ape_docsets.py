"""Absolute paper-style values move with the documents; the document constant explains it:
over random document sets, paper-style VI minus its fitted document-constant term
varies by < 0.1 nats/word while the raw values vary by far more."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from noisyor_bench.experiments.ape.docsets import constant_fit, random_document_sets, vi_on_document_sets

K, V, MODELS = 3, 30, 2


def _arrays(seed: int = 0) -> dict[str, np.ndarray]:
    """A tiny logistic-normal corpus whose document lengths span 1 to 200 words (log-uniform)."""
    rng = np.random.default_rng(seed)
    true = rng.dirichlet(np.full(V, 0.3), size=K)
    # test models near the corpus's topics, as models fitted to it are
    thetas = np.stack([[rng.dirichlet(200 * t + 0.01) for t in true] for _ in range(MODELS)])
    lengths = np.exp(rng.uniform(0.0, np.log(200), size=300)).round().astype(int)
    docs = np.zeros((lengths.size, V), dtype=np.int64)
    for i, t in enumerate(lengths):
        pi = rng.dirichlet(np.full(K, 0.5))
        docs[i] = rng.multinomial(t, pi @ true)
    return {"documents": docs, "test_thetas": thetas.astype(np.float32)}


SECTION = {
    "vi": {"lr": 0.1, "decay_steps": 5000, "window": 50, "rel_tol": 1e-4, "min_steps": 100, "max_steps": 400},
    "evaluation": {"paper_samples": 50, "paper_draws": 10, "paper_repeats": 5, "is_samples": 50},
}


def test_random_sets_are_distinct_documents_and_seeded() -> None:
    a = random_document_sets(50, 10, 4, seed=3)
    assert all(len(set(s.tolist())) == 10 for s in a)
    assert all(np.array_equal(s, t) for s, t in zip(a, random_document_sets(50, 10, 4, seed=3)))
    assert not all(np.array_equal(s, t) for s, t in zip(a, random_document_sets(50, 10, 4, seed=4)))


def test_constant_fit_recovers_a_line() -> None:
    c = np.array([-9.0, -5.0, -3.0, -1.0])
    fit = constant_fit(0.9 * c - 7.0, c)
    assert fit["slope"] == pytest.approx(0.9) and fit["intercept"] == pytest.approx(-7.0)
    assert fit["residual_range"] == pytest.approx(0.0, abs=1e-12)


def test_paper_style_minus_document_constant_is_stable_across_sets() -> None:
    torch.manual_seed(0)
    out = vi_on_document_sets(_arrays(), SECTION, seed=0, n_sets=5, set_size=30)
    paper = np.array([s["ll_paper"] for s in out["sets"]])
    constant = np.array([s["doc_constant"] for s in out["sets"]])
    assert len(out["sets"]) == 5
    assert np.ptp(paper) > 0.2  # the raw values move with the documents...
    assert out["residual_range"] < 0.1  # ...and the fitted constant term accounts for it
    assert np.corrcoef(paper, constant)[0, 1] > 0.9
