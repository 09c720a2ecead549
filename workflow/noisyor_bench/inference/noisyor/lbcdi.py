"""LB-CDI: variational EM with the Jaakkola-Jordan *lower* bound (Jaakkola & Jordan 1999;
Singliar & Hauskrecht 2006; paper Sections 2.3, 4.2, Table 1).

For every positive observation the log-likelihood is bounded by Jensen's inequality on the
concave ``f(a) = log(1 - exp(-a))`` with weights ``r_ik`` over the parents, the leak kept
inside every term:

    log p(x_i=1|z) >= f(theta_i0) + sum_k z_k Delta_ik,
    Delta_ik = r_ik [f(theta_i0 + theta_ik / r_ik) - f(theta_i0)]

(:mod:`noisyor_bench.models.noisyor.jj_lower`, docs/bounds.md).  The bound is linear in ``z``, so:

* **q-step** (closed form, exact -- not a coordinate or gradient approximation): the
  maximiser of the lower-bounded ELBO over factorised ``q`` is
  ``q_k = sigmoid(logit mu_k + sum_{x_i=1} Delta_ik - sum_{x_i=0} theta_ik)``;
* **r-step**: Singliar & Hauskrecht's fixed point ``r_ik <- r_ik G_ik / sum_l r_il G_il``
  (``G`` = gradient of the expected bound), made monotone by backtracking;
* **E-step** = alternate ``r_iters`` r-steps and one q-step; the bound on the log-likelihood
  ``LL-LB = max_q`` (lower-bounded ELBO) never decreases;
* **M-step** (learning mode): ``mu_k = mean_n q_nk`` in closed form; ``theta``, ``theta0``
  by ``m_steps`` full-batch Adam steps on the expected bound (softplus parameterisation of
  :class:`~noisyor_bench.models.noisyor.generative.LearnableNoisyOR`), with ``q`` and ``r`` held fixed.
  (Singliar & Hauskrecht solve the M-step by per-parameter root finding; gradient ascent
  on the same concave-in-``(theta, theta0)`` objective reaches the same maximiser.)

The classical method is full batch: every EM iteration visits all training points.  Only
positive observations carry ``r``, stored for the nonzero entries of ``x`` in row chunks of
bounded size, never as an ``N x D x K`` tensor.

Inference mode runs the E-step only, with the generative model fixed at the ground truth,
directly on the data given to ``posterior`` (``fit`` runs it on the validation data and
records one row per round).

Resume: ``fit(..., checkpoint_path=...)`` saves after every EM iteration (inference: every
round) the parameters, the M-step's Adam state, the warm-started ``r`` of the training and
validation E-steps (inference: ``q``, ``r``, LL-LB of every row), the evaluation generator,
the early-stopping state and the curve (:mod:`.fitloop`); a fit started with that file
continues after the saved iteration and ends bit-identical to an uninterrupted fit.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
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
from noisyor_bench.inference.noisyor.jj_lower_solver import BlockCarry, lb_round_warm, lb_start
from noisyor_bench.inference.training import lower_lr_hint
from noisyor_bench.infra.constants import DEFAULT_N_SAMPLES
from noisyor_bench.infra.errors import DataError
from noisyor_bench.models.noisyor.generative import GenerativeModule
from noisyor_bench.models.noisyor.jj_lower import (
    LBFixed,
    MStepConstants,
    PositiveEntries,
    lb_elbo,
    lb_elbo_mstep,
    row_chunks,
)
from noisyor_bench.models.noisyor.model import NoisyOR

DEFAULTS: dict[str, Any] = {
    "max_rounds": 200,  # E-step rounds when run to convergence (inference fit, posterior)
    "r_iters": 3,  # monotone r-steps per E-step round
    "tol": 1e-7,  # stop the E-step when no data point's LL-LB rose by more than this
    "estep_rounds": 5,  # learning: warm-started E-step rounds per EM iteration (partial E-step)
    "m_steps": 10,  # learning: Adam steps on (theta, theta0) per EM iteration
    "lr": 0.02,  # learning: Adam learning rate of the M-step
    "val_rounds": 10,  # learning: warm-started E-step rounds on x_val per evaluation
    "leak_floor": 1e-6,  # leak used inside the bound is max(theta_i0, leak_floor)
    "exact_max_k": 12,  # ELBO by 2^K enumeration up to this K, else Monte Carlo
    "eval_samples": DEFAULT_N_SAMPLES,  # Bernoulli samples per data point for the Monte Carlo ELBO
    "dtype": "float64",
}


@dataclass
class _Chunk:
    """E-step state of a block of rows: data, positive entries, ``q`` (n, K), ``r`` (P, K), LL-LB (n,)."""

    rows: slice
    x: torch.Tensor
    pos: PositiveEntries
    q: torch.Tensor
    r: torch.Tensor
    ll: torch.Tensor


class LBCDI(ClassicalMethod):
    """Lower-bound conjugate dual inference with variational EM (full batch)."""

    name: ClassVar[str] = "lb-cdi"
    DEFAULTS: ClassVar[dict[str, Any]] = DEFAULTS

    def _init_state(self, model: NoisyOR, mode: Mode) -> None:
        self.module: GenerativeModule = self._generative_module(model, mode)
        self.epoch = 0
        self._optimizer: torch.optim.Optimizer | None = None
        self._train: list[_Chunk] | None = None
        self._val: list[_Chunk] | None = None
        self._saved_r: dict[str, list[torch.Tensor] | None] = {}  # from load_state_dict, used by the next fit
        self._rounds_converged = False  # whether the last _run_rounds stopped by its tolerance

    def check_hparams(self, h: Mapping[str, Any]) -> None:
        for key in ("max_rounds", "estep_rounds", "val_rounds", "m_steps"):
            require(self.name, h[key] >= 0, key, h[key], ">= 0")
        for key in ("r_iters", "eval_samples"):
            require(self.name, h[key] >= 1, key, h[key], ">= 1")
        require(self.name, h["lr"] > 0, "lr", h["lr"], "> 0")
        require(self.name, h["tol"] >= 0, "tol", h["tol"], ">= 0")
        require(self.name, h["leak_floor"] > 0, "leak_floor", h["leak_floor"], "> 0")

    # ------------------------------------------------------------------ API
    def fit(
        self,
        x_train: torch.Tensor,
        x_val: torch.Tensor,
        budget: FitBudget,
        progress: Callable[[EpochRecord], None] | None = None,
        checkpoint_path: str | Path | None = None,
    ) -> list[EpochRecord]:
        """Inference mode: the E-step on ``x_val``; learning mode: variational EM on ``x_train``.

        Inference records (one per round, round 0 = initial ``r``): ``train_nelbo = -mean
        LL-LB`` (the negated objective), ``val_nelbo = -mean ELBO`` of ``q`` (exact for
        ``K <= exact_max_k``), ``extra = {"ll_lb", "elbo"}``.  Learning records (one per EM
        iteration): ``train_nelbo = -mean`` lower-bounded ELBO on ``x_train`` after the
        M-step, ``val_nelbo`` as above on ``x_val`` (every ``eval_every`` iterations, warm
        started), early stopping with ``patience`` evaluations; the best parameters by
        ``val_nelbo`` are restored at the end.  ``seconds``: wall time of the epoch (including its evaluation).
        ``checkpoint_path``: save after every iteration / round, and resume from it when it exists.
        """
        generator = self._eval_generator()
        loop = self._fit_loop(
            budget,
            x_train,
            x_val,
            checkpoint_path,
            {"evaluation": generator},
            lower_lr_hint("'lr', the M-step's"),
        )
        if self.mode == "inference":
            records = self._fit_inference(x_val, budget, progress, loop, generator)
        else:
            records = self._fit_learning(x_train, x_val, budget, progress, loop, generator)
        self._end_fit(loop, budget, applicable=self.mode == "learning")
        return records

    @torch.no_grad()
    def posterior(self, x: torch.Tensor) -> torch.Tensor:
        """``q`` after the E-step run to convergence on ``x`` with the current generative model, (N, K)."""
        model = self.generative
        chunks = self._make_chunks(model, self._as_data(x))
        rounds = self._run_rounds(model, chunks, self.hparams["max_rounds"])
        self.posterior_progress = PosteriorProgress(steps=rounds, converged=self._rounds_converged)
        return torch.cat([c.q for c in chunks]).to(torch.float64)

    def state_dict(self) -> dict[str, Any]:
        """Learning state after the last completed EM iteration: parameters, Adam state and the
        warm-started ``r`` of the training and validation E-steps (``q`` and LL-LB are
        recomputed from ``r`` at the start of every iteration, so ``r`` is all they need)."""
        return self._state(copy_tensors=True)

    def _state(self, copy_tensors: bool) -> dict[str, Any]:
        """:meth:`state_dict`; without copies for a checkpoint written at once (``r`` can take GBs)."""
        same = (lambda t: t.clone()) if copy_tensors else (lambda t: t)
        return {
            "method": self.name,
            "hparams": dict(self.hparams),
            "epoch": self.epoch,
            "generative": clone_tensors(self.module.state_dict()),
            "optimizer": None if self._optimizer is None else copy.deepcopy(self._optimizer.state_dict()),
            "train_r": None if self._train is None else [same(c.r) for c in self._train],
            "val_r": None if self._val is None else [same(c.r) for c in self._val],
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore :meth:`state_dict`; the saved ``r`` takes effect on the next ``fit`` (same data)."""
        self._check_state_method(state)
        self.module.load_state_dict(state["generative"])
        self.epoch = int(state["epoch"])
        if state.get("optimizer") is not None and self.module.learnable:
            self._optimizer = self._make_optimizer()
            self._optimizer.load_state_dict(state["optimizer"])
        self._train = self._val = None
        self._saved_r = {"train": state.get("train_r"), "val": state.get("val_r")}

    # ------------------------------------------------------------------ inference mode
    @torch.no_grad()
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
        chunks = self._make_chunks(model, x)
        saved = loop.resume()
        if saved is not None:
            _restore_chunks(chunks, saved, ("q", "r", "ll"))
        if loop.finished:
            return list(loop.records)
        rounds = min(self.hparams["max_rounds"], budget.max_epochs)
        clock = [time.perf_counter()]

        def state() -> dict[str, Any]:  # written at once: no copies
            return {key: [getattr(c, key) for c in chunks] for key in ("q", "r", "ll")}

        def record(t: int, converged: bool) -> None:
            q = torch.cat([c.q for c in chunks])
            ll = float(torch.cat([c.ll for c in chunks]).mean())
            elbo = self._mean_elbo(model, x, q, generator)
            rec = EpochRecord(t, -ll, -elbo, lap(clock), {"ll_lb": ll, "elbo": elbo})
            loop.end_epoch(rec, state, stop="converged" if converged else "", max_epochs=rounds)
            if progress is not None:
                progress(rec)

        start = None if saved is None else loop.state.epoch
        self._run_rounds(model, chunks, rounds, on_round=record, start=start)
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
    ) -> list[EpochRecord]:
        h = self.hparams
        xt, xv = self._as_data(x_train), self._as_data(x_val)
        self._resume_learning(loop)
        if self._optimizer is None:
            self._optimizer = self._make_optimizer()
        with torch.no_grad():
            model = self.generative
            saved_r = self._saved_r
            if self._train is None:
                self._train = self._make_chunks(model, xt)
                if saved_r.get("train") is not None:
                    _restore_chunks(self._train, {"r": saved_r["train"]}, ("r",))
            if self._val is None:
                self._val = self._make_chunks(model, xv)
                if saved_r.get("val") is not None:
                    _restore_chunks(self._val, {"r": saved_r["val"]}, ("r",))
            self._saved_r = {}

        def train_epoch() -> float:
            with torch.no_grad():
                self._refresh(self.generative, self._train)
                self._run_rounds(self.generative, self._train, h["estep_rounds"])
            return self._m_step(xt.shape[0])

        return self._learning_epochs(
            loop,
            budget,
            progress,
            train_epoch,
            lambda: self._validate(xv, generator),
            lambda: self._state(copy_tensors=False),
            self.module.named_parameters,
        )

    def _m_step(self, n_total: int) -> float:
        """``mu = mean q`` (closed form), then ``m_steps`` Adam steps on (theta, theta0); returns the mean objective."""
        assert self._train is not None and self._optimizer is not None
        with torch.no_grad():
            q_mean = torch.cat([c.q for c in self._train]).mean(0).clamp(1e-6, 1 - 1e-6)
            self.module.raw_mu.copy_(torch.logit(q_mean))
        # q and r stay fixed: their pieces are gathered once.  The KL term does not depend on
        # (theta, theta0), so leaving it out leaves their gradients unchanged.
        const = [MStepConstants.of(c.pos, c.q, c.r) for c in self._train]
        for _ in range(self.hparams["m_steps"]):
            self._optimizer.zero_grad(set_to_none=True)
            for c, k in zip(
                self._train, const
            ):  # gradient accumulation over row chunks = one full-batch step
                model = self.module.model()
                loss = -lb_elbo_mstep(model, c.pos, c.q, c.r, k, self.hparams["leak_floor"]).sum() / n_total
                loss.backward()
            self._optimizer.step()
        with torch.no_grad():
            model = self.generative
            total = sum(
                float(lb_elbo(model, c.x, c.pos, c.q, c.r, self.hparams["leak_floor"]).sum())
                for c in self._train
            )
        return total / n_total

    @torch.no_grad()
    def _validate(self, xv: torch.Tensor, generator: torch.Generator) -> float:
        assert self._val is not None
        model = self.generative
        self._refresh(model, self._val)
        self._run_rounds(model, self._val, self.hparams["val_rounds"])
        q = torch.cat([c.q for c in self._val])
        return -self._mean_elbo(model, xv, q, generator)

    def _make_optimizer(self) -> torch.optim.Optimizer:
        return Adam([self.module.raw_theta, self.module.raw_theta0], lr=self.hparams["lr"])

    # ------------------------------------------------------------------ E-step machinery
    def _make_chunks(self, model: NoisyOR, x: torch.Tensor) -> list[_Chunk]:
        chunks = []
        for rows in row_chunks(x, model.K):
            xc = x[rows]
            pos = PositiveEntries.of(xc)
            q, r, ll = lb_start(model, xc, pos, None, self.hparams["leak_floor"])
            chunks.append(_Chunk(rows, xc, pos, q, r, ll))
        return chunks

    def _refresh(self, model: NoisyOR, chunks: list[_Chunk]) -> None:
        """Recompute ``q`` and LL-LB for the kept ``r`` under changed model parameters (warm start)."""
        for c in chunks:
            c.q, c.r, c.ll = lb_start(model, c.x, c.pos, c.r, self.hparams["leak_floor"])

    def _run_rounds(
        self,
        model: NoisyOR,
        chunks: list[_Chunk],
        max_rounds: int,
        tol: float | None = None,
        on_round: Callable[[int, bool], None] | None = None,
        start: int | None = None,
    ) -> int:
        """E-step rounds over all chunks in lockstep; stop when the largest LL-LB gain is <= ``tol``.

        ``on_round(t, converged)`` sees round 0 (the incoming state) and every round after.
        ``start``: the chunks hold the state after round ``start`` (a resumed fit): continue
        with round ``start + 1`` and do not report round 0 again.
        """
        tol = self.hparams["tol"] if tol is None else tol
        self._rounds_converged = False
        if on_round is not None and start is None:
            on_round(0, False)
        first = (start or 0) + 1
        t = first - 1
        # The model is fixed during the rounds: each chunk carries its model rows and the pieces
        # of the r update at its r from one round to the next (same numbers, one pass fewer).
        leak_floor = self.hparams["leak_floor"]
        carry = BlockCarry(len(chunks), sum(c.pos.count for c in chunks), model.K, self.dtype.itemsize)
        for t in range(first, max_rounds + 1):
            gain = -float("inf")
            for j, c in enumerate(chunks):
                fixed = carry.fixed(j, partial(LBFixed.of, model, c.x, c.pos, leak_floor))
                q, r, ll, at_r = lb_round_warm(
                    model,
                    c.x,
                    c.pos,
                    c.q,
                    c.r,
                    self.hparams["r_iters"],
                    leak_floor,
                    carry.at_r(j, fixed, c.r),
                    fixed,
                )
                carry.keep(j, at_r)
                if ll.numel():
                    gain = max(gain, float((ll - c.ll).max()))
                c.q, c.r, c.ll = q, r, ll
            if on_round is not None:
                on_round(t, gain <= tol)
            if gain <= tol:
                self._rounds_converged = True
                break
        return t


def _restore_chunks(chunks: list[_Chunk], saved: dict[str, Any], keys: tuple[str, ...]) -> None:
    """Put saved per-chunk tensors back; the chunking is a function of the data, so it must match."""
    for key in keys:
        tensors = saved[key]
        if len(tensors) != len(chunks) or any(
            t.shape != getattr(c, key).shape for t, c in zip(tensors, chunks)
        ):
            raise DataError(
                f"lb-cdi: the checkpoint's E-step state ({key!r}) does not fit this data; delete the checkpoint to start afresh"
            )
        for c, t in zip(chunks, tensors):
            setattr(c, key, t.to(device=getattr(c, key).device, dtype=getattr(c, key).dtype))


__all__ = ["DEFAULTS", "LBCDI"]
