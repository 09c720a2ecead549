"""SVI, LB-CDI and UB-CDI (paper Sections 2.3-2.4, 4.2) on a tiny noisy-OR with known ground truth.

References: the exact log-likelihood and exact ELBO by enumeration (exact.py), a mean-field
optimum computed here by coordinate ascent on the enumerated joint (numpy), and the chance
level of latent recovery when z_hat is drawn from the prior.

Measured on this model (seed 0, 200 test points; mean nats per data point): best factorised q
is 0.050 below log p(x); LB-CDI 0.108, SVI 0.104, UB-CDI 0.90.  F1 / exact match of
z_hat ~ q: LB-CDI 0.74 / 0.67, SVI 0.75 / 0.67, prior sampling 0.25 / 0.18.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import torch

from noisyor_bench.inference.fitting import FitBudget
from noisyor_bench.inference.noisyor import fitloop
from noisyor_bench.inference.noisyor.lbcdi import LBCDI
from noisyor_bench.inference.noisyor.registry import get_method
from noisyor_bench.inference.noisyor.svi import SVI
from noisyor_bench.inference.noisyor.ubcdi import UBCDI
from noisyor_bench.infra.errors import ConfigError, DataError
from noisyor_bench.models.noisyor.exact import exact_elbo, exact_posterior
from noisyor_bench.models.noisyor.model import NoisyOR

D, K = 12, 4


def tiny_model(seed: int = 0) -> NoisyOR:
    rng = np.random.default_rng(seed)
    theta = rng.uniform(0.5, 2.5, (D, K)) * (rng.random((D, K)) < 0.4)
    theta0 = rng.uniform(0.02, 0.1, D)
    mu = rng.uniform(0.15, 0.35, K)
    return NoisyOR.from_numpy(theta, theta0, mu)


@pytest.fixture(scope="module")
def task() -> dict[str, torch.Tensor | NoisyOR]:
    model = tiny_model(0)
    gen = torch.Generator().manual_seed(100)
    z_val, x_val = model.sample(100, gen)
    z_test, x_test = model.sample(200, gen)
    return {
        "model": model,
        "x_val": x_val,
        "x_test": x_test,
        "z_test": z_test,
        "log_px": exact_posterior(model, x_test).log_px,
    }


def mean_field_gap(model: NoisyOR, x: torch.Tensor, sweeps: int = 100) -> float:
    """Mean log p(x) - ELBO of the coordinate-ascent mean-field optimum, by enumeration in numpy."""
    theta, theta0, mu = model.theta.numpy(), model.theta0.numpy(), model.mu.numpy()
    zs = np.array(list(itertools.product([0, 1], repeat=model.K)), dtype=float)
    a = theta0 + zs @ theta.T
    gaps = []
    for row in x.numpy():
        lj = np.where(row > 0, np.log(-np.expm1(-a)), -a).sum(-1) + (
            zs * np.log(mu) + (1 - zs) * np.log1p(-mu)
        ).sum(-1)
        q = mu.copy()
        for _ in range(sweeps):
            for k in range(model.K):
                others = [j for j in range(model.K) if j != k]
                w = np.prod(np.where(zs > 0, q, 1 - q)[:, others], axis=1)
                on = zs[:, k] > 0
                q[k] = 1 / (1 + np.exp(-(w[on] @ lj[on] - w[~on] @ lj[~on])))
        qs = np.prod(np.where(zs > 0, q, 1 - q), axis=1)
        entropy = -(q * np.log(q) + (1 - q) * np.log(1 - q)).sum()
        gaps.append(np.logaddexp.reduce(lj) - (qs @ lj + entropy))
    return float(np.mean(gaps))


def f1_em(q: torch.Tensor, z: torch.Tensor, seed: int = 0) -> tuple[float, float]:
    """Macro F1 over latent variables and exact match of z_hat ~ q against the true z."""
    z_hat = (torch.rand(q.shape, generator=torch.Generator().manual_seed(seed), dtype=q.dtype) < q).double()
    tp, fp, fn = (z_hat * z).sum(0), (z_hat * (1 - z)).sum(0), ((1 - z_hat) * z).sum(0)
    f1 = (2 * tp / (2 * tp + fp + fn).clamp_min(1)).mean().item()
    return f1, (z_hat == z).all(1).double().mean().item()


def run_inference(name: str, task: dict, hparams: dict | None = None) -> tuple[object, list, torch.Tensor]:
    method = get_method(name)(task["model"], "inference", hparams or {}, seed=0)
    records = method.fit(task["x_val"][:0], task["x_val"], FitBudget(max_epochs=200))
    return method, records, method.posterior(task["x_test"])


# ----------------------------------------------------------------------------- inference mode


@pytest.mark.parametrize("name", ["lb-cdi", "svi"])
def test_lower_bound_methods_approach_the_mean_field_optimum(task, name):
    method, records, q = run_inference(name, task)
    gap = (task["log_px"] - exact_elbo(task["model"], task["x_test"], q)).mean().item()
    best = mean_field_gap(task["model"], task["x_test"])
    assert best - 1e-9 <= gap <= best + 0.15  # measured: +0.058 (LB-CDI), +0.054 (SVI)
    f1, em = f1_em(q, task["z_test"])
    chance_f1, chance_em = f1_em(task["model"].mu.expand_as(q).clone(), task["z_test"])
    assert f1 > chance_f1 + 0.3 and em > chance_em + 0.3
    # the curve: the objective improved and val_nelbo is the exact NELBO of q on x_val
    assert records[-1].train_nelbo < records[0].train_nelbo
    q_val = method.posterior(task["x_val"])
    assert records[-1].val_nelbo == pytest.approx(
        -exact_elbo(task["model"], task["x_val"], q_val).mean().item(), abs=0.02
    )


def test_lbcdi_objective_is_a_lower_bound_that_rises_every_round(task):
    _, records, _ = run_inference("lb-cdi", task)
    ll_lb = np.array([r.extra["ll_lb"] for r in records])
    assert (np.diff(ll_lb) >= -1e-12).all()
    assert ll_lb[-1] <= exact_posterior(task["model"], task["x_val"]).log_px.mean().item()
    # the ELBO of q is never below the bound it maximises
    assert all(r.extra["elbo"] >= r.extra["ll_lb"] - 1e-9 for r in records)


def test_ubcdi_ll_ub_decreases_monotonically_and_stays_above_log_px(task):
    method, records, q = run_inference("ub-cdi", task)
    ll_ub = np.array([r.extra["ll_ub"] for r in records])
    assert len(records) > 3 and (np.diff(ll_ub) <= 0).all()
    assert ll_ub[-1] < ll_ub[0] - 0.1
    assert ll_ub[-1] >= exact_posterior(task["model"], task["x_val"]).log_px.mean().item()
    final = method.optimize(task["x_test"])
    assert bool((final.ll_ub >= task["log_px"] - 1e-10).all())
    assert torch.allclose(final.q.double(), q)
    assert {"ll_ub", "elbo"} <= set(records[0].extra)


def test_ubcdi_plain_fixed_point_is_available_and_not_monotone_here():
    """The undamped iteration of the classical method overshoots on dense data (documented behaviour)."""
    rng = np.random.default_rng(3)
    theta = rng.uniform(1.0, 2.0, (30, 3)) * (rng.random((30, 3)) < 0.9)
    model = NoisyOR.from_numpy(theta, np.full(30, 0.01), np.full(3, 0.3))
    _, x = model.sample(50, torch.Generator().manual_seed(0))
    plain = UBCDI(model, "inference", {"damping": "none", "max_rounds": 20}, seed=0)
    damped = UBCDI(model, "inference", {"max_rounds": 20}, seed=0)
    up = np.array([r.extra["ll_ub"] for r in plain.fit(x[:0], x, FitBudget())])
    down = np.array([r.extra["ll_ub"] for r in damped.fit(x[:0], x, FitBudget())])
    assert (np.diff(up) > 1e-9).any()
    assert (np.diff(down) <= 0).all() and down[-1] < up.min()


# ----------------------------------------------------------------------------- learning mode


@pytest.mark.parametrize("name,epochs", [("lb-cdi", 6), ("svi", 6)])
def test_learning_increases_the_objective(task, name, epochs):
    model = task["model"]
    x_train, _ = model.sample(150, torch.Generator().manual_seed(7))[1], None
    method = get_method(name)(model, "learning", {}, seed=3)
    start = method.generative
    records = method.fit(
        x_train, task["x_val"], FitBudget(max_epochs=epochs, batch_size=50, eval_every=2, patience=100)
    )
    objective = np.array([r.train_nelbo for r in records])
    assert len(records) == epochs
    assert objective[-1] < objective[0] - 0.5
    if name == "lb-cdi":  # full-batch EM with a small-step M-step: every iteration improves
        assert (np.diff(objective) < 0).all()
    assert [r.val_nelbo is not None for r in records] == [e % 2 == 0 for e in range(1, epochs + 1)]
    assert not torch.allclose(method.generative.theta, start.theta)  # learned, not the ground truth
    assert not torch.allclose(method.generative.theta, model.theta)


def test_svi_learning_is_deterministic_given_the_seed(task):
    x_train = task["model"].sample(60, torch.Generator().manual_seed(1))[1]

    def run() -> torch.Tensor:
        method = SVI(task["model"], "learning", {"posterior_steps": 20}, seed=5)
        method.fit(x_train, task["x_val"], FitBudget(max_epochs=2, batch_size=25))
        return method.posterior(task["x_test"][:10])

    assert torch.equal(run(), run())


def test_lbcdi_state_dict_round_trip(task):
    x_train = task["model"].sample(60, torch.Generator().manual_seed(1))[1]
    first = LBCDI(task["model"], "learning", {}, seed=2)
    first.fit(x_train, task["x_val"], FitBudget(max_epochs=2))
    second = LBCDI(task["model"], "learning", {}, seed=99)
    second.load_state_dict(first.state_dict())
    assert second.epoch == 2
    for a, b in zip(first.generative.numpy().values(), second.generative.numpy().values()):
        np.testing.assert_array_equal(a, b)


# ----------------------------------------------------------------------------- checkpoint / resume


class _Killed(Exception):
    pass


def _kill_after(epoch: int):
    """A progress callback that raises after ``epoch`` (whose checkpoint is already written)."""

    def progress(record) -> None:
        if record.epoch == epoch:
            raise _Killed

    return progress


# (method, mode, hyperparameters, budget); budgets and hparams keep every fit well under a second
RESUMABLE = [
    ("lb-cdi", "learning", {}, FitBudget(max_epochs=5, eval_every=1, patience=100)),
    ("lb-cdi", "inference", {"max_rounds": 6, "tol": 0.0}, FitBudget(max_epochs=200)),
    (
        "svi",
        "learning",
        {"posterior_steps": 20},
        FitBudget(max_epochs=5, batch_size=25, eval_every=2, patience=100),
    ),
    ("svi", "inference", {"posterior_steps": 60, "tol": 0.0}, FitBudget(max_epochs=200)),
    ("ub-cdi", "inference", {"max_rounds": 6, "tol": 0.0}, FitBudget(max_epochs=200)),
]


def _fit(task, name, mode, hparams, budget, checkpoint=None, progress=None):
    method = get_method(name)(task["model"], mode, dict(hparams), seed=4)
    x_train = task["model"].sample(60, torch.Generator().manual_seed(1))[1]
    records = method.fit(x_train, task["x_val"], budget, progress, checkpoint_path=checkpoint)
    return method, records


def _curve(records):
    return [(r.epoch, r.train_nelbo, r.val_nelbo, r.extra) for r in records]  # all but the wall time


@pytest.mark.parametrize("name,mode,hparams,budget", RESUMABLE, ids=[f"{m[0]}-{m[1]}" for m in RESUMABLE])
def test_resumed_fit_is_bit_identical(task, tmp_path, monkeypatch, name, mode, hparams, budget):
    """Interrupt after epoch / round 2 (raised from the progress callback), resume from the
    checkpoint in a new object: the same curve, parameters and posterior, bit for bit.

    Every epoch's checkpoint is written here: the wall-time throttle (a slow write is repeated
    only after 10x its duration; its own test is below) would otherwise leave epoch 1's
    checkpoint on a loaded machine, and this test is about what a resume restores."""
    monkeypatch.setattr(fitloop, "FREE_WRITE_SECONDS", math.inf)
    whole, whole_records = _fit(task, name, mode, hparams, budget)
    assert len(whole_records) >= 5

    ckpt = tmp_path / "ckpt.pt"
    with pytest.raises(_Killed):
        _fit(task, name, mode, hparams, budget, ckpt, _kill_after(2))
    saved = torch.load(ckpt, weights_only=True)  # the safe loader reads it
    assert saved["loop"]["epoch"] == 2 and [r["epoch"] for r in saved["records"]][-1] == 2
    assert [p.name for p in tmp_path.iterdir()] == ["ckpt.pt"]  # atomic writes leave no temp files

    seen: list[int] = []
    resumed, records = _fit(task, name, mode, hparams, budget, ckpt, lambda r: seen.append(r.epoch))
    assert seen == [r.epoch for r in whole_records if r.epoch > 2]  # only the missing epochs ran
    assert _curve(records) == _curve(whole_records)
    for key, value in whole.generative.numpy().items():
        np.testing.assert_array_equal(resumed.generative.numpy()[key], value, err_msg=key)
    assert (resumed.best_epoch, resumed.stop_reason) == (whole.best_epoch, whole.stop_reason)
    assert torch.equal(resumed.posterior(task["x_test"][:20]), whole.posterior(task["x_test"][:20]))

    # a finished checkpoint is not fitted again
    seen.clear()
    again, records = _fit(task, name, mode, hparams, budget, ckpt, lambda r: seen.append(r.epoch))
    assert seen == [] and _curve(records) == _curve(whole_records)


@pytest.mark.parametrize("name,key", [("svi", "local_adam"), ("lb-cdi", "train_r")])
def test_resume_without_the_full_state_would_differ(task, tmp_path, monkeypatch, name, key):
    """Guards the test above: dropping one piece of the saved state changes the result."""
    monkeypatch.setattr(fitloop, "FREE_WRITE_SECONDS", math.inf)  # epoch 2's checkpoint, as above
    _, hparams, budget = next((m[1], m[2], m[3]) for m in RESUMABLE if m[0] == name and m[1] == "learning")
    _, whole_records = _fit(task, name, "learning", hparams, budget)
    ckpt = tmp_path / "ckpt.pt"
    with pytest.raises(_Killed):
        _fit(task, name, "learning", hparams, budget, ckpt, _kill_after(2))
    payload = torch.load(ckpt, weights_only=True)
    payload["method"][key] = None
    torch.save(payload, ckpt)
    _, records = _fit(task, name, "learning", hparams, budget, ckpt)
    assert _curve(records)[:2] == _curve(whole_records)[:2]
    assert _curve(records)[2:] != _curve(whole_records)[2:]


def test_monte_carlo_curve_resumes_with_the_generator_state(task, tmp_path):
    """K > exact_max_k: the curve's ELBO is Monte Carlo, so the generator state must be restored."""
    hparams = {"max_rounds": 6, "tol": 0.0, "exact_max_k": 2, "eval_samples": 5}
    budget = FitBudget(max_epochs=200)
    _, whole_records = _fit(task, "lb-cdi", "inference", hparams, budget)
    ckpt = tmp_path / "ckpt.pt"
    with pytest.raises(_Killed):
        _fit(task, "lb-cdi", "inference", hparams, budget, ckpt, _kill_after(2))
    reset = torch.load(ckpt, weights_only=True)  # a copy of the round-2 checkpoint, generator reseeded
    reset["generators"]["evaluation"] = torch.Generator().manual_seed(4).get_state()
    torch.save(reset, tmp_path / "reset.pt")

    _, records = _fit(task, "lb-cdi", "inference", hparams, budget, ckpt)
    assert _curve(records) == _curve(whole_records)
    _, records = _fit(task, "lb-cdi", "inference", hparams, budget, tmp_path / "reset.pt")
    assert (
        _curve(records)[:3] == _curve(whole_records)[:3] and _curve(records)[3:] != _curve(whole_records)[3:]
    )


