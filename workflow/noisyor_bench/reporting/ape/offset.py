"""How far the evaluated documents alone could move APE Table 1's absolute paper-style values.

The paper-style metric = a term inference moves + the **document constant** (multinomial
coefficient + the authors' prior normaliser, per word: :mod:`noisyor_bench.models.topics.paper_metric`),
a function of the evaluated documents alone.  For each method with a paper value this module
gives the **offset** (paper - ours, nats per word, and per document at the evaluated documents'
mean length), the document constant that offset would need (ours + offset / slope, the slope of
VI's paper-style value on the constant over random document sets where measured, else 1), and
where that constant sits among the constants of random document sets of the same size drawn from
the same documents: a percentile near 100 says no ordinary choice of evaluation documents
explains the offset.

Every document's constant is computed from the dataset file's counts (``documents``,
``eval_documents``, ``test_thetas`` for K): the coefficient of document d is log T_d! - sum_v
log x_dv!, and a set S of documents (each crossed with every test model, which scales numerator
and denominator alike) has constant (sum_S coefficient_d + |S| * prior normaliser) / sum_S T_d.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from scipy.special import gammaln

from noisyor_bench.infra.errors import DataError

#: Random document sets drawn per dataset (percentile resolution 0.005%).
N_RANDOM_SETS = 20_000
#: Methods whose Table 1 row has an absolute paper-style value and a paper value to reach.
OFFSET_METHODS = ("standard", "ape-naive", "ape-model-aware", "vi")
OFFSET_COLUMNS = ("paper_offset", "paper_offset_doc", "offset_constant_needed", "offset_percentile")
DATASET_OFFSET_COLUMNS = (
    "offset_sets",
    "offset_set_size",
    "offset_documents",
    "offset_own_constant",
    "offset_own_percentile",
    "offset_random_min",
    "offset_random_median",
    "offset_random_max",
    "offset_slope",
)


@dataclass(frozen=True)
class DocumentTerms:
    """Per-document parts of the document constant of one dataset."""

    coefficient: np.ndarray  # (D,) log T_d! - sum_v log x_dv!
    tokens: np.ndarray  # (D,) T_d
    prior_normaliser: float  # nats per (document, model) pair
    evaluated: np.ndarray  # indices of the evaluation documents

    def constant(self, documents: np.ndarray) -> np.ndarray:
        """The document constant per word of each row of ``documents`` (sets x set size indices)."""
        idx = np.atleast_2d(np.asarray(documents, dtype=np.int64))
        numerator = self.coefficient[idx].sum(-1) + idx.shape[-1] * self.prior_normaliser
        return numerator / self.tokens[idx].sum(-1)


def prior_normaliser(n_topics: int) -> float:
    """-1/2 sum_k log(2 pi var_k) of the authors' evaluation prior with ``n_topics`` topics."""
    from noisyor_bench.models.topics.logistic_normal import paper_prior
    from noisyor_bench.models.topics.paper_metric import prior_normaliser as normaliser

    return normaliser(paper_prior(int(n_topics)))


def document_terms(
    documents: np.ndarray, evaluated: np.ndarray, n_topics: int | None = None, normaliser: float | None = None
) -> DocumentTerms:
    """:class:`DocumentTerms` of count rows ``documents`` (D, V); the prior normaliser given, or
    the authors' prior's for ``n_topics``."""
    x = np.asarray(documents, dtype=np.float64)
    if x.ndim != 2 or x.shape[0] == 0:
        raise DataError(f"document offset: documents must be (D, V) counts; got shape {x.shape}")
    tokens = x.sum(1)
    if (tokens <= 0).any():
        raise DataError("document offset: an empty document has no per-word constant")
    if normaliser is None:
        if n_topics is None:
            raise DataError("document offset: give n_topics or the prior normaliser")
        normaliser = prior_normaliser(n_topics)
    coefficient = gammaln(tokens + 1.0) - gammaln(x + 1.0).sum(1)
    return DocumentTerms(coefficient, tokens, float(normaliser), np.asarray(evaluated, dtype=np.int64))


def random_set_constants(terms: DocumentTerms, set_size: int, n_sets: int, seed: int = 0) -> np.ndarray:
    """The document constants of ``n_sets`` sets of ``set_size`` distinct documents, drawn
    uniformly from all of the dataset's documents (as the random evaluation-document sets are)."""
    n = terms.tokens.size
    if not 1 <= set_size <= n:
        raise DataError(f"document offset: set size {set_size} outside 1..{n} documents")
    rng = np.random.default_rng(seed)
    sets = np.stack([rng.choice(n, size=set_size, replace=False) for _ in range(int(n_sets))])
    return terms.constant(sets)


