"""ProdLDA and NVLDA as AVITM trains them (Srivastava & Sutton 2017): the calibration rows of aviPAM
Table 1, which show that the pipeline (data, top words, coherence protocol) reaches
AVITM's published coherence when it trains AVITM's model.

Written for this project from AVITM's TensorFlow code (akashgit/autoencoding_vi_for_topic_models,
``models/prodlda.py``, ``models/nvlda.py``, ``run.py``); no maintained package implements it with
AVITM's settings (Pyro's ProdLDA example and OCTIS's port change the batch-norm, dropout and
prior), so the few lines are here, one setting per AVITM line:

* encoder ``x -> softplus(100) -> softplus(100) -> dropout -> (mu, log sigma^2)``, each head a
  linear map followed by batch-norm WITHOUT gain (``tf.contrib.layers.batch_norm`` defaults:
  ``center=True, scale=False``, ``epsilon=0.001``), always on batch statistics (AVITM never sets
  ``is_training=False``); glorot-uniform weights, zero biases;
* prior: the Laplace approximation of Dirichlet(alpha = 1) in the softmax basis,
  ``mu_2 = 0``, ``var_2 = (1 - 2/K) / alpha + (1/K^2) * K / alpha``; KL in closed form;
* ``z = mu + sigma * eps`` (one sample), ``theta = dropout(softmax(z))``;
* decoder ProdLDA: ``softmax(BN(theta W))`` (the product of experts); NVLDA:
  ``theta softmax(BN(W))`` (the mixture, BN over the K rows of W); ``W`` glorot-uniform;
* loss ``-sum x log(p + 1e-10) + KL``, mean over the minibatch; Adam (lr, beta1 0.99);
* minibatches of 200 drawn WITH replacement, ``floor(D / 200)`` per epoch, a fixed number of
  epochs (no early stopping); dropout keep probability 0.4 (ProdLDA) / 0.75 (NVLDA);
* top words: the largest entries of each row of the decoder weights ``W`` (AVITM's
  ``print_top_words(emb)``); :attr:`ProdLdaFit.topic_word` is ``softmax(W)`` row by row, the
  same ranking as rows that sum to one.

Settings: :data:`AVITM` (the README's command lines). Random streams come from the run seed
(:func:`noisyor_bench.inference.seeding.stream_generator`), not AVITM's fixed ``RandomState(10)``.
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp
import torch
from torch import nn

from noisyor_bench.inference.adam import Adam
from noisyor_bench.inference.fitting import EpochRecord
from noisyor_bench.inference.progress import EpochProgress
from noisyor_bench.inference.seeding import stream_generator, stream_seed
from noisyor_bench.infra.errors import ConfigError, DataError
from noisyor_bench.models.topics.counts import Batch, CountRows, CountsLinear, SparseCounts

log = logging.getLogger(__name__)

DECODERS = ("prodlda", "nvlda")
BN_EPS = 0.001  # tf.contrib.layers.batch_norm's epsilon
LOG_EPS = 1e-10  # AVITM adds it to the reconstruction before the log


@dataclass(frozen=True)
class ProdLdaConfig:
    """One AVITM fit's settings (defaults: ProdLDA's README command line)."""

    decoder: str = "prodlda"
    topics: int = 50
    hidden: tuple[int, int] = (100, 100)
    alpha: float = 1.0
    lr: float = 0.002
    beta1: float = 0.99
    batch_size: int = 200
    epochs: int = 200
    keep_prob: float = 0.4

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


#: AVITM's command lines (README): ProdLDA ``-t 50 -b 200 -r 0.002 -e 200`` (keep 0.4 in
#: ``models/prodlda.py``), NVLDA ``-t 50 -b 200 -r 0.005 -e 300`` (keep 0.75 in ``models/nvlda.py``).
AVITM = {
    "prodlda": ProdLdaConfig(),
    "nvlda": ProdLdaConfig(decoder="nvlda", lr=0.005, epochs=300, keep_prob=0.75),
}


def config_from_mapping(values: dict[str, Any], where: str = "prodlda") -> ProdLdaConfig:
    """AVITM's defaults for ``values['decoder']`` with the given keys replaced; ConfigError on
    an unknown key or an invalid value."""
    decoder = str(values.get("decoder", "prodlda"))
    if decoder not in DECODERS:
        raise ConfigError(f"{where}.decoder: {decoder!r} is not one of {list(DECODERS)}")
    base = asdict(AVITM[decoder])
    unknown = sorted(set(values) - set(base))
    if unknown:
        raise ConfigError(f"{where}: unknown keys {unknown}; known: {sorted(base)}")
    merged = {**base, **values}
    merged["hidden"] = tuple(int(h) for h in merged["hidden"])
    config = ProdLdaConfig(**merged)
    if len(config.hidden) != 2 or min(config.hidden) < 1:
        raise ConfigError(f"{where}.hidden: two positive widths; got {config.hidden!r}")
    for name in ("topics", "batch_size", "epochs"):
        value = getattr(config, name)
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ConfigError(f"{where}.{name} must be an integer >= 1; got {value!r}")
    if not 0.0 < config.keep_prob <= 1.0 or config.lr <= 0 or config.alpha <= 0:
        raise ConfigError(f"{where}: keep_prob in (0, 1], lr > 0 and alpha > 0 required; got {config!r}")
    return config


def laplace_prior(k: int, alpha: float) -> tuple[float, float]:
    """(mean, variance) of the Laplace approximation of a symmetric Dirichlet(alpha) in the
    softmax basis (AVITM's ``mu2``, ``var2`` with ``a = alpha``): 0 and ``(1 - 2/K)/alpha + 1/(K alpha)``."""
    return 0.0, (1.0 / alpha) * (1.0 - 2.0 / k) + (1.0 / (k * k)) * k / alpha


def kl_to_prior(
    mu: torch.Tensor, logvar: torch.Tensor, prior_mean: torch.Tensor, prior_var: torch.Tensor
) -> torch.Tensor:
    """Per document KL(N(mu, diag exp(logvar)) || N(prior_mean, diag prior_var)), AVITM's
    ``latent_loss`` line by line."""
    return 0.5 * (
        (torch.exp(logvar) / prior_var).sum(1)
        + ((prior_mean - mu) ** 2 / prior_var).sum(1)
        - mu.shape[1]
        + torch.log(prior_var).sum()
        - logvar.sum(1)
    )


class CenteredBatchNorm(nn.Module):
    """Batch-norm on batch statistics with a learnable shift and NO gain (TF's ``center=True,
    scale=False``): ``(x - mean) / sqrt(var + eps) + beta`` over dimension 0."""

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.beta = nn.Parameter(torch.zeros(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return nn.functional.batch_norm(x, None, None, None, self.beta, True, 0.0, BN_EPS)


class ProdLdaNet(nn.Module):
    """AVITM's encoder and decoder (module docstring)."""

    def __init__(self, vocab: int, config: ProdLdaConfig, generator: torch.Generator) -> None:
        super().__init__()
        h1, h2 = config.hidden
        k = config.topics
        self.config = config
        self.fc1, self.fc2 = CountsLinear(vocab, h1), nn.Linear(h1, h2)
        self.mean, self.logvar = nn.Linear(h2, k), nn.Linear(h2, k)
        self.bn_mean, self.bn_logvar = CenteredBatchNorm(k), CenteredBatchNorm(k)
        self.weights = nn.Parameter(torch.empty(k, vocab))  # W: topics x words
        self.bn_decoder = CenteredBatchNorm(vocab)  # ProdLDA: over the batch; NVLDA: over the K rows of W
        self.fc1.initialise(generator)  # drawn first, as AVITM's layers are
        for lin in (self.fc2, self.mean, self.logvar):
            nn.init.xavier_uniform_(lin.weight, generator=generator)
            nn.init.zeros_(lin.bias)
        nn.init.xavier_uniform_(self.weights, generator=generator)
        prior_mean, prior_var = laplace_prior(k, config.alpha)
        self.register_buffer("prior_mean", torch.full((k,), prior_mean))
        self.register_buffer("prior_var", torch.full((k,), prior_var))

    def _dropout(self, x: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
        keep = self.config.keep_prob
        if keep >= 1.0:
            return x
        mask = torch.rand(x.shape, generator=generator, device=x.device, dtype=x.dtype) < keep
        return x * mask / keep

    def loss(self, x: Batch, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
        """(mean -ELBO, mean KL) of a minibatch, with dropout and one reparameterised sample; a
        sparse batch takes the log of the word probabilities at its non-zero counts only."""
        h = nn.functional.softplus(self.fc2(nn.functional.softplus(self.fc1(x))))
        h = self._dropout(h, generator)
        mu, logvar = self.bn_mean(self.mean(h)), self.bn_logvar(self.logvar(h))
        eps = torch.randn(mu.shape, generator=generator, device=mu.device, dtype=mu.dtype)
        z = mu + torch.exp(0.5 * logvar) * eps
        theta = self._dropout(torch.softmax(z, dim=1), generator)
        if self.config.decoder == "prodlda":
            probs = torch.softmax(self.bn_decoder(theta @ self.weights), dim=1)
        else:
            probs = theta @ torch.softmax(self.bn_decoder(self.weights), dim=1)
        if isinstance(x, SparseCounts):
            rows, cols = x.pattern.row, x.pattern.col
            terms = x.values * torch.log(probs[rows, cols] + LOG_EPS)
            recon = -terms.new_zeros(probs.shape[0]).index_add(0, rows, terms)
        else:
            recon = -(x * torch.log(probs + LOG_EPS)).sum(1)
        kl = kl_to_prior(mu, logvar, self.prior_mean, self.prior_var)
        return (recon + kl).mean(), kl.mean()


@dataclass
class ProdLdaFit:
    """A trained model's decoder weights and its training curve."""

    weights: np.ndarray  # (K, V) decoder weights W: top words rank its rows
    config: ProdLdaConfig
    seed: int
    history: list[EpochRecord] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def topic_word(self) -> np.ndarray:
        """``softmax(W)`` row by row: rows sum to one and rank words as ``W`` does."""
        w = self.weights - self.weights.max(axis=1, keepdims=True)
        e = np.exp(w)
        return e / e.sum(axis=1, keepdims=True)


def _count_rows(counts: Any, device: torch.device | str) -> CountRows:
    shape = counts.shape if sp.issparse(counts) else np.shape(counts)
    if len(shape) != 2 or shape[0] == 0:
        raise DataError(f"ProdLDA counts must be a non-empty (documents x vocabulary) matrix; got {shape}")
    try:
        return CountRows.of(counts, torch.float32, device)
    except DataError as err:
        raise DataError(f"ProdLDA {err}") from None


def fit_prodlda(
    counts: Any, config: ProdLdaConfig, seed: int = 0, device: torch.device | str = "cpu"
) -> ProdLdaFit:
    """Train AVITM's model for ``config.epochs`` epochs of ``floor(D / batch)`` minibatches
    drawn with replacement (AVITM's ``create_minibatch``); NaN loss is a DataError (AVITM exits)."""
    x = _count_rows(counts, device)
    init = stream_generator(seed, "prodlda-init")
    net = ProdLdaNet(x.shape[1], config, init).to(device)
    noise = stream_generator(seed, "prodlda-noise", device)
    batches = np.random.default_rng(stream_seed(seed, "prodlda-batches"))
    fused = torch.device(device).type in ("cpu", "cuda")  # one kernel for all parameters, the same update
    optimiser = Adam(net.parameters(), lr=config.lr, betas=(config.beta1, 0.999), eps=1e-8, fused=fused)
    n_docs = x.n_docs
    per_epoch = max(1, n_docs // config.batch_size)
    progress = EpochProgress(config.epochs, f"{config.decoder} seed {seed}", logger=log)
    history: list[EpochRecord] = []
    start = time.perf_counter()
    try:
        for epoch in range(1, config.epochs + 1):
            t0, c0 = time.perf_counter(), time.process_time()
            total = kl_total = 0.0
            for _ in range(per_epoch):
                idx = torch.as_tensor(batches.integers(0, n_docs, size=config.batch_size), device=device)
                loss, kl = net.loss(x.take(idx), noise)
                value = float(loss.detach())
                if not math.isfinite(value):
                    raise DataError(
                        f"{config.decoder} seed {seed}: the loss became {value} in epoch {epoch} "
                        f"(lr {config.lr}); AVITM stops here too"
                    )
                optimiser.zero_grad()
                loss.backward()
                optimiser.step()
                total += value
                kl_total += float(kl.detach())
            record = EpochRecord(
                epoch,
                total / per_epoch,
                None,
                time.perf_counter() - t0,
                {"kl_per_doc": kl_total / per_epoch},
                cpu_seconds=time.process_time() - c0,
            )
            history.append(record)
            progress(record)
    finally:
        progress.close()
    seconds = time.perf_counter() - start
    weights = net.weights.detach().cpu().numpy().astype(np.float64)
    return ProdLdaFit(weights, config, int(seed), history, seconds)
