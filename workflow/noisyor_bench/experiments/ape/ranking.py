"""APE's ranking of the test models (Table 1's agreement column) with a reference above its noise.

The paper scores a method by the pairs of the 10 test models that its total ELBO orders as VI's
total ELBO does.  VI's totals differ by only ~100 nats across the near-identical test models,
so a 50-draw ELBO over 30 documents orders ~8 of the 45 pairs by Monte Carlo noise alone.
The reference here therefore sums the ELBO over the *ranking documents*
(``ranking.documents``: the first R documents of the corpus; default: the evaluation documents,
whose VI fit Table 1 already has) with ``ranking.elbo_draws`` draws per (document, model)
(paper grid: 1,000 draws, 300 documents), and records what the agreement is measured against:

* ``vi_totals``: VI's per-model totals, draw stream ``a`` (the reference);
* every method's totals from stream ``b`` (VI's too: the same q, independent draws), so each
  method's agreement is measured with its own Monte Carlo noise, and VI's agreement with its
  reference is the Monte Carlo ceiling (``mc_ceiling``);
* the VI-vs-VI ceiling across seeds (an independent VI fit and independent draws) is computed
  from the seeds' ``vi_totals`` when the seeds are put together
  (:func:`noisyor_bench.evaluation.ranking.reference_ceilings`).

When the ranking documents are not the evaluation documents, VI is fitted on them (one problem
per test model) and the encoders are run on them, inside the evaluation job.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from noisyor_bench.evaluation.ranking import pairwise_agreement
from noisyor_bench.experiments.ape.pairs import EvalCombinations
from noisyor_bench.inference.seeding import stream_seed
from noisyor_bench.infra.errors import ConfigError, DataError

log = logging.getLogger(__name__)

DRAW_CHUNK = 100  # ELBO draws per pass: bounds the (draws, P, K) sample tensor


def ranking_settings(section: Mapping[str, Any]) -> tuple[int | None, int]:
    """(ranking documents (None: the evaluation documents; -1: all), ELBO draws) of a dataset's
    settings; ``ranking`` absent: the evaluation documents with ``evaluation.elbo_samples``."""
    ev = dict(section.get("evaluation") or {})
    rk = dict(section.get("ranking") or {})
    docs = rk.get("documents")
    if docs == "all":
        n_docs: int | None = -1
    elif docs is None:
        n_docs = None
    else:
        n_docs = int(docs)
        if n_docs < 2:
            raise ConfigError(f"ranking.documents must be >= 2 or 'all', got {docs!r}")
    draws = int(rk.get("elbo_draws", ev.get("elbo_samples", 100)))
    if draws < 1:
        raise ConfigError(f"ranking.elbo_draws must be >= 1, got {draws}")
    return n_docs, draws


@dataclass(frozen=True)
class RankingSet:
    """Documents x test models, document-major as the evaluation combinations, with each test
    model held once (``thetas`` (M, K, V)) instead of per pair: the paper grid ranks over 300
    documents x 10 models, whose per-pair topics would be 2 GB in float64 on the reviews."""

    x: torch.Tensor  # (P, V) counts, pair i = document doc_index[i] with model model_index[i]
    thetas: torch.Tensor  # (M, K, V)
    doc_index: np.ndarray  # (P,)
    model_index: np.ndarray  # (P,)

    @property
    def n_models(self) -> int:
        return int(self.thetas.shape[0])

    @property
    def documents(self) -> int:
        return int(np.unique(self.doc_index).size)

    def rows(self, model: int) -> torch.Tensor:
        """The pairs of test model ``model``, in document order."""
        return torch.as_tensor(np.flatnonzero(self.model_index == model))

    @classmethod
    def from_combinations(cls, combos: EvalCombinations) -> RankingSet:
        """The evaluation combinations (their per-pair topics read once per model)."""
        firsts = [int(np.flatnonzero(combos.model_index == m)[0]) for m in range(combos.n_models)]
        return cls(combos.x, combos.theta[firsts], combos.doc_index, combos.model_index)


def ranking_set(arrays: Mapping[str, np.ndarray], n_docs: int, dtype: torch.dtype) -> RankingSet:
    """The first ``n_docs`` documents (-1: all) x the test models, document-major."""
    documents = np.asarray(arrays["documents"])
    thetas = np.asarray(arrays["test_thetas"])
    n = documents.shape[0] if n_docs < 0 else n_docs
    if n > documents.shape[0]:
        raise DataError(f"ranking.documents = {n} but the dataset holds {documents.shape[0]} documents")
    doc_index = np.repeat(np.arange(n), thetas.shape[0])
    model_index = np.tile(np.arange(thetas.shape[0]), n)
    x = torch.as_tensor(documents[doc_index], dtype=dtype)
    return RankingSet(x, torch.as_tensor(thetas, dtype=dtype), doc_index, model_index)


def model_elbo_totals(
    ranking: RankingSet,
    mu: torch.Tensor,
    log_sigma: torch.Tensor,
    draws: int,
    generator: torch.Generator,
) -> np.ndarray:
    """Per test model, the sum over its documents of the ``draws``-draw ELBO (clean prior, with
    the multinomial coefficient: the authors' ranking quantity), (n_models,) float64.  Models are
    visited in order and draws in chunks of :data:`DRAW_CHUNK`, so one ``generator`` seeded alike
    gives every method the same standard-normal draws (common random numbers)."""
    from noisyor_bench.models.topics.logistic_normal import ape_prior, elbo

    prior = ape_prior(ranking.thetas.shape[1])
    out = np.zeros(ranking.n_models)
    with torch.no_grad():
        for m in range(ranking.n_models):
            rows = ranking.rows(m)
            x, theta = ranking.x[rows].double(), ranking.thetas[m].double()
            q = (mu[rows].double(), log_sigma[rows].double())
            total = torch.zeros(rows.numel(), dtype=torch.float64)
            done = 0
            while done < draws:
                n = min(DRAW_CHUNK, draws - done)
                total += n * elbo(x, theta, *q, prior, n, generator)
                done += n
            out[m] = float(total.sum()) / draws
    return out


def ranking_agreement(
    ranking: RankingSet,
    posteriors: Mapping[str, tuple[torch.Tensor, torch.Tensor]],
    draws: int,
    seed: int,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """The ``ranking`` record of an evaluation (module docstring): VI's reference totals, every
    method's totals and agreement with it, and the Monte Carlo ceiling."""
    if "vi" not in posteriors:
        raise DataError("ranking_agreement: no VI posterior (the reference)")

    def stream(name: str) -> torch.Generator:
        return torch.Generator().manual_seed(stream_seed(seed, f"ape-ranking-{name}"))

    reference = model_elbo_totals(ranking, *posteriors["vi"], draws, stream("a"))
    methods: dict[str, dict[str, Any]] = {}
    for method, (mu, log_sigma) in posteriors.items():
        totals = model_elbo_totals(ranking, mu, log_sigma, draws, stream("b"))
        agreement = pairwise_agreement(totals, reference)
        methods[method] = {"totals": totals.tolist(), "agree": agreement.agree, "pairs": agreement.pairs}
        if progress:
            progress(f"ranking {method}: {agreement.agree}/{agreement.pairs} pairs as VI's reference")
    return {
        "documents": ranking.documents,
        "combinations": int(ranking.x.shape[0]),
        "elbo_draws": int(draws),
        "pairs": methods["vi"]["pairs"],
        "vi_totals": reference.tolist(),
        "mc_ceiling": methods["vi"]["agree"],
        "methods": methods,
    }


def seed_ranking(
    arrays: Mapping[str, np.ndarray],
    combos: EvalCombinations,
    posteriors: Mapping[str, tuple[torch.Tensor, torch.Tensor]],
    encoder_runs: Mapping[str, Any],
    section: Mapping[str, Any],
    seed: int,
) -> dict[str, Any]:
    """One evaluation's ``ranking`` record: on the evaluation combinations with the posteriors
    Table 1 already has, or (``ranking.documents`` set and other than them) on the ranking
    documents, with VI fitted there and the encoders run there."""
    n_docs, draws = ranking_settings(section)
    eval_docs = np.unique(combos.doc_index)
    same = n_docs is None or (n_docs == eval_docs.size and np.array_equal(eval_docs, np.arange(n_docs)))
    if same:
        return ranking_agreement(RankingSet.from_combinations(combos), posteriors, draws, seed, log.info)
    ranking = ranking_set(arrays, n_docs if n_docs is not None else -1, torch.float32)
    posts, vi_run = _ranking_posteriors(ranking, encoder_runs, section, seed)
    return {**ranking_agreement(ranking, posts, draws, seed, log.info), "vi_fit": vi_run}


def _ranking_posteriors(
    ranking: RankingSet, encoder_runs: Mapping[str, Any], section: Mapping[str, Any], seed: int
) -> tuple[dict[str, tuple[torch.Tensor, torch.Tensor]], dict[str, Any]]:
    """Every encoder and VI (random init, one problem per test model, as
    :func:`~noisyor_bench.experiments.ape.baselines.fit_vi_grouped` fits them) on the ranking
    pairs, in float32; VI's fit (seconds, steps, convergence) beside them."""
    from noisyor_bench.experiments.ape.train import load_encoder

    x32, thetas32 = ranking.x.float(), ranking.thetas.float()
    p, k = x32.shape[0], thetas32.shape[1]
    posts: dict[str, tuple[torch.Tensor, torch.Tensor]] = {}
    for method, run in encoder_runs.items():
        encoder = load_encoder(run).float().eval()
        mu, log_sigma = torch.empty(p, k), torch.empty(p, k)
        with torch.no_grad():
            for m in range(ranking.n_models):  # one model's pairs at a time: (D, K, V) topics
                rows = ranking.rows(m)
                theta = thetas32[m].expand(rows.numel(), -1, -1)
                mu[rows], log_sigma[rows] = encoder(x32[rows], theta if encoder.kind != "standard" else None)
        posts[method] = (mu.double(), log_sigma.double())
    mu, log_sigma, vi_run = fit_ranking_vi(ranking, section, seed)
    posts["vi"] = (mu.double(), log_sigma.double())
    return posts, vi_run


def fit_ranking_vi(
    ranking: RankingSet, section: Mapping[str, Any], seed: int
) -> tuple[torch.Tensor, torch.Tensor, dict[str, Any]]:
    """VI from random initialisation on the ranking pairs, one problem per test model (as
    :func:`~noisyor_bench.experiments.ape.baselines.fit_vi_grouped` fits them; stream
    ``"ape-ranking-vi"``), float32: (mu, log_sigma) (P, K) and the fit's seconds, steps, convergence."""
    from noisyor_bench.experiments.ape.baselines import vi_config
    from noisyor_bench.inference.topics.ape_vi import fit_vi
    from noisyor_bench.models.topics.logistic_normal import ape_prior

    x32, thetas32 = ranking.x.float(), ranking.thetas.float()
    p, k = x32.shape[0], thetas32.shape[1]
    config, prior = vi_config(section), ape_prior(k, dtype=torch.float32)
    mu, log_sigma = torch.empty(p, k), torch.empty(p, k)
    seconds, steps, converged = 0.0, 0, True
    vi_seed = stream_seed(seed, "ape-ranking-vi")
    for m in range(ranking.n_models):
        rows = ranking.rows(m)
        r = fit_vi(x32[rows], thetas32[m], prior, config, seed=stream_seed(vi_seed, f"model-{m}"))
        mu[rows], log_sigma[rows] = r.mu.float(), r.log_sigma.float()
        seconds, steps, converged = seconds + r.seconds, max(steps, r.steps), converged and bool(r.converged)
        log.info(
            "ranking VI model %d/%d: %d steps, %.1f s, converged %s",
            m + 1,
            ranking.n_models,
            r.steps,
            r.seconds,
            r.converged,
        )
    return mu, log_sigma, {"seconds": seconds, "steps": steps, "converged": converged}
