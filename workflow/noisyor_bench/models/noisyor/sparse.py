"""Computation on the active (``x_i = 1``) observations only.

The benchmark's data are 72-98% zeros (NeurIPS titles: ~5 words of ~1,300).  In the ELBO
(eq. 16) every zero observation enters linearly, so its contribution follows from column sums:

    sum_{i: x_i=0} a_i(q) = sum_i a_i(q) - sum_{i: x_i=1} a_i(q),

and only the positive term ``sum_{i: x_i=1} E_q[log(1 - exp(-a_i(z)))]`` needs Monte Carlo
samples.  With the rates evaluated at the active entries only, a minibatch of B points with
``nnz`` active entries costs O(L * nnz * K) instead of O(L * B * D * K).

Everything here is built from two adjoint primitives on the sparsity pattern of ``x``, held
as a CSR pattern (:class:`ActiveSet`) and executed by the sparse kernels of the backend (MKL
on CPU, cuSPARSE on CUDA):

* :func:`spmm` -- ``S(w) @ B``: the sparse matrix with values ``w`` at the active entries
  times a dense matrix (the encoder's input layer ``x @ W^T``, ACP's eq. 11, ``x @ theta``);
* :func:`sddmm` -- ``(A @ B^T)`` sampled at the active entries (the rates
  ``theta0_i + z_n . theta_i`` at ``x_ni = 1``, ACP's ``psi_i`` only where ``x_i = 1``).

The gradient of each is the other (and its transpose), so their autograd functions are four
lines each.  The dense formulas in :mod:`noisyor_bench.models.noisyor.model` / :mod:`noisyor_bench.models.noisyor.elbo` are
the reference the tests compare this module against (values and gradients, float64).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import torch

from noisyor_bench.models.noisyor.model import log1mexp

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
class CsrPattern:
    """The positions of a sparse ``(n_rows, n_cols)`` matrix in CSR order, and its transpose.

    ``crow`` (n_rows + 1) / ``col`` (nnz): row pointers and column of each entry, row-major;
    ``row`` (nnz): the row of each entry.  ``t_crow`` (n_cols + 1) / ``t_col`` (nnz): the
    transpose's CSR pattern; ``t_perm`` (nnz): the entry (row-major index) at each transposed
    position, so ``values[t_perm]`` are the transpose's values.
    """

    crow: torch.Tensor
    col: torch.Tensor
    row: torch.Tensor
    t_crow: torch.Tensor
    t_col: torch.Tensor
    t_perm: torch.Tensor
    n_rows: int
    n_cols: int

    @property
    def nnz(self) -> int:
        return int(self.col.shape[0])

    def matrix(self, values: torch.Tensor) -> torch.Tensor:
        """The CSR matrix with ``values`` (nnz,) at the pattern's entries."""
        return _csr(self.crow, self.col, values, (self.n_rows, self.n_cols))

    def matrix_t(self, values: torch.Tensor) -> torch.Tensor:
        """The transpose of :meth:`matrix`, again in CSR layout (row-parallel, deterministic)."""
        return _csr(self.t_crow, self.t_col, values[self.t_perm], (self.n_cols, self.n_rows))


def _csr(crow: torch.Tensor, col: torch.Tensor, values: torch.Tensor, size: tuple[int, int]) -> torch.Tensor:
    """A CSR tensor without PyTorch's per-call checks (the layout is built and validated here).

    CSR tensors are "beta" in PyTorch, which warns on first use; the warning is silenced here,
    around the construction only, rather than by a process-wide filter set at import.
    """
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Sparse CSR tensor support is in beta state")
        return torch.sparse_csr_tensor(crow, col, values, size, check_invariants=False)


def _pointers(index: torch.Tensor, n: int) -> torch.Tensor:
    counts = torch.bincount(index, minlength=n)
    crow = torch.zeros(n + 1, dtype=torch.long, device=index.device)
    torch.cumsum(counts, 0, out=crow[1:])
    return crow


def _pattern(row: torch.Tensor, col: torch.Tensor, n_rows: int, n_cols: int) -> CsrPattern:
    """From row-major ``(row, col)`` lists."""
    t_perm = torch.argsort(col, stable=True)
    return CsrPattern(
        crow=_pointers(row, n_rows),
        col=col,
        row=row,
        t_crow=_pointers(col, n_cols),
        t_col=row[t_perm],
        t_perm=t_perm,
        n_rows=n_rows,
        n_cols=n_cols,
    )


