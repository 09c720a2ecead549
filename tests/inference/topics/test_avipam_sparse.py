"""aviPAM on the non-zero counts only (models.topics.counts, models.sparse) against the dense
formulas: the same ELBO, gradients, evaluation and fit in float64, and the corpus rows cut out
of a CSR matrix equal to the dense matrix's rows."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
import torch

from noisyor_bench.inference.topics.avipam import (
    AviPamConfig,
    AviPamNet,
    evaluate,
    fit_avipam,
    kl_per_dimension,
    posterior_proportions,
)
from noisyor_bench.infra.errors import DataError
from noisyor_bench.models.topics import pam
from noisyor_bench.models.topics.counts import CountRows, SparseCounts

F64 = {"dtype": "float64", "hidden": (7, 5), "batch_size": 4, "max_epochs": 3, "patience": 3}
STRUCTURES = [
    pam.lda_structure(4),
    pam.pam4_structure(2, 3),
    pam.pam5_structure(2, 3, 4),
    pam.molda_structure((2, 3)),
    pam.ctm_structure(3),
]
IDS = ["lda", "pam4", "pam5", "molda", "ctm"]


def _corpus(n_docs: int = 10, vocab: int = 23, density: float = 0.2, seed: int = 3) -> np.ndarray:
    """Counts with empty documents, a full one, and words no document uses."""
    rng = np.random.default_rng(seed)
    counts = rng.integers(1, 6, (n_docs, vocab)) * (rng.random((n_docs, vocab)) < density)
    counts[0] = 0
    counts[1] = rng.integers(1, 4, vocab)
    counts[:, -2:] = 0
    return counts.astype(np.float64)


def _both(counts: np.ndarray) -> tuple[CountRows, CountRows]:
    sparse = CountRows.of(counts, torch.float64, "cpu", max_density=1.0)
    dense = CountRows.of(counts, torch.float64, "cpu", max_density=0.0)
    assert sparse.sparse and not dense.sparse
    return sparse, dense


def test_rows_cut_from_the_csr_matrix_are_the_dense_rows_in_the_asked_order():
    counts = _corpus()
    sparse, dense = _both(counts)
    rows = torch.tensor([4, 0, 9, 1, 4])
    batch = sparse.take(rows)
    assert isinstance(batch, SparseCounts) and batch.shape == (5, counts.shape[1])
    np.testing.assert_array_equal(batch.to_dense().numpy(), counts[rows.numpy()])
    np.testing.assert_array_equal(dense.take(rows).numpy(), counts[rows.numpy()])
    chunks = [c.to_dense().numpy() for c in sparse.chunks(4)]
    assert [c.shape[0] for c in chunks] == [4, 4, 2]
    np.testing.assert_array_equal(np.concatenate(chunks), counts)
    assert sparse.total() == dense.total() == counts.sum()


def test_the_corpus_is_held_sparse_below_the_density_threshold_and_dense_above():
    counts = _corpus(density=0.05)
    density = np.count_nonzero(counts) / counts.size
    assert CountRows.of(counts, torch.float32, "cpu", max_density=density).sparse
    assert not CountRows.of(counts, torch.float32, "cpu", max_density=density * 0.99).sparse
    from_csr = CountRows.of(sp.csr_matrix(counts), torch.float32, "cpu", max_density=1.0)
    np.testing.assert_array_equal(from_csr.take(torch.arange(10)).to_dense().numpy(), counts)
    # a stored zero is dropped from the rows, not from the caller's matrix
    given = sp.csr_matrix(counts)
    given.data[0] = 0.0
    stored = given.nnz
    rows = CountRows.of(given, torch.float32, "cpu", max_density=1.0)
    assert given.nnz == stored and rows.values is not None and rows.values.numel() == stored - 1


@pytest.mark.parametrize("bad", [np.nan, np.inf, -1.0])
def test_counts_that_are_not_finite_non_negative_numbers_are_refused(bad):
    counts = _corpus()
    counts[2, 3] = bad
    with pytest.raises(DataError, match="finite and non-negative"):
        CountRows.of(counts, torch.float64, "cpu")


@pytest.mark.parametrize("structure", STRUCTURES, ids=IDS)
@pytest.mark.parametrize("samples", [1, 3])
def test_sparse_elbo_and_its_gradients_equal_the_dense_formula(structure, samples):
    """Training mode: dropout, batch norm and the draws from one seeded generator on both paths."""
    counts = _corpus()
    sparse, dense = _both(counts)
    rows = torch.tensor([3, 1, 0, 7, 5, 2])
    net = AviPamNet(structure, counts.shape[1], AviPamConfig(**F64), torch.Generator().manual_seed(0))
    net.train()
    results = []
    for source in (sparse, dense):
        net.zero_grad()
        terms = net.elbo_terms(source.take(rows), samples, torch.Generator().manual_seed(11))
        terms.nelbo.sum().backward()
        grads = {n: p.grad.clone() for n, p in net.named_parameters() if p.grad is not None}
        results.append((terms.loglik.detach(), terms.kl.detach(), grads))
    (ll_s, kl_s, g_s), (ll_d, kl_d, g_d) = results
    torch.testing.assert_close(ll_s, ll_d, rtol=1e-12, atol=1e-10)
    torch.testing.assert_close(kl_s, kl_d, rtol=1e-12, atol=1e-12)
    assert g_s.keys() == g_d.keys() and "trunks.0.layers.0.weight" in g_s
    for name in g_d:
        torch.testing.assert_close(g_s[name], g_d[name], rtol=1e-10, atol=1e-10, msg=name)


def test_the_input_layer_is_the_dense_linear_map_of_the_counts():
    """``counts @ weight + bias``, with ``weight`` (V, H) drawn as nn.Linear's (H, V) would be."""
    counts = _corpus()
    net = AviPamNet(
        pam.lda_structure(4), counts.shape[1], AviPamConfig(**F64), torch.Generator().manual_seed(0)
    )
    layer = net.trunks[0].layers[0]
    assert tuple(layer.weight.shape) == (counts.shape[1], 7)
    x = torch.as_tensor(counts)
    expected = x @ layer.weight + layer.bias
    torch.testing.assert_close(
        layer(CountRows.of(counts, torch.float64, "cpu", 1.0).take(torch.arange(10))), expected
    )
    torch.testing.assert_close(layer(x), expected)
    # Glorot-uniform bound of a 23 x 7 matrix, and zero biases
    bound = float(np.sqrt(6.0 / (counts.shape[1] + 7)))
    largest = float(layer.weight.detach().abs().max())
    assert 0.5 * bound < largest <= bound
    assert float(layer.bias.detach().abs().max()) == 0.0


