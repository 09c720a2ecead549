"""Computation on the active (``x_i = 1``) observations only.

The benchmark's data are 72-98% zeros (NeurIPS titles: ~5 words of ~1,300).  In the ELBO
(eq. 16) every zero observation enters linearly, so its contribution follows from column sums:

    sum_{i: x_i=0} a_i(q) = sum_i a_i(q) - sum_{i: x_i=1} a_i(q),

and only the positive term ``sum_{i: x_i=1} E_q[log(1 - exp(-a_i(z)))]`` needs Monte Carlo
samples.  With the rates evaluated at the active entries only, a minibatch of B points with
``nnz`` active entries costs O(L * nnz * K) instead of O(L * B * D * K).

Everything here is built from the two adjoint primitives of :mod:`noisyor_bench.models.sparse`
on the sparsity pattern of ``x`` (:class:`ActiveSet`):

* ``spmm`` -- ``S(w) @ B``: the sparse matrix with values ``w`` at the active entries
  times a dense matrix (the encoder's input layer ``x @ W^T``, ACP's eq. 11, ``x @ theta``);
* ``sddmm`` -- ``(A @ B^T)`` sampled at the active entries (the rates
  ``theta0_i + z_n . theta_i`` at ``x_ni = 1``, ACP's ``psi_i`` only where ``x_i = 1``).

The dense formulas in :mod:`noisyor_bench.models.noisyor.model` / :mod:`noisyor_bench.models.noisyor.elbo` are
the reference the tests compare this module against (values and gradients, float64).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from noisyor_bench.models.noisyor.model import log1mexp
from noisyor_bench.models.sparse import (
    CsrPattern,
    pattern_from_entries,
    replicate_pattern,
    row_pointers,
    sddmm,
    spmm,
)

SPARSE_MAX_DENSITY = 0.25
"""Use the active-entry positive term when at most this fraction of a batch's entries is 1.

