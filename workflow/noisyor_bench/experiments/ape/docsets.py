"""VI's paper-style value over random evaluation-document sets.

The authors' metric carries two inference-free terms (:mod:`noisyor_bench.models.topics.paper_metric`)
whose per-word size depends on which documents are evaluated: short documents pull the value down
by many nats per word.  To show how much the absolute number moves with the documents alone, VI is
fitted on ``n_sets`` random sets of ``set_size`` documents (each crossed with the 10 test models,
as the evaluation set) and scored paper-style and clean; the document constant of each set is
reported beside it with the least-squares line paper-style = slope * constant + intercept.

All sets are fitted as one VI problem (:func:`fit_vi_grouped`, grouped by model as the grid's
``vi.group_by_model`` says): the pairs are independent, so this is the same optimisation as one
VI run per set, at a fraction of the loop overhead.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch

from noisyor_bench.experiments.ape.pairs import EvalCombinations
from noisyor_bench.inference.seeding import stream_seed
from noisyor_bench.infra.errors import DataError

DOCSET_KEYS = ("ll_paper", "ll_paper_words", "ll_is", "doc_constant")


def random_document_sets(n_documents: int, set_size: int, n_sets: int, seed: int) -> list[np.ndarray]:
    """``n_sets`` sets of ``set_size`` distinct documents of ``range(n_documents)``, each sorted."""
    if set_size < 1 or n_sets < 1 or set_size > n_documents:
        raise DataError(
            f"document sets need 1 <= set_size <= {n_documents} documents and n_sets >= 1; "
            f"got set_size {set_size}, n_sets {n_sets}"
        )
    rng = np.random.default_rng(stream_seed(seed, "ape-document-sets"))
    return [np.sort(rng.choice(n_documents, size=set_size, replace=False)) for _ in range(n_sets)]


def set_combinations(
    documents: np.ndarray, test_thetas: np.ndarray, docs: Sequence[np.ndarray]
) -> EvalCombinations:
    """Every set's documents crossed with the test models, set after set, document-major."""
    doc_index = np.concatenate([np.repeat(d, test_thetas.shape[0]) for d in docs])
    model_index = np.tile(np.arange(test_thetas.shape[0]), sum(len(d) for d in docs))
    x = torch.as_tensor(np.asarray(documents)[doc_index], dtype=torch.float32)
    theta = torch.as_tensor(np.asarray(test_thetas)[model_index], dtype=torch.float32)
    return EvalCombinations(x, theta, doc_index, model_index)


def score_set(
    x: torch.Tensor,
    theta: torch.Tensor,
    mu: torch.Tensor,
    log_sigma: torch.Tensor,
    ev: Mapping[str, Any],
    seed: int,
) -> dict[str, float]:
    """Paper-style value (mean over repeats), its word term, clean IS per word and the document
    constant of one set of pairs, float64."""
    from noisyor_bench.models.topics.logistic_normal import (
        ape_prior,
        paper_prior,
        per_word_log_likelihood,
        sample_q,
    )
    from noisyor_bench.models.topics.paper_metric import document_constant, paper_metric_terms

    x, theta, mu, log_sigma = x.double(), theta.double(), mu.double(), log_sigma.double()
    k = theta.shape[1]
    gen = torch.Generator().manual_seed(stream_seed(seed, "ape-docset-score"))
    with torch.no_grad():
        pool = sample_q(mu, log_sigma, int(ev.get("paper_samples", 100)), gen)
        terms = paper_metric_terms(
            x,
            theta,
            pool,
            paper_prior(k),
            int(ev.get("paper_draws", 10)),
            int(ev.get("paper_repeats", 10)),
            gen,
        )
        ll_is, _ = per_word_log_likelihood(
            x, theta, mu, log_sigma, ape_prior(k), int(ev.get("is_samples", 1000)), gen
        )
    return {
        "ll_paper": float(terms["total"].mean()),
        "ll_paper_words": float(terms["words"].mean()),
        "ll_is": float(ll_is),
        "doc_constant": document_constant(x, paper_prior(k)),
    }


def vi_on_document_sets(
    arrays: Mapping[str, np.ndarray], section: Mapping[str, Any], seed: int, n_sets: int, set_size: int
) -> dict[str, Any]:
    """VI fitted and scored on ``n_sets`` random document sets (module docstring): per set the
    :data:`DOCSET_KEYS`, its documents, and the fitted line with its residual spread."""
    from noisyor_bench.experiments.ape.baselines import fit_vi_grouped, vi_config
    from noisyor_bench.models.topics.logistic_normal import ape_prior

    documents, thetas = np.asarray(arrays["documents"]), np.asarray(arrays["test_thetas"])
    docs = random_document_sets(documents.shape[0], set_size, n_sets, seed)
    combos = set_combinations(documents, thetas, docs)
    fit = fit_vi_grouped(
        combos,
        ape_prior(thetas.shape[1], dtype=torch.float32),
        vi_config(section),
        stream_seed(seed, "ape-vi-docsets"),
        bool((section.get("vi") or {}).get("group_by_model", False)),
    )
    ev = dict(section.get("evaluation") or {})
    per = thetas.shape[0] * set_size
    sets = []
    for i, d in enumerate(docs):
        rows = slice(i * per, (i + 1) * per)
        score = score_set(combos.x[rows], combos.theta[rows], fit.mu[rows], fit.log_sigma[rows], ev, seed + i)
        sets.append({**score, "documents": [int(v) for v in d]})
    return {
        "n_sets": int(n_sets),
        "set_size": int(set_size),
        "seconds": float(fit.seconds),
        "converged": bool(fit.converged),
        "sets": sets,
        **constant_fit([s["ll_paper"] for s in sets], [s["doc_constant"] for s in sets]),
    }


def constant_fit(values: Sequence[float], constants: Sequence[float]) -> dict[str, float]:
    """Least squares values = slope * constants + intercept: the slope, intercept and the residuals'
    standard deviation and range (max - min)."""
    v, c = np.asarray(values, dtype=float), np.asarray(constants, dtype=float)
    if v.size < 2 or np.ptp(c) == 0:
        return {
            "slope": float("nan"),
            "intercept": float("nan"),
            "residual_sd": float("nan"),
            "residual_range": float("nan"),
        }
    slope, intercept = np.polyfit(c, v, 1)
    residual = v - (slope * c + intercept)
    return {
        "slope": float(slope),
        "intercept": float(intercept),
        "residual_sd": float(residual.std(ddof=2)) if v.size > 2 else 0.0,
        "residual_range": float(np.ptp(residual)),
    }


__all__ = [
    "DOCSET_KEYS",
    "constant_fit",
    "random_document_sets",
    "score_set",
    "set_combinations",
    "vi_on_document_sets",
]
