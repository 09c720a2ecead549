"""Table 5 (paper Section 4.5): the topics of a noisy-OR model learned on NeurIPS titles.

Each latent ``z_k`` is a topic; its words are the ``top_words`` largest ``theta_ik``, i.e. the
largest ``p(x_i = 1 | z_k) = 1 - exp(-theta_ik)`` (eq. 3; :func:`~noisyor_bench.evaluation.pmi.model_topics`).
A topic's coherence is the average pairwise PMI of its words on the reference corpus
(:func:`~noisyor_bench.evaluation.pmi.score_topics`; undefined pairs skipped, see
:data:`UNSEEN_PAIRS_NOTE` and ``docs/text_corpora.md``); a model's score is the mean over all
its topics with a defined PMI (``mean_pmi``, what the paper's header numbers are: "the mean of
the average pairwise PMI across all topics").  The paper shows, per method and N_train, the
best ``best_topics`` topics by PMI; their mean (``mean_pmi_best``) is reported beside the
all-topics mean, since a best-4 selection says little about the other K - 4 topics.

We train several seeds: the table shows the seed whose mean PMI is the median over seeds
(the lower median for an even count, so the shown seed is a real run, not an average), and
reports the mean PMI as mean +- 95% CI over seeds beside the paper's value.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from noisyor_bench.evaluation.pmi import CooccurrenceTable, model_topics, score_topics
from noisyor_bench.experiments.rundir import load_posterior
from noisyor_bench.infra.errors import DataError
from noisyor_bench.reporting.acp.paper import paper_numbers
from noisyor_bench.reporting.acp.text_runs import add_convergence_columns
from noisyor_bench.reporting.methods import method_label, method_rank
from noisyor_bench.reporting.statistics import mean_ci
from noisyor_bench.reporting.tables import CI_NOTE, format_ci, markdown_table

ARTIFACT = "table5"
COLUMNS = (
    "artifact",
    "experiment",
    "dataset",
    "method",
    "n_train",
    "seed",
    "K",
    "topic",
    "rank",
    "words",
    "pmi",
    "pairs_used",
    "pairs_skipped",
    "mu",
    "mean_pmi",
    "topics_defined",
    "mean_pmi_best",
    "best_topics",
    "run_dir",
)  # + n_runs, n_converged of the row's run (text_runs.add_convergence_columns)
DEFAULT_BEST_TOPICS = 4  # the paper's Table 5 shows the best 4 topics

UNSEEN_PAIRS_NOTE = (
    "Unseen pairs: a pair of top words that never co-occurs in a window of the reference corpus (n_ij = 0) has "
    "PMI = ln 0 = −∞; it is **left out** of its topic's average (counted in 'pairs skipped'), as is a pair with a "
    "word absent from the reference (n_i = 0). A topic with no defined pair has no PMI and is left out of the "
    "model's mean ('topics_defined'). Skipping biases PMI upwards for topics of rare words; no smoothing is "
    "applied.\n"
)

REFERENCE_NOTE = (
    "PMI reference corpus: {reference}, a stand-in for the paper's full English Wikipedia (about 2 billion "
    "words). Many pairs of machine-learning words never co-occur in the slice and are skipped, so PMI levels are "
    "**not comparable** with the paper's absolute values; only the comparison between AVI and ACP (same words, "
    "same reference) is meaningful.\n"
)


def read_vocabulary(path: str | Path) -> list[str]:
    """Column order of a corpus (``<name>.vocab.txt``, one word per line)."""
    path = Path(path)
    try:
        words = [w.strip() for w in path.read_text(encoding="utf-8").splitlines() if w.strip()]
    except FileNotFoundError:
        raise DataError(
            f"vocabulary {path} not found; it is written beside the corpus by 'noisyor-bench acp-ingest-neurips'"
        ) from None
    if not words:
        raise DataError(f"vocabulary {path} is empty")
    if len(set(words)) != len(words):
        raise DataError(f"vocabulary {path} has duplicate words")
    return words


def best_mean(per_topic: Sequence[float], best_topics: int) -> float:
    """Mean PMI of the ``best_topics`` highest-PMI topics (topics without a PMI never selected); nan if none."""
    defined = sorted((float(v) for v in per_topic if not math.isnan(v)), reverse=True)[:best_topics]
    return float(np.mean(defined)) if defined else math.nan


def run_topics(
    theta: np.ndarray,
    mu: np.ndarray | None,
    vocabulary: Sequence[str],
    table: CooccurrenceTable,
    top_words: int,
    best_topics: int = DEFAULT_BEST_TOPICS,
) -> pd.DataFrame:
    """One row per topic of one model: words (best first), PMI, pairs used/skipped, PMI rank (1 = best),
    and the model's mean PMI over all topics (``mean_pmi``) and over its best ``best_topics`` (``mean_pmi_best``)."""
    topics = model_topics(theta, vocabulary, top_words)
    scores = score_topics(table, topics)
    ranks = np.empty(len(topics), dtype=np.int64)
    ranks[scores.best(len(topics))] = np.arange(1, len(topics) + 1)
    return pd.DataFrame(
        {
            "topic": np.arange(len(topics)),
            "rank": ranks,
            "words": [" ".join(t) for t in topics],
            "pmi": scores.per_topic,
            "pairs_used": scores.pairs_used,
            "pairs_skipped": scores.pairs_skipped,
            "mu": np.asarray(mu, dtype=np.float64) if mu is not None else np.nan,
            "mean_pmi": scores.mean,
            "topics_defined": int(sum(not math.isnan(v) for v in scores.per_topic)),
            "mean_pmi_best": best_mean(scores.per_topic, best_topics),
            "best_topics": int(best_topics),
        }
    )


