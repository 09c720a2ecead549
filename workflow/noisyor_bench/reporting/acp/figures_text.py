"""Figures of the real-corpus experiments: supplement Fig. 3 (EM vs N_train) and Figs. 4-6 (t-SNE).

Same conventions as :mod:`noisyor_bench.reporting.acp.figures`: the paper's method names and colours,
mean over seeds with a 95% Student-t band, PNG + PDF written atomically and without timestamps.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from noisyor_bench.reporting.acp.tsne import Panel
from noisyor_bench.reporting.methods import method_colour, method_label, method_marker, method_rank
from noisyor_bench.reporting.plots import figure_style, n_train_tick, plot_method_curve, save_figure

# Category colours (Okabe-Ito, distinct from the method colours): earn, acq, money-fx, ...
CATEGORY_COLORS = ("#009E73", "#E69F00", "#CC79A7", "#56B4E9", "#F0E442", "#000000")
BASELINE_STYLE = {"color": "black", "ls": "--", "lw": 1.4}


def plot_classification(
    summary: pd.DataFrame,
    baseline: float | None,
    folds: int,
    path_png: str | os.PathLike[str],
    path_pdf: str | os.PathLike[str] | None = None,
    title: str | None = None,
) -> None:
    """EM vs N_train (log x), one panel per K, a line per method with its CI band, the x baseline dashed."""
    ks = sorted(int(k) for k in summary["K"].unique())
    if not ks:
        raise ValueError("no classification rows to plot")
    methods = sorted(summary["method"].unique(), key=method_rank)
    with figure_style():
        fig = Figure(figsize=(4.0 * len(ks), 3.4), layout="constrained")
        axes = np.atleast_1d(fig.subplots(1, len(ks), sharey=True, squeeze=False).ravel())
        for ax, k in zip(axes, ks):
            d = summary[summary["K"] == k]
            for m in methods:
                g = d[d["method"] == m]
                if not g.empty:
                    plot_method_curve(ax, g, m, "em")
            if baseline is not None:
                ax.axhline(baseline, **BASELINE_STYLE)
            ax.set_xscale("log")
            ticks = sorted(int(n) for n in d["n_train"].unique())
            ax.set_xticks(ticks, [n_train_tick(n) for n in ticks])
            ax.minorticks_off()
            ax.set_title(f"K = {k}", fontsize=10)
            ax.set_xlabel("N_train (log scale)")
        axes[0].set_ylabel(f"EM (%), {folds}-fold CV on the test set")
        handles = [
            Line2D([], [], color=method_colour(m), marker=method_marker(m), ms=4, lw=1.6) for m in methods
        ]
        labels = [method_label(m) for m in methods]
        if baseline is not None:
            handles.append(Line2D([], [], **BASELINE_STYLE))
            labels.append(f"x (raw words): {baseline:.1f}")
        fig.legend(handles, labels, loc="outside lower center", ncol=len(handles), frameon=False)
        n_hi = int(summary["em_n"].max())
        seeds = "1 seed per point, no CI bands" if n_hi < 2 else f"mean over {n_hi} seeds, 95% CI bands"
        fig.suptitle(title or f"Reuters classification from q(z|x): exact match ({seeds})", fontsize=11)
        save_figure(fig, path_png, path_pdf)


def plot_tsne(
    panels: Sequence[Panel],
    label_names: Sequence[str],
    path_png: str | os.PathLike[str],
    path_pdf: str | os.PathLike[str] | None = None,
    title: str | None = None,
) -> None:
    """Rows = method, columns = N_train (large to small), points coloured by category (supplement Figs. 4-6)."""
    if not panels:
        raise ValueError("no t-SNE panels to plot")
    methods = sorted({p.method for p in panels}, key=method_rank)
    ns = sorted({p.n_train for p in panels}, reverse=True)
    by_key = {(p.method, p.n_train): p for p in panels}
    with figure_style():
        fig = Figure(figsize=(3.3 * len(ns), 3.4 * len(methods) + 0.5), layout="constrained")
        axes = fig.subplots(len(methods), len(ns), squeeze=False)
        for i, m in enumerate(methods):
            for j, n in enumerate(ns):
                ax = axes[i][j]
                ax.set_xticks([])
                ax.set_yticks([])
                p = by_key.get((m, n))
                if p is None:
                    ax.set_title(f"{method_label(m)}, N_train = {n}: no run", fontsize=9)
                    continue
                for c in range(len(label_names)):
                    sel = p.labels == c
                    ax.scatter(
                        p.points[sel, 0],
                        p.points[sel, 1],
                        s=3,
                        lw=0,
                        alpha=0.7,
                        color=CATEGORY_COLORS[c % len(CATEGORY_COLORS)],
                        rasterized=True,
                    )
                ax.set_title(f"{method_label(m)}, N_train = {n}\n{_knn_text(p)}", fontsize=9)
        handles = [
            Line2D([], [], ls="", marker="o", ms=5, color=CATEGORY_COLORS[c % len(CATEGORY_COLORS)])
            for c in range(len(label_names))
        ]
        fig.legend(handles, list(label_names), loc="outside lower center", ncol=len(handles), frameon=False)
        k = panels[0].K
        seed = panels[0].seed
        fig.suptitle(
            title
            or f"t-SNE of the test-set posteriors q(z|x), K = {k} (seed {seed}; single-label test documents)",
            fontsize=11,
        )
        save_figure(fig, path_png, path_pdf)


def _knn_text(p: Panel) -> str:
    acc = "n/a" if math.isnan(p.knn_acc_2d) else f"{p.knn_acc_2d:.1f}%"
    return f"{p.neighbors}-NN accuracy {acc}"