def test_ubcdi_replay_that_does_not_match_starts_afresh(task, tmp_path):
    hparams, budget = {"max_rounds": 6, "tol": 0.0}, FitBudget(max_epochs=200)
    _, whole_records = _fit(task, "ub-cdi", "inference", hparams, budget)
    ckpt = tmp_path / "ckpt.pt"
    with pytest.raises(_Killed):
        _fit(task, "ub-cdi", "inference", hparams, budget, ckpt, _kill_after(2))
    payload = torch.load(ckpt, weights_only=True)
    assert set(payload["method"]) == {"psi_sha256"}  # psi itself is replayed, not stored
    payload["method"]["psi_sha256"] = "0" * 64
    torch.save(payload, ckpt)
    seen: list[int] = []
    _, records = _fit(task, "ub-cdi", "inference", hparams, budget, ckpt, lambda r: seen.append(r.epoch))
    assert seen == [r.epoch for r in whole_records]  # every round evaluated again
    assert _curve(records) == _curve(whole_records)


def test_checkpoint_of_another_configuration_is_refused(task, tmp_path):
    name, mode, hparams, budget = RESUMABLE[0]
    ckpt = tmp_path / "ckpt.pt"
    with pytest.raises(_Killed):
        _fit(task, name, mode, hparams, budget, ckpt, _kill_after(2))
    with pytest.raises(
        ConfigError, match=r"checkpoint .*ckpt.pt belongs to a different run configuration: 'hparams'"
    ):
        _fit(task, name, mode, {"lr": 0.05}, budget, ckpt)
    with pytest.raises(ConfigError, match="belongs to a different run configuration"):
        _fit(task, "svi", mode, {}, budget, ckpt)