Above ~25-30% density one dense product is as fast (syn-random-2/3, half of whose entries
are ones; measured with ``make bench-throughput``).
"""

LINEAR_MAX_DENSITY = 0.25
"""Compute the terms linear in ``x`` (encoder input layer, ``x @ theta``, ACP's eq. 11) from the
active entries below this density.  With the CSR kernels the sparse product beats the dense
one on every benchmark dataset up to this density (``make bench-throughput``; 1.6x at 10% density)."""


@dataclass(frozen=True)
class ActiveSet:
    """The active entries (``x_ni = 1``) of a binary ``(N, D)`` matrix, as a CSR pattern.

    ``pattern`` lists them row-major (each row's columns ascending); its transpose and the
    L-fold replicated pattern of the Monte Carlo samples are built on first use and cached.
    """

    pattern: CsrPattern
    _replicas: dict[int, CsrPattern] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def of(cls, x: torch.Tensor) -> ActiveSet:
        """From a dense 0/1 matrix (any dtype; entries > 0 are active)."""
        if x.ndim != 2:
            raise ValueError(f"x must be a matrix (N, D); got shape {tuple(x.shape)}")
        row, col = torch.nonzero(x > 0, as_tuple=True)  # row-major: each row's columns ascending
        return cls(pattern_from_entries(row, col, int(x.shape[0]), int(x.shape[1])))

    # ------------------------------------------------------------------ shape
    @property
    def n_rows(self) -> int:
        return self.pattern.n_rows

    @property
    def n_features(self) -> int:
        return self.pattern.n_cols

    @property
    def nnz(self) -> int:
        return self.pattern.nnz

    @property
    def counts(self) -> torch.Tensor:
        """Active entries per row: (N,)."""
        return self.pattern.crow[1:] - self.pattern.crow[:-1]

    @property
    def width(self) -> int:
        """The largest number of active entries in a row."""
        return int(self.counts.max()) if self.n_rows else 0

    @property
    def rows(self) -> torch.Tensor:
        """Row of each active entry (nnz,), row-major."""
        return self.pattern.row

    @property
    def cols(self) -> torch.Tensor:
        """Column of each active entry (nnz,), row-major."""
        return self.pattern.col

    def density(self) -> float:
        """Fraction of active entries, ``nnz / (N * D)``."""
        cells = self.n_rows * self.n_features
        return self.nnz / cells if cells else 0.0

    @property
    def sparse_linear(self) -> bool:
        """Whether the terms linear in ``x`` should use the active entries (:data:`LINEAR_MAX_DENSITY`)."""
        return self.density() <= LINEAR_MAX_DENSITY

    # ------------------------------------------------------------------ derived sets
    def select(self, rows: torch.Tensor | slice) -> ActiveSet:
        """The active entries of the rows ``rows`` (in that order)."""
        if isinstance(rows, slice):
            rows = torch.arange(self.n_rows, device=self.cols.device)[rows]
        rows = rows.to(self.cols.device)
        counts = self.counts[rows]
        starts = self.pattern.crow[:-1][rows]
        new_row = torch.repeat_interleave(torch.arange(rows.shape[0], device=rows.device), counts)
        new_crow = row_pointers(new_row, int(rows.shape[0]))
        entry = starts[new_row] + torch.arange(new_row.shape[0], device=rows.device) - new_crow[:-1][new_row]
        return ActiveSet(pattern_from_entries(new_row, self.cols[entry], int(rows.shape[0]), self.n_features))

    def block_diagonal(self, blocks: int) -> ActiveSet:
        """The rows cut into ``blocks`` consecutive blocks of equal size, block ``b``'s columns
        shifted by ``b * n_features``: a ``(N, blocks * D)`` block-diagonal pattern.

        R runs stacked as ``(R * B)`` rows against their parameters stacked as ``(R * D, K)``
        then evaluate :func:`positive_loglik` of every run in one call: an entry of run ``r``
        only meets run ``r``'s rows of ``theta``.
        """
        if blocks < 1 or self.n_rows % blocks:
            raise ValueError(f"cannot cut {self.n_rows} rows into {blocks} equal blocks")
        size = self.n_rows // blocks
        col = self.cols + torch.div(self.rows, size, rounding_mode="floor") * self.n_features
        return ActiveSet(pattern_from_entries(self.rows, col, self.n_rows, blocks * self.n_features))

    def replicated(self, copies: int) -> CsrPattern:
        """The pattern stacked ``copies`` times (rows ``l * N + n``), cached per ``copies``."""
        if copies not in self._replicas:
            self._replicas[copies] = replicate_pattern(self.pattern, copies)
        return self._replicas[copies]

    def padded(self) -> tuple[torch.Tensor, torch.Tensor]:
        """``(index, mask)``: each row's active columns padded to :attr:`width` (for inspection)."""
        width = self.width
        slot = torch.arange(self.nnz, device=self.cols.device) - self.pattern.crow[:-1][self.rows]
        index = torch.zeros((self.n_rows, width), dtype=torch.long, device=self.cols.device)
        index[self.rows, slot] = self.cols
        mask = torch.arange(width, device=self.cols.device) < self.counts.unsqueeze(1)
        return index, mask

    def row_sum(self, values: torch.Tensor) -> torch.Tensor:
        """``sum_{i: x_ni=1} values[i]`` per row, for values (D,) or (D, C): (N,) or (N, C).

        Equals ``x @ values``; differentiable in ``values``.
        """
        if values.ndim == 1:
            return active_matmul(self, values.unsqueeze(-1)).squeeze(-1)
        return active_matmul(self, values)


def wants_sparse(x: torch.Tensor) -> bool:
    """Whether a batch is sparse enough for the active-entry path (:data:`SPARSE_MAX_DENSITY`)."""
    return x.numel() > 0 and int(torch.count_nonzero(x)) <= SPARSE_MAX_DENSITY * x.numel()


class _Log1mexp(torch.autograd.Function):
    """``log(1 - exp(-a))`` with the backward ``1 / expm1(a)`` in one kernel (no branch bookkeeping)."""

    @staticmethod
    def forward(ctx, a: torch.Tensor) -> torch.Tensor:  # type: ignore[override]
        ctx.save_for_backward(a)
        return log1mexp(a)

    @staticmethod
    def backward(ctx, grad: torch.Tensor):  # type: ignore[override]
        (a,) = ctx.saved_tensors
        return grad / torch.expm1(a)


# ---------------------------------------------------------------------------- model terms
def positive_loglik(
    theta: torch.Tensor, theta0: torch.Tensor, z: torch.Tensor, active: ActiveSet
) -> torch.Tensor:
    """``sum_{i: x_i=1} log(1 - exp(-a_i(z)))`` for samples ``z`` (L, N, K): (L, N).

    The rates ``a_i = theta0_i + z . theta_i`` are evaluated at the active entries of every
    sample (an SDDMM over the L-fold replicated pattern): O(L * nnz * K).  Differentiable in
    ``z``, ``theta`` and ``theta0``.
    """
    if z.ndim != 3 or z.shape[1] != active.n_rows:
        raise ValueError(f"z must have shape (L, {active.n_rows}, K); got {tuple(z.shape)}")
    n_samples, n, k = z.shape
    if active.nnz == 0:
        return z.new_zeros(z.shape[:2]) + 0.0 * (theta.sum() + theta0.sum() + z.sum())
    p = active.replicated(n_samples)
    rates = sddmm(p, z.reshape(n_samples * n, k), theta) + theta0[p.col]
    terms = _Log1mexp.apply(rates)
    out = terms.new_zeros(n_samples * n).index_add(0, p.row, terms)
    return out.view(n_samples, n)


def active_matmul(active: ActiveSet, mat: torch.Tensor, weights: torch.Tensor | None = None) -> torch.Tensor:
    """``(x * w) @ mat`` with ``x`` the binary matrix of ``active``: (N, C).

    ``weights``: (nnz,) one per active entry in row-major order (``None`` = 1), e.g. ACP's
    ``psi_i + 1`` (eq. 11).
    """
    w = mat.new_ones(active.nnz) if weights is None else weights
    return spmm(active.pattern, w, mat)


def active_linear(active: ActiveSet, linear: torch.nn.Linear) -> torch.Tensor:
    """``linear(x)`` from the active entries: ``b + sum_{i: x_i=1} W[:, i]``: (N, out)."""
    return active_matmul(active, linear.weight.t()) + linear.bias


def linear_at_active(active: ActiveSet, h: torch.Tensor, linear: torch.nn.Linear) -> torch.Tensor:
    """Outputs ``linear(h)[n, i]`` at the active entries only: (nnz,), row-major.

    For an output layer with one unit per observation (ACP's ``psi``) only the active units
    are needed: O(nnz * H) instead of O(N * D * H).
    """
    return sddmm(active.pattern, h, linear.weight) + linear.bias[active.cols]


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
