"""Shared machinery of the amortized methods AVI (Section 2.5) and ACP (Section 3).

Both methods fit one encoder network on the training set and maximise the same estimator of
the ELBO (eq. 16, :func:`noisyor_bench.models.noisyor.elbo.elbo`; Algorithm 1 of the supplement): L
binary-concrete samples for the positive-observation term, the negative term and the KL in
closed form.  They differ only in how the encoder output becomes the logits of
``q(z_k = 1 | x)``:

* AVI: ``logits = MLP(x)`` (K outputs) -- ``q`` does not depend on the generative model;
* ACP: ``psi = softplus(MLP(x))`` (D outputs) and ``logits`` from eq. 11, a function of
  ``theta`` and ``mu`` -- so in learning mode the ELBO's gradient reaches ``theta`` also
  through ``q``.

Training follows the supplement's "Implementation details": Adam (learning rate ``lr``,
``beta1`` = "momentum"), batch size 128 (``FitBudget.batch_size``), L = 10 samples and the
exponential temperature schedule of Jang et al. (2016)

    tau_t = max(tau_min, tau_0 * exp(-rate * floor(t / decay_step))),   tau_0 = 0.5, tau_min = 0.2

over optimiser steps t.  After every epoch the validation NELBO is computed with exact
Bernoulli samples (no relaxation, as at test time) from a generator re-seeded on every call,
so epochs are compared on identical noise; the best state is kept (early stopping).
"""

from __future__ import annotations

import dataclasses
import math
import zlib
from abc import abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from noisyor_bench.inference.adam import Adam
from noisyor_bench.inference.convergence import Convergence
from noisyor_bench.inference.fitting import EpochRecord, FitBudget
from noisyor_bench.inference.noisyor.base import InferenceMethod, Mode
from noisyor_bench.inference.seeding import stream_generator
from noisyor_bench.inference.training import Trainer, validate_budget
from noisyor_bench.infra.constants import DEFAULT_N_SAMPLES
from noisyor_bench.infra.errors import ConfigError, DataError
from noisyor_bench.models.noisyor.elbo import elbo
from noisyor_bench.models.noisyor.generative import GenerativeInit, GenerativeModule, make_generative
from noisyor_bench.models.noisyor.model import NoisyOR
from noisyor_bench.models.noisyor.sparse import ActiveSet, active_linear, wants_sparse

EVAL_BATCH_SIZE = 4096  # rows per evaluation chunk (posterior, held-out NELBO) ...
EVAL_MAX_ELEMENTS = 2**24  # ... capped so the (samples, rows, D) rates stay ~64 MB in float32
STATE_FORMAT = "amortized-v1"


