"""Floor unit of aviPAM: one training epoch of the 4-PAM on 20 Newsgroups (the quick grid's Table 1 fit).

The floor is the same network written as plain tensors and one function: per level a softplus
MLP (V -> 100 -> 100) with dropout, mean and log-variance heads with batch norm without gain
(plus a shift), reparameterised draws, per-level softmax, the batched product of the level
proportions, ``softmax(BN(W))`` topics, ``sum_v x_v log(p_v + 1e-10)``, the closed-form KL
against the Laplace prior of Dir(1), fused Adam (lr 2e-3, betas 0.99 / 0.999), batch 200 --
the quick grid's settings.  The product's epoch is ``fit_avipam``'s (``inference/topics/avipam.py``:
its trainer, the per-epoch ELBO terms, the plateau rule's bookkeeping).

:func:`check` copies the product network's weights into the floor and asserts equal per-document
NELBOs on a minibatch in training mode, with both drawing dropout and noise from one seeded
generator in the same order, in float64 (to 1e-7 relative: the product's prior is stored in float32).
"""

from __future__ import annotations

import math
import time
from pathlib import Path

import scipy.sparse as sp
import torch
import torch.nn.functional as F
from floor_table import Unit

SUPER, SUB = 2, 50  # Table 1's 4-PAM: root -> 2 super-topics -> 50 sub-topics
HIDDEN, DROP, EPS = 100, 0.25, 1e-3
BATCH, LR, BETAS = 200, 2e-3, (0.99, 0.999)
LEVELS = ((1, SUPER), (SUPER, SUB))  # (parents, children) per level


def _prior(n: int) -> tuple[float, float]:
    """Laplace approximation of a symmetric Dir(1) over n children in the softmax basis: (mean, variance)."""
    return 0.0, (1.0 - 2.0 / n) + n / n**2


# ------------------------------------------------------------------------------ the floor
def floor_params(v: int, seed: int, dtype: torch.dtype = torch.float32) -> dict[str, torch.Tensor]:
    """Glorot-uniform weights, zero biases and shifts (the product's initial distribution)."""
    g = torch.Generator().manual_seed(seed)

    def glorot(rows: int, cols: int) -> torch.Tensor:
        bound = math.sqrt(6.0 / (rows + cols))
        return ((2 * torch.rand((rows, cols), generator=g) - 1) * bound).to(dtype)

    p = {"topic_w": glorot(SUB, v), "topic_shift": torch.zeros((1, v), dtype=dtype)}
    for i, (parents, children) in enumerate(LEVELS):
        dim = parents * children
        p |= {f"w1_{i}": glorot(HIDDEN, v), f"w2_{i}": glorot(HIDDEN, HIDDEN)}
        p |= {f"b1_{i}": torch.zeros(HIDDEN, dtype=dtype), f"b2_{i}": torch.zeros(HIDDEN, dtype=dtype)}
        for head in ("mean", "logvar"):
            p[f"{head}_w_{i}"] = glorot(dim, HIDDEN)
            p[f"{head}_b_{i}"] = torch.zeros(dim, dtype=dtype)
            p[f"{head}_shift_{i}"] = torch.zeros(dim, dtype=dtype)
    return {n: t.requires_grad_() for n, t in p.items()}


def _batch_norm(h: torch.Tensor, shift: torch.Tensor) -> torch.Tensor:
    """Training-mode batch norm without gain: batch mean, biased batch variance, then the shift."""
    centred = h - h.mean(0)
    return centred / torch.sqrt((centred * centred).mean(0) + EPS) + shift


def floor_nelbo(p: dict[str, torch.Tensor], x: torch.Tensor, g: torch.Generator) -> torch.Tensor:
    """Per-document NELBO of the 4-PAM (one draw), training mode: dropout and noise from ``g``."""
    hidden = []
    for i in range(len(LEVELS)):
        h = F.softplus(
            F.linear(F.softplus(F.linear(x, p[f"w1_{i}"], p[f"b1_{i}"])), p[f"w2_{i}"], p[f"b2_{i}"])
        )
        hidden.append(h * (torch.rand(h.shape, generator=g, dtype=h.dtype) >= DROP) / (1 - DROP))
    heads = [
        tuple(
            _batch_norm(F.linear(h, p[f"{n}_w_{i}"], p[f"{n}_b_{i}"]), p[f"{n}_shift_{i}"])
            for n in ("mean", "logvar")
        )
        for i, h in enumerate(hidden)
    ]
    w = p["topic_w"] - p["topic_w"].mean(0)
    beta = torch.softmax(w / torch.sqrt((w * w).mean(0) + EPS) + p["topic_shift"], dim=-1)
    sub, kl = None, 0.0
    for (parents, children), (mean, logvar) in zip(LEVELS, heads):
        eps = torch.randn(mean.shape, generator=g, dtype=mean.dtype)
        theta = torch.softmax((mean + torch.exp(0.5 * logvar) * eps).reshape(-1, parents, children), -1)
        sub = theta if sub is None else torch.bmm(sub, theta)
        p_mean, p_var = _prior(children)
        kl = kl + 0.5 * (
            torch.exp(logvar) / p_var + (mean - p_mean) ** 2 / p_var - 1 + math.log(p_var) - logvar
        ).sum(-1)
    sub = sub.squeeze(1)
    sub = sub * (torch.rand(sub.shape, generator=g, dtype=sub.dtype) >= DROP) / (1 - DROP)
    loglik = (x * torch.log(sub @ beta + 1e-10)).sum(-1)
    return kl - loglik


