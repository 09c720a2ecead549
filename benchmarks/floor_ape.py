"""Floor units of APE: a model-aware encoder's training step and the IS evaluation, on the reviews.

The floor is the dense plain loop: a step gathers the drawn models whole, ``(B, K, V)``, forms the
statistic ``theta x / sum(theta x)``, runs the encoder (Linear -> ReLU -> BatchNorm, twice; batch-
normed mean and log-variance heads) and the ELBO ``sum_v x_v log (softmax(h) theta)_v`` over all V
words plus the multinomial coefficient, minus the closed-form KL against the Laplace prior of
Dir(0.01), then Adam (lr 0.01, betas 0.99 / 0.999).  The evaluation is the encoder's pass over the
evaluation pairs (eval mode) and the importance-sampled log-likelihood per word with S draws, in
float64, over all V words.  The product (``inference/topics/ape_training.py``,
``models/topics/logistic_normal.py``) gathers only each document's words (U <= 361 of V = 3,000
here), so a ratio below 1 is what that compaction buys.

:func:`check` copies the product encoder's weights into the floor and asserts equal per-pair
ELBOs (training mode) and IS estimates (eval mode) with the same draws, in float64.
"""

from __future__ import annotations

import math
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from floor_table import Unit

BATCH, LR, BETAS, BN_EPS = 100, 0.01, (0.99, 0.999), 1e-5
ALPHA = 0.01  # the model's Dirichlet prior
POOL = 50  # training models drawn (the step's cost does not depend on the pool's size)


def _prior(k: int) -> tuple[float, float]:
    """Laplace approximation of a symmetric Dir(0.01) over k topics in the softmax basis."""
    return 0.0, (1 / ALPHA) * (1 - 2 / k) + k * (1 / ALPHA) / k**2


# ------------------------------------------------------------------------------ the floor
def floor_params(k: int, seed: int, hidden: int = 100) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    p: dict[str, torch.Tensor] = {"scale": torch.ones(())}
    for name, (n_in, n_out) in {
        "h0": (k, hidden),
        "h1": (hidden, hidden),
        "mu": (hidden, k),
        "lv": (hidden, k),
    }.items():
        bound = n_in**-0.5
        p[f"{name}_w"] = (2 * torch.rand((n_out, n_in), generator=g) - 1) * bound
        p[f"{name}_b"] = (2 * torch.rand(n_out, generator=g) - 1) * bound
        p[f"{name}_gamma"], p[f"{name}_beta"] = torch.ones(n_out), torch.zeros(n_out)
        p[f"{name}_rm"], p[f"{name}_rv"] = torch.zeros(n_out), torch.ones(n_out)  # running statistics
    for n, t in p.items():
        t.requires_grad_(not n.endswith(("_rm", "_rv")))
    return p


def _bn(p: dict[str, torch.Tensor], name: str, h: torch.Tensor, train: bool) -> torch.Tensor:
    """Affine batch norm: batch statistics (running ones updated) in training, running ones in eval."""
    rm, rv = p[f"{name}_rm"], p[f"{name}_rv"]
    if train:
        mean, var = h.mean(0), h.var(0, unbiased=False)
        with torch.no_grad():
            rm.mul_(0.9).add_(0.1 * mean)
            rv.mul_(0.9).add_(0.1 * var * h.shape[0] / (h.shape[0] - 1))
    else:
        mean, var = rm, rv
    return (h - mean) / torch.sqrt(var + BN_EPS) * p[f"{name}_gamma"] + p[f"{name}_beta"]


def floor_encode(p: dict[str, torch.Tensor], x: torch.Tensor, theta: torch.Tensor, train: bool):
    """(mu, log_sigma) of q(h) for pairs x (B, V), theta (B, K, V)."""
    stat = torch.einsum("bv,bkv->bk", x, theta)
    h = stat / stat.sum(-1, keepdim=True)
    for name in ("h0", "h1"):
        h = _bn(p, name, torch.relu(F.linear(h, p[f"{name}_w"], p[f"{name}_b"])), train)
    mu = p["scale"] * _bn(p, "mu", F.linear(h, p["mu_w"], p["mu_b"]), train)
    return mu, 0.5 * _bn(p, "lv", F.linear(h, p["lv_w"], p["lv_b"]), train)


