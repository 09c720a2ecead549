"""APE's encoders: an MLP from (document, model) to q(h) = N(mu, diag sigma^2).

Three input statistics (paper section 2; the authors' ``Encoder`` architectures):

* ``standard``     x_n (V,): the Standard (VAE) encoder, trained for one theta;
* ``naive``        concat(x_n, vec(theta)) ((K + 1) V,): APE, naive architecture;
* ``model_aware``  theta x_n / sum(theta x_n) (K,): APE, model-aware ("template") architecture;
  theta x_n is the paper's theta^T x_n with theta stored K x V, normalised to sum to 1 as in
  the authors' code.

Layout (pinned by the appendix's parameter counts, tests/inference/topics/test_ape_encoders.py):
each hidden layer is Linear -> ReLU -> BatchNorm1d (affine); the heads are
mu = scale * BatchNorm1d(Linear(hidden)) with one trainable scalar ``scale`` (the paper's
"temperature on mu") and log sigma^2 = BatchNorm1d(Linear(hidden)).  With 2 x 100 hidden
units this gives 16,721 (model-aware) / 24,721 (standard) parameters for V=100, K=20 and
19,781 / 316,781 for V=3000, K=30; the naive encoder has 224,721 and 9,316,781.
``forward`` returns (mu, log_sigma), both (B, K).
"""

from __future__ import annotations

import torch
from torch import nn

from noisyor_bench.infra.errors import ConfigError, DataError

ENCODER_KINDS = ("standard", "naive", "model_aware")
APE_HIDDEN_UNITS = 100
APE_HIDDEN_LAYERS = 2


def input_size(kind: str, vocab_size: int, n_topics: int) -> int:
    """Width of the encoder's input statistic."""
    sizes = {"standard": vocab_size, "naive": (n_topics + 1) * vocab_size, "model_aware": n_topics}
    if kind not in sizes:
        raise ConfigError(f"unknown APE encoder kind {kind!r}; choose one of {', '.join(ENCODER_KINDS)}")
    return sizes[kind]


def model_aware_statistic(x: torch.Tensor, theta: torch.Tensor) -> torch.Tensor:
    """theta x normalised to sum to 1 per pair: x (B, V), theta (B, K, V) or (K, V) -> (B, K).
    An empty document (all-zero statistic) gives zeros rather than 0/0."""
    stat = x @ theta.T if theta.ndim == 2 else torch.einsum("bv,bkv->bk", x, theta)
    total = stat.sum(-1, keepdim=True)
    return stat / torch.where(total > 0, total, torch.ones_like(total))


class _Block(nn.Module):
    """Linear -> ReLU -> BatchNorm1d (the authors' ``MLP`` block)."""

    def __init__(self, n_in: int, n_out: int) -> None:
        super().__init__()
        self.linear = nn.Linear(n_in, n_out)
        self.norm = nn.BatchNorm1d(n_out)

    def forward(self, inputs: torch.Tensor) -> torch.Tensor:
        return self.norm(torch.relu(self.linear(inputs)))


