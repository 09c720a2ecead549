"""Sparse matrix products on a fixed sparsity pattern: the primitives behind every active-entry path.

Two models of the benchmark score mostly-zero data: noisy-OR's binary observations
(:mod:`noisyor_bench.models.noisyor.sparse`) and the topic models' word counts (aviPAM,
:mod:`noisyor_bench.inference.topics.avipam`; 2.8% of 20 Newsgroups' document-word cells are
non-zero).  Both need the same two adjoint products on the pattern of the data, held as a CSR
pattern (:class:`CsrPattern`) and run by the backend's sparse kernels (MKL on the CPU, cuSPARSE
on CUDA):

* :func:`spmm` -- ``S(w) @ B``: the sparse matrix with values ``w`` at the pattern's entries
  times a dense matrix (an encoder's input layer ``x @ W``);
* :func:`sddmm` -- ``(A @ B^T)`` sampled at the pattern's entries (a likelihood's rates or word
  probabilities where the data are non-zero).

The gradient of each is the other (and its transpose).  :func:`select_rows` cuts a minibatch's
pattern out of a corpus held in CSR form without touching its zeros.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import torch


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


def row_pointers(index: torch.Tensor, n: int) -> torch.Tensor:
    counts = torch.bincount(index, minlength=n)
    crow = torch.zeros(n + 1, dtype=torch.long, device=index.device)
    torch.cumsum(counts, 0, out=crow[1:])
    return crow


def pattern_from_entries(row: torch.Tensor, col: torch.Tensor, n_rows: int, n_cols: int) -> CsrPattern:
    """From row-major ``(row, col)`` lists."""
    t_perm = torch.argsort(col, stable=True)
    return CsrPattern(
        crow=row_pointers(row, n_rows),
        col=col,
        row=row,
        t_crow=row_pointers(col, n_cols),
        t_col=row[t_perm],
        t_perm=t_perm,
        n_rows=n_rows,
        n_cols=n_cols,
    )


def replicate_pattern(p: CsrPattern, copies: int) -> CsrPattern:
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


def select_rows(
    crow: torch.Tensor, col: torch.Tensor, values: torch.Tensor, rows: torch.Tensor, n_cols: int
) -> tuple[CsrPattern, torch.Tensor]:
    """The pattern and values of ``rows`` (in that order) of the CSR matrix ``(crow, col, values)``.

    Costs O(entries of the chosen rows) plus the stable sort of their columns (the transpose):
    a minibatch of 200 documents of 20 Newsgroups is ~15,000 entries, not 400,000 cells."""
    rows = rows.to(crow.device)
    counts = crow[1:][rows] - crow[:-1][rows]
    new_row = torch.repeat_interleave(torch.arange(rows.shape[0], device=rows.device), counts)
    new_crow = row_pointers(new_row, int(rows.shape[0]))
    entry = (
        crow[:-1][rows][new_row] + torch.arange(new_row.shape[0], device=rows.device) - new_crow[:-1][new_row]
    )
    return pattern_from_entries(new_row, col[entry], int(rows.shape[0]), int(n_cols)), values[entry]


# ---------------------------------------------------------------------------- primitives
def sddmm_values(p: CsrPattern, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``a[row_j] . b[col_j]`` for every entry j: (nnz,)."""
    if p.nnz == 0:
        return a.new_zeros(0)
    mask = p.matrix(a.new_zeros(p.nnz))
    return torch.sparse.sampled_addmm(mask, a.contiguous(), b.t(), beta=0.0).values()


def spmm_values(
    p: CsrPattern, values: torch.Tensor, b: torch.Tensor, transpose: bool = False
) -> torch.Tensor:
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
        return spmm_values(p, values, b)

    @staticmethod
    def backward(ctx, grad: torch.Tensor):  # type: ignore[override]
        values, b = ctx.saved_tensors
        g_values = sddmm_values(ctx.p, grad, b) if ctx.needs_input_grad[0] else None
        g_b = spmm_values(ctx.p, values, grad, transpose=True) if ctx.needs_input_grad[1] else None
        return g_values, g_b, None


class _SDDMM(torch.autograd.Function):
    """``v_j = a[row_j] . b[col_j]``: (nnz,).  d a = S(d v) @ b; d b = S(d v)^T @ a."""

    @staticmethod
    def forward(ctx, a: torch.Tensor, b: torch.Tensor, p: CsrPattern) -> torch.Tensor:  # type: ignore[override]
        ctx.save_for_backward(a, b)
        ctx.p = p
        return sddmm_values(p, a, b)

    @staticmethod
    def backward(ctx, grad: torch.Tensor):  # type: ignore[override]
        a, b = ctx.saved_tensors
        g_a = spmm_values(ctx.p, grad, b) if ctx.needs_input_grad[0] else None
        g_b = spmm_values(ctx.p, grad, a, transpose=True) if ctx.needs_input_grad[1] else None
        return g_a, g_b, None


def spmm(p: CsrPattern, values: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``S(values) @ b``, differentiable in ``values`` (nnz,) and ``b`` (n_cols, C)."""
    return _SpMM.apply(values, b, p)


def sddmm(p: CsrPattern, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``(a @ b^T)`` at the pattern's entries (nnz,), differentiable in ``a`` (n_rows, C) and ``b`` (n_cols, C)."""
    return _SDDMM.apply(a, b, p)


__all__ = [
    "CsrPattern",
    "pattern_from_entries",
    "replicate_pattern",
    "row_pointers",
    "sddmm",
    "sddmm_values",
    "select_rows",
    "spmm",
    "spmm_values",
]