def topics_table(
    runs: pd.DataFrame,
    vocabulary: Sequence[str],
    table: CooccurrenceTable,
    top_words: int,
    best_topics: int = DEFAULT_BEST_TOPICS,
) -> pd.DataFrame:
    """Table 5 rows for every run: one row per (method, N_train, seed, topic); see :data:`COLUMNS`."""
    parts = []
    for r in runs.to_dict("records"):
        post = load_posterior(r["run_dir"])
        theta = post["theta"]
        if theta.ndim != 2 or theta.shape[0] != len(vocabulary):
            raise DataError(
                f"{r['run_dir']}/posterior_test.npz: theta has shape {theta.shape}; the vocabulary has "
                f"{len(vocabulary)} words (was the run trained on this corpus?)"
            )
        part = run_topics(theta, post.get("mu"), vocabulary, table, top_words, best_topics)
        for key in ("experiment", "dataset", "method", "n_train", "seed", "run_dir"):
            part[key] = r[key]
        part["K"] = int(theta.shape[1])
        part["artifact"] = ARTIFACT
        parts.append(part)
    frame = add_convergence_columns(pd.concat(parts, ignore_index=True)[list(COLUMNS)], runs)
    frame = frame.assign(_m=frame["method"].map(method_rank))
    frame = frame.sort_values(["n_train", "_m", "seed", "rank"], ascending=[False, True, True, True])
    return frame.drop(columns="_m").reset_index(drop=True)


def run_means(table: pd.DataFrame) -> pd.DataFrame:
    """Mean PMI per run: columns method, n_train, seed, mean_pmi."""
    return table.groupby(["method", "n_train", "seed"], as_index=False, sort=False)["mean_pmi"].first()