def _replicate(p: CsrPattern, copies: int) -> CsrPattern:
    """The pattern stacked ``copies`` times along the rows (row ``l * n_rows + n``).

    Used for L Monte Carlo samples of every row.  The transposed pattern follows from the
    base one without sorting: column ``i``'s entries, for copy ``l``, sit in a block of
    ``count_i`` slots starting at ``copies * t_crow[i] + l * count_i``.
    """
    nnz, dev = p.nnz, p.col.device
    offsets = torch.arange(copies, device=dev)
    row = (p.row.unsqueeze(0) + offsets.unsqueeze(1) * p.n_rows).reshape(-1)
    crow = torch.cat(
        [
            (p.crow[:-1].unsqueeze(0) + offsets.unsqueeze(1) * nnz).reshape(-1),
            p.crow.new_tensor([copies * nnz]),
        ]
    )
    t_col_base = p.t_col  # row of each transposed entry
    col_of_t = p.col[p.t_perm]  # column of each transposed entry
    count = (p.t_crow[1:] - p.t_crow[:-1])[col_of_t]
    within = torch.arange(nnz, device=dev) - p.t_crow[:-1][col_of_t]
    dest = (
        copies * p.t_crow[:-1][col_of_t].unsqueeze(0)
        + offsets.unsqueeze(1) * count.unsqueeze(0)
        + within.unsqueeze(0)
    )
    t_perm = torch.empty(copies * nnz, dtype=torch.long, device=dev)
    t_col = torch.empty(copies * nnz, dtype=torch.long, device=dev)
    t_perm[dest.reshape(-1)] = (offsets.unsqueeze(1) * nnz + p.t_perm.unsqueeze(0)).reshape(-1)
    t_col[dest.reshape(-1)] = (offsets.unsqueeze(1) * p.n_rows + t_col_base.unsqueeze(0)).reshape(-1)
    return CsrPattern(
        crow=crow,
        col=p.col.repeat(copies),
        row=row,
        t_crow=p.t_crow * copies,
        t_col=t_col,
        t_perm=t_perm,
        n_rows=copies * p.n_rows,
        n_cols=p.n_cols,
    )


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
        return cls(_pattern(row, col, int(x.shape[0]), int(x.shape[1])))

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
        new_crow = _pointers(new_row, int(rows.shape[0]))
        entry = starts[new_row] + torch.arange(new_row.shape[0], device=rows.device) - new_crow[:-1][new_row]
        return ActiveSet(_pattern(new_row, self.cols[entry], int(rows.shape[0]), self.n_features))

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
        return ActiveSet(_pattern(self.rows, col, self.n_rows, blocks * self.n_features))

    def replicated(self, copies: int) -> CsrPattern:
        """The pattern stacked ``copies`` times (rows ``l * N + n``), cached per ``copies``."""
        if copies not in self._replicas:
            self._replicas[copies] = _replicate(self.pattern, copies)
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


# ---------------------------------------------------------------------------- primitives
def _sddmm_raw(p: CsrPattern, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``a[row_j] . b[col_j]`` for every entry j: (nnz,)."""
    if p.nnz == 0:
        return a.new_zeros(0)
    mask = p.matrix(a.new_zeros(p.nnz))
    return torch.sparse.sampled_addmm(mask, a.contiguous(), b.t(), beta=0.0).values()


def _spmm_raw(p: CsrPattern, values: torch.Tensor, b: torch.Tensor, transpose: bool = False) -> torch.Tensor:
    """``S(values) @ b`` (or ``S(values)^T @ b``) with S the pattern's sparse matrix."""
    rows = p.n_cols if transpose else p.n_rows
    if p.nnz == 0:
        return b.new_zeros((rows, b.shape[1]))
    s = p.matrix_t(values) if transpose else p.matrix(values)
    return torch.sparse.mm(s, b.contiguous())


class _SpMM(torch.autograd.Function):
    """``out = S(values) @ b``: (R, C).  d values = sddmm(d out, b); d b = S(values)^T @ d out."""

    @staticmethod
    def forward(ctx, values: torch.Tensor, b: torch.Tensor, p: CsrPattern) -> torch.Tensor:  # type: ignore[override]
        ctx.save_for_backward(values, b)
        ctx.p = p
        return _spmm_raw(p, values, b)

    @staticmethod
    def backward(ctx, grad: torch.Tensor):  # type: ignore[override]
        values, b = ctx.saved_tensors
        g_values = _sddmm_raw(ctx.p, grad, b) if ctx.needs_input_grad[0] else None
        g_b = _spmm_raw(ctx.p, values, grad, transpose=True) if ctx.needs_input_grad[1] else None
        return g_values, g_b, None


class _SDDMM(torch.autograd.Function):
    """``v_j = a[row_j] . b[col_j]``: (nnz,).  d a = S(d v) @ b; d b = S(d v)^T @ a."""

    @staticmethod
    def forward(ctx, a: torch.Tensor, b: torch.Tensor, p: CsrPattern) -> torch.Tensor:  # type: ignore[override]
        ctx.save_for_backward(a, b)
        ctx.p = p
        return _sddmm_raw(p, a, b)

    @staticmethod
    def backward(ctx, grad: torch.Tensor):  # type: ignore[override]
        a, b = ctx.saved_tensors
        g_a = _spmm_raw(ctx.p, grad, b) if ctx.needs_input_grad[0] else None
        g_b = _spmm_raw(ctx.p, grad, a, transpose=True) if ctx.needs_input_grad[1] else None
        return g_a, g_b, None


def spmm(p: CsrPattern, values: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``S(values) @ b``, differentiable in ``values`` (nnz,) and ``b`` (n_cols, C)."""
    return _SpMM.apply(values, b, p)


def sddmm(p: CsrPattern, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``(a @ b^T)`` at the pattern's entries (nnz,), differentiable in ``a`` (n_rows, C) and ``b`` (n_cols, C)."""
    return _SDDMM.apply(a, b, p)


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
    "CsrPattern",
    "active_linear",
    "active_matmul",
    "linear_at_active",
    "positive_loglik",
    "sddmm",
    "spmm",
    "wants_sparse",
]
