"""Computation on the active (``x_i = 1``) observations only.

The benchmark's data are 72-98% zeros (NeurIPS titles: ~5 words of ~1,300).  In the ELBO
(eq. 16) every zero observation enters linearly, so its contribution follows from column sums:

    sum_{i: x_i=0} a_i(q) = sum_i a_i(q) - sum_{i: x_i=1} a_i(q),

and only the positive term ``sum_{i: x_i=1} E_q[log(1 - exp(-a_i(z)))]`` needs Monte Carlo
samples.  With the rates evaluated at the active entries only, a minibatch of B points with
``nnz`` active entries costs O(L * nnz * K) instead of O(L * B * D * K).

:class:`ActiveSet` stores the active columns of each row, padded to the batch's largest
count ``M`` (a rectangular ``(N, M)`` layout turns the per-row products into one batched
matrix product).  :func:`positive_loglik` is a fused autograd function: the forward pass
evaluates ``log1mexp`` at the active entries, the backward pass applies its derivative
``1 / expm1(a)`` and scatters the gradient of ``theta`` back with ``index_add_``.  The dense
formulas in :mod:`noisyor_bench.model` / :mod:`noisyor_bench.elbo` are the reference the
tests compare this module against (values and gradients, float64).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from .model import log1mexp

SPARSE_MAX_DENSITY = 0.25
"""Use the active-entry positive term when at most this fraction of a batch's entries is 1.

