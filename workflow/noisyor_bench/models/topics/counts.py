"""A corpus's document-word counts on the device, and its minibatches: dense, or only the non-zeros.

The text corpora are 97-98% zeros (20 Newsgroups: 2.8% of the document-word cells are non-zero,
the NIPS corpus 2.3%).  A topic model's encoder reads the counts through a linear layer and its
likelihood ``sum_v x_v log p_v`` weighs each word by its count, so both need only the non-zero
cells: an SpMM of the counts against the layer's rows and the word probabilities at those cells
(:mod:`noisyor_bench.models.sparse`).  :class:`CountRows` holds a corpus in CSR form when it is
sparse enough (:data:`SPARSE_MAX_DENSITY`) and hands out :class:`SparseCounts` batches; denser
data (the MNIST stand-in, 17%) stay one dense tensor, whose rows are plain tensors.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
import torch
from torch import nn

from noisyor_bench.infra.errors import DataError
from noisyor_bench.models.sparse import CsrPattern, replicate_pattern, select_rows, spmm

SPARSE_MAX_DENSITY = 0.1
"""Hold a corpus as its non-zero counts when at most this fraction of its cells is non-zero.

Measured on one core of the 2-core AMD EPYC (aviPAM's 4-PAM step, batch 200): the non-zero path
is faster at 20 Newsgroups' 2.8% (``docs/performance.md``, floor benchmark) and slower at the
MNIST stand-in's 17%, where the dense products run at full BLAS rate."""


@dataclass(frozen=True)
class SparseCounts:
    """A minibatch of documents as its non-zero counts: ``values[j]`` at ``pattern``'s entry ``j``."""

    pattern: CsrPattern
    values: torch.Tensor

    @property
    def shape(self) -> tuple[int, int]:
        """``(documents, vocabulary)``, as the dense matrix's."""
        return (self.pattern.n_rows, self.pattern.n_cols)

    def matmul(self, weight: torch.Tensor) -> torch.Tensor:
        """``counts @ weight`` for ``weight (V, H)``: ``(B, H)``, differentiable in ``weight``."""
        return spmm(self.pattern, self.values, weight)

    def replicated(self, copies: int) -> tuple[CsrPattern, torch.Tensor]:
        """The pattern stacked ``copies`` times (row ``l * B + d``) and the values repeated alike."""
        if copies == 1:
            return self.pattern, self.values
        return replicate_pattern(self.pattern, copies), self.values.repeat(copies)

    def to_dense(self) -> torch.Tensor:
        """The ``(B, V)`` dense counts (tests, diagnostics)."""
        return self.pattern.matrix(self.values).to_dense()


Batch = torch.Tensor | SparseCounts


class CountsLinear(nn.Module):
    """An encoder's first layer, ``counts @ weight + bias``, its ``weight`` stored ``(V, H)``:
    a sparse batch is one SpMM against the rows of its words, with no transposed copy of the
    ``V x H`` matrix in either pass (``nn.Linear`` stores ``(H, V)``)."""

    def __init__(self, n_in: int, n_out: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.empty(n_in, n_out))
        self.bias = nn.Parameter(torch.zeros(n_out))

    def initialise(self, generator: torch.Generator) -> None:
        """Glorot-uniform weight drawn as ``nn.Linear``'s ``(H, V)`` matrix would be (the same
        numbers from the same generator state, stored transposed), zero bias."""
        drawn = torch.empty(self.weight.shape[::-1], dtype=self.weight.dtype, device=self.weight.device)
        nn.init.xavier_uniform_(drawn, generator=generator)
        with torch.no_grad():
            self.weight.copy_(drawn.t())
            self.bias.zero_()

    def forward(self, counts: Batch) -> torch.Tensor:
        if isinstance(counts, SparseCounts):
            return counts.matmul(self.weight) + self.bias
        return torch.addmm(self.bias, counts, self.weight)


@dataclass(frozen=True)
class CountRows:
    """A corpus on the device: ``dense (D, V)``, or CSR arrays ``crow, col, values``."""

    n_docs: int
    n_words: int
    dense: torch.Tensor | None = None
    crow: torch.Tensor | None = None
    col: torch.Tensor | None = None
    values: torch.Tensor | None = None

    @classmethod
    def of(
        cls,
        counts: np.ndarray | sp.spmatrix | torch.Tensor | CountRows,
        dtype: torch.dtype,
        device: torch.device | str,
        max_density: float | None = None,
    ) -> CountRows:
        """From a ``(documents x vocabulary)`` matrix of finite non-negative counts; DataError for
        anything else.  CSR when at most ``max_density`` (default :data:`SPARSE_MAX_DENSITY`) of
        its cells are non-zero."""
        if max_density is None:
            max_density = SPARSE_MAX_DENSITY
        if isinstance(counts, CountRows):
            return counts
        if isinstance(counts, torch.Tensor):
            counts = counts.detach().cpu().numpy()
        matrix = sp.csr_matrix(counts, copy=True)  # cleaned below: never the caller's matrix
        if matrix.ndim != 2:
            raise DataError(f"counts must be a (documents x vocabulary) matrix; got shape {matrix.shape}")
        matrix.sum_duplicates()
        matrix.eliminate_zeros()
        data = np.asarray(matrix.data, dtype=np.float64)
        if not np.isfinite(data).all() or (data < 0).any():
            raise DataError("counts must be finite and non-negative")
        n_docs, n_words = (int(s) for s in matrix.shape)
        cells = n_docs * n_words
        if cells and matrix.nnz / cells > max_density:
            dense = torch.as_tensor(matrix.toarray()).to(device=device, dtype=dtype)
            return cls(n_docs, n_words, dense=dense)
        matrix.sort_indices()
        return cls(
            n_docs,
            n_words,
            crow=torch.as_tensor(matrix.indptr.astype(np.int64), device=device),
            col=torch.as_tensor(matrix.indices.astype(np.int64), device=device),
            values=torch.as_tensor(data, device=device, dtype=dtype),
        )

    @property
    def sparse(self) -> bool:
        """Whether the rows are handed out as :class:`SparseCounts`."""
        return self.dense is None

    @property
    def shape(self) -> tuple[int, int]:
        return (self.n_docs, self.n_words)

    @property
    def device(self) -> torch.device:
        return (self.dense if self.dense is not None else self.values).device  # type: ignore[union-attr]

    def take(self, rows: torch.Tensor) -> Batch:
        """The documents ``rows`` (in that order): a tensor, or their non-zero counts."""
        if self.dense is not None:
            return self.dense.index_select(0, rows.to(self.dense.device))
        assert self.crow is not None and self.col is not None and self.values is not None
        pattern, values = select_rows(self.crow, self.col, self.values, rows, self.n_words)
        return SparseCounts(pattern, values)

    def chunks(self, size: int) -> Iterator[Batch]:
        """Consecutive blocks of at most ``size`` documents, in order."""
        for start in range(0, self.n_docs, size):
            yield self.take(torch.arange(start, min(start + size, self.n_docs), device=self.device))

    def total(self) -> float:
        """The number of tokens (the sum of all counts)."""
        source = self.dense if self.dense is not None else self.values
        return float(source.sum())  # type: ignore[union-attr]


__all__ = ["SPARSE_MAX_DENSITY", "Batch", "CountRows", "CountsLinear", "SparseCounts"]
