"""aviPAM: amortized variational inference for Pachinko allocation machines (Srivastava & Sutton).

For a PAM structure (:mod:`noisyor_bench.models.topics.pam`: LDA, 4-PAM, 5-PAM, MoLDA, CTM) the
approximate posterior of a document's proportions is, at every level ``l``, a logistic normal:
a diagonal Gaussian ``q(h_l | x) = N(mu_l(x), diag sigma_l^2(x))`` on the softmax-basis latent
(the paper's "one MLP per level"; the super level's ``S x K`` block is softmax-ed row by row, a
3-D ``(B, S, K)`` tensor, and the levels are combined by a batched product).  The sub-topics
``beta = softmax(BN(W))`` are point estimates (variational EM), as are CTM's prior mean and
Cholesky factor.  The objective per document is

    ELBO(x) = E_q[ sum_v x_v log (theta_0^T Theta_1 ... beta)_v ] - sum_l KL(q(h_l | x) || p(h_l)),

the expectation by the reparameterisation trick (``train_samples`` draws), the KL in closed form
against the Laplace approximation of each level's Dirichlet(alpha) (CTM: the full-covariance
Gaussian).  Adam on the mean over a minibatch of ``-ELBO``.

Defaults follow the AVITM code (akashgit/autoencoding_vi_for_topic_models) where the aviPAM
paper is silent; each is listed in docs/avipam.md ("Inference API" and "Reconstructed choices").
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp
import torch
from torch import nn

from noisyor_bench.inference.adam import Adam
from noisyor_bench.inference.convergence import Convergence
from noisyor_bench.inference.fitting import EpochRecord, FitBudget
from noisyor_bench.inference.progress import EpochProgress
from noisyor_bench.inference.seeding import stream_generator
from noisyor_bench.inference.topics.avipam_norm import OUTPUT_NORMS, TopicBatchNorm, output_norm
from noisyor_bench.inference.training import Trainer
from noisyor_bench.infra.errors import ConfigError, DataError
from noisyor_bench.models.topics.counts import Batch, CountRows, CountsLinear, SparseCounts
from noisyor_bench.models.topics.ctm import CtmPrior
from noisyor_bench.models.topics.gaussian import kl_diag_per_dim
from noisyor_bench.models.topics.pam import (
    PamStructure,
    laplace_prior,
    level_proportions,
    log_likelihood_from_word_probs,
    sparse_log_likelihood,
    subtopic_proportions,
)

logger = logging.getLogger(__name__)

ENCODER_LAYOUTS = ("per-level", "shared")
DTYPES = {"float32": torch.float32, "float64": torch.float64}
#: Default threshold (nats, mean over documents) below which a latent dimension counts as collapsed.
COLLAPSE_THRESHOLD = 0.01
#: Documents per forward pass in evaluation (memory: EVAL_CHUNK x eval_samples x V word probabilities).
EVAL_CHUNK = 1000
#: A run whose KL term falls below this many nats per document is flagged collapsed (the
#: gain variant's 6-10 nats against ~59 without it; the posterior then barely leaves the prior).
KL_COLLAPSE_NATS = 10.0
#: How a topic's top words are ranked: ``"weights"`` (the primary rule, AVITM's: the decoder
#: weights W, standardised across topics as the topic batch-norm does but WITHOUT its learned
#: per-word shift, a background frequency shared by every topic) or ``"beta"`` (softmax(BN(W) +
#: shift), the topic-word probabilities: an ablation that puts frequent words atop most topics).
TOP_WORD_RULES = ("weights", "beta")


@dataclass(frozen=True)
class AviPamConfig:
    """Hyperparameters of one aviPAM fit (defaults: AVITM's code where the paper is silent)."""

    alpha: float | tuple[float, ...] = 1.0  # Dirichlet concentration, one value or one per level
    hidden: tuple[int, ...] = (100, 100)  # encoder MLP widths (softplus)
    encoder: str = "per-level"  # "per-level": one MLP per level (paper); "shared": one trunk, heads per level
    encoder_dropout: float = 0.25  # dropout on the last hidden layer (AVITM NVLDA: keep 0.75)
    theta_dropout: float = 0.25  # dropout on the sub-topic proportions before beta (AVITM NVLDA)
    # encoder mean/log-variance heads: batch norm WITHOUT gain (AVITM's code; the gain of
    # the paper's eq. 5, "batchnorm", collapses the KL to 6-10 nats a document, kept as an ablation)
    output_norm: str = "batchnorm-nogain"
    topic_bn: bool = True  # beta = softmax(BN(W)) (True) or softmax(W)
    lr: float = 2e-3  # Adam learning rate (AVITM's run.py default)
    adam_beta1: float = 0.99  # AVITM's Adam momentum
    adam_beta2: float = 0.999
    batch_size: int = 200
    train_samples: int = 1  # reparameterised draws per document and step
    eval_samples: int = 1  # draws per document for the validation / held-out NELBO
    max_epochs: int = 200
    patience: int = 10
    eval_every: int = 1
    convergence_window: int = 5
    convergence_rel_tol: float = 1e-3
    # stop as soon as the convergence rule holds (stop reason "plateau"; max_epochs a cap)
    stop_on_plateau: bool = False
    # a training-time limit (minutes; None: none): the fit stops after the first epoch past it
    # (AviPamFit.time_limited; a reference run on a shared machine), its budget otherwise fixed
    max_minutes: float | None = None
    dtype: str = "float32"

    def alphas(self, n_levels: int) -> tuple[float, ...]:
        """One concentration per level."""
        if isinstance(self.alpha, (int, float)):
            return (float(self.alpha),) * n_levels
        values = tuple(float(a) for a in self.alpha)
        if len(values) != n_levels:
            raise ConfigError(f"aviPAM alpha has {len(values)} values, the structure has {n_levels} levels")
        return values

    def budget(self) -> FitBudget:
        """The trainer's budget (epochs, patience, batch size, convergence rule)."""
        return FitBudget(
            max_epochs=self.max_epochs,
            patience=self.patience,
            batch_size=self.batch_size,
            eval_every=self.eval_every,
            convergence_window=self.convergence_window,
            convergence_rel_tol=self.convergence_rel_tol,
        )

    def as_dict(self) -> dict[str, Any]:
        """Plain JSON values (tuples as lists)."""
        return {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(self).items()}


def config_from_mapping(values: dict[str, Any], where: str = "avipam") -> AviPamConfig:
    """An :class:`AviPamConfig` from a config mapping; ConfigError naming unknown or bad keys."""
    known = set(AviPamConfig.__dataclass_fields__)
    unknown = sorted(set(values) - known)
    if unknown:
        raise ConfigError(
            f"{where}: unknown key(s) {', '.join(map(repr, unknown))}; allowed: {', '.join(sorted(known))}"
        )
    fixed = {k: tuple(v) if isinstance(v, list) else v for k, v in values.items()}
    config = AviPamConfig(**fixed)
    check_config(config, where)
    return config


def check_config(config: AviPamConfig, where: str = "avipam") -> None:
    """ConfigError naming the key unless every hyperparameter is usable."""
    if config.output_norm not in OUTPUT_NORMS:
        raise ConfigError(f"{where}.output_norm must be one of {OUTPUT_NORMS}; got {config.output_norm!r}")
    if config.encoder not in ENCODER_LAYOUTS:
        raise ConfigError(f"{where}.encoder must be one of {ENCODER_LAYOUTS}; got {config.encoder!r}")
    if config.dtype not in DTYPES:
        raise ConfigError(f"{where}.dtype must be one of {tuple(DTYPES)}; got {config.dtype!r}")
    if not config.hidden or min(config.hidden) < 1:
        raise ConfigError(
            f"{where}.hidden must be a non-empty list of positive widths; got {config.hidden!r}"
        )
    if config.max_minutes is not None and not float(config.max_minutes) > 0:
        raise ConfigError(f"{where}.max_minutes must be > 0 or null; got {config.max_minutes!r}")
    if not isinstance(config.stop_on_plateau, bool):
        raise ConfigError(f"{where}.stop_on_plateau must be true or false; got {config.stop_on_plateau!r}")
    for name in ("encoder_dropout", "theta_dropout"):
        value = getattr(config, name)
        if not 0.0 <= value < 1.0:
            raise ConfigError(f"{where}.{name} must be in [0, 1); got {value!r}")
    for name in ("lr", "convergence_rel_tol"):
        if not getattr(config, name) > 0:
            raise ConfigError(f"{where}.{name} must be > 0; got {getattr(config, name)!r}")
    for name in ("adam_beta1", "adam_beta2"):
        if not 0.0 <= getattr(config, name) < 1.0:
            raise ConfigError(f"{where}.{name} must be in [0, 1); got {getattr(config, name)!r}")
    for name in ("batch_size", "train_samples", "eval_samples", "max_epochs", "patience", "eval_every"):
        value = getattr(config, name)
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ConfigError(f"{where}.{name} must be an integer >= 1; got {value!r}")
    alphas = (config.alpha,) if isinstance(config.alpha, (int, float)) else config.alpha
    if not all(float(a) > 0 for a in alphas):
        raise ConfigError(f"{where}.alpha must be positive; got {config.alpha!r}")


def _dropout(x: torch.Tensor, p: float, training: bool, generator: torch.Generator | None) -> torch.Tensor:
    """Inverted dropout from a seeded generator (``nn.Dropout`` draws from the global RNG)."""
    if not training or p == 0.0:
        return x
    keep = torch.rand(x.shape, generator=generator, device=x.device, dtype=x.dtype) >= p
    return x * keep / (1.0 - p)


class _Mlp(nn.Module):
    """Softplus MLP; the last hidden layer is followed by dropout (AVITM)."""

    def __init__(self, n_in: int, hidden: Sequence[int]) -> None:
        super().__init__()
        widths = list(hidden)
        self.layers = nn.ModuleList(
            [CountsLinear(n_in, widths[0])]
            + [nn.Linear(a, b) for a, b in zip(widths[:-1], widths[1:], strict=True)]
        )

    def forward(self, x: Batch) -> torch.Tensor:
        for layer in self.layers:
            x = nn.functional.softplus(layer(x))
        return x


class _Head(nn.Module):
    """A level's (mean, log-variance) head: two linear maps, each followed by the output norm."""

    def __init__(self, n_in: int, dim: int, norm: str) -> None:
        super().__init__()
        self.mean = nn.Linear(n_in, dim)
        self.logvar = nn.Linear(n_in, dim)
        self.mean_norm = output_norm(norm, dim)
        self.logvar_norm = output_norm(norm, dim)

    def forward(self, hidden: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.mean_norm(self.mean(hidden)), self.logvar_norm(self.logvar(hidden))


@dataclass
class ElboTerms:
    """One minibatch's ELBO pieces; ``nelbo = -loglik + kl`` per document."""

    loglik: torch.Tensor  # (B,) E_q log p(x | h), averaged over the draws
    kl: torch.Tensor  # (B,) sum over levels of KL(q || p)
    kl_per_dim: list[torch.Tensor]  # per level (B, latent_dim_l); CTM: against the prior's marginals
    posterior: list[tuple[torch.Tensor, torch.Tensor]] = field(
        default_factory=list
    )  # per level (mean, logvar)

    @property
    def nelbo(self) -> torch.Tensor:
        return self.kl - self.loglik


class AviPamNet(nn.Module):
    """Encoder (one MLP or head per level), priors, and the sub-topic logits ``W`` (K x V)."""

    def __init__(
        self, structure: PamStructure, vocab_size: int, config: AviPamConfig, init_generator: torch.Generator
    ) -> None:
        super().__init__()
        check_config(config)
        if vocab_size < 2:
            raise DataError(f"aviPAM needs a vocabulary of >= 2 words, got {vocab_size}")
        self.structure, self.config, self.vocab_size = structure, config, int(vocab_size)
        dims = structure.latent_dims
        if config.encoder == "per-level":
            self.trunks = nn.ModuleList(_Mlp(vocab_size, config.hidden) for _ in dims)
        else:
            self.trunks = nn.ModuleList([_Mlp(vocab_size, config.hidden)])
        self.heads = nn.ModuleList(_Head(config.hidden[-1], d, config.output_norm) for d in dims)
        self.topic_logits = nn.Parameter(torch.empty(structure.n_topics, vocab_size))
        self.topic_norm = TopicBatchNorm(structure.topic_blocks, vocab_size) if config.topic_bn else None
        alphas = config.alphas(len(structure.levels))
        self.ctm_prior = CtmPrior(structure.n_topics, alphas[0]) if structure.kind == "ctm" else None
        for index, (level, alpha) in enumerate(zip(structure.levels, alphas, strict=True)):
            mean, var = laplace_prior(level, alpha)
            self.register_buffer(f"prior_mean_{index}", mean.float())
            self.register_buffer(f"prior_var_{index}", var.float())
        self._initialise(init_generator)
        self.to(DTYPES[config.dtype])

    def _initialise(self, generator: torch.Generator) -> None:
        """Glorot-uniform weights and zero biases (TensorFlow's defaults, AVITM's encoder and W).

        The input layer's ``(V, H)`` weight is drawn in the order ``nn.Linear``'s was: the same
        initial network as a dense first layer."""
        for module in self.modules():
            if isinstance(module, nn.Linear):
                nn.init.xavier_uniform_(module.weight, generator=generator)
                nn.init.zeros_(module.bias)
            elif isinstance(module, CountsLinear):
                module.initialise(generator)
        nn.init.xavier_uniform_(self.topic_logits, generator=generator)

    # ------------------------------------------------------------------ pieces
    def prior(self, level: int) -> tuple[torch.Tensor, torch.Tensor]:
        """The Laplace prior ``(mean, variance)`` of level ``level`` (``(latent_dim,)`` each)."""
        return getattr(self, f"prior_mean_{level}"), getattr(self, f"prior_var_{level}")

    def topic_word(self) -> torch.Tensor:
        """``beta``, ``(K, V)``: ``softmax(BN(W))`` row by row (``softmax(W)`` without topic BN)."""
        logits = self.topic_logits if self.topic_norm is None else self.topic_norm(self.topic_logits)
        return torch.softmax(logits, dim=-1)

    def topic_weights(self) -> torch.Tensor:
        """``(K, V)`` ranking scores of the ``"weights"`` rule: ``W`` standardised across each
        block's topics word by word (the topic batch-norm without its shift); ``W`` itself
        without topic BN.  A per-word constant shared by every topic changes no ranking."""
        if self.topic_norm is None:
            return self.topic_logits
        return self.topic_norm(self.topic_logits) - self.topic_norm.shift.repeat_interleave(
            torch.tensor(self.topic_norm.blocks, device=self.topic_logits.device), dim=0
        )

    def encode(
        self, counts: Batch, generator: torch.Generator | None = None
    ) -> list[tuple[torch.Tensor, torch.Tensor]]:
        """Per level ``(mean, logvar)``, each ``(B, latent_dim_l)``; ``generator`` drives dropout."""
        hidden = [
            _dropout(t(counts), self.config.encoder_dropout, self.training, generator) for t in self.trunks
        ]
        return [head(hidden[i if len(hidden) > 1 else 0]) for i, head in enumerate(self.heads)]

    def level_kl(
        self, level: int, mean: torch.Tensor, logvar: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``(kl (B,), kl_per_dim (B, D))`` of one level against its prior."""
        if self.ctm_prior is not None:
            return self.ctm_prior.kl(mean, logvar), self.ctm_prior.kl_marginals(mean, logvar)
        p_mean, p_var = self.prior(level)
        per_dim = kl_diag_per_dim(mean, logvar, p_mean, p_var)
        return per_dim.sum(-1), per_dim

    def proportions(self, latents: Sequence[torch.Tensor]) -> list[torch.Tensor]:
        """Per level ``(..., n_parents, n_children)`` proportions from softmax-basis latents."""
        return [level_proportions(h, lv) for h, lv in zip(latents, self.structure.levels, strict=True)]

    def elbo_terms(self, counts: Batch, n_samples: int, generator: torch.Generator | None) -> ElboTerms:
        """The ELBO of every document of the batch (``n_samples`` reparameterised draws); a
        sparse batch scores the word probabilities at its non-zero counts only (the same sum)."""
        posterior = self.encode(counts, generator)
        beta = self.topic_word()
        batch = counts.shape[0]
        latents = []  # every draw at once: (n_samples * B, latent_dim) per level
        for mean, logvar in posterior:
            shape = (n_samples, *mean.shape)
            eps = torch.randn(shape, generator=generator, device=mean.device, dtype=mean.dtype)
            latents.append((mean + torch.exp(0.5 * logvar) * eps).reshape(n_samples * batch, -1))
        sub = subtopic_proportions(self.proportions(latents))
        sub = _dropout(sub, self.config.theta_dropout, self.training, generator)
        if isinstance(counts, SparseCounts):
            loglik = sparse_log_likelihood(counts, sub, beta).mean(0)
        else:
            probs = (sub @ beta).reshape(n_samples, batch, -1)
            loglik = log_likelihood_from_word_probs(counts, probs).mean(0)
        kls = [self.level_kl(i, m, lv) for i, (m, lv) in enumerate(posterior)]
        kl = torch.stack([k for k, _ in kls]).sum(0)
        return ElboTerms(loglik, kl, [d for _, d in kls], posterior)

    def forward(self, counts: Batch, generator: torch.Generator | None = None) -> torch.Tensor:
        """``(B,)`` negative ELBO with the training number of draws."""
        return self.elbo_terms(counts, self.config.train_samples, generator).nelbo


# ---------------------------------------------------------------------- evaluation


@dataclass(frozen=True)
class HeldOut:
    """Held-out bound of a set of documents (evaluation mode: no dropout, BN running statistics)."""

    nelbo_per_doc: float  # mean over documents of -ELBO (nats)
    nelbo_per_word: float  # sum of -ELBO over sum of tokens (nats per token)
    perplexity_bound: float  # exp(nelbo_per_word): an upper bound on the perplexity
    kl_per_doc: float  # mean over documents of the summed KL


Counts = CountRows | torch.Tensor | np.ndarray | sp.spmatrix


def count_rows(net: AviPamNet, counts: Counts) -> CountRows:
    """``counts`` on ``net``'s device and in its dtype (:meth:`CountRows.of`)."""
    weight = net.topic_logits
    return CountRows.of(counts, weight.dtype, weight.device)


def evaluate(net: AviPamNet, counts: Counts, seed: int, n_samples: int | None = None) -> HeldOut:
    """The held-out bound of ``counts`` with fixed noise (stream ``"avipam-eval"`` of ``seed``)."""
    rows = count_rows(net, counts)
    terms = _eval_terms(net, rows, seed, n_samples)
    nelbo, kl = terms["nelbo"], terms["kl"]
    tokens = rows.total()
    per_word = float(nelbo.sum()) / max(tokens, 1.0)
    return HeldOut(float(nelbo.mean()), per_word, math.exp(min(per_word, 700.0)), float(kl.mean()))


def kl_per_dimension(net: AviPamNet, counts: Counts, seed: int = 0) -> list[np.ndarray]:
    """Per level, the ``(latent_dim,)`` KL per latent dimension averaged over the documents
    (evaluation mode).  CTM's is against the prior's marginals (a diagnostic)."""
    return [
        d.mean(0).cpu().numpy().astype(np.float64)
        for d in _eval_terms(net, count_rows(net, counts), seed, 1)["kl_per_dim"]
    ]


def posterior_proportions(net: AviPamNet, counts: Counts) -> dict[str, Any]:
    """Proportions at the posterior means (softmax of each level's mean; evaluation mode):
    ``{"levels": [(D, n_parents, n_children) per level], "subtopics": (D, K)}`` as float64 numpy."""
    was_training = net.training
    net.eval()
    levels: list[list[torch.Tensor]] = []
    try:
        with torch.no_grad():
            for rows in count_rows(net, counts).chunks(EVAL_CHUNK):
                levels.append(net.proportions([mean for mean, _ in net.encode(rows)]))
    finally:
        net.train(was_training)
    per_level = [torch.cat([chunk[i] for chunk in levels]) for i in range(len(levels[0]))]
    return {
        "levels": [t.cpu().double().numpy() for t in per_level],
        "subtopics": subtopic_proportions(per_level).cpu().double().numpy(),
    }


def collapsed_dimensions(kl_per_dim: np.ndarray, threshold: float = COLLAPSE_THRESHOLD) -> int:
    """Number of latent dimensions whose mean KL is below ``threshold`` nats (collapsed to the prior)."""
    return int((np.asarray(kl_per_dim) < threshold).sum())


def _eval_terms(net: AviPamNet, counts: CountRows, seed: int, n_samples: int | None) -> dict[str, Any]:
    was_training = net.training
    net.eval()
    draws = n_samples or net.config.eval_samples
    generator = stream_generator(seed, "avipam-eval", counts.device)
    nelbo, kl, per_dim = [], [], []
    try:
        with torch.no_grad():
            for rows in counts.chunks(EVAL_CHUNK):
                terms = net.elbo_terms(rows, draws, generator)
                nelbo.append(terms.nelbo)
                kl.append(terms.kl)
                per_dim.append(terms.kl_per_dim)
    finally:
        net.train(was_training)
    return {
        "nelbo": torch.cat(nelbo),
        "kl": torch.cat(kl),
        "kl_per_dim": [torch.cat([p[i] for p in per_dim]) for i in range(len(per_dim[0]))],
    }


# ---------------------------------------------------------------------- fit


@dataclass
class AviPamFit:
    """A finished fit: the network (best validation state), its curve, convergence and time."""

    net: AviPamNet
    structure: PamStructure
    config: AviPamConfig
    seed: int
    history: list[EpochRecord]
    convergence: Convergence
    train_seconds: float  # wall time of training (encoder + decoder updates + validation)
    best_epoch: int
    time_limited: bool = False  # stopped by config.max_minutes before its epoch budget

    def topic_word(self) -> np.ndarray:
        """``(K, V)`` float64 topic matrix (rows sum to 1)."""
        with torch.no_grad():
            return self.net.topic_word().detach().cpu().double().numpy()

    def topic_ranking(self, rule: str = "weights") -> np.ndarray:
        """``(K, V)`` float64 scores whose row order is the topic's top-word order under ``rule``
        (:data:`TOP_WORD_RULES`)."""
        return topic_ranking(self.net, rule)

    def summary(self) -> dict[str, Any]:
        """Plain JSON values for a run's metrics.json: time, epochs, convergence, structure, config."""
        return {
            "structure": self.structure.describe(),
            "kind": self.structure.kind,
            "seed": self.seed,
            "train_seconds": self.train_seconds,
            "epochs": len(self.history),
            "best_epoch": self.best_epoch,
            "converged": self.convergence.converged,
            "convergence": self.convergence.as_dict(),
            "time_limited": self.time_limited,
            "config": self.config.as_dict(),
        }

    def component_topic_words(self) -> list[np.ndarray]:
        """The topic matrix split by :attr:`PamStructure.topic_blocks` (MoLDA's components)."""
        return self.split_components(self.topic_word())

    def split_components(self, matrix: np.ndarray) -> list[np.ndarray]:
        """A ``(K, V)`` matrix split by :attr:`PamStructure.topic_blocks` (MoLDA's components)."""
        return list(np.split(matrix, np.cumsum(self.structure.topic_blocks)[:-1], axis=0))


def topic_ranking(net: AviPamNet, rule: str = "weights") -> np.ndarray:
    """``(K, V)`` float64 ranking scores of ``net``'s topics: ``"weights"``
    (:meth:`AviPamNet.topic_weights`, the primary rule) or ``"beta"`` (the probabilities)."""
    if rule not in TOP_WORD_RULES:
        raise ConfigError(f"aviPAM top-word rule must be one of {TOP_WORD_RULES}; got {rule!r}")
    with torch.no_grad():
        scores = net.topic_weights() if rule == "weights" else net.topic_word()
        return scores.detach().cpu().double().numpy()


def coherence_plateau(
    epochs: Sequence[int], values: Sequence[float], tol: float, min_after: int = 3
) -> int | None:
    """The first checkpoint epoch from which coherence gains less than ``tol`` at every later
    checkpoint (``values[j] - values[i] < tol`` for all ``j > i``) and at least ``min_after``
    checkpoints follow it: where a topic-quality curve has plateaued.  ``None`` where none does
    -- in particular a curve cut short, whose last points cannot show a flat stretch."""
    if len(epochs) != len(values):
        raise DataError(f"coherence_plateau: {len(epochs)} epochs but {len(values)} values")
    vals = [float(v) for v in values]
    for i in range(len(vals) - max(int(min_after), 1)):
        if max(vals[i + 1 :]) - vals[i] < tol:
            return int(epochs[i])
    return None


def kl_collapsed(kl_per_doc: float | None, threshold: float = KL_COLLAPSE_NATS) -> bool | None:
    """Whether a run's KL term (nats per document, summed over levels) is below ``threshold``:
    the posterior has collapsed onto the prior (``None`` when the KL is unknown or not finite)."""
    if kl_per_doc is None or not math.isfinite(float(kl_per_doc)):
        return None
    return bool(float(kl_per_doc) < threshold)


ProgressFn = Callable[[EpochRecord], None]
#: Called after every epoch with the record and the network (training mode): e.g. the
#: coherence-vs-epoch benchmark scores the topics there.
EpochHook = Callable[[EpochRecord, "AviPamNet"], None]


def fit_avipam(
    train_counts: np.ndarray | sp.spmatrix | torch.Tensor,
    val_counts: np.ndarray | sp.spmatrix | torch.Tensor | None,
    structure: PamStructure,
    config: AviPamConfig | None = None,
    seed: int = 0,
    device: torch.device | str = "cpu",
    progress: ProgressFn | None = None,
    checkpoint_path: str | Path | None = None,
    epoch_hook: EpochHook | None = None,
) -> AviPamFit:
    """Train aviPAM on ``train_counts`` (D x V), early-stopped on ``val_counts``' NELBO per document.

    Every random stream comes from ``seed`` (:func:`noisyor_bench.inference.seeding.stream_generator`):
    ``"avipam-init"`` (weights), ``"shuffle"`` (minibatch order), ``"avipam-noise"`` (training
    draws and dropout) and ``"avipam-eval"`` (the validation draws, the same every epoch).
    Without ``val_counts`` the training NELBO is monitored.  Logs a line every ~10 s."""
    config = config or AviPamConfig()
    check_config(config)
    device = torch.device(device)
    dtype = DTYPES[config.dtype]
    x_train = CountRows.of(train_counts, dtype, device)
    x_val = None if val_counts is None else CountRows.of(val_counts, dtype, device)
    if x_val is not None and x_val.shape[0] == 0:
        raise DataError(
            "aviPAM: the validation set is empty (pass val_counts=None to monitor the training NELBO)"
        )
    if x_val is not None and x_val.shape[1] != x_train.shape[1]:
        raise DataError(f"validation vocabulary {x_val.shape[1]} != training vocabulary {x_train.shape[1]}")
    net = AviPamNet(structure, x_train.shape[1], config, stream_generator(seed, "avipam-init")).to(device)
    noise = stream_generator(seed, "avipam-noise", device)
    # fused Adam (one kernel for all parameters; same update rule) where torch has it: ~15% faster here
    fused = device.type in ("cpu", "cuda")
    optimizer = Adam(
        net.parameters(), lr=config.lr, betas=(config.adam_beta1, config.adam_beta2), fused=fused
    )

    epoch_terms = _EpochTerms()

    def loss_fn(batch_idx: torch.Tensor, step: int) -> torch.Tensor:
        terms = net.elbo_terms(x_train.take(batch_idx.to(device)), config.train_samples, noise)
        epoch_terms.add_train(terms)
        return terms.nelbo

    def val_fn() -> float:
        held_out = evaluate(net, x_val, seed)
        epoch_terms.val_kl = held_out.kl_per_doc
        return held_out.nelbo_per_doc

    trainer = Trainer(
        module=net,
        loss_fn=loss_fn,
        optimizer=optimizer,
        n_train=x_train.shape[0],
        budget=config.budget(),
        shuffle_generator=stream_generator(seed, "shuffle"),
        val_fn=None if x_val is None else val_fn,
        generators={"noise": noise},
        extra_fn=epoch_terms.columns,
        checkpoint_path=checkpoint_path,
        fingerprint={"config": config.as_dict(), "structure": structure.describe(), "seed": int(seed)},
        stop_on_plateau=config.stop_on_plateau,
    )
    log = EpochProgress(config.max_epochs, f"aviPAM {structure.describe()}", logger=logger, bar=False)

    limited = [False]

    def on_epoch(record: EpochRecord) -> None:
        if progress is not None:
            progress(record)
        if epoch_hook is not None:
            epoch_hook(record, net)
        log(record)
        over = config.max_minutes is not None and time.perf_counter() - start >= 60.0 * config.max_minutes
        if over and not trainer.state.finished:  # out of time: the budget ran out, as at max_epochs
            trainer.state.finished, trainer.state.stop_reason = True, "max_epochs"
            limited[0] = True

    start = time.perf_counter()
    try:
        history = trainer.run(on_epoch)
    finally:
        log.close()
    seconds = time.perf_counter() - start
    convergence = trainer.convergence()
    logger.info(
        "aviPAM %s: %d epochs in %.1f s, best epoch %d, converged=%s (%s)",
        structure.describe(),
        len(history),
        seconds,
        trainer.best_epoch,
        convergence.converged,
        convergence.rule,
    )
    return AviPamFit(
        net, structure, config, int(seed), history, convergence, seconds, trainer.best_epoch, limited[0]
    )


class _EpochTerms:
    """The ELBO's two terms over an epoch, for the curve (the paper's Fig. 3 plots the KL term):
    ``train_kl`` and ``train_nll`` (means per training document over the epoch's minibatches, as
    the trainer's ``train_nelbo`` = their sum) and ``val_kl`` (validation, evaluation mode)."""

    def __init__(self) -> None:
        self.kl = self.nll = 0.0
        self.docs = 0
        self.val_kl: float | None = None

    def add_train(self, terms: ElboTerms) -> None:
        self.kl += float(terms.kl.detach().sum())
        self.nll -= float(terms.loglik.detach().sum())
        self.docs += int(terms.kl.shape[0])

    def columns(self, steps_done: int) -> dict[str, float]:
        """The epoch's columns (called once per epoch, after validation); resets the sums."""
        docs = max(self.docs, 1)
        out = {"train_kl": self.kl / docs, "train_nll": self.nll / docs}
        if self.val_kl is not None:
            out["val_kl"] = self.val_kl
        self.kl = self.nll = 0.0
        self.docs, self.val_kl = 0, None
        return out


def with_overrides(config: AviPamConfig, **changes: Any) -> AviPamConfig:
    """A copy of ``config`` with ``changes`` (checked)."""
    new = replace(config, **changes)
    check_config(new)
    return new


__all__ = [
    "COLLAPSE_THRESHOLD",
    "DTYPES",
    "KL_COLLAPSE_NATS",
    "TOP_WORD_RULES",
    "EVAL_CHUNK",
    "ENCODER_LAYOUTS",
    "AviPamConfig",
    "AviPamFit",
    "AviPamNet",
    "ElboTerms",
    "HeldOut",
    "check_config",
    "coherence_plateau",
    "collapsed_dimensions",
    "config_from_mapping",
    "evaluate",
    "fit_avipam",
    "kl_collapsed",
    "kl_per_dimension",
    "posterior_proportions",
    "topic_ranking",
    "with_overrides",
]
