"""AVI and ACP (paper Sections 2.5, 3; Algorithm 1): estimator, posterior form, gradient paths,
inference quality against exact enumeration, learning, determinism and exact resume.

References are independent of the code under test: exact ELBO / log p(x) by enumeration
over 2^K states (noisyor_bench.models.noisyor.exact), eq. 11 and its Jacobian written out in numpy, closed
form temperature schedule values."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import torch

from noisyor_bench.inference.fitting import EpochRecord, FitBudget
from noisyor_bench.inference.noisyor import amortized as amortized_mod
from noisyor_bench.inference.noisyor.acp import ACP
from noisyor_bench.inference.noisyor.amortized import AmortizedHParams, parse_hparams, temperature
from noisyor_bench.inference.noisyor.avi import AVI
from noisyor_bench.inference.noisyor.registry import get_method
from noisyor_bench.inference.training import NonFiniteLossError
from noisyor_bench.infra.errors import ConfigError, DataError
from noisyor_bench.models.noisyor.elbo import elbo
from noisyor_bench.models.noisyor.exact import exact_elbo, exact_log_marginal
from noisyor_bench.models.noisyor.generative import (
    FixedNoisyOR,
    GenerativeInit,
    LearnableNoisyOR,
    inverse_softplus,
    make_generative,
)
from noisyor_bench.models.noisyor.jj_upper import conjugate_posterior_logits
from noisyor_bench.models.noisyor.model import NoisyOR

F64 = torch.float64


def random_model(d: int, k: int, seed: int) -> NoisyOR:
    g = torch.Generator().manual_seed(seed)
    mask = torch.rand(d, k, generator=g, dtype=F64) < 0.6
    theta = 2.0 * torch.rand(d, k, generator=g, dtype=F64) * mask
    theta0 = 0.02 + 0.1 * torch.rand(d, generator=g, dtype=F64)
    mu = 0.1 + 0.4 * torch.rand(k, generator=g, dtype=F64)
    return NoisyOR(theta, theta0, mu)


def block_model() -> NoisyOR:
    """D=12, K=4: cause k switches on pixels 3k..3k+3 with p=0.8 (neighbouring blocks overlap)."""
    theta = torch.zeros(12, 4, dtype=F64)
    for k in range(4):
        theta[3 * k : 3 * k + 4, k] = -math.log(1 - 0.8)
    return NoisyOR(theta, torch.full((12,), 0.05, dtype=F64), torch.full((4,), 0.25, dtype=F64))


@pytest.fixture(scope="module")
def block_data() -> dict[str, torch.Tensor]:
    z, x = block_model().sample(1500, torch.Generator().manual_seed(0))
    x8 = x.to(torch.uint8)  # the on-disk dtype; methods convert per batch
    return {"x_train": x8[:500], "x_val": x8[500:1000], "x_test": x8[1000:], "z_test": z[1000:]}


# ---------------------------------------------------------------------- the ELBO estimator (eq. 16)
def _per_sample_elbo(
    model: NoisyOR, x: torch.Tensor, logits: torch.Tensor, tau: float | None, r: int
) -> torch.Tensor:
    """r independent single-sample estimates per row: (N, r)."""
    n = x.shape[0]
    vals = elbo(
        model,
        x.repeat_interleave(r, 0),
        logits.repeat_interleave(r, 0),
        1,
        tau,
        torch.Generator().manual_seed(7),
    )
    return vals.view(n, r)


def test_discrete_estimator_is_unbiased_for_the_exact_elbo() -> None:
    model = random_model(10, 4, seed=3)
    g = torch.Generator().manual_seed(4)
    x = (torch.rand(4, 10, generator=g, dtype=F64) < 0.4).to(F64)
    x[0] = 0.0  # no positive observation: the estimator has no noise at all
    logits = 1.5 * torch.randn(4, 4, generator=g, dtype=F64)
    exact = exact_elbo(model, x, torch.sigmoid(logits))
    vals = _per_sample_elbo(model, x, logits, None, 20000)
    mean, se = vals.mean(1), vals.std(1) / math.sqrt(vals.shape[1])
    assert torch.all(se[1:] > 0)
    assert torch.all((mean - exact).abs() <= 4 * se + 1e-9), (mean - exact, se)


def test_relaxed_estimator_approaches_exact_elbo_as_temperature_falls() -> None:
    model = random_model(10, 4, seed=3)
    g = torch.Generator().manual_seed(5)
    x = (torch.rand(3, 10, generator=g, dtype=F64) < 0.5).to(F64)
    logits = 1.5 * torch.randn(3, 4, generator=g, dtype=F64)
    exact = exact_elbo(model, x, torch.sigmoid(logits))
    bias = {}
    for tau in (1.0, 0.5, 0.1, 0.01):
        vals = _per_sample_elbo(model, x, logits, tau, 20000)
        mean, se = vals.mean(1), vals.std(1) / math.sqrt(vals.shape[1])
        bias[tau] = (mean - exact).abs().max().item()
    assert bias[1.0] > bias[0.5] > bias[0.1] > bias[0.01]
    assert bias[0.5] > 0.1  # the relaxation is a biased objective at training temperatures ...
    assert torch.all((mean - exact).abs() <= 4 * se)  # ... and consistent as tau -> 0


# ---------------------------------------------------------------------- schedule and hyperparameters
def test_temperature_schedule_closed_form() -> None:
    hp = AmortizedHParams(temp_init=0.5, temp_min=0.2, temp_decay_rate=0.1, temp_decay_step=10)
    assert temperature(0, hp) == 0.5
    assert temperature(9, hp) == 0.5
    assert temperature(10, hp) == pytest.approx(0.5 * math.exp(-0.1), rel=1e-15)
    assert temperature(35, hp) == pytest.approx(0.5 * math.exp(-0.3), rel=1e-15)
    assert temperature(100, hp) == 0.2  # 0.5 e^-1 = 0.18 is clamped at tau_min


def test_hyperparameters_are_validated() -> None:
    with pytest.raises(ConfigError, match=r"'hidden_units'.*allowed: hidden_layers, hidden_dim, lr, beta1"):
        parse_hparams({"hidden_units": 10})
    with pytest.raises(ConfigError, match="'hidden_layers'"):
        parse_hparams({"hidden_layers": 0})
    with pytest.raises(ConfigError, match="'hidden_dim'.*integer"):
        parse_hparams({"hidden_dim": 2.5})
    with pytest.raises(ConfigError, match="'beta1'"):
        parse_hparams({"beta1": 1.0})
    with pytest.raises(ConfigError, match="'lr'"):
        parse_hparams({"lr": "0.1"})
    with pytest.raises(ConfigError, match="temp_min"):
        parse_hparams({"temp_min": 0.6})
    with pytest.raises(ConfigError, match="'dtype'"):
        parse_hparams({"dtype": "float16"})
    hp = parse_hparams({"hidden_dim": 32.0, "lr": 1e-2})
    assert hp.hidden_dim == 32 and isinstance(hp.hidden_dim, int) and hp.n_samples == 10
    assert AVI(block_model(), "inference", {"dtype": "float64"}, 0).posterior(torch.zeros(1, 12)).dtype == F64
    assert ACP(block_model(), "inference", {}, 0, dtype=F64).hp.dtype == "float64"
    assert next(ACP(block_model(), "inference", {}, 0).encoder.parameters()).dtype == torch.float32
    with pytest.raises(ConfigError, match="mode"):
        AVI(block_model(), "training", {}, 0)  # type: ignore[arg-type]


def test_generative_learning_rate_default_and_override() -> None:
    """The generative model has its own Adam rate, 1e-2 by default (at the encoder's
    1e-3 the learned rates cannot leave 0.02 * e^(1e-3 * steps) within the budget); an explicit
    ``gen_lr`` overrides it and ``gen_lr: null`` falls back to ``lr``."""

    def group_lrs(hparams: dict) -> list[float]:
        return [g["lr"] for g in ACP(block_model(), "learning", hparams, 0).make_optimizer().param_groups]

    assert parse_hparams({}).gen_lr == 1e-2 and parse_hparams({}).lr == 1e-3
    assert group_lrs({}) == [1e-3, 1e-2]  # encoder, generative
    assert group_lrs({"gen_lr": 3e-2, "lr": 5e-4}) == [5e-4, 3e-2]
    assert group_lrs({"gen_lr": None, "lr": 5e-4}) == [5e-4, 5e-4]
    with pytest.raises(ConfigError, match="'gen_lr'"):
        parse_hparams({"gen_lr": 0.0})


def test_registry_resolves_both_methods() -> None:
    assert get_method("avi") is AVI and get_method("acp") is ACP
    assert AVI.amortized and ACP.amortized


# ---------------------------------------------------------------------- generative module
def test_learnable_generative_constraints_and_round_trip() -> None:
    truth = block_model()
    gen = LearnableNoisyOR.from_model(truth, dtype=F64)
    m = gen.model()
    assert torch.allclose(m.theta, truth.theta.clamp_min(1e-6), rtol=1e-12, atol=1e-15)
    assert torch.allclose(m.mu, truth.mu, rtol=1e-14)
    assert torch.allclose(gen.prior_logits(), torch.logit(truth.mu), rtol=1e-14)
    y = torch.tensor([1e-6, 0.3, 5.0, 40.0], dtype=F64)
    assert torch.allclose(torch.nn.functional.softplus(inverse_softplus(y)), y, rtol=1e-12)
    # Constraints hold for arbitrary raw values.
    with torch.no_grad():
        gen.raw_theta.normal_(0, 30, generator=torch.Generator().manual_seed(0))
        gen.raw_mu.fill_(-50.0)
    m = gen.model()
    assert bool((m.theta >= 0).all()) and bool((m.mu > 0).all() and (m.mu < 1).all())
    assert gen.prior_logits()[0].item() == -50.0  # exact even where mu is ~2e-22


def test_make_generative_modes() -> None:
    truth = block_model()
    fixed = make_generative("inference", truth, dtype=F64)
    assert isinstance(fixed, FixedNoisyOR) and list(fixed.parameters()) == []
    assert torch.equal(fixed.model().theta, truth.theta)
    # Learning mode uses only the shape of the given model: the truth's values do not leak in.
    other = NoisyOR(torch.rand(12, 4, dtype=F64), torch.ones(12, dtype=F64), torch.full((4,), 0.9, dtype=F64))
    a = make_generative("learning", truth, generator=torch.Generator().manual_seed(1), dtype=F64)
    b = make_generative("learning", other, generator=torch.Generator().manual_seed(1), dtype=F64)
    assert torch.equal(a.model().theta, b.model().theta)
    init = GenerativeInit()
    theta = a.model().theta
    assert bool((theta >= init.theta_low - 1e-12).all() and (theta <= init.high(12) + 1e-12).all())
    # The default upper rate keeps an active cause's cost at D * theta_high / 2 = 0.64 nats for
    # D > 64 and is 0.02 below (a larger start collapses every cause at D = 500).
    assert init.high(12) == 0.02 and init.high(64) == 0.02
    assert init.high(500) == pytest.approx(1.28 / 500) and init.high(1294) == pytest.approx(1.28 / 1294)
    wide = (
        make_generative(
            "learning",
            NoisyOR(
                torch.zeros(500, 3, dtype=F64), torch.ones(500, dtype=F64), torch.full((3,), 0.5, dtype=F64)
            ),
            generator=torch.Generator().manual_seed(1),
            dtype=F64,
        )
        .model()
        .theta
    )
    wide = wide.detach()
    assert float(wide.max()) <= 1.28 / 500 + 1e-12 and float(wide.max()) > 0.9 * 1.28 / 500
    assert GenerativeInit(theta_high=0.3).high(500) == 0.3
    with pytest.raises(ConfigError, match="theta_low"):
        GenerativeInit(theta_low=0.01).high(1000)
    assert torch.allclose(a.model().mu, torch.full((4,), init.mu, dtype=F64))
    with pytest.raises(ConfigError, match="mu"):
        GenerativeInit(mu=1.0)


# ---------------------------------------------------------------------- ACP posterior (eq. 11)
def _eq11_numpy(x: np.ndarray, psi: np.ndarray, theta: np.ndarray, mu: np.ndarray) -> np.ndarray:
    n, d = x.shape
    k = theta.shape[1]
    out = np.zeros((n, k))
    for a in range(n):
        for j in range(k):
            pos = sum(psi[a, i] * theta[i, j] for i in range(d) if x[a, i] == 1)
            neg = sum(theta[i, j] for i in range(d) if x[a, i] == 0)
            out[a, j] = pos - neg + math.log(mu[j] / (1 - mu[j]))
    return out


def test_acp_logits_match_eq11_by_hand() -> None:
    model = random_model(7, 3, seed=1)
    g = torch.Generator().manual_seed(2)
    x = (torch.rand(5, 7, generator=g, dtype=F64) < 0.5).to(F64)
    psi = torch.rand(5, 7, generator=g, dtype=F64) * 3
    got = conjugate_posterior_logits(x, psi, model.theta, torch.logit(model.mu))
    want = _eq11_numpy(x.numpy(), psi.numpy(), model.theta.numpy(), model.mu.numpy())
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-12, atol=1e-12)

    # The method itself: psi = softplus(MLP(x)) >= 0, then eq. 11 with the generative parameters.
    acp = ACP(model, "inference", {"hidden_dim": 8}, seed=0, dtype=F64)
    psi_net = acp.psi(x).detach()
    assert bool((psi_net >= 0).all())
    q = acp.posterior(x)
    want_q = 1 / (1 + np.exp(-_eq11_numpy(x.numpy(), psi_net.numpy(), model.theta.numpy(), model.mu.numpy())))
    np.testing.assert_allclose(q.numpy(), want_q, rtol=1e-10)


def _loss_and_grads(method: ACP | AVI, x: torch.Tensor, detach_q: bool) -> torch.Tensor:
    """d NELBO / d raw_theta with the method's own model view, q attached or detached."""
    gen = method.generative_module
    model = gen.model()
    logits = method.logits(x, model, gen.prior_logits())
    if detach_q:
        logits = logits.detach()
    loss = -elbo(model, x, logits, 3, 0.5, torch.Generator().manual_seed(9)).sum()
    (grad,) = torch.autograd.grad(loss, gen.raw_theta)
    return grad