class ApeEncoder(nn.Module):
    """(x, theta) -> (mu, log_sigma) of q(h); see the module docstring for the layout."""

    def __init__(
        self,
        kind: str,
        vocab_size: int,
        n_topics: int,
        hidden_units: int = APE_HIDDEN_UNITS,
        hidden_layers: int = APE_HIDDEN_LAYERS,
    ) -> None:
        super().__init__()
        if hidden_layers < 1 or hidden_units < 1:
            raise ConfigError(
                f"an APE encoder needs >= 1 hidden layer of >= 1 unit; got {hidden_layers} x {hidden_units}"
            )
        if vocab_size < 1 or n_topics < 2:
            raise ConfigError(f"need vocab_size >= 1 and n_topics >= 2; got V={vocab_size}, K={n_topics}")
        self.kind = kind
        self.vocab_size = int(vocab_size)
        self.n_topics = int(n_topics)
        widths = [input_size(kind, vocab_size, n_topics)] + [hidden_units] * hidden_layers
        self.hidden = nn.Sequential(*[_Block(a, b) for a, b in zip(widths[:-1], widths[1:])])
        self.mu_linear = nn.Linear(hidden_units, n_topics)
        self.mu_norm = nn.BatchNorm1d(n_topics)
        self.log_var_linear = nn.Linear(hidden_units, n_topics)
        self.log_var_norm = nn.BatchNorm1d(n_topics)
        self.scale = nn.Parameter(torch.ones(()))

    def features(self, x: torch.Tensor, theta: torch.Tensor | None) -> torch.Tensor:
        """The input statistic, (B, input_size)."""
        if x.ndim != 2 or x.shape[1] != self.vocab_size:
            raise DataError(f"x must be (B, {self.vocab_size}); got {tuple(x.shape)}")
        if self.kind == "standard":
            return x
        if theta is None:
            raise DataError(f"the {self.kind} encoder needs theta")
        if theta.shape[-2:] != (self.n_topics, self.vocab_size):
            raise DataError(
                f"theta must be (B, {self.n_topics}, {self.vocab_size}) or shared; got {tuple(theta.shape)}"
            )
        if self.kind == "model_aware":
            return model_aware_statistic(x, theta)
        flat = theta.reshape(-1, self.n_topics * self.vocab_size)
        return torch.cat([x, flat.expand(x.shape[0], -1)], dim=1)

    def forward(
        self, x: torch.Tensor, theta: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        return self.head(self.features(x, theta))

    def head(self, features: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(mu, log_sigma) from an already computed input statistic (B, input_size)."""
        hidden = self.hidden(features)
        mu = self.scale * self.mu_norm(self.mu_linear(hidden))
        log_sigma = 0.5 * self.log_var_norm(self.log_var_linear(hidden))
        return mu, log_sigma


def build_encoder(
    kind: str,
    vocab_size: int,
    n_topics: int,
    hidden_units: int = APE_HIDDEN_UNITS,
    hidden_layers: int = APE_HIDDEN_LAYERS,
    seed: int | None = None,
    dtype: torch.dtype = torch.float32,
) -> ApeEncoder:
    """An :class:`ApeEncoder`, initialised under ``torch.manual_seed(seed)`` in a forked RNG
    (PyTorch's default initialisation) when ``seed`` is given, without touching global state."""
    if seed is None:
        return ApeEncoder(kind, vocab_size, n_topics, hidden_units, hidden_layers).to(dtype)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(int(seed))
        return ApeEncoder(kind, vocab_size, n_topics, hidden_units, hidden_layers).to(dtype)


def encode(
    encoder: ApeEncoder, x: torch.Tensor, theta: torch.Tensor | None, batch_size: int = 4096
) -> tuple[torch.Tensor, torch.Tensor]:
    """Inference with a trained encoder: eval mode (BatchNorm running statistics, so a pair's
    q does not depend on the rest of the batch), no gradients, in chunks of ``batch_size``
    pairs; ``x``/``theta`` are moved to the encoder's device and dtype.  Returns (mu, log_sigma)."""
    param = next(encoder.parameters())
    x = x.to(device=param.device, dtype=param.dtype)
    theta = None if theta is None else theta.to(device=param.device, dtype=param.dtype)
    was_training = encoder.training
    encoder.eval()
    mus, log_sigmas = [], []
    with torch.no_grad():
        for start in range(0, x.shape[0], batch_size):
            tb = theta if theta is None or theta.ndim == 2 else theta[start : start + batch_size]
            mu, log_sigma = encoder(x[start : start + batch_size], tb)
            mus.append(mu)
            log_sigmas.append(log_sigma)
    encoder.train(was_training)
    return torch.cat(mus), torch.cat(log_sigmas)


def count_parameters(module: nn.Module) -> int:
    """Number of trainable parameters (BatchNorm running statistics are buffers, not counted)."""
    return sum(p.numel() for p in module.parameters() if p.requires_grad)


__all__ = [
    "APE_HIDDEN_LAYERS",
    "APE_HIDDEN_UNITS",
    "ENCODER_KINDS",
    "ApeEncoder",
    "build_encoder",
    "count_parameters",
    "encode",
    "input_size",
    "model_aware_statistic",
]