def percentile_of(value: float, sample: np.ndarray) -> float:
    """Percent of ``sample`` strictly below ``value`` (100 = above every one)."""
    return float(100.0 * np.mean(np.asarray(sample, dtype=float) < float(value)))


def dataset_offsets(
    terms: DocumentTerms,
    ours: Mapping[str, float],
    paper: Mapping[str, float],
    slope: float = math.nan,
    n_sets: int = N_RANDOM_SETS,
    seed: int = 0,
) -> tuple[dict[str, float], dict[str, dict[str, float]]]:
    """(per-dataset :data:`DATASET_OFFSET_COLUMNS`, per method :data:`OFFSET_COLUMNS`) from our
    mean paper-style values ``ours`` and the paper's ``paper`` per method (module docstring)."""
    size = int(terms.evaluated.size)
    random = random_set_constants(terms, size, n_sets, seed)
    own = float(terms.constant(terms.evaluated)[0])
    used_slope = float(slope) if math.isfinite(slope) and slope > 0 else 1.0
    summary = {
        "offset_sets": int(n_sets),
        "offset_set_size": size,
        "offset_documents": int(terms.tokens.size),
        "offset_own_constant": own,
        "offset_own_percentile": percentile_of(own, random),
        "offset_random_min": float(random.min()),
        "offset_random_median": float(np.median(random)),
        "offset_random_max": float(random.max()),
        "offset_slope": used_slope,
    }
    per_doc_tokens = float(terms.tokens[terms.evaluated].mean())
    methods = {}
    for method, value in ours.items():
        target = paper.get(method)
        if target is None or not math.isfinite(float(target)) or not math.isfinite(float(value)):
            continue
        offset = float(target) - float(value)
        needed = own + offset / used_slope
        methods[method] = {
            "paper_offset": offset,
            "paper_offset_doc": offset * per_doc_tokens,
            "offset_constant_needed": needed,
            "offset_percentile": percentile_of(needed, random),
        }
    return summary, methods


def load_terms(path: str | Path) -> DocumentTerms:
    """:class:`DocumentTerms` of an APE dataset file (``results/data/ape-<dataset>.npz``)."""
    from noisyor_bench.infra.io import load_npz

    arrays = load_npz(Path(path))
    for key in ("documents", "eval_documents", "test_thetas"):
        if key not in arrays:
            raise DataError(f"{path}: no {key!r} array (not an APE dataset file)")
    return document_terms(arrays["documents"], arrays["eval_documents"], int(arrays["test_thetas"].shape[1]))


def _where(percentile: float, n_sets: int) -> str:
    """``"above 19,946 of 20,000 random sets (99.73%)"``."""
    below = int(round(percentile * n_sets / 100.0))
    if below >= n_sets:
        return f"above all {n_sets:,} random sets"
    if below <= 0:
        return f"below all {n_sets:,} random sets"
    return f"above {below:,} of {n_sets:,} random sets ({percentile:.2f}%)"


def offset_caption(
    row: Mapping[str, Any], method_rows: Mapping[str, Mapping[str, Any]], labels: Mapping[str, str]
) -> str:
    """The caption's offset sentence of one dataset ("" without offsets)."""
    n = row.get("offset_sets")
    if n is None or (isinstance(n, float) and math.isnan(n)) or not method_rows:
        return ""
    n = int(n)
    slope = float(row["offset_slope"])
    how = (
        f"ours + offset / {slope:.2f}, the slope of VI's paper-style value on the constant over the random "
        "document sets"
        if slope != 1.0
        else "ours + offset"
    )
    parts = [
        f"{labels.get(m, m)} {float(r['paper_offset']):+.2f} nats/word ({float(r['paper_offset_doc']):+.1f} nats "
        f"per document) -> constant {float(r['offset_constant_needed']):.2f}, "
        f"{_where(float(r['offset_percentile']), n)}"
        for m, r in method_rows.items()
    ]
    return (
        f"offset to the paper's value (paper - ours) and the document constant it would need ({how}), "
        f"placed among {n:,} random sets of {int(row['offset_set_size'])} of the {int(row['offset_documents']):,} "
        f"documents (constants {float(row['offset_random_min']):.2f} to {float(row['offset_random_max']):.2f}, "
        f"median {float(row['offset_random_median']):.2f}; ours {float(row['offset_own_constant']):.2f}, "
        f"{_where(float(row['offset_own_percentile']), n)}): " + "; ".join(parts)
    )


__all__ = [
    "DATASET_OFFSET_COLUMNS",
    "N_RANDOM_SETS",
    "OFFSET_COLUMNS",
    "OFFSET_METHODS",
    "DocumentTerms",
    "dataset_offsets",
    "document_terms",
    "load_terms",
    "offset_caption",
    "percentile_of",
    "random_set_constants",
]