def median_seed(per_seed: Mapping[int, float]) -> int:
    """The seed whose value is the (lower) median; NaN values sort last, ties go to the lower seed."""
    if not per_seed:
        raise ValueError("no seeds")
    order = sorted(per_seed, key=lambda s: (math.isnan(per_seed[s]), per_seed[s], s))
    defined = [s for s in order if not math.isnan(per_seed[s])] or order
    return defined[(len(defined) - 1) // 2]


def _paper_rows() -> dict[tuple[str, int], dict[str, Any]]:
    return {(r["method"], int(r["n_train"])): r for r in paper_numbers()["table5"]["rows"]}


def _fmt(v: Any, digits: int = 2) -> str:
    return "" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{float(v):.{digits}f}"


def _block(g: pd.DataFrame, method: str, n_train: int, best_topics: int) -> str:
    """One Table 5 block: the shown seed's best topics as word columns, PMI in the last row."""
    means = {int(k): float(v) for k, v in g.groupby("seed")["mean_pmi"].first().items()}
    shown = median_seed(means)
    mean, _, n, ci = mean_ci([v for v in means.values() if not math.isnan(v)])
    top = g[g["seed"] == shown].sort_values("rank").head(best_topics)
    cols = [t.split(" ") for t in top["words"]]
    depth = max((len(c) for c in cols), default=0)
    header = [f"Topic {i + 1} (z_{int(k)})" for i, k in enumerate(top["topic"])]
    rows = [[c[j] if j < len(c) else "" for c in cols] for j in range(depth)]
    rows.append([f"PMI: {_fmt(v)}" for v in top["pmi"]])
    rows.append([f"({int(u)}/{int(u + k)} pairs)" for u, k in zip(top["pairs_used"], top["pairs_skipped"])])
    title = (
        f"### N_train = {n_train}, {method_label(method)} (mean PMI over all topics = {format_ci(mean, ci, n)} over {n} seed(s); "
        f"shown: seed {shown}, PMI = {_fmt(means[shown])})\n\n"
    )
    return title + markdown_table(header, rows)


def table5_markdown(table: pd.DataFrame, best_topics: int, reference: str = "the Wikipedia slice") -> str:
    """Table 5 layout (best topics per method and N_train) and a summary beside the paper's PMI."""
    paper = _paper_rows()
    blocks, summary = [], []
    keys = sorted(
        {(m, int(n)) for m, n in zip(table["method"], table["n_train"])},
        key=lambda mn: (-mn[1], _paper_method_order(mn[0])),
    )
    for method, n_train in keys:
        g = table[(table["method"] == method) & (table["n_train"] == n_train)]
        blocks.append(_block(g, method, n_train, best_topics))
        means = g.groupby("seed")["mean_pmi"].first()
        mean, _, n, ci = mean_ci([float(v) for v in means if not math.isnan(v)])
        best_means = g.groupby("seed")["mean_pmi_best"].first() if "mean_pmi_best" in g else means * math.nan
        b_mean, _, b_n, b_ci = mean_ci([float(v) for v in best_means if not math.isnan(v)])
        shown = median_seed(dict(means))
        best = g[g["seed"] == shown].sort_values("rank").head(best_topics)["pmi"]
        p = paper.get((method, n_train), {})
        paper_best = p.get("topic_pmi") or []
        used, skipped = int(g["pairs_used"].sum()), int(g["pairs_skipped"].sum())
        summary.append(
            [
                n_train,
                method_label(method),
                format_ci(mean, ci, n),
                format_ci(b_mean, b_ci, b_n),
                "; ".join(f"s{s}: {_fmt(v)}" for s, v in means.items()),
                ", ".join(_fmt(v) for v in best),
                _fmt(p.get("mean_pmi")),
                (", ".join(_fmt(v) for v in paper_best) + f" (mean {_fmt(float(np.mean(paper_best)))})")
                if paper_best
                else ("not legible" if p else ""),
                f"{skipped}/{used + skipped}",
            ]
        )
    k = int(table["K"].iloc[0]) if len(table) else 0
    words = int(table["words"].str.split(" ").map(len).max()) if len(table) else 0
    src = paper_numbers()["table5"]["source"]
    return (
        f"# Table 5: top-{words} words of the best {best_topics} topics on NeurIPS titles (K = {k})\n\n"
        f"Paper: {src['item']}, Section {src['section']}. Topic words: the largest theta_ik of each latent z_k. "
        "PMI of a topic: mean pairwise PMI of its words (5-word windows, natural log; '(u/n pairs)' = pairs with a "
        f"defined PMI); a model's PMI: mean over **all** its {k} topics (as the paper's header numbers), shown beside "
        f"the mean over its best {best_topics} (the paper's selection). Topics are ranked by "
        "PMI; the block shows the seed whose mean PMI is the median over seeds (lower median for an even count).\n\n"
        + UNSEEN_PAIRS_NOTE
        + "\n"
        + REFERENCE_NOTE.format(reference=reference)
        + "\n"
        + "\n".join(blocks)
        + f"\n## Summary: mean PMI over all {k} topics and over the best {best_topics}, ours beside the paper's\n\n"
        + CI_NOTE
        + "\n"
        + markdown_table(
            [
                "N_train",
                "method",
                f"mean PMI, all {k} topics (ours)",
                f"mean PMI, best {best_topics} (ours)",
                "all topics, per seed",
                f"best {best_topics} (shown seed)",
                "paper mean PMI (all topics)",
                f"paper best {best_topics}",
                "pairs skipped (unseen), all seeds",
            ],
            summary,
        )
    )


def _paper_method_order(method: str) -> int:
    """The paper's Table 5 puts ACP left of AVI."""
    return {"acp": 0, "avi": 1}.get(method, 2 + method_rank(method))