def test_corrupt_checkpoint_is_a_data_error(task, tmp_path):
    ckpt = tmp_path / "ckpt.pt"
    ckpt.write_bytes(b"not a checkpoint")
    with pytest.raises(DataError, match=r"cannot read training checkpoint .*ckpt.pt.*Delete it"):
        _fit(task, "lb-cdi", "learning", {}, FitBudget(max_epochs=3), ckpt)


def _drive(loop, vals, upto=None):
    """Feed validation values to a FitLoop as a learning fit would (patience 3, 10 epochs at most)."""
    from noisyor_bench.inference.fitting import EpochRecord

    for epoch in range(loop.state.epoch + 1, (upto or len(vals)) + 1):
        if loop.finished:
            break
        rec = EpochRecord(epoch, 10.0 - epoch, vals[epoch - 1], 0.0)
        loop.end_epoch(
            rec, dict, best_fn=lambda e=epoch: {"w": torch.tensor([float(e)])}, patience=3, max_epochs=10
        )


def test_fitloop_early_stopping_survives_a_resume(tmp_path):
    from noisyor_bench.inference.noisyor.fitloop import FitLoop

    vals = [5.0, 4.0, 4.5, 4.2, 4.1, 3.0, 2.0]  # best at 2, then 3 evaluations without improvement
    whole = FitLoop({"run": 1}, None, {}, hint="h")
    _drive(whole, vals)
    assert (whole.state.stop_reason, whole.best_epoch, whole.state.epoch) == ("patience", 2, 5)
    assert torch.equal(whole.best_params["w"], torch.tensor([2.0]))

    first = FitLoop({"run": 1}, tmp_path / "c.pt", {}, hint="h")
    _drive(first, vals, upto=3)
    resumed = FitLoop({"run": 1}, tmp_path / "c.pt", {}, hint="h")
    assert resumed.resume() == {}
    _drive(resumed, vals)
    assert resumed.state == whole.state and resumed.records == whole.records
    assert torch.equal(resumed.best_params["w"], whole.best_params["w"])