def floor_epoch(x: torch.Tensor) -> float:
    """Seconds of one epoch of the plain loop on ``x`` (after a one-batch warm-up)."""
    p = floor_params(x.shape[1], 0)
    opt = torch.optim.Adam(p.values(), lr=LR, betas=BETAS, fused=True)
    g = torch.Generator().manual_seed(1)

    def step(rows: torch.Tensor) -> None:
        loss = floor_nelbo(p, x[rows], g).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    step(torch.arange(BATCH))
    start = time.perf_counter()
    for rows in torch.split(torch.randperm(x.shape[0]), BATCH):
        step(rows)
    return time.perf_counter() - start


# ------------------------------------------------------------------------------ the product
def _config(dtype: str = "float32"):
    from noisyor_bench.inference.topics.avipam import AviPamConfig

    # the quick grid's `avi` section (config/config.yaml), two epochs: the first warms up
    return AviPamConfig(
        max_epochs=2, patience=2, batch_size=BATCH, lr=LR, hidden=(HIDDEN, HIDDEN), dtype=dtype
    )


def product_epoch(counts: sp.csr_matrix) -> float:
    """Seconds of the second epoch of ``fit_avipam`` (no validation split, as the grid's cells)."""
    from noisyor_bench.inference.topics.avipam import fit_avipam
    from noisyor_bench.models.topics.pam import pam4_structure

    fit = fit_avipam(counts, None, pam4_structure(SUPER, SUB), _config(), seed=0)
    return fit.history[1].seconds


def load_counts(data_dir: Path, n_docs: int | None) -> sp.csr_matrix:
    """The first ``n_docs`` (all: None) training documents of the 20 Newsgroups corpus file."""
    from noisyor_bench.data.corpora.bow import load_corpus

    train = load_corpus(data_dir / "avipam-20news.npz").train
    return train[:n_docs] if n_docs else train


def units(data_dir: Path, quick: bool) -> list[Unit]:
    counts = load_counts(data_dir, 4000 if quick else None)
    dense = torch.as_tensor(counts.toarray(), dtype=torch.float32)
    docs, v = counts.shape
    return [
        Unit(
            name="aviPAM 4-PAM epoch",
            size=f"20news, {docs} docs x V {v}, batch {BATCH}, 1x{SUPER} -> {SUPER}x{SUB}, {math.ceil(docs / BATCH)} steps",
            floor="the same network as plain tensors in one function (per-level softplus MLP, gainless batch "
            "norm, softmax levels, bmm, softmax(BN(W)) topics, closed-form KL), fused Adam",
            product=lambda: product_epoch(counts),
            floor_fn=lambda: floor_epoch(dense),
        )
    ]


# ------------------------------------------------------------------------------ equality
def check(data_dir: Path) -> list[dict]:
    """The floor's NELBO against the product's ``elbo_terms`` at the same weights and draws."""
    from noisyor_bench.inference.seeding import stream_generator
    from noisyor_bench.inference.topics.avipam import AviPamNet
    from noisyor_bench.models.topics.pam import pam4_structure

    x = torch.as_tensor(load_counts(data_dir, 64).toarray(), dtype=torch.float64)
    net = AviPamNet(
        pam4_structure(SUPER, SUB), x.shape[1], _config("float64"), stream_generator(0, "avipam-init")
    )
    net.train()
    q = dict(net.named_parameters())
    p = {"topic_w": q["topic_logits"], "topic_shift": q["topic_norm.shift"]}
    for i in range(len(LEVELS)):
        # the product stores its input layer's weight (V, H), the transpose of F.linear's
        p |= {f"w1_{i}": q[f"trunks.{i}.layers.0.weight"].t(), f"b1_{i}": q[f"trunks.{i}.layers.0.bias"]}
        p |= {f"w2_{i}": q[f"trunks.{i}.layers.1.weight"], f"b2_{i}": q[f"trunks.{i}.layers.1.bias"]}
        for head in ("mean", "logvar"):
            p[f"{head}_w_{i}"] = q[f"heads.{i}.{head}.weight"]
            p[f"{head}_b_{i}"] = q[f"heads.{i}.{head}.bias"]
            p[f"{head}_shift_{i}"] = q[f"heads.{i}.{head}_norm.shift"]
    with torch.no_grad():
        theirs = net.elbo_terms(x, 1, torch.Generator().manual_seed(5)).nelbo
        mine = floor_nelbo(p, x, torch.Generator().manual_seed(5))
    diff = float((mine - theirs).abs().max())
    # the product keeps the Laplace prior in float32 buffers (0.98 stored as 0.98000002): a relative
    # 2e-8 in the KL, the only difference (with the floor's prior rounded alike they agree to 5e-13)
    tol = 1e-7 * float(theirs.abs().max())
    assert diff <= tol, f"aviPAM floor differs from the product: {diff}"
    return [{"name": "aviPAM 4-PAM NELBO per document, training mode", "max_abs_diff": diff, "tol": tol}]