Measured on a 2-core CPU (``make bench``): the batched (L x K) @ (K x M) products run at a
lower FLOP rate than one large dense product, so above ~25-30% density the dense path is as
fast or faster (syn-random-2/3, half of whose entries are ones).
"""

LINEAR_MAX_DENSITY = 0.03
"""Compute the terms linear in ``x`` (encoder input layer, ``x @ theta``, ACP's eq. 11) from the
active entries only below this density.

These terms cost O(N * D * K) dense -- a factor L = 10 less than the positive term -- and one
dense matrix product is fast; gathering rows and scattering their gradients back only pays
when very few entries are active (NeurIPS titles: 0.4%, syn-random-4: 1.6%), not at the
5-20% of most synthetic sets (measured with ``make bench``).
"""


@dataclass(frozen=True)
class ActiveSet:
    """The active columns of each row of a binary ``(N, D)`` matrix.

    ``index``: (N, M) columns with ``x_ni = 1`` first (ascending), the rest of each row padded
    with column 0 and ``mask`` False; ``mask``: (N, M); ``n_features``: D.  ``M`` is the
    largest row count, so the layout costs ``N * M`` slots for ``nnz`` active entries.
    """

    index: torch.Tensor
    mask: torch.Tensor
    n_features: int
    nnz: int

    @classmethod
    def of(cls, x: torch.Tensor) -> "ActiveSet":
        """From a dense 0/1 matrix (any dtype; entries > 0 are active)."""
        if x.ndim != 2:
            raise ValueError(f"x must be a matrix (N, D); got shape {tuple(x.shape)}")
        rows, cols = torch.nonzero(x > 0, as_tuple=True)  # row-major: each row's columns ascending
        n = int(x.shape[0])
        counts = torch.bincount(rows, minlength=n)
        width = int(counts.max()) if n else 0
        starts = torch.cumsum(counts, 0) - counts
        slot = torch.arange(rows.shape[0], device=x.device) - starts[rows]
        order = torch.zeros((n, width), dtype=torch.long, device=x.device)
        order[rows, slot] = cols  # padding slots keep column 0, masked out below
        mask = torch.arange(width, device=x.device) < counts.unsqueeze(1)
        return cls(index=order, mask=mask, n_features=int(x.shape[1]), nnz=int(rows.shape[0]))

    @property
    def n_rows(self) -> int:
        return int(self.index.shape[0])

    @property
    def width(self) -> int:
        return int(self.index.shape[1])

    def density(self) -> float:
        """Fraction of active entries, ``nnz / (N * D)``."""
        cells = self.n_rows * self.n_features
        return self.nnz / cells if cells else 0.0

    @property
    def sparse_linear(self) -> bool:
        """Whether the terms linear in ``x`` should use the active entries (:data:`LINEAR_MAX_DENSITY`)."""
        return self.density() <= LINEAR_MAX_DENSITY

    def select(self, rows: torch.Tensor | slice) -> "ActiveSet":
        """The rows ``rows``, trimmed to their own largest count."""
        index, mask = self.index[rows], self.mask[rows]
        counts = mask.sum(1)
        width = int(counts.max()) if mask.shape[0] else 0
        return ActiveSet(index[:, :width].contiguous(), mask[:, :width].contiguous(), self.n_features, int(counts.sum()))

    def gather(self, values: torch.Tensor) -> torch.Tensor:
        """``values[index]`` for a per-feature tensor (D, ...): (N, M, ...), padding included."""
        flat = values.index_select(0, self.index.reshape(-1))
        return flat.view(self.n_rows, self.width, *values.shape[1:])

    def row_sum(self, values: torch.Tensor) -> torch.Tensor:
        """``sum_{i: x_ni=1} values[i]`` per row, for values (D,) or (D, C): (N,) or (N, C).

        Equals ``x @ values``; differentiable in ``values``.
        """
        if values.ndim == 1:
            return active_matmul(self, values.unsqueeze(-1)).squeeze(-1)
        return active_matmul(self, values)


def wants_sparse(x: torch.Tensor) -> bool:
    """Whether a batch is sparse enough for the active-entry path (:data:`SPARSE_MAX_DENSITY`)."""
    return x.numel() > 0 and float((x > 0).sum()) <= SPARSE_MAX_DENSITY * x.numel()


# ---------------------------------------------------------------------------- positive term
class _PositiveLogLik(torch.autograd.Function):
    """``sum_{i: x_ni=1} log(1 - exp(-a_lni))`` with ``a_lni = theta0_i + z_ln . theta_i``: (L, N)."""

    @staticmethod
    def forward(  # type: ignore[override]
        ctx, z: torch.Tensor, theta: torch.Tensor, theta0: torch.Tensor, index: torch.Tensor, mask: torch.Tensor
    ) -> torch.Tensor:
        n, m = index.shape
        flat = index.reshape(-1)
        theta_rows = theta.index_select(0, flat).view(n, m, -1)  # (N, M, K)
        leak = theta0.index_select(0, flat).view(n, 1, m)
        z_rows = z.transpose(0, 1)  # (N, L, K)
        rates = torch.baddbmm(leak, z_rows, theta_rows.transpose(1, 2))  # (N, L, M)
        keep = mask.unsqueeze(1)
        rates = torch.where(keep, rates, torch.ones_like(rates))  # padding: any finite rate
        terms = log1mexp(rates).masked_fill_(~keep, 0.0)
        ctx.save_for_backward(z_rows, theta_rows, rates, index, mask)
        ctx.shapes = (theta.shape, theta0.shape)
        return terms.sum(-1).transpose(0, 1)

    @staticmethod
    def backward(ctx, grad_out: torch.Tensor):  # type: ignore[override]
        z_rows, theta_rows, rates, index, mask = ctx.saved_tensors
        theta_shape, theta0_shape = ctx.shapes
        # d/da log(1 - exp(-a)) = exp(-a) / (1 - exp(-a)) = 1 / expm1(a)
        grad_rates = grad_out.transpose(0, 1).unsqueeze(-1) / torch.expm1(rates)
        grad_rates = grad_rates.masked_fill_(~mask.unsqueeze(1), 0.0)  # (N, L, M)
        flat = index.reshape(-1)
        grad_z = grad_theta = grad_theta0 = None
        if ctx.needs_input_grad[0]:
            grad_z = torch.bmm(grad_rates, theta_rows).transpose(0, 1)
        if ctx.needs_input_grad[1]:
            per_entry = torch.bmm(grad_rates.transpose(1, 2), z_rows)  # (N, M, K)
            grad_theta = per_entry.new_zeros(theta_shape).index_add_(0, flat, per_entry.reshape(flat.shape[0], -1))
        if ctx.needs_input_grad[2]:
            grad_theta0 = grad_rates.new_zeros(theta0_shape).index_add_(0, flat, grad_rates.sum(1).reshape(-1))
        return grad_z, grad_theta, grad_theta0, None, None


def positive_loglik(theta: torch.Tensor, theta0: torch.Tensor, z: torch.Tensor, active: ActiveSet) -> torch.Tensor:
    """``sum_{i: x_i=1} log(1 - exp(-a_i(z)))`` for samples ``z`` (L, N, K): (L, N).

    Differentiable in ``z``, ``theta`` and ``theta0``; O(L * N * M * K) for M active entries
    per row.
    """
    if z.ndim != 3 or z.shape[1] != active.n_rows:
        raise ValueError(f"z must have shape (L, {active.n_rows}, K); got {tuple(z.shape)}")
    if active.width == 0:
        return z.new_zeros(z.shape[:2]) + 0.0 * (theta.sum() + theta0.sum() + z.sum())
    return _PositiveLogLik.apply(z, theta, theta0, active.index, active.mask)


# ---------------------------------------------------------------------------- linear terms
class _ActiveMatmul(torch.autograd.Function):
    """``out_n = sum_m w_nm * mat[index_nm]`` (``w`` = mask, or mask * weights): (N, C)."""

    @staticmethod
    def forward(ctx, mat: torch.Tensor, weights: torch.Tensor, index: torch.Tensor) -> torch.Tensor:  # type: ignore[override]
        n, m = index.shape
        rows = mat.index_select(0, index.reshape(-1)).view(n, m, -1)  # (N, M, C)
        ctx.save_for_backward(rows if ctx.needs_input_grad[1] else None, weights, index)
        ctx.mat_shape = mat.shape
        return torch.bmm(weights.unsqueeze(1), rows).squeeze(1)

    @staticmethod
    def backward(ctx, grad_out: torch.Tensor):  # type: ignore[override]
        rows, weights, index = ctx.saved_tensors
        grad_mat = grad_weights = None
        flat = index.reshape(-1)
        if ctx.needs_input_grad[0]:
            per_entry = weights.unsqueeze(-1) * grad_out.unsqueeze(1)  # (N, M, C)
            grad_mat = per_entry.new_zeros(ctx.mat_shape).index_add_(0, flat, per_entry.reshape(flat.shape[0], -1))
        if ctx.needs_input_grad[1]:
            grad_weights = torch.bmm(rows, grad_out.unsqueeze(-1)).squeeze(-1)
        return grad_mat, grad_weights, None


def active_matmul(active: ActiveSet, mat: torch.Tensor, weights: torch.Tensor | None = None) -> torch.Tensor:
    """``(x * w) @ mat`` with ``x`` the binary matrix of ``active``: (N, C).

    ``weights``: (N, M) per active entry (``None`` = 1), e.g. ACP's ``psi_i + 1`` (eq. 11);
    padding slots are ignored whatever their weight.
    """
    w = active.mask.to(mat.dtype)
    if weights is not None:
        w = w * weights
    if active.width == 0:
        return mat.new_zeros((active.n_rows, mat.shape[1])) + 0.0 * mat.sum()
    return _ActiveMatmul.apply(mat, w, active.index)


def active_linear(active: ActiveSet, linear: torch.nn.Linear) -> torch.Tensor:
    """``linear(x)`` from the active entries: ``b + sum_{i: x_i=1} W[:, i]``: (N, out)."""
    return active_matmul(active, linear.weight.t()) + linear.bias


def linear_at_active(active: ActiveSet, h: torch.Tensor, linear: torch.nn.Linear) -> torch.Tensor:
    """Outputs ``linear(h)[n, i]`` at the active entries only: (N, M) (padding slots arbitrary).

    For an output layer with one unit per observation (ACP's ``psi``) only the active units
    are needed: O(N * M * H) instead of O(N * D * H).
    """
    weight_rows = active.gather(linear.weight)  # (N, M, H)
    return torch.bmm(weight_rows, h.unsqueeze(-1)).squeeze(-1) + active.gather(linear.bias)


__all__ = [
    "LINEAR_MAX_DENSITY",
    "SPARSE_MAX_DENSITY",
    "ActiveSet",
    "active_linear",
    "active_matmul",
    "linear_at_active",
    "positive_loglik",
    "wants_sparse",
]