def test_fitloop_skips_expensive_checkpoints_but_never_the_last(tmp_path):
    """A write that takes 1 s is repeated only after 10 s (MAX_OVERHEAD 10%); quick writes every epoch."""
    from noisyor_bench.inference.fitting import EpochRecord

    assert fitloop.MAX_OVERHEAD == 0.1 and fitloop.FREE_WRITE_SECONDS == 0.2
    # clock readings: before / after each write (only "before" when the write is skipped)
    ticks = iter([0.0, 1.0, 3.0, 11.5, 11.6, 11.7, 12.7, 13.0, 13.1])
    loop = fitloop.FitLoop({"run": 1}, tmp_path / "c.pt", {}, hint="h")
    loop.clock = lambda: next(ticks)
    written = []
    for epoch in range(1, 6):
        loop.end_epoch(EpochRecord(epoch, 1.0, None, 0.0), dict, max_epochs=5)
        written.append(torch.load(tmp_path / "c.pt", weights_only=True)["loop"]["epoch"])
    # 1: first write (1 s); 2: 2 s later, skipped; 3: 10.5 s later, written (0.1 s);
    # 4: quick writes are always due (1 s); 5: 0.3 s later but the last epoch: written
    assert written == [1, 1, 3, 4, 5]


# ----------------------------------------------------------------------------- divergence


