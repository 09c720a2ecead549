"""Supplement Figs. 4-6 (Section 5.1): t-SNE of the test-set posteriors, and a number for it.

The supplement shows 2-D t-SNE maps of ``q(z|x)`` on the Reuters test set, coloured by
category, for AVI and ACP at one large and two small N_train, one figure per K, and reads them
as "with a small training set the acq and money-fx features learned by AVI tend to fuse
together, while with ACP we can still distinguish the three categories".

Points: test documents with exactly one of the three labels (a multi-label document has no
single colour).  Embedding: ``sklearn.manifold.TSNE`` (2-D, PCA initialisation, fixed
``random_state``, a fixed number of threads); the perplexity is the configured one, capped at ``(n - 1) / 3`` for tiny
inputs (the usual bound for the bandwidth search to succeed; scikit-learn requires < n).

Companion (so the visual claim is checkable): the **k-nearest-neighbour accuracy** of the
category in the 2-D embedding, leave-one-out (each point's ``k`` nearest *other* points vote;
a tied vote goes to the tied class met first among the neighbours, nearest first).  It is
high when categories form separate regions and near the majority-class rate when they fuse.
We also report the same accuracy in the K-dimensional posterior space (no t-SNE randomness)
and the silhouette score of the categories in the embedding.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from noisyor_bench.experiments.rundir import load_posterior
from noisyor_bench.infra.errors import DataError
from noisyor_bench.reporting.acp.text_runs import add_convergence_columns

ARTIFACT = "tsne"
DEFAULT_NEIGHBORS = 5
DEFAULT_PERPLEXITY = 30.0
_BLOCK = 1024  # rows of the distance matrix computed at once


def single_label(y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(mask, labels)``: documents with exactly one label, and that label's index."""
    y = np.asarray(y)
    mask = y.sum(axis=1) == 1
    return mask, np.argmax(y[mask], axis=1).astype(np.int64)


def effective_perplexity(perplexity: float, n: int) -> float:
    """The configured perplexity, capped at ``(n - 1) / 3`` (DataError below 4 points)."""
    if n < 4:
        raise DataError(f"t-SNE needs at least 4 points, got {n}")
    return float(min(perplexity, (n - 1) / 3.0))


def embed(features: np.ndarray, perplexity: float, seed: int, threads: int = 1) -> tuple[np.ndarray, float]:
    """2-D t-SNE embedding of ``features`` and its final KL divergence.

    The Barnes-Hut gradient runs on OpenMP threads and its sums depend on their number, so the
    thread count is fixed (default 1) to make the map reproducible; it is also 2-4x faster
    than letting OpenMP take every core of a busy machine.
    """
    from sklearn.manifold import TSNE
    from threadpoolctl import threadpool_limits

    x = np.asarray(features, dtype=np.float64)
    tsne = TSNE(
        n_components=2,
        perplexity=effective_perplexity(perplexity, x.shape[0]),
        init="pca",
        random_state=seed,
        n_jobs=threads,
    )
    with threadpool_limits(limits=threads):
        points = tsne.fit_transform(x)
    return points, float(tsne.kl_divergence_)


def knn_predict(points: np.ndarray, labels: np.ndarray, k: int = DEFAULT_NEIGHBORS) -> np.ndarray:
    """Leave-one-out k-NN vote of every point (Euclidean; ties -> class of the nearest tied neighbour)."""
    pts = np.asarray(points, dtype=np.float64)
    labels = np.asarray(labels, dtype=np.int64)
    n = pts.shape[0]
    if not 1 <= k < n:
        raise ValueError(f"k must be in [1, {n - 1}] for {n} points; got {k}")
    n_classes = int(labels.max()) + 1
    sq = np.einsum("ij,ij->i", pts, pts)
    out = np.empty(n, dtype=np.int64)
    for start in range(0, n, _BLOCK):
        stop = min(n, start + _BLOCK)
        d2 = sq[start:stop, None] + sq[None, :] - 2.0 * pts[start:stop] @ pts.T
        d2[np.arange(stop - start), np.arange(start, stop)] = np.inf  # never vote for yourself
        nearest = np.argsort(d2, axis=1, kind="stable")[:, :k]  # equal distances: lower index first
        votes = labels[nearest]  # (rows, k), nearest first
        counts = np.zeros((stop - start, n_classes), dtype=np.int64)
        first = np.full((stop - start, n_classes), k, dtype=np.int64)
        rows = np.arange(stop - start)
        for j in range(k - 1, -1, -1):  # backwards, so `first` ends at the earliest position
            np.add.at(counts, (rows, votes[:, j]), 1)
            first[rows, votes[:, j]] = j
        out[start:stop] = np.argmax(counts * (k + 1) - first, axis=1)
    return out


def knn_accuracy(points: np.ndarray, labels: np.ndarray, k: int = DEFAULT_NEIGHBORS) -> float:
    """Percent of points whose leave-one-out k-NN vote is their own label."""
    return float(100.0 * np.mean(knn_predict(points, labels, k) == np.asarray(labels)))