def test_acp_gradient_reaches_theta_through_q() -> None:
    acp = ACP(block_model(), "learning", {"hidden_dim": 8}, seed=0, dtype=F64)
    x = block_model().sample(6, torch.Generator().manual_seed(3))[1]
    full = _loss_and_grads(acp, x, detach_q=False)
    direct = _loss_and_grads(acp, x, detach_q=True)

    # The method's training loss is the "attached" one.
    gen = acp.generative_module
    loss = acp.batch_nelbo(x, 3, 0.5, torch.Generator().manual_seed(9)).sum()
    (method_grad,) = torch.autograd.grad(loss, gen.raw_theta)
    assert torch.allclose(method_grad, full, rtol=1e-12, atol=1e-14)

    # Path through q, by hand: d logits_nk / d theta_ik = x_ni psi_ni - (1 - x_ni) (eq. 11),
    # times dL/dlogits (autograd with logits as a leaf), times softplus' = sigmoid(raw).
    model = gen.model()
    leaf = acp.logits(x, model, gen.prior_logits()).detach().requires_grad_(True)
    (dl,) = torch.autograd.grad(
        -elbo(model.detach(), x, leaf, 3, 0.5, torch.Generator().manual_seed(9)).sum(), leaf
    )
    w = (x * acp.psi(x) - (1 - x)).detach().numpy()
    via_q = (w.T @ dl.numpy()) * torch.sigmoid(gen.raw_theta).detach().numpy()
    diff = (full - direct).numpy()
    np.testing.assert_allclose(diff, via_q, rtol=1e-9, atol=1e-12)
    assert np.abs(diff).max() > 1e-3 * np.abs(full.numpy()).max()