@pytest.mark.parametrize("name", ["lb-cdi", "svi"])
def test_non_finite_objective_names_epoch_and_last_values_and_keeps_the_checkpoint(
    task, tmp_path, monkeypatch, name
):
    """A NaN objective in epoch 3 stops the fit; the message has the epoch and the last finite
    values of the curve, and the checkpoint still holds epoch 2 (nothing else is lost)."""
    from noisyor_bench.inference.training import NonFiniteLossError

    cls = get_method(name)
    step_name = "_m_step" if name == "lb-cdi" else "_svi_step"
    original = getattr(cls, step_name)

    def poisoned(self, *args):
        value = original(self, *args)
        return math.nan if self.epoch + 1 >= 3 else value  # self.epoch = completed epochs

    monkeypatch.setattr(cls, step_name, poisoned)
    _, hparams, budget = next((m[1], m[2], m[3]) for m in RESUMABLE if m[0] == name and m[1] == "learning")
    budget = FitBudget(max_epochs=5, eval_every=1, patience=100, batch_size=25)
    ckpt = tmp_path / "ckpt.pt"
    records: list = []
    with pytest.raises(NonFiniteLossError) as err:
        _fit(task, name, "learning", hparams, budget, ckpt, records.append)
    msg = str(err.value)
    assert [r.epoch for r in records] == [1, 2]
    assert "non-finite training objective (nan) at epoch 3" in msg
    assert f"last finite train loss {records[-1].train_nelbo:.6g}" in msg
    assert f"last finite validation loss {records[-1].val_nelbo:.6g}" in msg
    assert "lower the learning rate" in msg
    assert torch.load(ckpt, weights_only=True)["loop"]["epoch"] == 2


