"""Floor units of the noisy-OR trainers: an AVI/ACP training step and a Fig. 5 cell's epoch.

The floor is the plain dense PyTorch loop one would write first (the issue's "dense loop"): the
rates ``theta0 + z theta^T`` of every (sample, row, observation), ``x log(1 - e^-a) - (1 - x) a``
summed over all D, the closed-form KL, fused Adam.  The product evaluates the positive term at
the active entries only (``models/noisyor/sparse.py``) and trains a cell's seeds as one
computation (``inference/noisyor/batched.py``), so below 1 the ratio is what those buy.

Both sides use the product's parameterisation (``theta = softplus(r)``, ``logit(mu) = r_mu``),
hyperparameter defaults (one hidden layer of 100, L = 10, Adam lr 1e-3 / generative 1e-2) and
batch 128; :func:`check` asserts that the floor's per-row NELBO equals the product's
(``batch_nelbo``) at the same parameters and uniforms, in float64, for AVI and ACP, training
(binary concrete) and validation (Bernoulli) draws.
"""

from __future__ import annotations

import math
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from floor_table import Unit

BATCH = 128
L = 10  # Monte Carlo samples (training and validation)
HIDDEN = 100
LR, GEN_LR, BETA1 = 1e-3, 1e-2, 0.9
TEMP0, TEMP_MIN, TEMP_RATE, TEMP_STEP = 0.5, 0.2, 0.05, 100


# ------------------------------------------------------------------------------ the floor
def floor_params(d: int, k: int, method: str, seed: int) -> dict[str, torch.Tensor]:
    """Fresh parameters (the product's initial distribution): encoder and raw generative."""
    g = torch.Generator().manual_seed(seed)
    out = k if method == "avi" else d

    def uniform(shape: tuple[int, ...], bound: float) -> torch.Tensor:
        return (2 * torch.rand(shape, generator=g) - 1) * bound

    theta = torch.rand((d, k), generator=g) * min(0.02, 1.28 / d)
    p = {
        "w1": uniform((HIDDEN, d), d**-0.5),
        "b1": uniform((HIDDEN,), d**-0.5),
        "w2": uniform((out, HIDDEN), HIDDEN**-0.5),
        "b2": uniform((out,), HIDDEN**-0.5),
        "raw_theta": theta.clamp_min(1e-6) + torch.log(-torch.expm1(-theta.clamp_min(1e-6))),
        "raw_theta0": torch.full((d,), 0.05 + math.log(-math.expm1(-0.05))),
        "raw_mu": torch.full((k,), math.log(0.2 / 0.8)),
    }
    return {n: t.requires_grad_() for n, t in p.items()}


def floor_nelbo(p: dict[str, torch.Tensor], x: torch.Tensor, u: torch.Tensor, tau: float | None, method: str):
    """Per-row NELBO (eq. 16), dense: ``tau`` None = exact Bernoulli draws ``u < q``."""
    theta, theta0 = F.softplus(p["raw_theta"]), F.softplus(p["raw_theta0"])
    out = F.linear(torch.relu(F.linear(x, p["w1"], p["b1"])), p["w2"], p["b2"])
    if method == "avi":
        logits = out
    else:  # eq. 11: sum_{x=1} psi theta - sum_{x=0} theta + logit(mu)
        logits = (x * F.softplus(out) - (1 - x)) @ theta + p["raw_mu"]
    q = torch.sigmoid(logits)
    if tau is None:
        z = (u < q).to(x.dtype)
    else:
        tiny, eps = torch.finfo(x.dtype).tiny, torch.finfo(x.dtype).eps
        u = u.clamp(tiny, 1 - eps)
        z = torch.sigmoid((logits + torch.log(u) - torch.log1p(-u)) / tau)
    a = theta0 + z @ theta.T  # (L, B, D): every observation
    positive = (x * torch.log(-torch.expm1(-a))).sum(-1).mean(0)
    negative = -((1 - x) * (theta0 + q @ theta.T)).sum(-1)
    mu = torch.sigmoid(p["raw_mu"])
    kl = (
        q * (-F.softplus(-logits) - torch.log(mu)) + (1 - q) * (-F.softplus(logits) - torch.log1p(-mu))
    ).sum(-1)
    return -(positive + negative - kl)