def test_avi_posterior_has_no_path_to_theta() -> None:
    for cls in (AVI, ACP):
        method = cls(block_model(), "learning", {"hidden_dim": 8}, seed=0, dtype=F64)
        gen = method.generative_module
        model = gen.model()
        x = block_model().sample(4, torch.Generator().manual_seed(3))[1]
        logits = method.logits(x, model, gen.prior_logits())
        (d_logits,) = torch.autograd.grad(logits.sum(), model.theta, allow_unused=True)
        if cls is AVI:
            assert d_logits is None
            assert torch.equal(_loss_and_grads(method, x, False), _loss_and_grads(method, x, True))
        else:
            assert d_logits is not None and d_logits.abs().max() > 0


# ---------------------------------------------------------------------- inference quality
def _macro_f1_and_em(z_hat: np.ndarray, z: np.ndarray) -> tuple[float, float]:
    zh, zt = z_hat.astype(bool), z.astype(bool)
    f1 = []
    for k in range(zt.shape[1]):
        tp = np.sum(zh[:, k] & zt[:, k])
        fp = np.sum(zh[:, k] & ~zt[:, k])
        fn = np.sum(~zh[:, k] & zt[:, k])
        f1.append(2 * tp / max(2 * tp + fp + fn, 1))
    return float(np.mean(f1)), float(np.mean((zh == zt).all(1)))


