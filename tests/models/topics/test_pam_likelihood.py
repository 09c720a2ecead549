"""PAM likelihoods against explicit enumeration of every word's path through the DAG.

Independent computation: for each word, the probability of the document generating it is the sum
over all paths root -> (super-duper) -> super -> sub -> word of the product of the edge
probabilities, written as plain Python loops over the nodes (no matrix products, no masks).
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import torch

from noisyor_bench.infra.errors import ConfigError
from noisyor_bench.models.topics import pam
from noisyor_bench.models.topics.dirichlet_laplace import laplace_dirichlet_prior

V = 6


def _simplex(rng: np.random.Generator, *shape: int) -> np.ndarray:
    x = rng.gamma(0.7, size=shape)
    return x / x.sum(-1, keepdims=True)


def _path_sum(edges: list[np.ndarray], beta: np.ndarray, word: int) -> float:
    """Sum over every path of the product of its edges; ``edges[l][parent, child]``."""
    sizes = [e.shape[1] for e in edges]
    total = 0.0
    for path in itertools.product(*(range(s) for s in sizes)):
        prob, parent = 1.0, 0
        for level, node in zip(edges, path, strict=True):
            prob *= level[parent, node]
            parent = node
        total += prob * beta[path[-1], word]
    return total


def _enumerated_loglik(counts: np.ndarray, edges: list[np.ndarray], beta: np.ndarray) -> float:
    return sum(counts[v] * math.log(_path_sum(edges, beta, v) + pam.LOG_FLOOR) for v in range(V) if counts[v])


@pytest.mark.parametrize(
    ("structure", "doc_shapes"),
    [
        (pam.lda_structure(4), [(1, 4)]),
        (pam.pam4_structure(3, 4), [(1, 3), (3, 4)]),
        (pam.pam5_structure(2, 3, 4), [(1, 2), (2, 3), (3, 4)]),
    ],
    ids=["lda", "pam4", "pam5"],
)
def test_log_likelihood_matches_path_enumeration(structure, doc_shapes):
    rng = np.random.default_rng(3)
    beta = _simplex(rng, structure.n_topics, V)
    n_docs = 3
    edges_per_doc = [[_simplex(rng, *shape) for shape in doc_shapes] for _ in range(n_docs)]
    counts = rng.integers(0, 4, size=(n_docs, V)).astype(float)
    thetas = [torch.tensor(np.stack([e[lv] for e in edges_per_doc])) for lv in range(len(doc_shapes))]
    got = pam.document_log_likelihood(torch.tensor(counts), thetas, torch.tensor(beta))
    expected = [_enumerated_loglik(counts[d], edges_per_doc[d], beta) for d in range(n_docs)]
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-12)
    probs = pam.word_distribution(thetas, torch.tensor(beta))
    np.testing.assert_allclose(probs.sum(-1).numpy(), 1.0, rtol=1e-12)


def test_molda_is_a_mixture_of_ldas():
    """MoLDA's word distribution = sum_m pi_m theta_m^T beta_m, enumerated per component."""
    rng = np.random.default_rng(5)
    sizes = (2, 3)
    structure = pam.molda_structure(sizes)
    assert structure.topic_blocks == sizes and structure.n_topics == 5
    assert structure.latent_dims == (2, 5)
    betas = [_simplex(rng, k, V) for k in sizes]
    pi = _simplex(rng, 2)
    comps = [_simplex(rng, k) for k in sizes]
    counts = rng.integers(0, 5, size=V).astype(float)
    expected = 0.0
    for v in range(V):
        p = sum(pi[m] * sum(comps[m][k] * betas[m][k, v] for k in range(sizes[m])) for m in range(2))
        expected += counts[v] * math.log(p + pam.LOG_FLOOR)
    # the level latents in the softmax basis: root (2 reals), then component blocks (2 + 3 reals)
    h_root = torch.tensor(np.log(pi))[None]
    h_comp = torch.tensor(np.concatenate([np.log(c) + 0.3 for c in comps]))[None]  # shift: softmax-invariant
    thetas = structure_thetas = [
        pam.level_proportions(h_root, structure.levels[0]),
        pam.level_proportions(h_comp, structure.levels[1]),
    ]
    assert structure_thetas[1][0, 0, 2:].abs().max() == 0 and structure_thetas[1][0, 1, :2].abs().max() == 0
    got = pam.document_log_likelihood(torch.tensor(counts)[None], thetas, torch.tensor(np.concatenate(betas)))
    assert float(got[0]) == pytest.approx(expected, rel=1e-12)


def test_level_proportions_full_level_is_a_row_softmax():
    level = pam.pam4_structure(3, 4).levels[1]
    h = torch.randn(2, 12, dtype=torch.float64)
    theta = pam.level_proportions(h, level)
    for b in range(2):
        for s in range(3):
            row = h[b, 4 * s : 4 * s + 4]
            np.testing.assert_allclose(theta[b, s].numpy(), (row.exp() / row.exp().sum()).numpy(), rtol=1e-12)


def test_laplace_prior_concatenates_each_parents_prior():
    level = pam.molda_structure((3, 5)).levels[1]
    mean, var = pam.laplace_prior(level, 0.5)
    m3, v3 = laplace_dirichlet_prior(0.5, 3)
    m5, v5 = laplace_dirichlet_prior(0.5, 5)
    np.testing.assert_allclose(mean.numpy(), np.concatenate([m3, m5]))
    np.testing.assert_allclose(var.numpy(), np.concatenate([v3, v5]))


def test_sample_documents_is_seeded_and_matches_the_word_distribution():
    structure = pam.pam4_structure(2, 3)
    beta = torch.tensor(_simplex(np.random.default_rng(0), 3, V))
    a = pam.sample_documents(structure, [1.0, 0.5], beta, [4000] * 3, torch.Generator().manual_seed(7))
    b = pam.sample_documents(structure, [1.0, 0.5], beta, [4000] * 3, torch.Generator().manual_seed(7))
    assert torch.equal(a[0], b[0])
    counts, thetas = a
    assert counts.sum(1).tolist() == [4000.0] * 3
    probs = pam.word_distribution(thetas, beta)
    # binomial standard error of a frequency from 4000 draws is <= 0.008; allow 5 SE
    np.testing.assert_allclose((counts / 4000).numpy(), probs.numpy(), atol=0.04)
    np.testing.assert_allclose(thetas[1].sum(-1).numpy(), 1.0)


def test_make_structure_errors_name_the_problem():
    with pytest.raises(ConfigError, match="unknown PAM structure"):
        pam.make_structure("pam9", [2])
    with pytest.raises(ConfigError, match="takes 2 size"):
        pam.make_structure("pam4", [50])
    with pytest.raises(ConfigError, match="MoLDA"):
        pam.make_structure("molda", [10])
    assert pam.make_structure("pam5", [2, 2, 50]).describe() == "pam5: 1x2 -> 2x2 -> 2x50"


def test_sampled_molda_components_use_only_their_own_topics():
    structure = pam.molda_structure((2, 3))
    beta = torch.tensor(_simplex(np.random.default_rng(1), 5, V))
    counts, thetas = pam.sample_documents(
        structure, [1.0, 1.0], beta, [10] * 4, torch.Generator().manual_seed(0)
    )
    assert thetas[1].shape == (4, 2, 5)
    assert float(thetas[1][:, 0, 2:].abs().max()) == 0.0 and float(thetas[1][:, 1, :2].abs().max()) == 0.0
    np.testing.assert_allclose(thetas[1].sum(-1).numpy(), 1.0)
    assert counts.sum().item() == 40
