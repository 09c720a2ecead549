"""The batched trainer: R runs trained as one computation give, run by run, what
each run gives when trained alone with :meth:`AmortizedMethod.fit`.

Reference: the single-run path itself (the Trainer with PyTorch's fused Adam and, on the toy
data of density 0.23, the sparse CSR kernels).  The batched path computes the same quantities
with the dense ELBO, ``vmap``-ed matrix products and :class:`StackedAdam`, so the two agree to
float64 rounding, not bit for bit: measured differences are ~1e-15 (curves, parameters,
posteriors); :data:`ATOL` = 1e-10 leaves room for the growth of rounding over the epochs of a
run and is still ~8 orders of magnitude below any NELBO difference that could change a
decision (best epoch, stop reason, convergence verdict), which are compared exactly.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
import torch

from noisyor_bench.inference.fitting import EpochRecord, FitBudget
from noisyor_bench.inference.noisyor.acp import ACP, ACPStopGrad
from noisyor_bench.inference.noisyor.amortized import AmortizedMethod
from noisyor_bench.inference.noisyor.avi import AVI
from noisyor_bench.inference.noisyor.batched import BatchedRun, StackedAdam, fit_batched
from noisyor_bench.infra.errors import ConfigError
from noisyor_bench.models.noisyor.model import NoisyOR

ATOL = 1e-10
SEEDS = (0, 1, 2)
BUDGET = FitBudget(max_epochs=15, patience=2, batch_size=25)  # 60 rows: batches of 25, 25, 10
FAST = {"dtype": "float64", "hidden_dim": 16, "lr": 3e-2, "gen_lr": 9e-2}


@pytest.fixture(scope="module")
def toy(dataset: Path) -> dict[str, np.ndarray]:
    with np.load(dataset) as data:
        return {k: data[k] for k in data.files}


def _truth(toy: dict[str, np.ndarray]) -> NoisyOR:
    return NoisyOR.from_numpy(toy["theta"], toy["theta0"], toy["mu"])


def _build(
    cls: type[AmortizedMethod], toy: dict, mode: str, hparams: Sequence[dict]
) -> list[AmortizedMethod]:
    return [cls(_truth(toy), mode, hp, seed, init_key="toy/n60/final") for seed, hp in zip(SEEDS, hparams)]


def _curve(history: Sequence[EpochRecord]) -> np.ndarray:
    """(epochs, 4): epoch, train NELBO, validation NELBO (nan if not evaluated), temperature."""
    return np.array(
        [
            [r.epoch, r.train_nelbo, math.nan if r.val_nelbo is None else r.val_nelbo, r.extra["temperature"]]
            for r in history
        ]
    )


def _assert_same_run(
    alone: AmortizedMethod, history: list[EpochRecord], batched: AmortizedMethod, run: BatchedRun, x
) -> dict:
    """Curve, best epoch, stop reason, convergence, parameters and posterior of one run."""
    assert run.error is None
    assert len(run.history) == len(history)
    a, b = _curve(history), _curve(run.history)
    np.testing.assert_allclose(b, a, rtol=0, atol=ATOL, equal_nan=True)
    assert (run.best_epoch, run.stop_reason) == (alone.best_epoch, alone.stop_reason)
    assert (batched.best_epoch, batched.stop_reason) == (alone.best_epoch, alone.stop_reason)
    ca, cb = alone.convergence.as_dict(), run.convergence.as_dict()
    for key in ("best_before_window", "best_within_window", "relative_improvement", "last_window_nats"):
        va, vb = ca.pop(key), cb.pop(key)
        assert (va is None) == (vb is None)
        if va is not None:
            assert vb == pytest.approx(va, rel=1e-8, abs=ATOL)
    assert cb == ca
    assert batched.convergence == run.convergence
    d_params = max(
        float((p - q).abs().max())
        for p, q in zip(alone.net.state_dict().values(), batched.net.state_dict().values(), strict=True)
    )
    d_post = float((alone.posterior(x) - batched.posterior(x)).abs().max())
    assert d_params <= ATOL and d_post <= ATOL
    return {"curve": float(np.nanmax(np.abs(a - b))), "params": d_params, "posterior": d_post}


def _check_equivalence(
    cls: type[AmortizedMethod], toy: dict, mode: str, hparams: Sequence[dict], budget: FitBudget = BUDGET
) -> list[BatchedRun]:
    alone = _build(cls, toy, mode, hparams)
    histories = [m.fit(toy["x_train"], toy["x_val"], budget) for m in alone]
    batched = _build(cls, toy, mode, hparams)
    runs = fit_batched(batched, toy["x_train"], toy["x_val"], budget)
    diffs = [
        _assert_same_run(a, h, b, r, toy["x_test"]) for a, h, b, r in zip(alone, histories, batched, runs)
    ]
    print(cls.name, mode, [r.stop_reason for r in runs], diffs)  # the measured differences (pytest -s)
    return runs


@pytest.mark.parametrize("cls", [AVI, ACP, ACPStopGrad], ids=lambda c: c.name)
def test_seeds_batched_equal_seeds_alone_with_an_early_stop(cls: type[AmortizedMethod], toy: dict) -> None:
    """R = 3 seeds, identical hyperparameters, learning mode; at least one run stops by
    patience while another trains to max_epochs (it leaves the stack, the others go on)."""
    runs = _check_equivalence(cls, toy, "learning", [FAST] * 3)
    reasons = {r.stop_reason for r in runs}
    assert reasons == {"patience", "max_epochs"}


def test_per_run_hyperparameters(toy: dict) -> None:
    """Per-run learning rates, beta1 and temperature schedules: each run's own Adam and schedule."""
    hparams = [
        FAST,
        {**FAST, "lr": 3e-3, "gen_lr": 1e-2, "beta1": 0.8, "temp_decay_rate": 0.5, "temp_decay_step": 2},
        {**FAST, "gen_lr": None, "temp_init": 0.9, "temp_min": 0.3, "init_theta_high": 0.1},
    ]
    _check_equivalence(ACP, toy, "learning", hparams)


