"""The normalisations of aviPAM's Section 4.1: on the encoder outputs and on the topic matrix.

Encoder outputs (the mean and log-variance heads of every level), :data:`OUTPUT_NORMS`:

* ``"batchnorm"`` -- batch normalisation (Ioffe & Szegedy 2015) *with gain*, as the paper's eq. 5:
  ``gamma * (x - mean_batch) / sqrt(var_batch + eps) + shift``, per output unit; running
  statistics at evaluation time (PyTorch's convention).
* ``"batchnorm-nogain"`` -- AVITM's code: TensorFlow's ``batch_norm`` defaults (centre and a
  learned shift, ``scale=False``: no gain), for the ablation of the gain the paper credits.
* ``"norm"`` -- the paper's control: "replace the divisor in the BN transformation with the norm
  of the activation ... neither center the activations nor apply any shift": per document,
  ``gamma * x / ||x||_2`` (no centring, no shift, no batch statistics: the paper stresses that
  it "removes any dependency on batch-level statistics", so the norm is the document's own);
  ``gamma`` starts at ``sqrt(units)``, batch-norm's output scale (:class:`L2GainNorm`).
* ``"none"`` -- the plain linear head.

The topic matrix (AVITM's ``softmax(BN(W))``), :class:`TopicBatchNorm`: every word's column of
the ``K x V`` logits is standardised across the topics, then a learned per-word shift is added
(AVITM uses TensorFlow's ``batch_norm`` defaults: centre, shift, *no* gain).  The "batch" is the
whole matrix, so the transformation is the same in training and evaluation (no running
statistics); for MoLDA each component's block is standardised on its own.
"""

from __future__ import annotations

import torch
from torch import nn

from noisyor_bench.infra.errors import ConfigError

OUTPUT_NORMS = ("batchnorm", "batchnorm-nogain", "norm", "none")

#: TensorFlow's batch_norm epsilon (AVITM); also the floor of the norm variant's divisor.
NORM_EPS = 1e-3
#: Weight of the newest batch in BatchNorm's running statistics (PyTorch's default).
BN_MOMENTUM = 0.1


class L2GainNorm(nn.Module):
    """``gain * x / (||x||_2 + eps)`` over the last dimension; ``gain`` per unit.

    ``gain`` starts at ``sqrt(dim)`` (``gain_init=None``): the output then has unit root mean
    square per unit, the scale batch-norm's outputs start at, so the variants differ in the
    divisor, not in the initial scale of the posterior parameters (with gain 1 the outputs
    would be ``sqrt(dim)`` times smaller and q would start at the prior)."""

    def __init__(self, dim: int, eps: float = NORM_EPS, gain_init: float | None = None) -> None:
        super().__init__()
        start = float(dim) ** 0.5 if gain_init is None else float(gain_init)
        self.gain = nn.Parameter(torch.full((dim,), start))
        self.eps = float(eps)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.gain * x / (torch.linalg.vector_norm(x, dim=-1, keepdim=True) + self.eps)


class ShiftedBatchNorm(nn.Module):
    """Batch norm without gain: ``(x - mean_batch) / sqrt(var_batch + eps) + shift`` (AVITM's TF default)."""

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.norm = nn.BatchNorm1d(dim, eps=NORM_EPS, momentum=BN_MOMENTUM, affine=False)
        self.shift = nn.Parameter(torch.zeros(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(x) + self.shift


def output_norm(kind: str, dim: int) -> nn.Module:
    """The encoder-output normalisation ``kind`` (:data:`OUTPUT_NORMS`) for ``dim`` units."""
    if kind == "batchnorm":
        return nn.BatchNorm1d(dim, eps=NORM_EPS, momentum=BN_MOMENTUM, affine=True)
    if kind == "batchnorm-nogain":
        return ShiftedBatchNorm(dim)
    if kind == "norm":
        return L2GainNorm(dim)
    if kind == "none":
        return nn.Identity()
    raise ConfigError(f"unknown encoder output normalisation {kind!r}; known: {', '.join(OUTPUT_NORMS)}")


class TopicBatchNorm(nn.Module):
    """AVITM's batch-norm of the ``K x V`` topic logits before the softmax, block by block."""

    def __init__(self, blocks: tuple[int, ...], vocab_size: int, eps: float = NORM_EPS) -> None:
        super().__init__()
        self.blocks = tuple(int(b) for b in blocks)
        self.shift = nn.Parameter(torch.zeros(len(self.blocks), vocab_size))
        self.eps = float(eps)

    def forward(self, logits: torch.Tensor) -> torch.Tensor:
        parts = []
        for b, block in enumerate(torch.split(logits, self.blocks, dim=0)):
            centred = block - block.mean(0, keepdim=True)
            var = (centred * centred).mean(
                0, keepdim=True
            )  # population variance; torch.var is slow on CPU here
            parts.append(centred / torch.sqrt(var + self.eps) + self.shift[b])
        return torch.cat(parts, dim=0)


__all__ = [
    "BN_MOMENTUM",
    "NORM_EPS",
    "OUTPUT_NORMS",
    "L2GainNorm",
    "ShiftedBatchNorm",
    "TopicBatchNorm",
    "output_norm",
]