def test_real_divergence_is_caught_before_a_nan_posterior(task):
    """SVI with an absurd global learning rate blows up in its first epoch (measured)."""
    from noisyor_bench.inference.training import NonFiniteLossError

    x_train = task["model"].sample(60, torch.Generator().manual_seed(1))[1]
    method = SVI(task["model"], "learning", {"lr_global": 1000.0}, seed=0)
    with pytest.raises(NonFiniteLossError, match=r"at epoch 1; last finite train loss none yet.*'lr_global'"):
        method.fit(x_train, task["x_val"], FitBudget(max_epochs=3, batch_size=25))


# ----------------------------------------------------------------------------- configuration


@pytest.mark.parametrize("cls,name", [(SVI, "svi"), (LBCDI, "lb-cdi"), (UBCDI, "ub-cdi")])
def test_registry_and_unknown_hyperparameters(task, cls, name):
    assert get_method(name) is cls and cls.name == name and not cls.amortized
    with pytest.raises(ConfigError, match=r"unknown hyperparameter.*'lr_typo'.*allowed: .*dtype"):
        cls(task["model"], "inference", {"lr_typo": 1}, seed=0)


def test_invalid_values_and_modes_are_user_errors(task):
    with pytest.raises(ConfigError, match="inference-only"):
        UBCDI(task["model"], "learning", {}, seed=0)
    with pytest.raises(ConfigError, match="'psi_init'"):
        UBCDI(task["model"], "inference", {"psi_init": "random"}, seed=0)
    with pytest.raises(ConfigError, match="'r_iters' must be >= 1"):
        LBCDI(task["model"], "inference", {"r_iters": 0}, seed=0)
    with pytest.raises(ConfigError, match="'dtype'"):
        SVI(task["model"], "inference", {"dtype": "float16"}, seed=0)
    with pytest.raises(DataError, match=r"shape \(N, 12\)"):
        LBCDI(task["model"], "inference", {}, seed=0).posterior(torch.zeros(3, 5))