# ---------------------------------------------------------------------- hyperparameters
@dataclass(frozen=True)
class AmortizedHParams:
    """Hyperparameters of AVI and ACP (the random-search space of the supplement).

    ``gen_lr`` (Adam learning rate of the generative parameters; ``None`` = ``lr``) and the
    ``init_*`` values (see :class:`~noisyor_bench.models.noisyor.generative.GenerativeInit`) only matter in
    learning mode and are ignored in inference mode.  The temperature defaults put the end of
    the schedule (``tau_min`` reached after ~1,900 steps) within the few thousand steps of a
    small-data run; the paper's search varies ``temp_decay_rate`` and ``temp_decay_step``.

    Why ``gen_lr = 1e-2`` and not the encoder's ``lr = 1e-3``: rates are
    ``theta = softplus(r)`` ~ ``e^r`` near their init (<= 0.02), and Adam moves ``r`` by about
    the learning rate per step, so after T steps ``theta <= 0.02 * e^(gen_lr * T)``.  At
    1e-3 that ceiling is 0.02-0.04 after the 300-600 steps of a 15-epoch budget (true maxima
    0.4-1.6), and the learned models scored worse than independent pixels; at 1e-2 the
    ceiling passes 1.6 after ~440 steps.  Measured (``benchmarks/learning_curves.py``,
    ``docs/convergence.md``; patience 10, <= 200 epochs, seed 0) on SYN-PATTERN N_train =
    1,000: gen_lr 1e-3 still improving at 200 epochs (4,800 steps); 1e-2 stops by patience
    after 53-66 epochs at test NELBO 10.9 (ACP) / 11.3 (AVI) against the independent
    baseline's 20.3, 7/8 and 6/8 patterns; 3e-2 stops sooner (24-46 epochs) but AVI lands in
    worse optima (13.4, 3/8).  ``gen_lr`` is also a dimension of the random search.
    """

    hidden_layers: int = 1  # hidden layers of the encoder MLP (ReLU)
    hidden_dim: int = 100  # units per hidden layer
    lr: float = 1e-3  # Adam learning rate of the encoder (and of the generative model if gen_lr is None)
    beta1: float = 0.9  # Adam beta1 ("momentum")
    temp_init: float = 0.5  # tau_0
    temp_min: float = 0.2  # tau_min
    temp_decay_rate: float = 0.05  # rate in exp(-rate * floor(step / decay_step))
    temp_decay_step: int = 100  # optimiser steps per temperature decay
    n_samples: int = 10  # L, Monte Carlo samples per data point in training
    val_samples: int = 10  # exact Bernoulli samples per point for the validation NELBO
    gen_lr: float | None = 1e-2  # learning mode only; None = lr
    init_theta_low: float = GenerativeInit.theta_low
    init_theta_high: float | None = GenerativeInit.theta_high  # None: min(0.02, 1.28 / D)
    init_theta0: float = GenerativeInit.theta0
    init_mu: float = GenerativeInit.mu
    dtype: str = "float32"  # "float32" | "float64" (training and evaluation precision)

    @property
    def generative_lr(self) -> float:
        """Adam's learning rate of the generative parameters: ``gen_lr``, else ``lr``."""
        return self.gen_lr if self.gen_lr is not None else self.lr

    def generative_init(self) -> GenerativeInit:
        return GenerativeInit(
            theta_low=self.init_theta_low,
            theta_high=self.init_theta_high,
            theta0=self.init_theta0,
            mu=self.init_mu,
        )


_INT_KEYS = {"hidden_layers", "hidden_dim", "temp_decay_step", "n_samples", "val_samples"}
DTYPES = {"float32": torch.float32, "float64": torch.float64}


def _check_value(key: str, value: Any) -> Any:
    """Type/range check of one hyperparameter; returns the normalised value."""
    if key in ("gen_lr", "init_theta_high") and value is None:
        return None
    if key == "dtype":
        if value not in DTYPES:
            raise ConfigError(f"hyperparameter 'dtype' must be one of {', '.join(DTYPES)}; got {value!r}")
        return value
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ConfigError(f"hyperparameter {key!r} must be a number; got {value!r}")
    if key in _INT_KEYS:
        if float(value) != int(value):
            raise ConfigError(f"hyperparameter {key!r} must be an integer; got {value!r}")
        value = int(value)
        if value < 1:
            raise ConfigError(f"hyperparameter {key!r} must be >= 1; got {value}")
        return value
    value = float(value)
    if not math.isfinite(value):
        raise ConfigError(f"hyperparameter {key!r} must be finite; got {value}")
    if key in ("lr", "gen_lr", "temp_init", "temp_min") and value <= 0:
        raise ConfigError(f"hyperparameter {key!r} must be > 0; got {value}")
    if key == "beta1" and not 0.0 <= value < 1.0:
        raise ConfigError(f"hyperparameter 'beta1' must lie in [0, 1); got {value}")
    if key in ("temp_decay_rate", "init_theta_low", "init_theta_high") and value < 0:
        raise ConfigError(f"hyperparameter {key!r} must be >= 0; got {value}")
    return value


