"""The VI-vs-VI ceilings beside APE's agreement numbers: how far VI's ranking
reference agrees with itself, per (dataset, seed).

* ``agree_vi_ceiling``: the median, over the other seeds, of the pairs that this seed's VI
  reference (``ranking.vi_totals``) orders as the other seed's does -- an independent VI fit and
  independent ELBO draws (:func:`noisyor_bench.evaluation.ranking.reference_ceilings`); one seed
  alone: the Monte Carlo ceiling;
* ``agree_vi_mc_ceiling``: the same VI posterior, two independent ELBO samples (``mc_ceiling``);
* ``agree_is_ceiling``: ``agree_is``'s reference (VI's IS totals) across seeds;
* ``ranking_documents`` / ``ranking_draws``: what the reference summed over.

Evaluations without a ``ranking`` record (runs from before the ranking record) get no ceilings (NaN).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from noisyor_bench.evaluation.ranking import reference_ceilings

CEILING_COLUMNS = (
    "agree_vi_ceiling",
    "agree_vi_mc_ceiling",
    "agree_is_ceiling",
    "ranking_documents",
    "ranking_draws",
)


def seed_ceilings(records: Sequence[Mapping[str, Any]]) -> dict[tuple[str, int], dict[str, float]]:
    """(dataset, seed) -> the ceiling columns (module docstring) of every evaluation record."""
    by_dataset: dict[str, dict[int, Mapping[str, Any]]] = {}
    for data in records:
        ranking = data.get("ranking")
        if ranking:
            by_dataset.setdefault(str(data["dataset"]), {})[int(data["seed"])] = ranking
    out: dict[tuple[str, int], dict[str, float]] = {}
    for dataset, rankings in by_dataset.items():
        vi = reference_ceilings({s: r["vi_totals"] for s, r in rankings.items()})
        is_refs = {s: r["vi_is_totals"] for s, r in rankings.items() if r.get("vi_is_totals")}
        is_ = reference_ceilings(is_refs)
        for seed, r in rankings.items():
            mc = float(r["mc_ceiling"])
            out[(dataset, seed)] = {
                "agree_vi_ceiling": vi.get(seed, mc),
                "agree_vi_mc_ceiling": mc,
                "agree_is_ceiling": is_.get(seed, float("nan")),
                "ranking_documents": float(r["documents"]),
                "ranking_draws": float(r["elbo_draws"]),
            }
    return out


PROTOCOL = {"documents": 300, "elbo_draws": 1000, "seeds": 5}
"""The agreement reference of the paper's protocol (the authors rank over every training document)."""


def ranking_reduction(section: Mapping[str, Any], n_seeds: int) -> str:
    """What the agreement's reference sums over, where it falls short of :data:`PROTOCOL`
    ("" when it does not): the Table 1 caption's and the agreement claim's protocol deviation."""
    from noisyor_bench.experiments.ape.ranking import ranking_settings

    n_docs, draws = ranking_settings(section)
    if n_docs is None:
        n_docs = int((section.get("evaluation") or {}).get("documents", 30))
        where = f"the {n_docs} evaluation documents"
    else:
        where = "every document" if n_docs < 0 else f"the first {n_docs} documents"
    short = (
        (0 <= n_docs < PROTOCOL["documents"]) or draws < PROTOCOL["elbo_draws"] or n_seeds < PROTOCOL["seeds"]
    )
    if not short:
        return ""
    return (
        f"agreement ranked over {where} with {draws:,} ELBO draws per (document, model), {n_seeds} seed(s) "
        f"(protocol: >= {PROTOCOL['documents']} documents, >= {PROTOCOL['elbo_draws']:,} draws, "
        f">= {PROTOCOL['seeds']} seeds; the authors: every training document)"
    )


def ceiling_judgement(ceilings: Mapping[int, float], pairs: int) -> tuple[bool, str]:
    """(judged, text) of an agreement claim from the seeds' VI-vs-VI ceilings (``agree_vi_ceiling``
    per seed): judged only when their mean reaches 40 of 45 pairs
    (:func:`~noisyor_bench.evaluation.ranking.ceiling_sufficient`); else the text says
    "reference noise: ceiling k/45" and the claim is inconclusive."""
    from noisyor_bench.evaluation.ranking import CEILING_THRESHOLD, ceiling_sufficient

    values = [float(v) for _, v in sorted(ceilings.items()) if v == v]  # NaN: a seed without one
    if not values or not pairs:
        return False, "reference noise: no VI-vs-VI ceiling recorded (evaluations without a ranking record)"
    mean = sum(values) / len(values)
    per_seed = ", ".join(f"{v:.3g}" for v in values)
    if ceiling_sufficient(mean, pairs):
        return True, f"VI-vs-VI ceiling {mean:.3g}/{pairs} (per seed {per_seed})"
    return False, (
        f"reference noise: ceiling {mean:.3g}/{pairs} (per seed {per_seed}), below "
        f"{CEILING_THRESHOLD * pairs:.3g}/{pairs}: VI's reference does not order the models reliably "
        f"enough to judge an agreement"
    )


def table_reduction(table: Any, dataset: str) -> str:
    """:func:`ranking_reduction`'s text from Table 1 (the VI row's ``ranking_documents`` /
    ``ranking_draws`` and its seeds), for the agreement claim's ``protocol_deviation``."""
    rows = table[(table["dataset"] == dataset) & (table["method"] == "vi")]
    if rows.empty or "ranking_documents_mean" not in rows.columns:
        return ""
    row = rows.iloc[0]
    docs, draws = row["ranking_documents_mean"], row["ranking_draws_mean"]
    if docs != docs or draws != draws:  # NaN: runs from before the ranking record
        return "agreement ranked by the former 30-document, 50-100-draw ELBO (runs from before the ranking record)"
    seeds = int(row["n_seeds"])
    short = docs < PROTOCOL["documents"] or draws < PROTOCOL["elbo_draws"] or seeds < PROTOCOL["seeds"]
    if not short:
        return ""
    return (
        f"agreement ranked over {int(docs)} documents with {int(draws):,} ELBO draws per (document, model), "
        f"{seeds} seed(s) (protocol: >= {PROTOCOL['documents']} documents, >= {PROTOCOL['elbo_draws']:,} draws, "
        f">= {PROTOCOL['seeds']} seeds; the authors: every training document)"
    )


def table_pairs(table: Any, dataset: str) -> int:
    """Pairs of test models an agreement is out of (Table 1's VI row; 45 when absent)."""
    rows = table[(table["dataset"] == dataset) & (table["method"] == "vi")]
    if rows.empty or "pairs" not in rows.columns or rows["pairs"].iloc[0] != rows["pairs"].iloc[0]:
        return 45
    return int(rows["pairs"].iloc[0])
