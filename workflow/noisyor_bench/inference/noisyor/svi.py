"""SVI: free per-datapoint posteriors with the Jaakkola-Jordan lower bound (Ji et al.; paper Section 2.4).

Two sets of variational parameters (Section 2.4):

* ``phi``: the logits of a factorised ``q(z | x^(n)) = prod_k Bern(sigmoid(phi_nk))``, one free
  vector per training point (not amortized);
* ``r``: the Jensen weights of the lower bound on each positive observation,
  ``log p(x_i=1|z) >= f(theta_i0) + sum_k z_k Delta_ik(r)`` (:mod:`noisyor_bench.models.noisyor.jj_lower`).

The objective is the lower-bounded ELBO (Table 1: objective "LB")

    L(phi, theta) = sum_{x_i=1} [f(theta_i0) + sum_k q_k Delta_ik] - sum_{x_i=0} E_q[a_i] - KL(q || p(z)),

closed form and deterministic (no Monte Carlo).  ``r`` is not a free parameter: for each
objective evaluation it is set to (near) its tightest value given the current ``q`` and
``theta`` by ``r_iters`` monotone Singliar-Hauskrecht fixed-point steps, warm-started while a
minibatch is being visited (starting from ``r ∝ theta q``, exact at the mean); by the envelope
theorem its own gradient is then zero, so it is held constant in back-propagation.

Learning mode, per minibatch of ``FitBudget.batch_size`` training points: ``local_steps``
Adam steps on the minibatch's logits (generative model fixed; a row-wise Adam whose moment
estimates belong to each data point, so rows outside the minibatch never move), then one
Adam step on the generative parameters with ``q`` fixed -- the local/global alternation of
stochastic variational inference.  ``posterior(x)`` optimises fresh logits on ``x`` with the
generative model fixed ("for non-amortized methods ... we optimize the variational parameter
on samples from held-out set directly", Section 4.2); inference mode does only that.

Resume: ``fit(..., checkpoint_path=...)`` saves after every epoch the generative parameters,
the global Adam state, the training logits with their row-wise Adam moments, the
warm-started validation logits and moments, the shuffling and evaluation generators, the
early-stopping state and the curve (inference mode: the logits, moments and ``r`` of the
fit on ``x_val``) (:mod:`.fitloop`, via :class:`~noisyor_bench.inference.noisyor.classical.ClassicalMethod`); a fit started with that file continues after the saved
epoch and ends bit-identical to an uninterrupted fit.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, ClassVar

import torch

from noisyor_bench.inference.adam import Adam
from noisyor_bench.inference.fitting import EpochRecord, FitBudget
from noisyor_bench.inference.noisyor.base import Mode, PosteriorProgress
from noisyor_bench.inference.noisyor.classical import ClassicalMethod, lap
from noisyor_bench.inference.noisyor.fitloop import FitLoop, clone_tensors
from noisyor_bench.inference.noisyor.hparams import require
from noisyor_bench.inference.noisyor.jj_lower_solver import (
    BlockCarry,
    FusedAtR,
    lb_elbo_fixed,
    lb_init_r,
    lb_tighten_r_warm,
)
from noisyor_bench.inference.training import lower_lr_hint
from noisyor_bench.infra.constants import DEFAULT_N_SAMPLES
from noisyor_bench.infra.errors import DataError
from noisyor_bench.models.noisyor.elbo import bernoulli_kl_from_logits
from noisyor_bench.models.noisyor.generative import GenerativeModule
from noisyor_bench.models.noisyor.jj_lower import LBFixed, PositiveEntries, lb_elbo, row_chunks
from noisyor_bench.models.noisyor.model import NoisyOR

DEFAULTS: dict[str, Any] = {
    "lr_local": 0.3,  # Adam learning rate of the per-datapoint logits
    "lr_global": 0.05,  # learning: Adam learning rate of the generative parameters
    "local_steps": 5,  # learning: logit steps per minibatch visit before the global step
    "r_iters": 1,  # monotone fixed-point steps on r per objective evaluation (warm-started)
    "posterior_steps": 300,  # max logit steps when fitting fresh data (posterior, inference fit)
    "steps_per_epoch": 10,  # fresh-data fitting: steps between records / convergence checks
    "tol": 1e-6,  # fresh-data fitting stops when the mean objective changed by less than this per epoch
    "val_steps": 30,  # learning: warm-started logit steps on x_val per evaluation
    "leak_floor": 1e-6,  # leak used inside the bound is max(theta_i0, leak_floor)
    "exact_max_k": 12,  # ELBO by 2^K enumeration up to this K, else Monte Carlo
    "eval_samples": DEFAULT_N_SAMPLES,  # Bernoulli samples per data point for the Monte Carlo ELBO
    "dtype": "float64",
}


class RowAdam:
    """Adam whose state (moments, step count) is kept per row of a parameter matrix.

    Updating only the rows of a minibatch leaves every other row -- and its moments --
    untouched, which a dense ``torch.optim.Adam`` over the whole matrix would not do.
    """

    def __init__(
        self,
        shape: tuple[int, int],
        lr: float,
        dtype: torch.dtype,
        device: torch.device,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
    ) -> None:
        self.lr, self.betas, self.eps = lr, betas, eps
        self.m = torch.zeros(shape, dtype=dtype, device=device)
        self.v = torch.zeros(shape, dtype=dtype, device=device)
        self.t = torch.zeros(shape[0], dtype=dtype, device=device)

    @torch.no_grad()
    def step(self, param: torch.Tensor, rows: torch.Tensor | slice, grad: torch.Tensor) -> None:
        """Descent step on ``param[rows]`` with gradient ``grad`` (len(rows), K).

        ``rows``: an index tensor, or a slice (views instead of gathers: the same numbers).
        """
        b1, b2 = self.betas
        t = self.t[rows] + 1
        self.t[rows] = t
        m = b1 * self.m[rows] + (1 - b1) * grad
        v = b2 * self.v[rows] + (1 - b2) * grad * grad
        self.m[rows], self.v[rows] = m, v
        m_hat = m / (1 - b1**t).unsqueeze(-1)
        v_hat = v / (1 - b2**t).unsqueeze(-1)
        param[rows] -= self.lr * m_hat / (v_hat.sqrt() + self.eps)

    def state_dict(self) -> dict[str, torch.Tensor]:
        return {"m": self.m.clone(), "v": self.v.clone(), "t": self.t.clone()}

    def load_state_dict(self, state: dict[str, torch.Tensor]) -> None:
        for key in ("m", "v", "t"):
            current = getattr(self, key)
            if state[key].shape != current.shape:
                raise DataError(
                    f"svi: saved Adam moments {key!r} have shape {tuple(state[key].shape)}, "
                    f"expected {tuple(current.shape)}; delete the checkpoint to start afresh"
                )
            setattr(self, key, state[key].to(device=current.device, dtype=current.dtype).clone())


@dataclass
class _FreshProgress:
    """Where a fit of fresh logits stands (everything besides the logits and their Adam moments).

    ``r`` (per row chunk, warm-started) and ``prev`` (the mean objective after the last epoch,
    ``None`` before the start) decide the next steps and the convergence test, so a resumed
    fit needs them as much as the logits.
    """

    r: list[torch.Tensor | None] = field(default_factory=list)
    done: int = 0  # logit steps taken
    epoch: int = 0
    prev: float | None = None
    converged: bool = False


class SVI(ClassicalMethod):
    """Per-datapoint variational parameters on the Jaakkola-Jordan lower bound (not amortized)."""

    name: ClassVar[str] = "svi"
    DEFAULTS: ClassVar[dict[str, Any]] = DEFAULTS

    def _init_state(self, model: NoisyOR, mode: Mode) -> None:
        self.module: GenerativeModule = self._generative_module(model, mode)
        self.epoch = 0
        self.local_logits: torch.Tensor | None = None  # (N_train, K), learning mode
        self._local_adam: RowAdam | None = None
        self._val_logits: torch.Tensor | None = None
        self._val_adam: RowAdam | None = None
        self._optimizer: torch.optim.Optimizer | None = None

    def check_hparams(self, h: Mapping[str, Any]) -> None:
        for key in ("lr_local", "lr_global", "leak_floor"):
            require(self.name, h[key] > 0, key, h[key], "> 0")
        for key in ("local_steps", "r_iters", "steps_per_epoch", "eval_samples"):
            require(self.name, h[key] >= 1, key, h[key], ">= 1")
        for key in ("posterior_steps", "val_steps"):
            require(self.name, h[key] >= 0, key, h[key], ">= 0")
        require(self.name, h["tol"] >= 0, "tol", h["tol"], ">= 0")

    # ------------------------------------------------------------------ API
    def fit(
        self,
        x_train: torch.Tensor,
        x_val: torch.Tensor,
        budget: FitBudget,
        progress: Callable[[EpochRecord], None] | None = None,
        checkpoint_path: str | Path | None = None,
    ) -> list[EpochRecord]:
        """Inference mode: fit fresh logits on ``x_val``; learning mode: SVI on ``x_train``.

        Inference records (one per ``steps_per_epoch`` steps; record 0 = initial logits):
        ``train_nelbo = -mean`` lower-bounded ELBO (the objective), ``val_nelbo = -mean`` ELBO
        of ``q`` (exact for ``K <= exact_max_k``).  Learning records (one per epoch = pass over
        ``x_train``): ``train_nelbo = -mean`` minibatch objective at the global steps,
        ``val_nelbo`` of warm-started logits on ``x_val`` after ``val_steps`` steps; early
        stopping with ``patience`` evaluations, best parameters restored.  ``seconds``: wall
        time of the epoch (including its evaluation).  ``checkpoint_path``: save after every
        epoch, and resume from it when it exists.
        """
        generator = self._eval_generator()
        generators = {"evaluation": generator}
        shuffle = None
        if self.mode == "learning":
            shuffle = torch.Generator().manual_seed(self.init_seed + 1)
            generators["shuffle"] = shuffle
        loop = self._fit_loop(
            budget, x_train, x_val, checkpoint_path, generators, lower_lr_hint("'lr_global' or 'lr_local'")
        )
        if shuffle is None:
            records = self._fit_inference(x_val, budget, progress, loop, generator)
        else:
            records = self._fit_learning(x_train, x_val, budget, progress, loop, generator, shuffle)
        self._end_fit(loop, budget, applicable=self.mode == "learning")
        return records

    def posterior(self, x: torch.Tensor) -> torch.Tensor:
        """``q`` from fresh logits optimised on ``x`` (generative model fixed), (N, K)."""
        x = self._as_data(x)
        model = self.generative
        logits, adam = self._fresh_logits(model, x.shape[0])
        fresh = _FreshProgress()
        self._fit_fresh(model, x, logits, adam, self.hparams["posterior_steps"], fresh)
        self.posterior_progress = PosteriorProgress(steps=fresh.done, converged=fresh.converged)
        return torch.sigmoid(logits).to(torch.float64)

    def state_dict(self) -> dict[str, Any]:
        """Learning state after the last completed epoch: generative parameters, global Adam
        state, training and (warm-started) validation logits with their row-wise Adam moments."""
        return {
            "method": self.name,
            "hparams": dict(self.hparams),
            "epoch": self.epoch,
            "generative": clone_tensors(self.module.state_dict()),
            "optimizer": None if self._optimizer is None else copy.deepcopy(self._optimizer.state_dict()),
            "local_logits": _clone_or_none(self.local_logits),
            "local_adam": None if self._local_adam is None else self._local_adam.state_dict(),
            "val_logits": _clone_or_none(self._val_logits),
            "val_adam": None if self._val_adam is None else self._val_adam.state_dict(),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore :meth:`state_dict` (all of it: a following ``fit`` continues exactly)."""
        self._check_state_method(state)
        self.module.load_state_dict(state["generative"])
        self.epoch = int(state["epoch"])
        self._optimizer = None
        if state.get("optimizer") is not None and self.module.learnable:
            self._optimizer = Adam(self.module.parameters(), lr=self.hparams["lr_global"])
            self._optimizer.load_state_dict(state["optimizer"])
        self.local_logits, self._local_adam = self._restore_logits(
            state.get("local_logits"), state.get("local_adam")
        )
        self._val_logits, self._val_adam = self._restore_logits(
            state.get("val_logits"), state.get("val_adam")
        )

    def _restore_logits(
        self, logits: torch.Tensor | None, adam: dict[str, torch.Tensor] | None
    ) -> tuple[torch.Tensor | None, RowAdam | None]:
        if logits is None:
            return None, None
        logits = logits.to(device=self.device, dtype=self.dtype).clone()
        row_adam = RowAdam(
            (logits.shape[0], logits.shape[1]), self.hparams["lr_local"], self.dtype, self.device
        )
        if adam is not None:
            row_adam.load_state_dict(adam)
        return logits, row_adam

    # ------------------------------------------------------------------ objective pieces
    def _objective(
        self,
        model: NoisyOR,
        x: torch.Tensor,
        pos: PositiveEntries,
        logits: torch.Tensor,
        r: torch.Tensor | None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Lower-bounded ELBO per row (N,) with ``r`` tightened for the current ``q``; returns ``(obj, r)``."""
        fixed = LBFixed.of(model.detach(), x, pos, self.hparams["leak_floor"])
        obj, r, _ = self._objective_warm(model, x, pos, logits, r, fixed, None, live=True)
        return obj, r

    def _objective_warm(
        self,
        model: NoisyOR,
        x: torch.Tensor,
        pos: PositiveEntries,
        logits: torch.Tensor,
        r: torch.Tensor | None,
        fixed: LBFixed,
        at_r: FusedAtR | None,
        live: bool = False,
    ) -> tuple[torch.Tensor, torch.Tensor, FusedAtR | None]:
        """Lower-bounded ELBO per row (N,) with ``r`` tightened for the current ``q``.

        ``fixed``: :meth:`LBFixed.of` ``model``'s values on these rows; ``at_r``: the pieces of
        the ``r`` update at the incoming ``r`` (:func:`lb_tighten_r_warm`).  ``live``: ``model``
        carries gradients (the global step), else it is fixed and only ``logits`` get them.
        Returns ``(obj, r, at_r)``.
        """
        q = torch.sigmoid(logits)
        q_rows_grad = None if live else q[pos.rows]
        with torch.no_grad():
            q_rows = q.detach()[pos.rows] if q_rows_grad is None else q_rows_grad.detach()
            if r is None:
                r = lb_init_r(fixed.theta_rows, q_rows)
            r, at_r = lb_tighten_r_warm(
                fixed.theta_rows, fixed.leak, q_rows, r, self.hparams["r_iters"], at_r
            )
        kl = bernoulli_kl_from_logits(logits, model.mu)
        if live:
            return lb_elbo(model, x, pos, q, r, self.hparams["leak_floor"], kl=kl), r, at_r
        return lb_elbo_fixed(fixed, pos, q, r, kl, q_rows_grad), r, at_r

    def _local_steps(
        self,
        model: NoisyOR,
        x: torch.Tensor,
        pos: PositiveEntries,
        logits: torch.Tensor,
        rows: torch.Tensor | slice,
        adam: RowAdam,
        steps: int,
        r: torch.Tensor | None,
        fixed: LBFixed,
        at_r: FusedAtR | None,
    ) -> tuple[torch.Tensor | None, torch.Tensor | None, FusedAtR | None]:
        """``steps`` Adam ascent steps on ``logits[rows]`` (``fixed``: the model on those rows);
        returns ``(r, obj, at_r)``."""
        obj = None
        for _ in range(steps):
            lb = logits[rows].detach().clone().requires_grad_(True)
            obj, r, at_r = self._objective_warm(model, x, pos, lb, r, fixed, at_r)
            (grad,) = torch.autograd.grad(-obj.sum(), lb)
            adam.step(logits, rows, grad)
        return r, obj, at_r

    def _fresh_logits(self, model: NoisyOR, n: int) -> tuple[torch.Tensor, RowAdam]:
        logits = torch.logit(model.mu).expand(n, model.K).clone()
        return logits, RowAdam((n, model.K), self.hparams["lr_local"], self.dtype, self.device)

    def _fit_fresh(
        self,
        model: NoisyOR,
        x: torch.Tensor,
        logits: torch.Tensor,
        adam: RowAdam,
        max_steps: int,
        state: _FreshProgress,
        on_epoch: Callable[[int, float], None] | None = None,
    ) -> None:
        """Optimise ``logits`` on ``x`` in row chunks (rows are independent, so chunking is exact).

        Epochs of ``steps_per_epoch`` steps until ``max_steps`` or the mean objective changed
        by less than ``tol`` in an epoch; ``on_epoch(epoch, mean objective)`` after each (0 =
        start).  ``state`` is updated in place; the ``state`` of an interrupted fit (with its
        logits and moments) continues where that fit stopped.
        """
        h = self.hparams
        chunks = [(s, x[s]) for s in row_chunks(x, model.K)]
        pos = [PositiveEntries.of(xc) for _, xc in chunks]
        # The model is fixed during the fit: each chunk carries its model rows and the pieces of
        # the r update at its r from one visit to the next.
        carry = BlockCarry(len(chunks), sum(p.count for p in pos), model.K, self.dtype.itemsize)

        def carried(j: int) -> tuple[LBFixed, FusedAtR | None]:
            fixed = carry.fixed(j, partial(LBFixed.of, model, chunks[j][1], pos[j], h["leak_floor"]))
            return fixed, carry.at_r(j, fixed, r[j])

        r = state.r
        if not r:
            r.extend([None] * len(chunks))
        elif len(r) != len(chunks):
            raise DataError(
                "svi: the saved fitting state does not fit this data; delete the checkpoint to start afresh"
            )

        def mean_objective() -> float:
            with torch.no_grad():
                total = 0.0
                for j, (rows, xc) in enumerate(chunks):
                    fixed, at_r = carried(j)
                    obj, r[j], at_r = self._objective_warm(model, xc, pos[j], logits[rows], r[j], fixed, at_r)
                    carry.keep(j, at_r)
                    total += float(obj.sum())
            return total / max(1, x.shape[0])

        if state.prev is None:
            state.prev = mean_objective()
            if on_epoch is not None:
                on_epoch(0, state.prev)
        while state.done < max_steps and not state.converged:
            steps = min(h["steps_per_epoch"], max_steps - state.done)
            for j, (rows, xc) in enumerate(chunks):
                fixed, at_r = carried(j)
                r[j], _, at_r = self._local_steps(
                    model, xc, pos[j], logits, rows, adam, steps, r[j], fixed, at_r
                )
                carry.keep(j, at_r)
            state.done += steps
            state.epoch += 1
            cur = mean_objective()
            state.converged = abs(cur - state.prev) < h["tol"]
            state.prev = cur
            if on_epoch is not None:
                on_epoch(state.epoch, cur)

    # ------------------------------------------------------------------ inference mode
    def _fit_inference(
        self,
        x_val: torch.Tensor,
        budget: FitBudget,
        progress: Callable[[EpochRecord], None] | None,
        loop: FitLoop,
        generator: torch.Generator,
    ) -> list[EpochRecord]:
        model = self.generative
        x = self._as_data(x_val)
        logits, adam = self._fresh_logits(model, x.shape[0])
        fresh = _FreshProgress()
        saved = loop.resume()
        if saved is not None:
            logits.copy_(saved["logits"])
            adam.load_state_dict(saved["adam"])
            fresh = _FreshProgress(**saved["progress"])
        if loop.finished:
            return list(loop.records)
        max_steps = min(self.hparams["posterior_steps"], budget.max_epochs * self.hparams["steps_per_epoch"])
        clock = [time.perf_counter()]

        def state() -> dict[str, Any]:
            r = [None if t is None else t.clone() for t in fresh.r]
            return {"logits": logits.clone(), "adam": adam.state_dict(), "progress": {**vars(fresh), "r": r}}

        def record(epoch: int, objective: float) -> None:
            q = torch.sigmoid(logits)
            elbo = self._mean_elbo(model, x, q, generator)
            rec = EpochRecord(epoch, -objective, -elbo, lap(clock), {"lb_elbo": objective, "elbo": elbo})
            ended = "converged" if fresh.converged else "max_epochs" if fresh.done >= max_steps else ""
            loop.end_epoch(rec, state, stop=ended)
            if progress is not None:
                progress(rec)

        self._fit_fresh(model, x, logits, adam, max_steps, fresh, on_epoch=record)
        return list(loop.records)

    # ------------------------------------------------------------------ learning mode
    def _fit_learning(
        self,
        x_train: torch.Tensor,
        x_val: torch.Tensor,
        budget: FitBudget,
        progress: Callable[[EpochRecord], None] | None,
        loop: FitLoop,
        generator: torch.Generator,
        shuffle: torch.Generator,
    ) -> list[EpochRecord]:
        h = self.hparams
        xt, xv = self._as_data(x_train), self._as_data(x_val)
        n, k = xt.shape[0], self.module.K
        self._resume_learning(loop)
        if self.local_logits is None or self.local_logits.shape != (n, k):
            self.local_logits = torch.logit(self.generative.mu).expand(n, k).clone()
            self._local_adam = None
        if self._local_adam is None:
            self._local_adam = RowAdam((n, k), h["lr_local"], self.dtype, self.device)
        if self._optimizer is None:
            self._optimizer = Adam(self.module.parameters(), lr=h["lr_global"])

        def train_epoch() -> float:
            order = torch.randperm(n, generator=shuffle).to(self.device)
            total = 0.0
            for b in range(0, n, budget.batch_size):
                rows = order[b : b + budget.batch_size]
                total += self._svi_step(xt[rows], rows)
            return total / n

        return self._learning_epochs(
            loop,
            budget,
            progress,
            train_epoch,
            lambda: self._validate(xv, generator),
            self.state_dict,
            lambda: [*self.module.named_parameters(), ("local_logits", self.local_logits)],
        )

    def _svi_step(self, xb: torch.Tensor, rows: torch.Tensor) -> float:
        """Local steps on the minibatch's logits, then one global step; returns the summed objective."""
        assert self.local_logits is not None and self._local_adam is not None and self._optimizer is not None
        pos = PositiveEntries.of(xb)
        with torch.no_grad():
            model = self.generative
        fixed = LBFixed.of(model, xb, pos, self.hparams["leak_floor"])
        batch_logits = self.local_logits[rows].clone()
        # Row-wise Adam on a view of the batch: gather the batch's moments, update, scatter back.
        batch_adam = RowAdam((xb.shape[0], self.module.K), self.hparams["lr_local"], self.dtype, self.device)
        batch_adam.m, batch_adam.v, batch_adam.t = (
            self._local_adam.m[rows].clone(),
            self._local_adam.v[rows].clone(),
            self._local_adam.t[rows].clone(),
        )
        r, _, at_r = self._local_steps(
            model,
            xb,
            pos,
            batch_logits,
            slice(None),
            batch_adam,
            self.hparams["local_steps"],
            None,
            fixed,
            None,
        )
        self.local_logits[rows] = batch_logits
        self._local_adam.m[rows] = batch_adam.m
        self._local_adam.v[rows] = batch_adam.v
        self._local_adam.t[rows] = batch_adam.t
        self._optimizer.zero_grad(set_to_none=True)
        # The live model has the values of ``model`` (no step since): ``fixed`` and ``at_r`` hold.
        obj, _, _ = self._objective_warm(
            self.module.model(), xb, pos, batch_logits.detach(), r, fixed, at_r, live=True
        )
        (-obj.mean()).backward()
        self._optimizer.step()
        return float(obj.detach().sum())

    def _validate(self, xv: torch.Tensor, generator: torch.Generator) -> float:
        model = self.generative
        if self._val_logits is None or self._val_logits.shape[0] != xv.shape[0]:
            self._val_logits, self._val_adam = self._fresh_logits(model, xv.shape[0])
        assert self._val_adam is not None
        self._fit_fresh(
            model, xv, self._val_logits, self._val_adam, self.hparams["val_steps"], _FreshProgress()
        )
        q = torch.sigmoid(self._val_logits)
        return -self._mean_elbo(model, xv, q, generator)


def _clone_or_none(t: torch.Tensor | None) -> torch.Tensor | None:
    return None if t is None else t.detach().clone()


__all__ = ["DEFAULTS", "RowAdam", "SVI"]
