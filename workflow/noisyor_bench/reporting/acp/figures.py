"""Paper figures from aggregated runs: Fig. 3b (UB-CDI curve), Fig. 4 / supplement Figs. 1-2
(learned patterns), Fig. 5 (NELBO vs N_train on SYN-RANDOM).

Conventions shared by all figures: the paper's method names, one fixed colour and marker per
method (the registry's Okabe-Ito colour-blind-safe palette), mean over seeds with a 95% Student-t CI band
(no band for a single seed), PNG + PDF written atomically via :func:`save_figure`.
Figures are built on :class:`matplotlib.figure.Figure` objects (no pyplot state).
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure, SubFigure
from matplotlib.lines import Line2D

from noisyor_bench.evaluation.recovery import Recovery, activation_probabilities
from noisyor_bench.reporting.acp.baselines import BASELINE_LABELS
from noisyor_bench.reporting.methods import method_colour, method_label, method_marker, method_rank
from noisyor_bench.reporting.plots import figure_style, n_train_tick, plot_method_curve, save_figure
from noisyor_bench.reporting.statistics import mean_ci

LLUB_COLOR = "#333333"
RECOVERED_EDGE = "#009E73"
MISSED_EDGE = "#D55E00"
PATTERN_CMAP = "gray_r"  # as plots.patterns: black = high probability, white = 0


def mean_band(values: Sequence[float]) -> tuple[float, float, float]:
    """``(mean, low, high)`` of the 95% t-CI over seeds; low = high = mean for one seed."""
    mean, _, n, ci = mean_ci(values)
    if n < 2 or math.isnan(ci):
        return mean, mean, mean
    return mean, mean - ci, mean + ci


# ------------------------------------------------------------------------------ Fig. 3b
def curve_bands(curves: pd.DataFrame, column: str) -> pd.DataFrame:
    """Mean and CI per round of ``column`` over seeds.

    Seeds that converged (stopped) earlier keep their last value for the later rounds -- a
    converged fixed point does not move -- so the mean is always over all seeds.
    """
    wide = curves.pivot_table(index="round", columns="seed", values=column, aggfunc="first").sort_index()
    wide = wide.reindex(range(int(wide.index.min()), int(wide.index.max()) + 1)).ffill()
    rows = [(r, *mean_band(wide.loc[r].dropna().to_numpy())) for r in wide.index]
    return pd.DataFrame(rows, columns=["round", "mean", "low", "high"])


def plot_fig3b(
    curves: pd.DataFrame,
    path_png: str | os.PathLike[str],
    path_pdf: str | os.PathLike[str] | None = None,
    title: str | None = None,
) -> None:
    """UB-CDI learning curve: LL-UB (left axis) and ELBO (right axis) per fixed-point round (paper Fig. 3b)."""
    if curves.empty:
        raise ValueError("no curve rows to plot")
    n_seeds = curves["seed"].nunique()
    with figure_style():
        fig = Figure(figsize=(6.0, 3.8), layout="constrained")
        ax = fig.add_subplot()
        ax2 = ax.twinx()
        lines = []
        for axis, column, color, style, label in (
            (ax, "ll_ub", LLUB_COLOR, "--", "LL-UB (log-likelihood upper bound)"),
            (ax2, "elbo", method_colour("ub-cdi"), "-", "ELBO"),
        ):
            band = curve_bands(curves, column)
            (line,) = axis.plot(band["round"], band["mean"], style, color=color, lw=1.8, label=label)
            axis.fill_between(band["round"], band["low"], band["high"], color=color, alpha=0.2, lw=0)
            axis.set_ylabel(f"{label.split(' (')[0]} (nats / data point)", color=color)
            axis.tick_params(axis="y", colors=color)
            lines.append(line)
        ax2.grid(False)
        ax.set_xlabel("fixed-point round (0 = initial variational parameters)")
        fig.legend(lines, [ln.get_label() for ln in lines], loc="outside lower center", ncol=2, frameon=False)
        band_note = f"mean over {n_seeds} seeds, 95% CI bands" if n_seeds > 1 else "1 seed, no CI band"
        ax.set_title(title or f"UB-CDI learning curve on held-out data ({band_note})", fontsize=10)
        save_figure(fig, path_png, path_pdf)


# ------------------------------------------------------------------------------ Fig. 4 / supp. 1-2
@dataclass(frozen=True)
class PatternRow:
    """One grid row: a learned model drawn in the matched order of the true patterns."""

    label: str
    theta: np.ndarray  # (D, K_learned) learned weights
    theta0: np.ndarray | None  # (D,) learned leak
    recovery: Recovery


def _draw_panel(
    ax: Axes,
    values: np.ndarray,
    shape: tuple[int, int],
    label: str,
    edge: str | None = None,
    vmax: float | None = None,
) -> None:
    """One pattern as an image of p = 1 - exp(-theta); its own maximum is black unless ``vmax`` is given."""
    p = activation_probabilities(values)
    top = float(p.max()) if vmax is None else float(vmax)
    ax.imshow(
        p.reshape(shape), cmap=PATTERN_CMAP, vmin=0.0, vmax=top if top > 0 else 1.0, interpolation="nearest"
    )
    ax.set_xticks([])
    ax.set_yticks([])
    ax.grid(False)
    ax.set_title(label, fontsize=7, pad=2)
    for spine in ax.spines.values():
        spine.set_visible(True)
        spine.set_color(edge or "#999999")
        spine.set_linewidth(2.0 if edge else 0.6)


def plot_pattern_grid(
    theta_true: np.ndarray,
    theta0_true: np.ndarray | None,
    rows: Sequence[PatternRow],
    image_shape: tuple[int, int],
    path_png: str | os.PathLike[str],
    path_pdf: str | os.PathLike[str] | None = None,
    title: str | None = None,
) -> None:
    """Grid of patterns (paper Fig. 4): the true patterns on top, then one row per learned model.

    Learned columns are shown in the order of the true pattern they were matched to (extra
    unmatched columns after them), leak last; a panel's frame is green when the true pattern
    above it counts as recovered, red otherwise; panel titles give the matched similarity.
    """
    shape = (int(image_shape[0]), int(image_shape[1]))
    d, k_true = theta_true.shape
    if shape[0] * shape[1] != d:
        raise ValueError(f"image_shape {shape} does not hold D={d} pixels")
    n_cols = max([k_true] + [r.theta.shape[1] for r in rows]) + 1
    with figure_style():
        fig = Figure(figsize=(0.95 * n_cols + 0.3, 1.25 * (len(rows) + 1) + 0.5), layout="constrained")
        subfigs = fig.subfigures(len(rows) + 1, 1, squeeze=False)[:, 0]
        _pattern_row(
            subfigs[0],
            theta_true,
            theta0_true,
            shape,
            n_cols,
            [f"true {j + 1}" for j in range(k_true)],
            [None] * k_true,
            f"true patterns ({k_true}) and leak",
        )
        for sub, row in zip(subfigs[1:], rows):
            order = row.recovery.order()
            labels, edges = [], []
            for pos, col in enumerate(order):
                if pos < k_true and row.recovery.assignment[pos] == col:
                    ok = bool(row.recovery.recovered[pos])
                    labels.append(f"{row.recovery.matched[pos]:.2f}")
                    edges.append(RECOVERED_EDGE if ok else MISSED_EDGE)
                else:
                    labels.append("unmatched")
                    edges.append(None)
            _pattern_row(sub, row.theta[:, order], row.theta0, shape, n_cols, labels, edges, row.label)
        key = (
            "panel title: matched cosine similarity (max p = strongest pixel); frame green = recovered, "
            "red = not recovered; images show p = 1 − exp(−θ), black = panel maximum"
        )
        fig.suptitle(f"{title}\n{key}" if title else key, fontsize=9)
        save_figure(fig, path_png, path_pdf)


def _pattern_row(
    sub: SubFigure,
    theta: np.ndarray,
    theta0: np.ndarray | None,
    shape: tuple[int, int],
    n_cols: int,
    labels: Sequence[str],
    edges: Sequence[str | None],
    row_title: str,
) -> None:
    """Pattern panels (each scaled to its own maximum) and the leak on the row's common scale.

    The leak is usually near-uniform, so its own maximum would paint it black; on the row's
    scale a 1% leak stays faint next to 0.8-probability pattern pixels, as in plots.patterns.
    """
    axes = sub.subplots(1, n_cols, squeeze=False)[0]
    p_max = activation_probabilities(theta).max(axis=0)
    for j, ax in enumerate(axes):
        if j < theta.shape[1]:
            _draw_panel(ax, theta[:, j], shape, f"{labels[j]} (max {p_max[j]:.2f})", edges[j])
        elif j == n_cols - 1 and theta0 is not None:
            common = max(float(p_max.max()), float(activation_probabilities(theta0).max()))
            _draw_panel(
                ax, theta0, shape, f"leak (max {activation_probabilities(theta0).max():.2f})", vmax=common
            )
        else:
            ax.axis("off")
    sub.suptitle(row_title, fontsize=9, x=0.01, ha="left")


def representative_runs(recovery: pd.DataFrame) -> pd.DataFrame:
    """One run per (method, N_train): the run the protocol selects (lowest validation NELBO,
    column ``selected`` of the recovery table), else the seed with the (lower) median mean
    matched similarity -- a typical run, neither the luckiest nor the unluckiest seed.

    The row title lists every seed's count and the success rate, so the picture of one run
    never stands for the whole cell.
    """
    picks = []
    for _, g in recovery.groupby(["method", "n_train"], sort=False):
        chosen = g[g["selected"].fillna(False).astype(bool)] if "selected" in g.columns else g.iloc[:0]
        if len(chosen):
            picks.append(chosen.iloc[0])
            continue
        g = g.sort_values(["mean_similarity", "seed"]).reset_index(drop=True)
        picks.append(g.iloc[(len(g) - 1) // 2])
    out = pd.DataFrame(picks)
    out = out.assign(_r=out["method"].map(method_rank)).sort_values(
        ["_r", "n_train"], ascending=[True, False]
    )
    return out.drop(columns="_r").reset_index(drop=True)


def row_title(pick: Mapping[str, object], recovery: pd.DataFrame) -> str:
    """``"ACP, N_train=200 (seed 1, lowest val. NELBO): 8/8 recovered; all seeds: 8, 8, 7 (all 8 in 2/3)"``."""
    g = recovery[
        (recovery["method"] == pick["method"]) & (recovery["n_train"] == pick["n_train"])
    ].sort_values("seed")
    counts = ", ".join(str(int(v)) for v in g["recovered"])
    n_all = int((g["recovered"].astype(int) == g["n_true"].astype(int)).sum())
    selected = pick.get("selected")
    how = ", lowest val. NELBO" if isinstance(selected, (bool, np.bool_)) and bool(selected) else ""
    return (
        f"{method_label(str(pick['method']))}, N_train={int(pick['n_train'])} (seed {int(pick['seed'])}{how}): "
        f"{int(pick['recovered'])}/{int(pick['n_true'])} recovered; all seeds: {counts} "
        f"(all {int(pick['n_true'])} in {n_all}/{len(g)})"
    )


# ------------------------------------------------------------------------------ Fig. 5
_REFERENCE_STYLES: dict[str, dict[str, Any]] = {
    "indep-bernoulli": {"ls": "--", "marker": "x", "ms": 4},
    "true-nll": {"ls": ":"},
    "true-exact": {"ls": ":"},
    "true-iw": {"ls": ":"},
    "true-elbo": {"ls": "-."},
}


def plot_fig5(
    table: pd.DataFrame,
    path_png: str | os.PathLike[str],
    path_pdf: str | os.PathLike[str] | None = None,
    titles: Mapping[str, str] | None = None,
    title: str | None = None,
) -> None:
    """Held-out NELBO vs N_train (log axis), one panel per dataset, one line per method with a 95% CI band.

    Reference rows (``status = baseline``, :func:`noisyor_bench.reporting.acp.baselines.with_baselines`) are
    drawn as grey lines: the independent Bernoulli against N_train (dashed) and the true model
    (horizontal: exact or IW bound dotted, per-datapoint ELBO dash-dotted).
    """
    refs = table[table["status"] == "baseline"] if "status" in table.columns else table.iloc[0:0]
    table = table[table["status"] != "baseline"] if "status" in table.columns else table
    datasets = sorted(table["dataset"].unique())
    if not datasets:
        raise ValueError("no Fig. 5 rows to plot")
    methods = sorted(table["method"].unique(), key=method_rank)
    n_cols = min(3, len(datasets))
    n_rows = math.ceil(len(datasets) / n_cols)
    with figure_style():
        fig = Figure(figsize=(4.2 * n_cols, 3.3 * n_rows + 0.6), layout="constrained")
        axes = np.atleast_1d(fig.subplots(n_rows, n_cols, squeeze=False).ravel())
        for ax, dataset in zip(axes, datasets):
            d = table[table["dataset"] == dataset]
            for m in methods:
                g = d[d["method"] == m]
                if not g.empty:
                    plot_method_curve(ax, g, m, "nelbo")
            for ref, style in _REFERENCE_STYLES.items():
                g = refs[(refs["dataset"] == dataset) & (refs["method"] == ref)].sort_values("n_train")
                if g.empty:
                    continue
                if ref == "indep-bernoulli":
                    ax.plot(
                        g["n_train"].to_numpy(float),
                        g["nelbo_mean"].to_numpy(float),
                        color="0.35",
                        lw=1.2,
                        **style,
                    )
                else:
                    ax.axhline(float(g["nelbo_mean"].iloc[0]), color="0.2", lw=1.0, **style)
            ax.set_xscale("log")
            ticks = sorted(d["n_train"].unique())
            ax.set_xticks(ticks, [n_train_tick(n) for n in ticks])
            ax.minorticks_off()
            ax.set_title((titles or {}).get(dataset, dataset), fontsize=10)
            ax.set_xlabel("N_train (log scale)")
            ax.set_ylabel("held-out NELBO (nats / point)")
        for ax in axes[len(datasets) :]:
            ax.axis("off")
        handles = [
            Line2D([], [], color=method_colour(m), marker=method_marker(m), ms=4, lw=1.6) for m in methods
        ]
        labels = [method_label(m) for m in methods]
        for ref, style in _REFERENCE_STYLES.items():
            if (refs["method"] == ref).any():
                handles.append(
                    Line2D([], [], color="0.35" if ref == "indep-bernoulli" else "0.2", lw=1.2, **style)
                )
                labels.append(BASELINE_LABELS[ref])
        fig.legend(handles, labels, loc="outside lower center", ncol=min(len(labels), 5), frameon=False)
        n_lo, n_hi = int(table["nelbo_n"].min()), int(table["nelbo_n"].max())
        seeds = (
            "1 seed per point, no CI bands"
            if n_hi < 2
            else (f"mean over {n_lo if n_lo == n_hi else f'{n_lo}-{n_hi}'} seeds, 95% CI bands")
        )
        fig.suptitle(title or f"Generative modelling on SYN-RANDOM: held-out NELBO ({seeds})", fontsize=11)
        save_figure(fig, path_png, path_pdf)