def parse_hparams(hparams: Mapping[str, Any]) -> AmortizedHParams:
    """Defaults overridden by ``hparams``; unknown keys and bad values raise ConfigError."""
    allowed = [f.name for f in fields(AmortizedHParams)]
    for key in hparams:
        if key not in allowed:
            raise ConfigError(f"unknown hyperparameter {key!r} for AVI/ACP; allowed: {', '.join(allowed)}")
    values = {key: _check_value(key, value) for key, value in hparams.items()}
    hp = AmortizedHParams(**values)
    if hp.temp_min > hp.temp_init:
        raise ConfigError(
            f"hyperparameter 'temp_min' ({hp.temp_min}) must not exceed 'temp_init' ({hp.temp_init})"
        )
    hp.generative_init()  # validates the init_* values
    return hp


def temperature(step: int, hp: AmortizedHParams) -> float:
    """Gumbel-softmax temperature at optimiser step ``step`` (Jang et al., 2016)."""
    return max(hp.temp_min, hp.temp_init * math.exp(-hp.temp_decay_rate * (step // hp.temp_decay_step)))


# ---------------------------------------------------------------------- encoder
def build_mlp(
    in_dim: int,
    out_dim: int,
    hidden_layers: int,
    hidden_dim: int,
    generator: torch.Generator,
    dtype: torch.dtype,
    device: torch.device,
) -> nn.Sequential:
    """ReLU MLP initialised from ``generator`` only (no global RNG).

    Weights and biases ~ U(-1/sqrt(fan_in), 1/sqrt(fan_in)), PyTorch's default ``nn.Linear``
    distribution, drawn on the CPU in float64 so the initial network does not depend on the
    device or dtype.
    """
    dims = [in_dim] + [hidden_dim] * hidden_layers + [out_dim]
    layers: list[nn.Module] = []
    for i, (fan_in, fan_out) in enumerate(zip(dims[:-1], dims[1:])):
        linear = torch.nn.utils.skip_init(nn.Linear, fan_in, fan_out, device=device, dtype=dtype)
        bound = 1.0 / math.sqrt(fan_in)
        with torch.no_grad():
            for p in (linear.weight, linear.bias):
                u = torch.rand(p.shape, generator=generator, dtype=torch.float64)
                p.copy_((2 * u - 1) * bound)
        layers.append(linear)
        if i < hidden_layers:
            layers.append(nn.ReLU())
    return nn.Sequential(*layers)


# ---------------------------------------------------------------------- encoder inputs
ENCODER_INPUTS = ("x", "model-aware", "concat")
"""What the encoder reads (the APE question, docs/ape_noisyor.md): ``"x"`` the observation only
(the paper's AVI and ACP; the default, unchanged); ``"model-aware"`` APE's model-aware statistic
for noisy-OR, ``[theta^T x, theta^T (1 - x)]`` (2K numbers: the summed rates of the positive and
of the negative observations per latent -- the ingredients of eq. 11 at ``psi = 1``);
``"concat"`` APE's naive input, ``x`` concatenated with the flattened ``theta`` (D + D K)."""


def encoder_input_dim(kind: str, d: int, k: int) -> int:
    """Number of encoder inputs for ``kind`` (:data:`ENCODER_INPUTS`) with D observations, K latents."""
    dims = {"x": d, "model-aware": 2 * k, "concat": d + d * k}
    if kind not in dims:
        raise ConfigError(f"encoder input {kind!r} is not allowed; allowed: {', '.join(ENCODER_INPUTS)}")
    return dims[kind]


def encoder_features(kind: str, x: torch.Tensor, theta: torch.Tensor) -> torch.Tensor:
    """The encoder's input for float ``x`` (N, D) under rates ``theta`` (D, K): see :data:`ENCODER_INPUTS`.

    ``"x"`` returns ``x`` itself (no copy), so the default path computes exactly what it did
    before the option existed."""
    if kind == "x":
        return x
    theta = theta.to(x.dtype)
    if kind == "model-aware":
        return torch.cat([x @ theta, (1 - x) @ theta], dim=-1)
    if kind == "concat":
        return torch.cat([x, theta.reshape(1, -1).expand(x.shape[0], -1)], dim=-1)
    raise ConfigError(f"encoder input {kind!r} is not allowed; allowed: {', '.join(ENCODER_INPUTS)}")


def _as_binary(x: Any, d: int, name: str, device: torch.device) -> torch.Tensor:
    """Validate a binary data matrix and move it to ``device`` as uint8 (compact; cast per batch)."""
    x = torch.as_tensor(x)
    if x.ndim != 2 or x.shape[1] != d:
        raise DataError(f"{name} must have shape (N, {d}); got {tuple(x.shape)}")
    # uint8/bool (how datasets are stored): one max instead of two comparisons over N x D.
    if x.dtype in (torch.uint8, torch.bool):
        binary = x.numel() == 0 or int(x.max()) <= 1
    else:
        binary = bool(((x == 0) | (x == 1)).all())
    if not binary:
        raise DataError(f"{name} must contain only 0/1 values (binary observations)")
    return x.to(device=device, dtype=torch.uint8)


def eval_chunk_rows(n_samples: int, d: int) -> int:
    """Rows per chunk of the held-out NELBO: the noise is drawn per chunk, so this fixes it."""
    return max(1, min(EVAL_BATCH_SIZE, EVAL_MAX_ELEMENTS // (n_samples * d)))


def _crc(x: torch.Tensor) -> int:
    return zlib.crc32(x.cpu().contiguous().numpy().tobytes())


# ---------------------------------------------------------------------- the method base
class AmortizedMethod(InferenceMethod):
    """AVI/ACP base: an encoder + a generative module trained by :class:`~noisyor_bench.inference.training.Trainer`.

    Subclasses define the encoder's output size and :meth:`logits`.
    """

    encoder_stream: str | None = None
    """Name whose ``<name>-encoder-init`` stream draws the encoder (``None``: the method's own
    name).  An ablation of a method sets the method's name so both start from the same network."""

    def __init__(
        self,
        model: NoisyOR,
        mode: Mode,
        hparams: Mapping[str, Any],
        seed: int,
        device: torch.device | str = "cpu",
        dtype: torch.dtype | None = None,
        init_key: str | None = None,
        encoder_input: str = "x",
    ) -> None:
        """``model``: the ground truth in inference mode; in learning mode only its shape
        (D, K) is used.  ``encoder_input`` (:data:`ENCODER_INPUTS`): what the encoder reads;
        ``"x"`` (default) is the paper's method, the others make the encoder model-aware for
        amortizing across models (:mod:`noisyor_bench.inference.noisyor.crossmodel`).  Random streams (generative init, encoder init, shuffling, ELBO
        samples, validation samples) all derive from ``self.init_seed`` (``seed`` and
        ``init_key``, see :class:`~noisyor_bench.inference.noisyor.base.InferenceMethod`); the
        generative initialisation's stream name is shared with every other method, so AVI
        and ACP (and SVI, LB-CDI) of one (seed, init_key) start from the same theta.
        ``dtype`` (if given) overrides the ``dtype`` hyperparameter."""
        super().__init__(model, mode, dict(hparams), seed, device, init_key=init_key)
        hp = parse_hparams(hparams)
        if dtype is not None:
            names = {v: k for k, v in DTYPES.items()}
            if dtype not in names:
                raise ConfigError(f"dtype must be torch.float32 or torch.float64; got {dtype}")
            hp = dataclasses.replace(hp, dtype=names[dtype])
        self.hp = hp
        self.dtype = DTYPES[hp.dtype]
        self.truth = model
        self.D, self.K = model.D, model.K
        self.encoder_input = encoder_input
        in_dim = encoder_input_dim(encoder_input, self.D, self.K)
        gen = make_generative(
            mode,
            model,
            generator=stream_generator(self.init_seed, "generative-init"),
            init=self.hp.generative_init(),
            dtype=self.dtype,
            device=self.device,
        )
        encoder = build_mlp(
            in_dim,
            self.encoder_out_dim(),
            self.hp.hidden_layers,
            self.hp.hidden_dim,
            generator=stream_generator(self.init_seed, f"{self.encoder_stream or self.name}-encoder-init"),
            dtype=self.dtype,
            device=self.device,
        )
        self.net = nn.ModuleDict({"encoder": encoder, "generative": gen})
        self.net.eval()
        self.best_epoch: int | None = None
        self.stop_reason: str | None = None
        self.convergence: Convergence | None = None  # set by fit (noisyor_bench.inference.convergence)

    def resolved_hparams(self) -> dict[str, Any]:
        """:class:`AmortizedHParams` after defaults, as a dict."""
        return asdict(self.hp)

    # ------------------------------------------------------------------ subclass hooks
    @abstractmethod
    def encoder_out_dim(self) -> int:
        """Number of encoder outputs (K for AVI, D for ACP)."""

    @abstractmethod
    def logits(
        self, x: torch.Tensor, model: NoisyOR, prior_logits: torch.Tensor, active: ActiveSet | None = None
    ) -> torch.Tensor:
        """Logits of ``q(z_k = 1 | x)``, shape (N, K), from float ``x`` (N, D).

        ``model`` / ``prior_logits`` must come from the same ``generative.model()`` call as
        the ELBO so gradients through ``q`` (ACP) reach the generative parameters.
        ``active``: the active entries of ``x``, for the sparse path (same values).
        """

    def features(self, x: torch.Tensor, model: NoisyOR) -> torch.Tensor:
        """The encoder's input for ``x`` under ``model`` (:func:`encoder_features`; ``x`` itself by default)."""
        return encoder_features(self.encoder_input, x, model.theta)

    def encoder_active(self, active: ActiveSet | None) -> ActiveSet | None:
        """The active set the encoder's first layer may use: only when it reads ``x`` itself."""
        return active if self.encoder_input == "x" else None

    def hidden(self, x: torch.Tensor, active: ActiveSet | None = None) -> torch.Tensor:
        """The encoder's last hidden layer; its first layer reads only the active inputs if given."""
        layers = list(self.encoder)
        first = layers[0]
        h = active_linear(active, first) if active is not None and active.sparse_linear else first(x)
        for layer in layers[1:-1]:
            h = layer(h)
        return h

    def encode(self, x: torch.Tensor, active: ActiveSet | None = None) -> torch.Tensor:
        """The encoder's output (N, out_dim)."""
        return self.encoder[-1](self.hidden(x, active))

    # ------------------------------------------------------------------ accessors
    @property
    def encoder(self) -> nn.Module:
        return self.net["encoder"]

    @property
    def generative_module(self) -> GenerativeModule:
        return self.net["generative"]  # type: ignore[return-value]

    @property
    def generative(self) -> NoisyOR:
        if self.mode == "inference":
            return self.truth
        return self.generative_module.model().detach()

    # ------------------------------------------------------------------ objective
    def batch_nelbo(
        self,
        x: torch.Tensor,
        n_samples: int,
        temperature: float | None,
        generator: torch.Generator | None,
        active: ActiveSet | None = None,
        uniforms: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Per-datapoint NELBO (negative eq. 16) of float ``x`` on ``self.device``: (N,).

        ``active`` (the active entries of ``x``) selects the sparse computation.  ``uniforms``
        (L, N, K): the samples' uniform draws, given instead of drawn from ``generator`` (the
        batched trainer, :mod:`noisyor_bench.inference.noisyor.batched`).
        """
        model, logits = self.model_and_logits(x, active)
        return -elbo(model, x, logits, n_samples, temperature, generator, active=active, uniforms=uniforms)

    def model_and_logits(
        self, x: torch.Tensor, active: ActiveSet | None = None
    ) -> tuple[NoisyOR, torch.Tensor]:
        """The generative model's view and the logits of ``q`` computed from it (one
        ``generative.model()`` call, so gradients through ``q`` reach the generative parameters)."""
        gen = self.generative_module
        model = gen.model()
        return model, self.logits(x, model, gen.prior_logits(), active)

    @torch.no_grad()
    def nelbo(
        self, x: Any, n_samples: int = DEFAULT_N_SAMPLES, generator: torch.Generator | None = None
    ) -> torch.Tensor:
        """Held-out NELBO per data point with exact Bernoulli samples (the paper's test protocol
        uses 100), on the CPU in float64.  ``generator`` must live on ``self.device``; draws are
        made per chunk of rows (:data:`EVAL_BATCH_SIZE`, :data:`EVAL_MAX_ELEMENTS`), so the
        exact noise (not its distribution) depends on the chunking."""
        xb = _as_binary(x, self.D, "x", self.device)
        self.net.eval()
        rows = eval_chunk_rows(n_samples, self.D)
        out = [
            self.batch_nelbo(chunk.to(self.dtype), n_samples, None, generator, _active_or_none(chunk))
            .double()
            .cpu()
            for chunk in torch.split(xb, rows)
        ]
        return torch.cat(out) if out else torch.zeros(0, dtype=torch.float64)

    # ------------------------------------------------------------------ fit
    def make_optimizer(self) -> Adam:
        """Adam with ``betas=(beta1, 0.999)``; generative parameters at ``gen_lr`` (``None``: ``lr``).

        ``fused=True``: PyTorch picks its multi-tensor kernels only on CUDA by default; on the
        CPU the per-tensor loop cost about 1 ms per step, a third of a NeurIPS-titles step.
        """
        groups: list[dict[str, Any]] = [{"params": list(self.encoder.parameters()), "lr": self.hp.lr}]
        gen_params = list(self.generative_module.parameters())
        if gen_params:
            groups.append({"params": gen_params, "lr": self.hp.generative_lr})
        return Adam(groups, lr=self.hp.lr, betas=(self.hp.beta1, 0.999), fused=True)

    def fit(
        self,
        x_train: torch.Tensor,
        x_val: torch.Tensor,
        budget: FitBudget,
        progress: Callable[[EpochRecord], None] | None = None,
        checkpoint_path: str | Path | None = None,
    ) -> list[EpochRecord]:
        """Minibatch training with early stopping on the validation NELBO (see module doc).

        ``checkpoint_path``: resume from / save to this file after every epoch.
        """
        validate_budget(budget)
        xt = _as_binary(x_train, self.D, "x_train", self.device)
        xv = _as_binary(x_val, self.D, "x_val", self.device)
        if xv.shape[0] == 0:
            raise DataError("x_val is empty: the validation set selects the best epoch")
        sample_gen = stream_generator(self.init_seed, "elbo-samples", self.device)
        train_active = _active_or_none(xt)  # computed once; batches take their rows

        def loss_fn(batch_idx: torch.Tensor, step: int) -> torch.Tensor:
            rows = batch_idx.to(self.device)
            x = xt[rows].to(self.dtype)
            active = None if train_active is None else train_active.select(rows)
            return self.batch_nelbo(x, self.hp.n_samples, temperature(step, self.hp), sample_gen, active)

        def val_fn() -> float:
            g = stream_generator(self.init_seed, "validation", self.device)
            return float(self.nelbo(xv, self.hp.val_samples, g).mean())

        def extra_fn(steps_done: int) -> dict[str, float]:
            return {"temperature": temperature(max(steps_done - 1, 0), self.hp)}

        trainer = Trainer(
            module=self.net,
            loss_fn=loss_fn,
            optimizer=self.make_optimizer(),
            n_train=xt.shape[0],
            budget=budget,
            shuffle_generator=stream_generator(self.init_seed, "shuffle"),
            val_fn=val_fn,
            generators={"elbo": sample_gen},
            checkpoint_path=checkpoint_path,
            extra_fn=extra_fn,
            fingerprint=self._fingerprint(xt, xv),
        )
        try:
            history = trainer.run(progress)
        finally:
            self.net.eval()
        self.best_epoch, self.stop_reason = trainer.best_epoch, trainer.stop_reason
        self.convergence = trainer.convergence()
        return history

    def _fingerprint(self, xt: torch.Tensor, xv: torch.Tensor) -> dict[str, Any]:
        return {
            "method": self.name,
            "mode": self.mode,
            "seed": int(self.seed),
            "init_key": self.init_key,
            "init_seed": int(self.init_seed),
            "hparams": asdict(self.hp),
            "shape": [self.D, self.K],
            "dtype": str(self.dtype),
            "x_train": [int(xt.shape[0]), _crc(xt)],
            "x_val": [int(xv.shape[0]), _crc(xv)],
            **self._input_key(),
        }

    def _input_key(self) -> dict[str, str]:
        """``{"encoder_input": ...}`` for a non-default input, else nothing (records written
        before the option existed stay byte-identical)."""
        return {} if self.encoder_input == "x" else {"encoder_input": self.encoder_input}

    # ------------------------------------------------------------------ posterior
    @torch.no_grad()
    def posterior(self, x: torch.Tensor) -> torch.Tensor:
        """``q(z_k = 1 | x)`` (N, K), float64 on the CPU; sigmoid taken in float64 so that
        ``q`` saturates to exactly 0/1 only for |logit| > ~37."""
        xb = _as_binary(x, self.D, "x", self.device)
        self.net.eval()
        gen = self.generative_module
        model, prior = gen.model(), gen.prior_logits()
        out = [
            torch.sigmoid(
                self.logits(chunk.to(self.dtype), model, prior, _active_or_none(chunk)).double()
            ).cpu()
            for chunk in torch.split(xb, EVAL_BATCH_SIZE)
        ]
        return torch.cat(out) if out else torch.zeros((0, self.K), dtype=torch.float64)

    # ------------------------------------------------------------------ persistence
    def state_dict(self) -> dict[str, Any]:
        """Fitted parameters (encoder + generative) and the configuration that made them.

        The full resumable training state (optimiser, RNGs, history) lives in the trainer
        checkpoint written by :meth:`fit`.
        """
        return {
            "format": STATE_FORMAT,
            "method": self.name,
            "mode": self.mode,
            "seed": int(self.seed),
            "hparams": asdict(self.hp),
            "shape": [self.D, self.K],
            "net": {k: v.detach().cpu().clone() for k, v in self.net.state_dict().items()},
            **self._input_key(),
        }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        if state.get("format") != STATE_FORMAT or state.get("method") != self.name:
            raise DataError(
                f"state is not a {self.name} state (format {state.get('format')!r}, method {state.get('method')!r})"
            )
        if state.get("mode") != self.mode or list(state.get("shape", [])) != [self.D, self.K]:
            raise DataError(
                f"{self.name} state has mode {state.get('mode')!r} and shape {state.get('shape')}; "
                f"this instance has mode {self.mode!r} and shape {[self.D, self.K]}"
            )
        if state.get("encoder_input", "x") != self.encoder_input:
            raise DataError(
                f"{self.name} state has encoder input {state.get('encoder_input', 'x')!r}, "
                f"this instance {self.encoder_input!r}"
            )
        if state.get("hparams") != asdict(self.hp):
            raise DataError(
                f"{self.name} state was fitted with hyperparameters {state.get('hparams')}, not {asdict(self.hp)}"
            )
        self.net.load_state_dict(state["net"])
        self.net.eval()


def _active_or_none(x: torch.Tensor) -> ActiveSet | None:
    """The active entries of ``x`` when it is sparse enough for the sparse path to pay."""
    return ActiveSet.of(x) if wants_sparse(x) else None


__all__ = [
    "ENCODER_INPUTS",
    "AmortizedHParams",
    "AmortizedMethod",
    "build_mlp",
    "encoder_features",
    "encoder_input_dim",
    "eval_chunk_rows",
    "parse_hparams",
    "temperature",
]