def silhouette(points: np.ndarray, labels: np.ndarray) -> float:
    """Mean silhouette of the labels as clusters (NaN with fewer than 2 labels present)."""
    from sklearn.metrics import silhouette_score

    if len(np.unique(labels)) < 2:
        return float("nan")
    return float(silhouette_score(points, labels, metric="euclidean"))


@dataclass(frozen=True)
class Panel:
    """One t-SNE panel: a run's embedding with its category labels and numbers."""

    method: str
    K: int
    n_train: int
    seed: int
    points: np.ndarray  # (n, 2)
    labels: np.ndarray  # (n,) index into label_names
    knn_acc_2d: float
    knn_acc_q: float
    silhouette_2d: float
    neighbors: int = DEFAULT_NEIGHBORS


def tsne_panels(
    runs: pd.DataFrame,
    y_test: np.ndarray,
    perplexity: float,
    seed: int,
    k: int = DEFAULT_NEIGHBORS,
    threads: int = 1,
) -> list[Panel]:
    """Embed every run's test posterior (single-label documents) and score the separation."""
    mask, labels = single_label(y_test)
    panels = []
    for r in runs.to_dict("records"):
        q = load_posterior(r["run_dir"], ("q",))["q"]
        if q.ndim != 2 or q.shape[0] != y_test.shape[0]:
            raise DataError(
                f"{r['run_dir']}/posterior_test.npz: q has shape {q.shape}, expected "
                f"({y_test.shape[0]} test documents, K)"
            )
        feats = q[mask]
        points, _ = embed(feats, perplexity, seed, threads)
        panels.append(
            Panel(
                str(r["method"]),
                int(q.shape[1]),
                int(r["n_train"]),
                int(r["seed"]),
                points,
                labels,
                knn_accuracy(points, labels, k),
                knn_accuracy(feats, labels, k),
                silhouette(points, labels),
                k,
            )
        )
    return panels


def tsne_table(
    panels: Sequence[Panel], runs: pd.DataFrame, perplexity: float, seed: int, label_names: Sequence[str]
) -> pd.DataFrame:
    """One row per panel: identity, points, the separation numbers and the majority-class rate."""
    dirs = {
        (r["method"], int(r["n_train"]), int(r["seed"]), int(r["K"])): r["run_dir"]
        for r in runs.to_dict("records")
    }
    rows: list[dict[str, Any]] = []
    for p in panels:
        counts = np.bincount(p.labels, minlength=len(label_names))
        rows.append(
            {
                "artifact": ARTIFACT,
                "method": p.method,
                "K": p.K,
                "n_train": p.n_train,
                "seed": p.seed,
                "n_points": int(p.labels.size),
                "perplexity": effective_perplexity(perplexity, p.labels.size),
                "tsne_seed": seed,
                "neighbors": p.neighbors,
                "knn_acc_2d": p.knn_acc_2d,
                "knn_acc_q": p.knn_acc_q,
                "silhouette_2d": p.silhouette_2d,
                "majority_rate": float(100.0 * counts.max() / counts.sum()),
                "category_counts": ";".join(f"{n}:{int(c)}" for n, c in zip(label_names, counts)),
                "run_dir": dirs.get((p.method, p.n_train, p.seed, p.K), ""),
            }
        )
    return add_convergence_columns(pd.DataFrame(rows), runs)


def tsne_markdown(table: pd.DataFrame) -> str:
    """The separation numbers per panel (one row per K, N_train, method)."""
    from noisyor_bench.reporting.methods import method_label, method_rank
    from noisyor_bench.reporting.tables import markdown_table

    t = table.assign(_m=table["method"].map(method_rank)).sort_values(
        ["K", "n_train", "_m"], ascending=[True, False, True]
    )
    rows = [
        [
            int(r["K"]),
            int(r["n_train"]),
            method_label(r["method"]),
            int(r["seed"]),
            int(r["n_points"]),
            f"{r['knn_acc_2d']:.1f}",
            f"{r['knn_acc_q']:.1f}",
            f"{r['silhouette_2d']:.3f}",
            f"{r['majority_rate']:.1f}",
        ]
        for r in t.to_dict("records")
    ]
    k = ",".join(str(int(v)) for v in sorted(table["neighbors"].unique())) if len(table) else "?"
    perp = ",".join(f"{v:g}" for v in sorted(table["perplexity"].unique())) if len(table) else "?"
    return (
        "# Supplement Figs. 4-6: how well the test posteriors separate the Reuters categories\n\n"
        f"Single-label test documents only. t-SNE: 2-D, perplexity {perp}, PCA init, random_state "
        f"{int(table['tsne_seed'].iloc[0]) if len(table) else '?'}. **{k}-NN accuracy** (percent, leave-one-out "
        "vote of the nearest other points) of the category in the 2-D map and in the K-dimensional posterior "
        "space q(z|x); silhouette of the categories in the 2-D map; majority-class rate = the accuracy of "
        "always answering the most frequent category (fully fused categories score about this).\n\n"
        + markdown_table(
            [
                "K",
                "N_train",
                "method",
                "seed",
                "points",
                "k-NN acc. 2-D (%)",
                "k-NN acc. q (%)",
                "silhouette 2-D",
                "majority rate (%)",
            ],
            rows,
        )
    )