@pytest.mark.parametrize("cls", [AVI, ACP], ids=lambda c: c.name)
def test_inference_mode(cls: type[AmortizedMethod], toy: dict) -> None:
    """Fixed generative model (buffers, no generative parameters)."""
    _check_equivalence(cls, toy, "inference", [FAST] * 3)


def test_dense_data(toy: dict) -> None:
    """Data above the sparse threshold (25% ones): both paths take the dense ELBO."""
    theta = torch.zeros(12, 4, dtype=torch.float64)
    for k in range(4):
        theta[3 * k : 3 * k + 4, k] = -math.log(1 - 0.8)
    truth = NoisyOR(
        theta, torch.full((12,), 0.05, dtype=torch.float64), torch.full((4,), 0.3, dtype=torch.float64)
    )
    _, x = truth.sample(160, torch.Generator().manual_seed(0))
    x = x.to(torch.uint8)
    assert float(x.double().mean()) > 0.25
    dense = {"theta": truth.theta.numpy(), "theta0": truth.theta0.numpy(), "mu": truth.mu.numpy()}
    dense.update(x_train=x[:60].numpy(), x_val=x[60:100].numpy(), x_test=x[100:].numpy())
    _check_equivalence(ACP, dense, "learning", [FAST] * 3)


def test_eval_every_and_min_epoch_steps(toy: dict) -> None:
    """Validation every other epoch (records without val_nelbo) and several passes per epoch."""
    budget = dataclasses.replace(BUDGET, max_epochs=6, eval_every=2, min_epoch_steps=7)
    runs = _check_equivalence(AVI, toy, "learning", [FAST] * 2, budget)
    assert runs[0].history[0].val_nelbo is None and runs[0].history[1].val_nelbo is not None


def test_runs_must_share_shapes(toy: dict) -> None:
    runs = _build(ACP, toy, "learning", [FAST, {**FAST, "hidden_dim": 8}])
    with pytest.raises(ConfigError, match="hidden_dim"):
        fit_batched(runs, toy["x_train"], toy["x_val"], BUDGET)
    mixed = [AVI(_truth(toy), "learning", FAST, 0), ACP(_truth(toy), "learning", FAST, 1)]
    with pytest.raises(ConfigError, match="cannot be batched"):
        fit_batched(mixed, toy["x_train"], toy["x_val"], BUDGET)


