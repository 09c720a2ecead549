"""The active-entry computations against the dense reference formulas (float64, values and gradients)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from noisyor_bench.inference.noisyor.registry import get_method
from noisyor_bench.models.noisyor.elbo import elbo, negative_term, negative_term_active
from noisyor_bench.models.noisyor.model import NoisyOR, log1mexp
from noisyor_bench.models.noisyor.sparse import (
    ActiveSet,
    active_linear,
    active_matmul,
    linear_at_active,
    positive_loglik,
)

DTYPE = torch.float64


def _data(n: int = 9, d: int = 13, k: int = 5, density: float = 0.3, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    x = (torch.rand((n, d), generator=g) < density).to(DTYPE)
    x[0] = 0.0  # a row with no active entry
    x[1] = 1.0  # a fully active row
    theta = torch.rand((d, k), generator=g, dtype=DTYPE) * 2.0
    theta0 = torch.rand(d, generator=g, dtype=DTYPE) * 0.1 + 0.01
    mu = torch.rand(k, generator=g, dtype=DTYPE) * 0.5 + 0.1
    return x, NoisyOR(theta, theta0, mu), g


def test_active_set_lists_each_rows_active_columns_in_order():
    x, _, _ = _data()
    active = ActiveSet.of(x)
    assert active.width == int(x.sum(1).max())
    assert active.nnz == int(x.sum())
    index, mask = active.padded()
    for n in range(x.shape[0]):
        expected = np.flatnonzero(x[n].numpy())
        np.testing.assert_array_equal(index[n][mask[n]].numpy(), expected)
        np.testing.assert_array_equal(active.cols[active.rows == n].numpy(), expected)
    assert active.density() == pytest.approx(float(x.mean()))


def test_select_trims_to_the_rows_largest_count():
    x, _, _ = _data()
    rows = torch.tensor([0, 4, 2])
    sub = ActiveSet.of(x).select(rows)
    assert sub.width == int(x[rows].sum(1).max())
    ref = ActiveSet.of(x[rows])
    np.testing.assert_array_equal(sub.cols.numpy(), ref.cols.numpy())
    np.testing.assert_array_equal(sub.rows.numpy(), ref.rows.numpy())
    np.testing.assert_array_equal(sub.counts.numpy(), x[rows].sum(1).numpy())
    np.testing.assert_array_equal(
        ActiveSet.of(x).select(slice(2, 5)).cols.numpy(), ActiveSet.of(x[2:5]).cols.numpy()
    )


@pytest.mark.parametrize("copies", [1, 3])
def test_replicated_pattern_and_its_transpose_are_the_stacked_matrix(copies):
    x, _, _ = _data()
    p = ActiveSet.of(x).replicated(copies)
    values = torch.arange(1, p.nnz + 1, dtype=DTYPE)
    stacked = x.repeat(copies, 1)
    dense = p.matrix(values).to_dense()
    torch.testing.assert_close(dense != 0, stacked != 0)
    torch.testing.assert_close(p.matrix_t(values).to_dense(), dense.t())
    np.testing.assert_array_equal(p.row.numpy(), np.nonzero(stacked.numpy())[0])


def _dense_positive(model: NoisyOR, x: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
    """Reference: rates for all (n, i), log(1 - exp(-a)) kept where x = 1."""
    a = model.theta0 + z @ model.theta.T
    return torch.where(x > 0, torch.log(-torch.expm1(-a)), torch.zeros_like(a)).sum(-1)


def test_positive_loglik_matches_dense_values_and_gradients():
    x, model, g = _data()
    theta = model.theta.clone().requires_grad_(True)
    theta0 = model.theta0.clone().requires_grad_(True)
    z = torch.rand((4, x.shape[0], model.K), generator=g, dtype=DTYPE).requires_grad_(True)
    w = torch.randn((4, x.shape[0]), generator=g, dtype=DTYPE)  # a generic upstream gradient

    sparse = positive_loglik(theta, theta0, z, ActiveSet.of(x))
    grads_sparse = torch.autograd.grad((sparse * w).sum(), (z, theta, theta0))
    dense = _dense_positive(NoisyOR(theta, theta0, model.mu), x, z)
    grads_dense = torch.autograd.grad((dense * w).sum(), (z, theta, theta0))

    torch.testing.assert_close(sparse, dense, rtol=1e-12, atol=1e-12)
    for gs, gd in zip(grads_sparse, grads_dense):
        torch.testing.assert_close(gs, gd, rtol=1e-10, atol=1e-12)


def test_block_diagonal_evaluates_stacked_runs_each_against_its_own_parameters():
    """R runs' rows stacked against their theta stacked as (R * D, K): one positive_loglik call
    gives every run's own values (and nothing of another run's parameters)."""
    runs = [_data(seed=s) for s in range(3)]
    x = torch.cat([r[0] for r in runs])
    theta = torch.cat([r[1].theta for r in runs])
    theta0 = torch.cat([r[1].theta0 for r in runs])
    g = runs[0][2]
    z = [torch.rand((4, r[0].shape[0], r[1].K), generator=g, dtype=DTYPE) for r in runs]
    stacked = positive_loglik(theta, theta0, torch.cat(z, dim=1), ActiveSet.of(x).block_diagonal(3))
    alone = [positive_loglik(r[1].theta, r[1].theta0, zr, ActiveSet.of(r[0])) for r, zr in zip(runs, z)]
    torch.testing.assert_close(stacked, torch.cat(alone, dim=1), rtol=1e-14, atol=1e-14)
    with pytest.raises(ValueError, match="equal blocks"):
        ActiveSet.of(x).block_diagonal(4)


def test_positive_loglik_passes_gradcheck():
    x, model, g = _data(n=4, d=6, k=3, density=0.5)
    z = torch.rand((2, 4, 3), generator=g, dtype=DTYPE).requires_grad_(True)
    theta = model.theta.clone().requires_grad_(True)
    theta0 = model.theta0.clone().requires_grad_(True)
    active = ActiveSet.of(x)
    assert torch.autograd.gradcheck(
        lambda z_, t_, t0_: positive_loglik(t_, t0_, z_, active), (z, theta, theta0)
    )


def test_negative_term_from_column_sums_matches_dense():
    x, model, g = _data()
    q = torch.rand((x.shape[0], model.K), generator=g, dtype=DTYPE)
    torch.testing.assert_close(negative_term_active(model, ActiveSet.of(x), q), negative_term(model, x, q))


def test_active_matmul_with_weights_matches_dense_product():
    x, model, g = _data()
    active = ActiveSet.of(x)
    mat = model.theta.clone().requires_grad_(True)
    w_full = torch.rand(x.shape, generator=g, dtype=DTYPE).requires_grad_(True)
    w_active = w_full[x > 0]  # the weights at the active entries, row-major
    out = active_matmul(active, mat, w_active)
    ref = (x * w_full) @ mat
    torch.testing.assert_close(out, ref)
    up = torch.randn(out.shape, generator=g, dtype=DTYPE)
    g_sparse = torch.autograd.grad((out * up).sum(), (mat, w_full))
    g_dense = torch.autograd.grad((ref * up).sum(), (mat, w_full))
    for a, b in zip(g_sparse, g_dense):
        torch.testing.assert_close(a, b)


def test_active_linear_layers_match_dense_linear():
    x, _, g = _data()
    torch.manual_seed(0)
    first = torch.nn.Linear(x.shape[1], 7, dtype=DTYPE)
    torch.testing.assert_close(active_linear(ActiveSet.of(x), first), first(x))
    last = torch.nn.Linear(7, x.shape[1], dtype=DTYPE)
    h = torch.randn((x.shape[0], 7), generator=g, dtype=DTYPE)
    active = ActiveSet.of(x)
    at_active = linear_at_active(active, h, last)
    full = last(h)
    torch.testing.assert_close(at_active, full[x > 0])
    up = torch.randn(at_active.shape, generator=g, dtype=DTYPE)
    params = (h.requires_grad_(True), last.weight, last.bias)
    g_sparse = torch.autograd.grad((linear_at_active(active, h, last) * up).sum(), params)
    g_dense = torch.autograd.grad((last(h)[x > 0] * up).sum(), params)
    for a, b in zip(g_sparse, g_dense):
        torch.testing.assert_close(a, b)


def test_primitives_pass_gradcheck():
    from noisyor_bench.models.sparse import sddmm, spmm

    x, _, g = _data(n=5, d=6, k=3, density=0.5)
    p = ActiveSet.of(x).pattern
    values = torch.rand(p.nnz, generator=g, dtype=DTYPE).requires_grad_(True)
    b = torch.rand((6, 3), generator=g, dtype=DTYPE).requires_grad_(True)
    a = torch.rand((5, 3), generator=g, dtype=DTYPE).requires_grad_(True)
    assert torch.autograd.gradcheck(lambda v, m: spmm(p, v, m), (values, b))
    assert torch.autograd.gradcheck(lambda lhs, rhs: sddmm(p, lhs, rhs), (a, b))


@pytest.fixture(params=[True, False], ids=["sparse-linear", "dense-linear"])
def linear_sparse(request, monkeypatch):
    """Run a test with the linear terms computed from the active entries, and without."""
    import noisyor_bench.models.noisyor.sparse as sparse

    monkeypatch.setattr(sparse, "LINEAR_MAX_DENSITY", 1.0 if request.param else -1.0)
    return request.param


@pytest.mark.parametrize("temperature", [0.5, None])
def test_elbo_sparse_and_dense_agree_with_the_same_noise(temperature, linear_sparse):
    x, model, g = _data()
    theta = model.theta.clone().requires_grad_(True)
    logits = torch.randn((x.shape[0], model.K), generator=g, dtype=DTYPE).requires_grad_(True)
    m = NoisyOR(theta, model.theta0, model.mu)
    values = []
    for active in (None, ActiveSet.of(x)):
        gen = torch.Generator().manual_seed(3)
        val = elbo(m, x, logits, 6, temperature, gen, active=active)
        grads = torch.autograd.grad(val.sum(), (theta, logits)) if temperature is not None else ()
        values.append((val.detach(), grads))
    torch.testing.assert_close(values[0][0], values[1][0], rtol=1e-12, atol=1e-10)
    for a, b in zip(values[0][1], values[1][1]):
        torch.testing.assert_close(a, b, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("name", ["avi", "acp", "acp-sg"])
def test_amortized_nelbo_and_gradients_agree_between_paths(name, linear_sparse):
    x, model, _ = _data(n=11, d=17, k=4, density=0.2)
    assert ActiveSet.of(x).sparse_linear == linear_sparse
    method = get_method(name)(
        model, "learning", {"dtype": "float64", "hidden_layers": 2, "hidden_dim": 8}, seed=5
    )
    params = [p for p in method.net.parameters()]
    results = []
    for active in (None, ActiveSet.of(x)):
        gen = torch.Generator().manual_seed(11)
        loss = method.batch_nelbo(x, 5, 0.4, gen, active).sum()
        results.append((loss.detach(), torch.autograd.grad(loss, params)))
    torch.testing.assert_close(results[0][0], results[1][0], rtol=1e-12, atol=1e-10)
    for a, b in zip(results[0][1], results[1][1]):
        torch.testing.assert_close(a, b, rtol=1e-9, atol=1e-10)


def test_log1mexp_derivative_used_in_backward():
    """The fused backward uses d/da log(1 - e^-a) = 1/expm1(a): check against autograd of log1mexp."""
    a = torch.tensor([1e-6, 0.3, 0.69, 0.7, 5.0, 40.0], dtype=DTYPE, requires_grad=True)
    (grad,) = torch.autograd.grad(log1mexp(a).sum(), a)
    torch.testing.assert_close(grad, 1.0 / torch.expm1(a.detach()))


def test_lower_bound_negative_term_and_inactive_sums_match_dense():
    from noisyor_bench.models.noisyor.jj_lower import PositiveEntries, inactive_sum, lb_negative_term

    x, model, g = _data()
    pos = PositiveEntries.of(x)
    torch.testing.assert_close(inactive_sum(model.theta, pos, x.shape[0]), (1 - x) @ model.theta)
    torch.testing.assert_close(inactive_sum(model.theta0, pos, x.shape[0]), (1 - x) @ model.theta0)
    q = torch.rand((x.shape[0], model.K), generator=g, dtype=DTYPE)
    torch.testing.assert_close(lb_negative_term(model, pos, q), negative_term(model, x, q))