class FloorRun:
    """One run of the dense loop: parameters, fused Adam, step counter."""

    def __init__(self, d: int, k: int, method: str, seed: int) -> None:
        self.method, self.k, self.step = method, k, 0
        self.p = floor_params(d, k, method, seed)
        enc = [self.p[n] for n in ("w1", "b1", "w2", "b2")]
        gen = [self.p[n] for n in ("raw_theta", "raw_theta0", "raw_mu")]
        self.opt = torch.optim.Adam(
            [{"params": enc, "lr": LR}, {"params": gen, "lr": GEN_LR}], betas=(BETA1, 0.999), fused=True
        )

    def epoch(self, x: torch.Tensor, x_val: torch.Tensor, passes: int) -> float:
        """``passes`` shuffled passes of minibatches, then the validation NELBO (L Bernoulli draws)."""
        for _ in range(passes):
            for rows in torch.split(torch.randperm(x.shape[0]), BATCH):
                tau = max(TEMP_MIN, TEMP0 * math.exp(-TEMP_RATE * (self.step // TEMP_STEP)))
                xb = x[rows]
                u = torch.rand((L, xb.shape[0], self.k))
                loss = floor_nelbo(self.p, xb, u, tau, self.method).mean()
                self.opt.zero_grad(set_to_none=True)
                loss.backward()
                self.opt.step()
                self.step += 1
        with torch.no_grad():
            u = torch.rand((L, x_val.shape[0], self.k))
            return float(floor_nelbo(self.p, x_val, u, None, self.method).mean())


# ------------------------------------------------------------------------------ the product
def _shape(d: int, k: int):
    from noisyor_bench.models.noisyor.model import NoisyOR

    return NoisyOR.from_numpy(np.ones((d, k)), np.ones(d), np.full(k, 0.1))


def _budget(min_steps: int, eval_every: int = 1):
    from noisyor_bench.inference.fitting import FitBudget

    return FitBudget(
        max_epochs=2, patience=5, batch_size=BATCH, min_epoch_steps=min_steps, eval_every=eval_every
    )


def passes(n: int, min_steps: int) -> int:
    """Passes per epoch (the trainer's rule: enough for ``min_steps`` steps)."""
    return max(1, math.ceil(min_steps / math.ceil(n / BATCH)))


def product_epoch(
    method: str, x: torch.Tensor, x_val: torch.Tensor, k: int, min_steps: int, seeds: int
) -> float:
    """Seconds of the second epoch of the product's fit (the first warms up): ``method.fit`` for
    one seed, ``fit_batched`` (the grid's ``batched: true``) for several."""
    from noisyor_bench.inference.noisyor.batched import fit_batched
    from noisyor_bench.inference.noisyor.registry import get_method

    cls = get_method(method)
    if seeds == 1:
        history = cls(_shape(x.shape[1], k), "learning", {}, seed=0).fit(x, x_val, _budget(min_steps))
        return history[1].seconds
    runs = [cls(_shape(x.shape[1], k), "learning", {}, seed=s) for s in range(seeds)]
    results = fit_batched(runs, x, x_val, _budget(min_steps, eval_every=2))
    return results[0].history[1].seconds


def floor_epoch(
    method: str, x: torch.Tensor, x_val: torch.Tensor, k: int, min_steps: int, seeds: int
) -> float:
    """Seconds of one epoch of the dense loop for each of ``seeds`` runs, one after another."""
    xf, vf = x.float(), x_val.float()
    runs = [FloorRun(x.shape[1], k, method, seed) for seed in range(seeds)]
    for run in runs:  # warm-up: one step's shapes
        run.epoch(xf[:BATCH], vf[:BATCH], 1)
    start = time.perf_counter()
    for run in runs:
        run.epoch(xf, vf, passes(x.shape[0], min_steps))
    return time.perf_counter() - start


def _load(data_dir: Path, name: str) -> dict[str, np.ndarray]:
    with np.load(data_dir / f"{name}.npz") as data:
        return {key: data[key] for key in ("x_train", "x_val", "theta")}


def units(data_dir: Path, quick: bool) -> list[Unit]:
    """Per method: a single-run step on SYN-RANDOM-7 (Table 4's D = 500, K = 100; the issue's
    5x target against the dense loop) and a Fig. 5 cell's epoch (SYN-RANDOM-1, N_train =
    1,000, the quick grid's 5 seeds batched, validation on the 1,000 validation rows)."""
    out = []
    big, cell = _load(data_dir, "syn-random-7"), _load(data_dir, "syn-random-1")
    x7, v7 = torch.as_tensor(big["x_train"][:1000]), torch.as_tensor(big["x_val"][:16])
    x1, v1 = torch.as_tensor(cell["x_train"][:1000]), torch.as_tensor(cell["x_val"])
    k7, k1 = big["theta"].shape[1], cell["theta"].shape[1]
    step_min = 16 if quick else 40
    steps = passes(1000, step_min) * math.ceil(1000 / BATCH)
    cell_min, seeds = 20, 5  # the quick grid's min_epoch_steps and Fig. 5 seeds
    for method in ("avi", "acp"):
        out.append(
            Unit(
                name=f"noisy-OR step ({method.upper()})",
                size=f"syn-random-7 (D {x7.shape[1]}, K {k7}), batch {BATCH}, L {L}, {steps} steps + 16 val rows",
                floor="dense rates for all (L, B, D), dense log-likelihood, closed-form KL, fused Adam",
                product=lambda m=method: product_epoch(m, x7, v7, k7, step_min, 1) / steps,
                floor_fn=lambda m=method: floor_epoch(m, x7, v7, k7, step_min, 1) / steps,
                target=5.0,
            )
        )
        out.append(
            Unit(
                name=f"Fig. 5 cell epoch ({method.upper()})",
                size=f"syn-random-1 (D {x1.shape[1]}, K {k1}), N_train 1000, {seeds} seeds, "
                f"{passes(1000, cell_min) * 8} steps + validation of {v1.shape[0]} rows",
                floor=f"the dense step loop for each of the {seeds} seeds in turn, then its validation (L Bernoulli draws)",
                product=lambda m=method: product_epoch(m, x1, v1, k1, cell_min, seeds),
                floor_fn=lambda m=method: floor_epoch(m, x1, v1, k1, cell_min, seeds),
            )
        )
    return out


# ------------------------------------------------------------------------------ equality
def check(data_dir: Path) -> list[dict]:
    """The floor's NELBO against the product's ``batch_nelbo`` at the same parameters and draws."""
    from noisyor_bench.inference.noisyor.registry import get_method
    from noisyor_bench.models.noisyor.sparse import ActiveSet, wants_sparse

    data = _load(data_dir, "syn-random-1")
    x = torch.as_tensor(data["x_train"][:64]).double()
    d, k = x.shape[1], data["theta"].shape[1]
    active = ActiveSet.of(x) if wants_sparse(x) else None  # the path the product trains on
    out = []
    for method in ("avi", "acp"):
        m = get_method(method)(_shape(d, k), "learning", {}, seed=3, dtype=torch.float64)
        net = dict(m.net.named_parameters())
        p = {
            "w1": net["encoder.0.weight"],
            "b1": net["encoder.0.bias"],
            "w2": net["encoder.2.weight"],
            "b2": net["encoder.2.bias"],
            "raw_theta": net["generative.raw_theta"],
            "raw_theta0": net["generative.raw_theta0"],
            "raw_mu": net["generative.raw_mu"],
        }
        u = torch.rand((L, x.shape[0], k), generator=torch.Generator().manual_seed(1), dtype=torch.float64)
        for tau in (0.5, None):
            with torch.no_grad():
                mine = floor_nelbo(p, x, u, tau, method)
                theirs = m.batch_nelbo(x, L, tau, None, active, uniforms=u)
            diff = float((mine - theirs).abs().max())
            tol = 1e-9 * float(theirs.abs().max())
            assert diff <= tol, f"noisy-OR floor differs from the product ({method}, tau {tau}): {diff}"
            draws = "binary concrete" if tau else "Bernoulli"
            out.append(
                {
                    "name": f"noisy-OR NELBO per row, {method.upper()}, {draws}",
                    "max_abs_diff": diff,
                    "tol": tol,
                }
            )
    return out