def _log_lik(x: torch.Tensor, theta: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
    """sum_v x_v log (softmax(h) theta)_v over every word: h (S, B, K) -> (S, B)."""
    return torch.xlogy(x, torch.einsum("sbk,bkv->sbv", torch.softmax(h, -1), theta)).sum(-1)


def floor_elbo(p, x, theta, g: torch.Generator) -> torch.Tensor:
    """Per-pair ELBO (one reparameterised draw, multinomial coefficient included), training mode."""
    mu, log_sigma = floor_encode(p, x, theta, True)
    h = mu + torch.exp(log_sigma) * torch.randn((1, *mu.shape), generator=g, dtype=mu.dtype)
    coefficient = torch.lgamma(x.sum(-1) + 1) - torch.lgamma(x + 1).sum(-1)
    m0, v0 = _prior(mu.shape[1])
    kl = 0.5 * (torch.exp(2 * log_sigma) / v0 + (mu - m0) ** 2 / v0 - 1 + math.log(v0) - 2 * log_sigma).sum(
        -1
    )
    return _log_lik(x, theta, h).mean(0) + coefficient - kl


def floor_is(p, x, theta, n_samples: int, g: torch.Generator, chunk: int = 10) -> torch.Tensor:
    """Per-pair IS estimate of log p(x | theta) (no coefficient): float32 encoder pass, float64 weights."""
    with torch.no_grad():
        mu, log_sigma = (t.double() for t in floor_encode(p, x.float(), theta.float(), False))
        x, theta = x.double(), theta.double()
        h = mu + torch.exp(log_sigma) * torch.randn((n_samples, *mu.shape), generator=g, dtype=torch.float64)
        m0, v0 = _prior(mu.shape[1])
        log_prior = -0.5 * ((h - m0) ** 2 / v0 + math.log(2 * math.pi * v0)).sum(-1)
        z = (h - mu) * torch.exp(-log_sigma)
        log_q = (-0.5 * z**2 - log_sigma - 0.5 * math.log(2 * math.pi)).sum(-1)
        ll = torch.cat([_log_lik(x, theta, hc) for hc in torch.split(h, chunk)])
        return torch.logsumexp(ll + log_prior - log_q, 0) - math.log(n_samples)


def floor_steps(docs: torch.Tensor, pool: torch.Tensor, steps: int) -> float:
    """Seconds per step of the plain loop (after one warm-up step)."""
    p = floor_params(pool.shape[1], 0)
    opt = torch.optim.Adam([t for n, t in p.items() if t.requires_grad], lr=LR, betas=BETAS, fused=True)
    g = torch.Generator().manual_seed(2)

    def step() -> None:
        d = torch.randint(docs.shape[0], (BATCH,), generator=g)
        m = torch.randint(pool.shape[0], (BATCH,), generator=g)
        loss = -floor_elbo(p, docs[d], pool[m], g).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    step()
    start = time.perf_counter()
    for _ in range(steps):
        step()
    return (time.perf_counter() - start) / steps


def floor_evaluation(x: torch.Tensor, theta: torch.Tensor, n_samples: int) -> float:
    p = floor_params(theta.shape[1], 0)
    start = time.perf_counter()
    values = floor_is(p, x, theta, n_samples, torch.Generator().manual_seed(3))
    per_word = float(values.sum() / x.sum())  # the reported number, as the product's
    assert math.isfinite(per_word)
    return time.perf_counter() - start


# ------------------------------------------------------------------------------ the product
def _encoder(k: int, v: int, dtype: torch.dtype = torch.float32):
    from noisyor_bench.inference.topics.ape_encoders import build_encoder

    return build_encoder("model_aware", v, k, seed=0, dtype=dtype)


def product_steps(docs: torch.Tensor, pool: torch.Tensor, steps: int) -> float:
    """Seconds per step of ``train_encoder``: its second block of ``steps`` steps (the first warms
    up), each block ending in a validation on 2 pairs (negligible)."""
    from noisyor_bench.inference.topics.ape_training import ApeTrainingConfig, train_encoder
    from noisyor_bench.models.topics.logistic_normal import ape_prior

    k = pool.shape[1]
    config = ApeTrainingConfig(learning_rate=LR, batch_size=BATCH, max_steps=2 * steps, eval_every=steps)
    result = train_encoder(
        _encoder(k, docs.shape[1]), docs, pool, ape_prior(k, dtype=torch.float32), config, seed=0,
        valid_x=docs[:2], valid_theta=pool[:2], device="cpu",
    )  # fmt: skip
    return result.records[1].seconds / steps


def product_evaluation(x: torch.Tensor, theta: torch.Tensor, n_samples: int) -> float:
    """``encode`` (float32, eval mode) and ``per_word_log_likelihood_halves`` (float64), as
    ``experiments/ape/evaluate.py`` scores a method's q."""
    from noisyor_bench.inference.topics.ape_encoders import encode
    from noisyor_bench.models.topics.logistic_normal import ape_prior, per_word_log_likelihood_halves

    encoder = _encoder(theta.shape[1], x.shape[1]).eval()
    start = time.perf_counter()
    mu, log_sigma = encode(encoder, x.float(), theta.float())
    per_word, _, _ = per_word_log_likelihood_halves(
        x.double(), theta.double(), mu.double(), log_sigma.double(), ape_prior(theta.shape[1]),
        n_samples, torch.Generator().manual_seed(3),
    )  # fmt: skip
    assert math.isfinite(per_word)
    return time.perf_counter() - start


def load(data_dir: Path):
    """Documents (float32), a pool of :data:`POOL` training models, the evaluation pairs (float64)."""
    from noisyor_bench.data.synthetic.theta_pool import ThetaPool

    with np.load(data_dir / "ape-mdreviews.npz") as z:
        arrays = {key: z[key] for key in z.files if key != "vocab"}
    recipe = ThetaPool.from_arrays(arrays)
    pool = ThetaPool(recipe.seed, POOL, recipe.n_topics, recipe.vocab_size, recipe.alpha)
    docs = np.asarray(arrays["documents"])
    tests = arrays["test_thetas"]
    eval_docs = np.repeat(arrays["eval_documents"], tests.shape[0])
    eval_models = np.tile(np.arange(tests.shape[0]), arrays["eval_documents"].size)
    return (
        torch.as_tensor(docs, dtype=torch.float32),
        torch.from_numpy(pool.materialise(np.float32)),
        torch.as_tensor(docs[eval_docs], dtype=torch.float64),
        torch.as_tensor(tests[eval_models], dtype=torch.float64),
    )


def units(data_dir: Path, quick: bool) -> list[Unit]:
    docs, pool, x_eval, theta_eval = load(data_dir)
    k, v = pool.shape[1:]
    steps = 20 if quick else 50
    draws = 50 if quick else 200  # the quick grid's is_samples on the reviews: 200
    return [
        Unit(
            name="APE training step (model-aware)",
            size=f"mdreviews, batch {BATCH} pairs, K {k}, V {v}, 1 draw",
            floor="dense: the drawn models gathered whole (B, K, V), the likelihood over all V words, fused Adam",
            product=lambda: product_steps(docs, pool, steps),
            floor_fn=lambda: floor_steps(docs, pool, steps),
        ),
        Unit(
            name="APE evaluation (IS)",
            size=f"mdreviews, {x_eval.shape[0]} pairs, {draws} draws, K {k}, V {v}",
            floor="the encoder's eval pass, then importance weights over all V words in float64, 10 draws at a time",
            product=lambda: product_evaluation(x_eval, theta_eval, draws),
            floor_fn=lambda: floor_evaluation(x_eval, theta_eval, draws),
        ),
    ]


# ------------------------------------------------------------------------------ equality
def check(data_dir: Path) -> list[dict]:
    """Floor against product at the same weights and draws: ELBO per pair (training mode) and
    the IS estimate per pair (eval mode; float32 encoder pass, as the product's evaluation)."""
    from noisyor_bench.inference.topics.ape_encoders import encode
    from noisyor_bench.models.topics.logistic_normal import ape_prior, elbo, log_marginal_is

    docs, pool, _, _ = load(data_dir)
    x, theta = docs[:8].double(), pool[:8].double()
    k = theta.shape[1]
    enc = _encoder(k, x.shape[1], torch.float64).train()
    mu, log_sigma = enc(x, theta)  # a training pass updates the running statistics once
    state = {n: t.detach().clone() for n, t in enc.state_dict().items()}
    enc32 = _encoder(k, x.shape[1])
    enc32.load_state_dict({n: t.float() for n, t in state.items()})
    names = {"h0": "hidden.0", "h1": "hidden.1", "mu": "mu", "lv": "log_var"}
    p = {"scale": state["scale"]}
    for mine, theirs in names.items():
        lin, norm = (
            (f"{theirs}.linear", f"{theirs}.norm")
            if mine.startswith("h")
            else (f"{theirs}_linear", f"{theirs}_norm")
        )
        p |= {f"{mine}_w": state[f"{lin}.weight"], f"{mine}_b": state[f"{lin}.bias"]}
        p |= {f"{mine}_gamma": state[f"{norm}.weight"], f"{mine}_beta": state[f"{norm}.bias"]}
        p |= {f"{mine}_rm": state[f"{norm}.running_mean"], f"{mine}_rv": state[f"{norm}.running_var"]}
    out = []
    with torch.no_grad():
        running = {n: p[n].clone() for n in p if n.endswith(("_rm", "_rv"))}
        mine = floor_elbo(p, x, theta, torch.Generator().manual_seed(4))
        p |= running  # the floor's training pass moved them; the eval check reads the product's
        mu, log_sigma = enc(x, theta)
        theirs = elbo(x, theta, mu, log_sigma, ape_prior(k), 1, torch.Generator().manual_seed(4))
        out.append(("APE ELBO per pair, training mode", mine, theirs, 1e-9))
        mu, log_sigma = encode(enc32.eval(), x.float(), theta.float())
        theirs = log_marginal_is(
            x,
            theta,
            mu.double(),
            log_sigma.double(),
            ape_prior(k),
            40,
            torch.Generator().manual_seed(6),
            False,
        )
        p32 = {n: t.float() for n, t in p.items()}  # the pass in float32, as the product's
        mine = floor_is(p32, x, theta, 40, torch.Generator().manual_seed(6))
        out.append(("APE IS log-likelihood per pair, eval mode (float32 encoder pass)", mine, theirs, 1e-5))
    rows = []
    for name, a, b, rel in out:
        diff, tol = float((a - b).abs().max()), rel * float(b.abs().max())
        assert diff <= tol, f"{name}: floor differs from the product by {diff}"
        rows.append({"name": name, "max_abs_diff": diff, "tol": tol})
    return rows