# Gap to log p(x) of the fitted q, nats per held-out point.  Measured (seeds 0-3, this data):
# AVI 0.17-0.22, ACP 0.14-0.17; the best factorised q (per-point optimum by enumeration) is at
# 0.005 and q = prior at 6.4.  0.4 leaves room for platform round-off and still fails a
# method whose encoder learned little.
GAP_MARGIN = 0.4


@pytest.mark.parametrize("name", ["avi", "acp"])
def test_inference_mode_reaches_exact_elbo_and_recovers_z(
    name: str, block_data: dict[str, torch.Tensor]
) -> None:
    truth = block_model()
    method = get_method(name)(truth, "inference", {"lr": 1e-2, "hidden_dim": 32}, seed=0)
    history = method.fit(block_data["x_train"], block_data["x_val"], FitBudget(max_epochs=60, patience=10))
    assert 1 <= method.best_epoch <= len(history) <= 60
    assert all(r.extra["temperature"] <= 0.5 for r in history)

    x_test, z_test = block_data["x_test"], block_data["z_test"].numpy()
    q = method.posterior(x_test)
    assert q.shape == (500, 4) and q.dtype == F64 and bool(((q >= 0) & (q <= 1)).all())
    gap = (exact_log_marginal(truth, x_test) - exact_elbo(truth, x_test, q)).mean().item()
    assert 0 <= gap < GAP_MARGIN

    g = torch.Generator().manual_seed(1)
    z_hat = (torch.rand(q.shape, generator=g, dtype=F64) < q).numpy()
    z_prior = (torch.rand(q.shape, generator=g, dtype=F64) < truth.mu).numpy()
    f1, em = _macro_f1_and_em(z_hat, z_test)
    f1_prior, em_prior = _macro_f1_and_em(z_prior, z_test)
    assert f1 > f1_prior + 0.3 and em > em_prior + 0.3, (f1, em, f1_prior, em_prior)