@pytest.mark.parametrize("structure", STRUCTURES[1:3], ids=IDS[1:3])
def test_evaluation_and_a_fit_are_the_same_on_both_paths(structure, monkeypatch):
    """A whole fit (shuffles, dropout, Adam) then the held-out bound, the KL per dimension and the
    posterior proportions: float64 rounding apart, the same numbers from the CSR corpus."""
    import noisyor_bench.models.topics.counts as counts_module

    counts = _corpus(n_docs=14)
    fits = {}
    for name, density in (("sparse", 1.0), ("dense", 0.0)):
        monkeypatch.setattr(counts_module, "SPARSE_MAX_DENSITY", density)
        fit = fit_avipam(counts[:10], counts[10:], structure, AviPamConfig(**F64), seed=4)
        held = evaluate(fit.net, counts[10:], seed=2, n_samples=4)
        kl = kl_per_dimension(fit.net, counts[10:], seed=2)
        props = posterior_proportions(fit.net, counts[10:])["subtopics"]
        fits[name] = (fit, held, kl, props)
    (fs, hs, ks, ps), (fd, hd, kd, pd) = fits["sparse"], fits["dense"]
    # Adam divides each gradient by its own running magnitude, so a last-bit difference between
    # the two summation orders grows to ~1e-9 relative over the fit's 9 steps; a wrong formula
    # would differ in the first digits (the one-step test above holds the gradients to 1e-10)
    close = {"rtol": 1e-7, "atol": 1e-10}
    assert [r.epoch for r in fs.history] == [r.epoch for r in fd.history]
    np.testing.assert_allclose(
        [r.train_nelbo for r in fs.history], [r.train_nelbo for r in fd.history], **close
    )
    np.testing.assert_allclose(fs.topic_word(), fd.topic_word(), **close)
    assert hs.nelbo_per_doc == pytest.approx(hd.nelbo_per_doc, rel=1e-7)
    assert hs.nelbo_per_word == pytest.approx(hd.nelbo_per_word, rel=1e-7)
    for a, b in zip(ks, kd, strict=True):
        np.testing.assert_allclose(a, b, **close)
    np.testing.assert_allclose(ps, pd, **close)
