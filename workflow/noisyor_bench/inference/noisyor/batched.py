"""Many AVI/ACP runs trained as one computation.

On small problems (SYN-PATTERN: D = 64, K = 8) a training step of one run is dominated by
per-operation overhead, not arithmetic.  :func:`fit_batched` trains R runs that share a
training set, a validation set and an architecture -- the seeds of a grid cell, or the
search draws with the same encoder size -- as one computation: their parameters are
stacked along a leading run axis and one step evaluates all R objectives with
``torch.func.vmap`` over ``functional_call`` of the single-run objective
(:meth:`~noisyor_bench.inference.noisyor.amortized.AmortizedMethod.batch_nelbo`, i.e. the one ELBO of
eq. 16 and, for ACP, the one eq. 11), so no formula exists twice.

Each run keeps everything a run alone would have (and :meth:`AmortizedMethod.fit` would
give):

* its initial parameters: the R method instances are built as usual (their streams give the
  generative and encoder initialisation) and stacked;
* its random streams: its own shuffle generator (a fresh permutation per pass, drawn exactly
  as the single-run :class:`~noisyor_bench.inference.training.Trainer` draws it), its own
  ELBO-noise generator (the uniforms of the binary-concrete samples, drawn per run and per
  step with the single-run shapes) and its own validation noise (re-seeded per call in the
  single-run path, so drawn once here);
* its own Adam (:class:`StackedAdam`): Adam's update is elementwise, so one optimiser over
  stacked tensors is R Adams as long as the learning rates, ``beta1`` and the bias
  corrections are per run; the step counter is shared because all runs step in lockstep;
* its own per-run hyperparameters: learning rates (``lr``, ``gen_lr``), ``beta1`` and the
  temperature schedule;
* its own early stopping (:func:`~noisyor_bench.inference.training.update_stopping`, the
  rule the single-run trainer uses), best state, stop reason and convergence verdict.  A run
  that stops (or diverges) leaves the stack at the end of that epoch: the remaining runs are
  re-stacked, so finished runs cost nothing afterwards.

What must be shared: the method class and mode, (D, K), the encoder architecture
(``hidden_layers``, ``hidden_dim``), the sample counts (``n_samples``, ``val_samples``), the
dtype, the device, the data and the budget.

The ELBO takes the active-entry path exactly when the single-run fit does (data at most 25%
ones, :func:`~noisyor_bench.models.noisyor.sparse.wants_sparse`): the positive term -- the
only one that needs samples, and most of a step's work -- is then evaluated for all runs in
one call of the sparse kernels (:func:`~noisyor_bench.models.noisyor.sparse.positive_loglik`
on the block-diagonal pattern of the runs' rows, :meth:`ActiveSet.block_diagonal`), the
encoder, eq. 11, the negative term and the KL per run under ``vmap`` (dense: at these sizes a
batched matrix product).  On dense data the whole objective is ``vmap``-ed.

Numerics: the terms linear in ``x`` are evaluated densely and the Adam step is a textbook
Adam in place of PyTorch's fused kernel, so a run agrees with its single-run fit to float
rounding, not bit for bit (``tests/inference/test_batched.py`` states the tolerance).  The
``seconds`` of an epoch record is the wall time of the batched epoch, shared by its runs.
Checkpoint / resume: with ``checkpoint_path`` the batch is written after every epoch, atomically
(:func:`~noisyor_bench.inference.training.write_checkpoint`): the stacked parameters and Adam
moments of the runs still training, every run's generators, best state, loop state and curve,
and the diverged runs' messages -- tensors and plain values only (``weights_only`` loading).  A
batch started with an existing checkpoint continues from it and ends bit-identical to an
uninterrupted batch; the ``fingerprint`` (the runs' configurations) must match.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch import nn
from torch.func import functional_call, vmap

from noisyor_bench.inference.convergence import Convergence, assess
from noisyor_bench.inference.fitting import EpochRecord, FitBudget
from noisyor_bench.inference.noisyor.amortized import (
    AmortizedMethod,
    _as_binary,
    eval_chunk_rows,
    temperature,
)
from noisyor_bench.inference.seeding import stream_generator
from noisyor_bench.inference.training import (
    CHECKPOINT_VERSION,
    NonFiniteLossError,
    RunProgress,
    diverged,
    evaluates_at,
    lower_lr_hint,
    passes_per_epoch,
    read_checkpoint,
    update_stopping,
    validate_budget,
    write_checkpoint,
)
from noisyor_bench.infra.errors import ConfigError, DataError
from noisyor_bench.models.noisyor.elbo import (
    bernoulli_from_uniforms,
    bernoulli_kl_from_logits,
    binary_concrete,
    negative_term,
)
from noisyor_bench.models.noisyor.sparse import ActiveSet, positive_loglik, wants_sparse

VAL_MAX_ELEMENTS = 2**24
"""Cap on the (runs, samples, rows, D) rates of one validation chunk (~64 MB in float32)."""

SHARED_HPARAMS = ("hidden_layers", "hidden_dim", "n_samples", "val_samples", "dtype")
"""Hyperparameters that fix tensor shapes or the dtype: equal across the runs of a batch."""

BATCH_CHECKPOINT_VERSION = 1
"""Layout of a batch checkpoint (in its fingerprint; the file format is the trainer's)."""

BatchedProgressFn = Callable[[int, EpochRecord], None]
"""``progress(run, record)``: called after every epoch of run ``run`` (its index in ``methods``)."""


@dataclass
class BatchedRun:
    """The outcome of one run of a batch: what :meth:`AmortizedMethod.fit` leaves behind."""

    history: list[EpochRecord] = field(default_factory=list)
    best_epoch: int = 0
    stop_reason: str = ""  # "patience" | "max_epochs" | "diverged"
    convergence: Convergence | None = None
    error: NonFiniteLossError | None = None  # set when the run diverged (the single run raises it)


# ---------------------------------------------------------------------- Adam over stacked runs
class StackedAdam:
    """R independent Adams over parameters stacked along a leading run axis.

    Adam (Kingma and Ba, 2015; ``torch.optim.Adam`` without weight decay or amsgrad) updates
    every element from its own gradient and moments only:

        m <- beta1 m + (1 - beta1) g,      v <- beta2 v + (1 - beta2) g^2,
        p <- p - lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps).

    So one update over stacked tensors is R separate Adams provided every per-run constant
    (``lr``, ``beta1`` and the bias correction ``1 - beta1^t`` that depends on it) is taken per
    run -- broadcast along the run axis -- and the step count ``t`` is each run's own, which
    holds here because all runs of a batch step together from step 0.  ``beta2`` and ``eps``
    are PyTorch's defaults, as in :meth:`AmortizedMethod.make_optimizer`.
    """

    def __init__(
        self,
        params: Mapping[str, torch.Tensor],
        lr: Mapping[str, Sequence[float]],
        beta1: Sequence[float],
        beta2: float = 0.999,
        eps: float = 1e-8,
    ) -> None:
        self.params = dict(params)
        self.lr = {name: [float(v) for v in lr[name]] for name in self.params}
        self.beta1 = [float(b) for b in beta1]
        self.beta2, self.eps = float(beta2), float(eps)
        self.steps = 0
        self.exp_avg = {n: torch.zeros_like(p) for n, p in self.params.items()}
        self.exp_avg_sq = {n: torch.zeros_like(p) for n, p in self.params.items()}

    def _per_run(self, values: Sequence[float], like: torch.Tensor) -> torch.Tensor:
        return torch.tensor(values, dtype=like.dtype, device=like.device).view(-1, *([1] * (like.ndim - 1)))

    @torch.no_grad()
    def step(self) -> None:
        self.steps += 1
        t = self.steps
        bias2_sqrt = math.sqrt(1.0 - self.beta2**t)
        for name, p in self.params.items():
            if p.grad is None:
                continue
            g = p.grad
            m, v = self.exp_avg[name], self.exp_avg_sq[name]
            m.lerp_(g, self._per_run([1.0 - b for b in self.beta1], p))
            v.mul_(self.beta2).addcmul_(g, g, value=1.0 - self.beta2)
            step_size = self._per_run([lr / (1.0 - b**t) for lr, b in zip(self.lr[name], self.beta1)], p)
            denom = (v.sqrt() / bias2_sqrt).add_(self.eps)
            p.sub_(step_size * m / denom)

    def keep(self, index: torch.Tensor, params: Mapping[str, torch.Tensor]) -> None:
        """Keep the runs ``index`` (positions along the run axis), now stacked in ``params``."""
        rows = index.tolist()
        self.params = dict(params)
        self.lr = {n: [v[i] for i in rows] for n, v in self.lr.items()}
        self.beta1 = [self.beta1[i] for i in rows]
        self.exp_avg = {n: t[index] for n, t in self.exp_avg.items()}
        self.exp_avg_sq = {n: t[index] for n, t in self.exp_avg_sq.items()}


# ---------------------------------------------------------------------- the batched objective
class _Objective(nn.Module):
    """``functional_call`` target: one run's per-point NELBO from given uniforms.

    Wraps the template method's ``net`` (so parameter names are ``net.<name>``) and calls the
    method's own :meth:`~AmortizedMethod.batch_nelbo`, which reads ``net`` -- the parameters
    ``functional_call`` swaps in.
    """

    def __init__(self, method: AmortizedMethod) -> None:
        super().__init__()
        self.net = method.net
        self._method = (method,)  # a tuple: not registered as a submodule

    def forward(
        self, x: torch.Tensor, uniforms: torch.Tensor | None = None, tau: torch.Tensor | None = None
    ) -> Any:
        """With ``uniforms``: the per-point NELBO (dense ELBO).  Without: the per-run parts of
        the ELBO for the active-entry path -- ``(logits, theta, theta0, negative term, KL)``,
        the positive term being evaluated for all runs at once by :func:`_stacked_nelbo`."""
        m = self._method[0]
        if uniforms is not None:
            return m.batch_nelbo(x, uniforms.shape[0], tau, None, None, uniforms=uniforms)
        model, logits = m.model_and_logits(x)
        q = torch.sigmoid(logits)
        return (
            logits,
            model.theta,
            model.theta0,
            negative_term(model, x, q),
            bernoulli_kl_from_logits(logits, model.mu),
        )


def _stacked_nelbo(
    parts: tuple[torch.Tensor, ...], uniforms: torch.Tensor, tau: torch.Tensor | None, active: ActiveSet
) -> torch.Tensor:
    """Per-point NELBO (R, N) of R runs from their ELBO parts, the positive term from the active
    entries of all runs in one call (the active branch of :func:`~noisyor_bench.models.noisyor.elbo.elbo`
    for stacked runs; ``active``: the (R * N, R * D) block-diagonal pattern of the runs' rows).

    The same term functions as :func:`elbo` -- samples from the runs' uniforms (R, L, N, K),
    :func:`positive_loglik` (the sparse kernels), :func:`negative_term`, the KL -- composed in
    the same order, ``(pos + neg) - kl``.
    """
    logits, theta, theta0, neg, kl = parts
    r, n, k = logits.shape
    if tau is None:
        z = bernoulli_from_uniforms(torch.sigmoid(logits).unsqueeze(1), uniforms)
    else:
        z = binary_concrete(logits.unsqueeze(1), uniforms, tau.view(r, 1, 1, 1))
    n_samples = z.shape[1]
    z_rows = z.transpose(0, 1).reshape(n_samples, r * n, k)
    pos = positive_loglik(theta.reshape(-1, k), theta0.reshape(-1), z_rows.to(theta.dtype), active)
    pos = pos.view(n_samples, r, n).mean(0)
    return -(pos + neg - kl)


def _check_batch(methods: Sequence[AmortizedMethod]) -> None:
    if not methods:
        raise ConfigError("fit_batched needs at least one run")
    first = methods[0]
    for i, m in enumerate(methods):
        if not isinstance(m, AmortizedMethod):
            raise ConfigError(f"run {i} is a {type(m).__name__}, not an amortized method (AVI/ACP)")
        same = (type(m), m.mode, m.D, m.K, m.device) == (
            type(first),
            first.mode,
            first.D,
            first.K,
            first.device,
        )
        if not same:
            raise ConfigError(
                f"run {i} ({m.name}, {m.mode}, D={m.D}, K={m.K}, {m.device}) cannot be batched with run 0 "
                f"({first.name}, {first.mode}, D={first.D}, K={first.K}, {first.device})"
            )
        for key in SHARED_HPARAMS:
            if getattr(m.hp, key) != getattr(first.hp, key):
                raise ConfigError(
                    f"runs of a batch must share {key!r}: run {i} has {getattr(m.hp, key)!r}, run 0 "
                    f"{getattr(first.hp, key)!r}"
                )


class _Stack:
    """The runs still training: stacked parameters, their Adam and their random streams."""

    def __init__(self, methods: Sequence[AmortizedMethod], objective: _Objective) -> None:
        self.ids = list(range(len(methods)))
        names = [n for n, _ in objective.named_parameters()]
        per_run = [dict(_Objective(m).named_parameters()) for m in methods]
        self.params = {n: torch.stack([p[n].detach() for p in per_run]).requires_grad_() for n in names}
        per_run_buffers = [dict(_Objective(m).named_buffers()) for m in methods]
        self.buffers = {n: torch.stack([b[n] for b in per_run_buffers]) for n, _ in objective.named_buffers()}
        lr = {
            n: [m.hp.lr if n.startswith("net.encoder.") else m.hp.generative_lr for m in methods]
            for n in self.params
        }
        self.adam = StackedAdam(self.params, lr, [m.hp.beta1 for m in methods])
        self.shuffle = [stream_generator(m.init_seed, "shuffle") for m in methods]
        self.noise = [stream_generator(m.init_seed, "elbo-samples", m.device) for m in methods]

    def keep(self, local: list[int]) -> None:
        index = torch.tensor(local, dtype=torch.long)
        self.ids = [self.ids[i] for i in local]
        self.params = {n: p.detach()[index].requires_grad_() for n, p in self.params.items()}
        self.buffers = {n: b[index] for n, b in self.buffers.items()}
        self.adam.keep(index, self.params)
        self.shuffle = [self.shuffle[i] for i in local]
        self.noise = [self.noise[i] for i in local]


def _validation_uniforms(methods: Sequence[AmortizedMethod], n_val: int) -> torch.Tensor:
    """Each run's validation noise (R, L_val, N_val, K), drawn as :meth:`AmortizedMethod.nelbo`
    draws it: from the run's ``validation`` stream, re-seeded per call, one draw per row chunk."""
    first = methods[0]
    lv, rows = first.hp.val_samples, eval_chunk_rows(first.hp.val_samples, first.D)
    out = []
    for m in methods:
        g = stream_generator(m.init_seed, "validation", m.device)
        chunks = [
            torch.rand((lv, min(rows, n_val - start), m.K), generator=g, dtype=m.dtype, device=m.device)
            for start in range(0, n_val, rows)
        ]
        out.append(torch.cat(chunks, dim=1))
    return torch.stack(out)


# ---------------------------------------------------------------------- the fit
# ---------------------------------------------------------------------- checkpoints
def _save_batch(
    path: Path,
    fingerprint: Mapping[str, Any],
    step: int,
    stack: _Stack,
    best: Mapping[str, torch.Tensor],
    states: Sequence[RunProgress],
    results: Sequence[BatchedRun],
) -> None:
    payload = {
        "version": CHECKPOINT_VERSION,
        "fingerprint": dict(fingerprint),
        "step": step,
        "ids": list(stack.ids),
        "params": {n: p.detach() for n, p in stack.params.items()},
        "exp_avg": stack.adam.exp_avg,
        "exp_avg_sq": stack.adam.exp_avg_sq,
        "adam_steps": stack.adam.steps,
        "shuffle": [g.get_state() for g in stack.shuffle],
        "noise": [g.get_state() for g in stack.noise],
        "best": dict(best),
        "progress": [asdict(s) for s in states],
        "history": [[asdict(r) for r in res.history] for res in results],
        "errors": [None if res.error is None else str(res.error) for res in results],
    }
    write_checkpoint(path, payload)


def _restore_batch(
    path: Path,
    fingerprint: Mapping[str, Any],
    stack: _Stack,
    best: dict[str, torch.Tensor],
    states: list[RunProgress],
    results: list[BatchedRun],
) -> int:
    """Load the batch checkpoint into the freshly built stack and records; return the step."""
    payload = read_checkpoint(path, {**fingerprint, "batch_version": BATCH_CHECKPOINT_VERSION})
    if len(payload["progress"]) != len(states):
        raise DataError(
            f"checkpoint {path} holds {len(payload['progress'])} runs, this batch has {len(states)}"
        )
    ids = [int(i) for i in payload["ids"]]
    if ids != stack.ids:
        stack.keep([stack.ids.index(i) for i in ids])
    like = next(iter(stack.params.values()))
    stack.params = {n: t.to(like.device).requires_grad_() for n, t in payload["params"].items()}
    stack.adam.params = stack.params
    stack.adam.exp_avg = {n: t.to(like.device) for n, t in payload["exp_avg"].items()}
    stack.adam.exp_avg_sq = {n: t.to(like.device) for n, t in payload["exp_avg_sq"].items()}
    stack.adam.steps = int(payload["adam_steps"])
    for g, state in zip(stack.shuffle, payload["shuffle"], strict=True):
        g.set_state(state)
    for g, state in zip(stack.noise, payload["noise"], strict=True):
        g.set_state(state)
    for n, t in payload["best"].items():
        best[n] = t.to(like.device)
    for run, (progress_, history, error) in enumerate(
        zip(payload["progress"], payload["history"], payload["errors"], strict=True)
    ):
        states[run] = RunProgress(**progress_)
        results[run].history = [EpochRecord(**r) for r in history]
        results[run].error = None if error is None else NonFiniteLossError(error)
    return int(payload["step"])


def fit_batched(
    methods: Sequence[AmortizedMethod],
    x_train: Any,
    x_val: Any,
    budget: FitBudget,
    progress: BatchedProgressFn | None = None,
    checkpoint_path: str | Path | None = None,
    fingerprint: Mapping[str, Any] | None = None,
) -> list[BatchedRun]:
    """Train ``methods`` (R AVI/ACP runs, see the module doc) together; one result per run.

    Afterwards every method holds its best state, ``best_epoch``, ``stop_reason`` and
    ``convergence``, as after its own :meth:`AmortizedMethod.fit`; a run that diverged keeps
    its initial state and reports the error (``BatchedRun.error``) instead of raising it.
    With ``checkpoint_path`` the batch is checkpointed after every epoch and resumed from an
    existing checkpoint whose ``fingerprint`` matches (module doc).
    """
    validate_budget(budget)
    _check_batch(methods)
    first = methods[0]
    device, dtype = first.device, first.dtype
    xt = _as_binary(x_train, first.D, "x_train", device)
    xv = _as_binary(x_val, first.D, "x_val", device)
    if xt.shape[0] == 0:
        raise DataError("training set is empty: need at least one training row")
    if xv.shape[0] == 0:
        raise DataError("x_val is empty: the validation set selects the best epoch")
    n_train, n_val = int(xt.shape[0]), int(xv.shape[0])
    objective = _Objective(first)
    stack = _Stack(methods, objective)
    val_u = _validation_uniforms(methods, n_val)
    best = {n: p.detach().clone() for n, p in stack.params.items()}
    states = [RunProgress() for _ in methods]
    results = [BatchedRun() for _ in methods]
    passes = passes_per_epoch(n_train, budget)
    lv = first.hp.val_samples
    step = 0
    ckpt = Path(checkpoint_path) if checkpoint_path is not None else None
    ckpt_key = {**(fingerprint or {}), "batch_version": BATCH_CHECKPOINT_VERSION}
    if ckpt is not None and ckpt.exists():
        step = _restore_batch(ckpt, fingerprint or {}, stack, best, states, results)

    def nelbo_one(params, buffers, x, uniforms, tau):  # noqa: ANN001, ANN202 - vmapped
        return functional_call(objective, (params, buffers), (x, uniforms, tau))

    def parts_one(params, buffers, x):  # noqa: ANN001, ANN202 - vmapped
        return functional_call(objective, (params, buffers), (x,))

    # The active-entry path exactly when the single-run fit takes it (amortized._active_or_none).
    train_active = ActiveSet.of(xt) if wants_sparse(xt) else None
    dense_train, dense_val = (
        vmap(nelbo_one, in_dims=(0, 0, 0, 0, 0)),
        vmap(nelbo_one, in_dims=(0, 0, None, 0, None)),
    )
    parts_train, parts_val = vmap(parts_one, in_dims=(0, 0, 0)), vmap(parts_one, in_dims=(0, 0, None))
    val_active: dict[tuple[int, int], ActiveSet | None] = {}

    def val_step(p, b, r0: int, u) -> torch.Tensor:  # noqa: ANN001
        chunk = xv[r0 : r0 + val_rows]
        runs = u.shape[0]
        if (r0, runs) not in val_active:
            one = ActiveSet.of(chunk) if wants_sparse(chunk) else None
            rows = torch.arange(chunk.shape[0], device=device).repeat(runs)
            val_active[(r0, runs)] = None if one is None else one.select(rows).block_diagonal(runs)
        active = val_active[(r0, runs)]
        x = chunk.to(dtype)
        if active is None:
            return dense_val(p, b, x, u, None)
        return _stacked_nelbo(parts_val(p, b, x), u, None, active)

    def train_step(p, b, batch, u, taus) -> torch.Tensor:  # noqa: ANN001
        x = xt[batch.to(device)].to(dtype)
        if train_active is None:
            return dense_train(p, b, x, u, taus)
        active = train_active.select(batch.reshape(-1).to(device)).block_diagonal(batch.shape[0])
        return _stacked_nelbo(parts_train(p, b, x), u, taus, active)

    val_rows = eval_chunk_rows(lv, first.D)
    runs_per_chunk = max(1, VAL_MAX_ELEMENTS // (lv * min(val_rows, n_val) * first.D))

    def validate() -> list[float]:
        values = []
        with torch.no_grad():
            for a in range(0, len(stack.ids), runs_per_chunk):
                sel = slice(a, a + runs_per_chunk)
                p = {n: t[sel] for n, t in stack.params.items()}
                b = {n: t[sel] for n, t in stack.buffers.items()}
                u = val_u[stack.ids[sel]]
                per_point = torch.cat(
                    [
                        val_step(p, b, r0, u[:, :, r0 : r0 + val_rows]).double()
                        for r0 in range(0, n_val, val_rows)
                    ],
                    dim=1,
                )
                values.extend(per_point.mean(1).tolist())
        return values

    def fail(local: int, epoch: int, what: str) -> None:
        run = stack.ids[local]
        s = states[run]
        where = f"{what} at epoch {epoch}, optimiser step {step} (0-based)"
        results[run].error = diverged(where, s.last_train, s.last_val, lower_lr_hint("'lr'"))
        s.finished, s.stop_reason = True, "diverged"

    while stack.ids:
        start = time.perf_counter()
        epoch = states[stack.ids[0]].epoch + 1
        totals = [0.0] * len(stack.ids)
        for _ in range(passes):
            perms = torch.stack([torch.randperm(n_train, generator=g) for g in stack.shuffle])
            for batch in torch.split(perms, budget.batch_size, dim=1):
                hps = [methods[r].hp for r in stack.ids]
                taus = torch.tensor([temperature(step, hp) for hp in hps], dtype=dtype, device=device)
                shape = (first.hp.n_samples, batch.shape[1], first.K)
                u = torch.stack(
                    [torch.rand(shape, generator=g, dtype=dtype, device=device) for g in stack.noise]
                )
                losses = train_step(stack.params, stack.buffers, batch, u, taus).mean(1)
                values = losses.detach().tolist()
                for local, value in enumerate(values):
                    if not math.isfinite(value) and not states[stack.ids[local]].finished:
                        fail(local, epoch, f"non-finite training loss ({value})")
                    totals[local] += value * batch.shape[1]
                for p in stack.params.values():
                    p.grad = None
                losses.sum().backward()
                stack.adam.step()
                step += 1
        finite = torch.ones(len(stack.ids), dtype=torch.bool)
        for name, p in stack.params.items():
            ok = torch.isfinite(p.detach()).flatten(1).all(1).cpu()
            for local in torch.nonzero(~ok & finite).flatten().tolist():
                if not states[stack.ids[local]].finished:
                    fail(local, epoch, f"non-finite values in parameter {name.removeprefix('net.')!r}")
            finite &= ok
        for local, run in enumerate(stack.ids):
            if not states[run].finished:
                states[run].last_train = totals[local] / (n_train * passes)
        vals: list[float | None] = [None] * len(stack.ids)
        if evaluates_at(epoch, budget):
            vals = list(validate())
            for local, run in enumerate(stack.ids):
                value = vals[local]
                if states[run].finished:
                    continue
                if not math.isfinite(value):
                    fail(local, epoch, f"non-finite validation loss ({value})")
                else:
                    states[run].last_val = value
        seconds = time.perf_counter() - start
        improved: list[int] = []
        for local, run in enumerate(stack.ids):
            s = states[run]
            if s.finished:  # diverged during this epoch: its curve ends before it
                continue
            s.epoch, s.step = epoch, step
            extra = {"temperature": temperature(max(step - 1, 0), methods[run].hp)}
            record = EpochRecord(
                epoch=epoch, train_nelbo=s.last_train, val_nelbo=vals[local], seconds=seconds, extra=extra
            )
            results[run].history.append(record)
            if update_stopping(s, record.val_nelbo, epoch, budget):
                improved.append(local)
            if progress is not None:
                progress(run, record)
        if improved:
            index = torch.tensor(improved, dtype=torch.long)
            ids = torch.tensor([stack.ids[i] for i in improved], dtype=torch.long)
            for n, p in stack.params.items():
                best[n][ids] = p.detach()[index]
        keep = [local for local, run in enumerate(stack.ids) if not states[run].finished]
        if len(keep) < len(stack.ids):
            stack.keep(keep)
        if ckpt is not None:
            _save_batch(ckpt, ckpt_key, step, stack, best, states, results)

    for run, m in enumerate(methods):
        s, result = states[run], results[run]
        result.best_epoch, result.stop_reason = s.best_epoch, s.stop_reason
        if result.error is None:
            with torch.no_grad():
                for name, p in m.net.named_parameters():
                    p.copy_(best[f"net.{name}"][run])
            result.convergence = assess(result.history, s.stop_reason, s.best_epoch or None, budget)
            m.best_epoch, m.stop_reason, m.convergence = s.best_epoch, s.stop_reason, result.convergence
        m.net.eval()
    return results


__all__ = ["BatchedRun", "StackedAdam", "fit_batched"]