def test_inference_mode_leaves_the_truth_untouched(block_data: dict[str, torch.Tensor]) -> None:
    truth = block_model()
    method = ACP(truth, "inference", {"hidden_dim": 8}, seed=0)
    assert len(method.make_optimizer().param_groups) == 1  # encoder only
    method.fit(block_data["x_train"], block_data["x_val"], FitBudget(max_epochs=2, patience=5))
    assert method.generative is truth
    assert torch.equal(method.generative_module.model().theta, truth.theta.float())


# ---------------------------------------------------------------------- learning mode
@pytest.mark.parametrize("cls", [AVI, ACP])
def test_learning_mode_decreases_nelbo_and_learns_theta(
    cls: type, block_data: dict[str, torch.Tensor]
) -> None:
    method = cls(block_model(), "learning", {"lr": 1e-2, "hidden_dim": 32}, seed=0)
    theta_before = method.generative.theta.clone()
    history = method.fit(block_data["x_train"], block_data["x_val"], FitBudget(max_epochs=15, patience=15))
    assert history[-1].train_nelbo < history[0].train_nelbo - 1.0
    assert history[-1].val_nelbo < history[0].val_nelbo - 1.0
    learned = method.generative
    assert not torch.equal(learned.theta, theta_before)
    assert bool((learned.theta >= 0).all() and (learned.theta0 >= 0).all())
    assert bool(((learned.mu > 0) & (learned.mu < 1)).all())


# ---------------------------------------------------------------------- reproducibility
def _fit_state(cls: type, seed: int, data: dict[str, torch.Tensor], **kw) -> dict[str, torch.Tensor]:
    method = cls(block_model(), "learning", {"hidden_dim": 16}, seed=seed)
    method.fit(
        data["x_train"][:200], data["x_val"][:100], FitBudget(max_epochs=3, patience=5, batch_size=64), **kw
    )
    return method.state_dict()["net"]


def test_same_seed_gives_identical_parameters(block_data: dict[str, torch.Tensor]) -> None:
    a = _fit_state(ACP, 3, block_data)
    b = _fit_state(ACP, 3, block_data)
    c = _fit_state(ACP, 4, block_data)
    assert a.keys() == b.keys()
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert not all(torch.equal(a[k], c[k]) for k in a)