@pytest.mark.parametrize("name", ["lb-cdi", "svi"])
def test_the_held_carry_of_large_data_gives_the_same_fit_bit_for_bit(task, monkeypatch, name):
    """On data too large to carry every block's model rows and r-update pieces (the paper grid's
    D = K = 500 cells), the blocks keep the held form: learning curves, learned parameters and
    posteriors equal those of the full carry."""
    from noisyor_bench.inference.noisyor import jj_lower_solver, lbcdi, svi
    from noisyor_bench.models.noisyor.jj_lower import row_chunks

    def small_chunks(x, width, max_numbers=2**18):  # many blocks, as on large data
        return row_chunks(x, width, max_numbers=40)

    monkeypatch.setattr(lbcdi, "row_chunks", small_chunks)
    monkeypatch.setattr(svi, "row_chunks", small_chunks)
    x_train = task["model"].sample(80, torch.Generator().manual_seed(2))[1]
    hparams = {"posterior_steps": 30} if name == "svi" else {"max_rounds": 30}
    outputs = []
    for limit in (jj_lower_solver.CARRY_FULL_BYTES, 0):
        monkeypatch.setattr(jj_lower_solver, "CARRY_FULL_BYTES", limit)
        method = get_method(name)(task["model"], "learning", hparams, seed=4)
        records = method.fit(x_train, task["x_val"], FitBudget(max_epochs=3, batch_size=40, eval_every=1))
        outputs.append(
            (
                [(r.train_nelbo, r.val_nelbo) for r in records],
                method.generative,
                method.posterior(task["x_test"]),
            )
        )
    (curve_full, gen_full, q_full), (curve_held, gen_held, q_held) = outputs
    assert curve_full == curve_held
    assert torch.equal(gen_full.theta, gen_held.theta) and torch.equal(gen_full.theta0, gen_held.theta0)
    assert torch.equal(q_full, q_held)