def test_divergence_is_reported_per_run(toy: dict) -> None:
    """A run that diverges stops with its error; the others finish as if alone."""
    hparams = [FAST, {**FAST, "lr": 1e6, "gen_lr": 1e6}, FAST]
    batched = _build(AVI, toy, "learning", hparams)
    runs = fit_batched(batched, toy["x_train"], toy["x_val"], BUDGET)
    assert runs[1].stop_reason == "diverged" and runs[1].error is not None
    assert "Training diverged" in str(runs[1].error)
    alone = _build(AVI, toy, "learning", [FAST])[0]
    history = alone.fit(toy["x_train"], toy["x_val"], BUDGET)
    _assert_same_run(alone, history, batched[0], runs[0], toy["x_test"])


def test_stacked_adam_equals_torch_adam_per_run() -> None:
    """One StackedAdam over (R, ...) tensors = R torch Adams with per-run lr and beta1."""
    g = torch.Generator().manual_seed(0)
    lrs, betas = [1e-2, 3e-3, 5e-2], [0.9, 0.5, 0.99]
    start = torch.randn(3, 4, 5, generator=g, dtype=torch.float64)
    grads = [torch.randn(3, 4, 5, generator=g, dtype=torch.float64) for _ in range(20)]
    stacked = start.clone().requires_grad_()
    adam = StackedAdam({"w": stacked}, {"w": lrs}, betas)
    singles = [start[r].clone().requires_grad_() for r in range(3)]
    opts = [
        torch.optim.Adam([p], lr=lr, betas=(b, 0.999), fused=True) for p, lr, b in zip(singles, lrs, betas)
    ]
    for grad in grads:
        stacked.grad = grad.clone()
        adam.step()
        for r, (p, opt) in enumerate(zip(singles, opts)):
            p.grad = grad[r].clone()
            opt.step()
    for r, p in enumerate(singles):
        torch.testing.assert_close(stacked.detach()[r], p.detach(), rtol=0, atol=1e-14)


class _Interrupt(Exception):
    pass


def test_interrupted_batch_resumes_bit_identical(toy: dict, tmp_path: Path) -> None:
    """Kill a batch (with one run already finished and one diverged) after epoch 6, resume from
    its checkpoint: curves, best epochs, verdicts and parameters equal the uninterrupted batch
    exactly, and a checkpoint of other runs is refused by name."""
    hparams = [FAST, {**FAST, "lr": 1e6, "gen_lr": 1e6}, {**FAST, "lr": 1e-2}]
    reference = _build(ACP, toy, "learning", hparams)
    expected = fit_batched(reference, toy["x_train"], toy["x_val"], BUDGET)
    assert {r.stop_reason for r in expected} >= {"diverged"}

    path = tmp_path / "batch.pt"
    key = {"runs": ["seed0", "seed1", "seed2"]}

    def stop_after_epoch_6(run: int, record: EpochRecord) -> None:
        if record.epoch == 6 and run == 2:
            raise _Interrupt

    with pytest.raises(_Interrupt):
        fit_batched(
            _build(ACP, toy, "learning", hparams),
            toy["x_train"],
            toy["x_val"],
            BUDGET,
            progress=stop_after_epoch_6,
            checkpoint_path=path,
            fingerprint=key,
        )
    assert path.exists()
    resumed_methods = _build(ACP, toy, "learning", hparams)
    resumed = fit_batched(
        resumed_methods, toy["x_train"], toy["x_val"], BUDGET, checkpoint_path=path, fingerprint=key
    )
    for ref_m, ref, res_m, res in zip(reference, expected, resumed_methods, resumed, strict=True):
        assert [dataclasses.asdict(r) | {"seconds": 0} for r in res.history] == [
            dataclasses.asdict(r) | {"seconds": 0} for r in ref.history
        ]
        assert (res.best_epoch, res.stop_reason, res.convergence) == (
            ref.best_epoch,
            ref.stop_reason,
            ref.convergence,
        )
        assert (res.error is None) == (ref.error is None)
        for p, q in zip(ref_m.net.state_dict().values(), res_m.net.state_dict().values(), strict=True):
            assert torch.equal(p, q)
    with pytest.raises(ConfigError, match="different run configuration"):
        fit_batched(
            _build(ACP, toy, "learning", hparams),
            toy["x_train"],
            toy["x_val"],
            BUDGET,
            checkpoint_path=path,
            fingerprint={"runs": ["other"]},
        )