class _Interrupt(Exception):
    pass


@pytest.mark.parametrize("cls", [AVI, ACP])
def test_checkpoint_resume_is_bit_identical(
    cls: type, block_data: dict[str, torch.Tensor], tmp_path: Path
) -> None:
    budget = FitBudget(max_epochs=5, patience=10, batch_size=64)
    data = (block_data["x_train"][:200], block_data["x_val"][:100])
    reference = cls(block_model(), "learning", {"hidden_dim": 16}, seed=1)
    ref_history = reference.fit(*data, budget)

    ckpt = tmp_path / "fit.ckpt"

    def stop_after_2(r: EpochRecord) -> None:
        if r.epoch == 2:
            raise _Interrupt

    with pytest.raises(_Interrupt):
        cls(block_model(), "learning", {"hidden_dim": 16}, seed=1).fit(
            *data, budget, stop_after_2, checkpoint_path=ckpt
        )
    assert torch.load(ckpt, weights_only=True)["progress"]["epoch"] == 2
    resumed = cls(block_model(), "learning", {"hidden_dim": 16}, seed=1)
    history = resumed.fit(*data, budget, checkpoint_path=ckpt)

    ref_state, state = reference.state_dict()["net"], resumed.state_dict()["net"]
    assert all(torch.equal(ref_state[k], state[k]) for k in ref_state)
    assert [(r.train_nelbo, r.val_nelbo, r.extra) for r in history] == [
        (r.train_nelbo, r.val_nelbo, r.extra) for r in ref_history
    ]
    # A checkpoint of another configuration is refused rather than silently resumed.
    with pytest.raises(ConfigError, match="hparams"):
        cls(block_model(), "learning", {"hidden_dim": 16, "lr": 0.5}, seed=1).fit(
            *data, budget, checkpoint_path=ckpt
        )


def test_state_dict_round_trip(block_data: dict[str, torch.Tensor]) -> None:
    a = ACP(block_model(), "learning", {"hidden_dim": 16}, seed=0)
    a.fit(block_data["x_train"][:200], block_data["x_val"][:100], FitBudget(max_epochs=2, patience=5))
    b = ACP(block_model(), "learning", {"hidden_dim": 16}, seed=7)
    b.load_state_dict(a.state_dict())
    assert torch.equal(a.posterior(block_data["x_test"]), b.posterior(block_data["x_test"]))
    assert torch.equal(a.generative.theta, b.generative.theta)
    with pytest.raises(DataError, match="acp"):
        AVI(block_model(), "learning", {"hidden_dim": 16}, seed=0).load_state_dict(a.state_dict())


# ---------------------------------------------------------------------- failure modes
def test_divergence_is_reported(block_data: dict[str, torch.Tensor]) -> None:
    method = ACP(block_model(), "learning", {"lr": 1e30}, seed=0)
    with pytest.raises(NonFiniteLossError, match=r"epoch 1, optimiser step \d+.*lower the learning rate"):
        method.fit(block_data["x_train"], block_data["x_val"], FitBudget(max_epochs=3, patience=5))


def test_bad_data_is_rejected(block_data: dict[str, torch.Tensor]) -> None:
    method = AVI(block_model(), "inference", {}, seed=0)
    x = block_data["x_train"].clone().float()
    x[3, 2] = math.nan
    with pytest.raises(DataError, match="x_train.*0/1"):
        method.fit(x, block_data["x_val"], FitBudget(max_epochs=1))
    with pytest.raises(DataError, match=r"x_val must have shape \(N, 12\)"):
        method.fit(block_data["x_train"], block_data["x_val"][:, :5], FitBudget(max_epochs=1))


def test_posterior_is_batched_consistently(
    block_data: dict[str, torch.Tensor], monkeypatch: pytest.MonkeyPatch
) -> None:
    # float64 so that GEMM kernels chosen per batch size differ only at round-off level.
    method = AVI(block_model(), "inference", {"hidden_dim": 8}, seed=0, dtype=F64)
    full = method.posterior(block_data["x_test"])
    monkeypatch.setattr(amortized_mod, "EVAL_BATCH_SIZE", 7)
    torch.testing.assert_close(method.posterior(block_data["x_test"]), full, rtol=1e-13, atol=1e-15)
