"""Fig. 3a sensitivity figure: SVI and LB-CDI metrics against per-datapoint optimisation steps.

Three panels (NELBO, F1, EM) on a symmetric-log step axis (0 = no optimisation), one line per
method, the paper's number of each method as a dashed horizontal line in its colour, the
run's own Fig. 3a setting as a star at the steps it took, and on the NELBO panel the exact
held-out ``-log p(x)`` under the true model (no factorised ``q`` can go below it).
"""

from __future__ import annotations

import os

import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from noisyor_bench.reporting.methods import method_colour, method_label, method_marker, method_rank
from noisyor_bench.reporting.plots import figure_style, save_figure

PANELS: tuple[tuple[str, str], ...] = (
    ("nelbo", "held-out NELBO (nats / point)"),
    ("f1", "macro F1 (%)"),
    ("em", "exact match (%)"),
)
EXACT_COLOR = "#333333"


def plot_sensitivity(
    table: pd.DataFrame,
    path_png: str | os.PathLike[str],
    path_pdf: str | os.PathLike[str] | None = None,
    title: str | None = None,
) -> None:
    """The sensitivity figure from :func:`noisyor_bench.reporting.acp.sensitivity.sensitivity_table`'s table."""
    if table.empty:
        raise ValueError("no sensitivity rows to plot")
    methods = sorted(table["method"].unique(), key=method_rank)
    capped = table[table["setting"] == "capped"]
    own = table[table["setting"] == "fig3a"]
    exact = table["exact_nll"].dropna()
    with figure_style():
        fig = Figure(figsize=(13.0, 3.9), layout="constrained")
        axes = fig.subplots(1, len(PANELS))
        for ax, (metric, ylabel) in zip(axes, PANELS):
            for m in methods:
                color = method_colour(m)
                g = capped[capped["method"] == m].sort_values("steps_cap")
                ax.plot(g["steps_cap"], g[metric], marker=method_marker(m), ms=4, lw=1.6, color=color)
                paper = g[f"paper_{metric}"].dropna()
                if len(paper):
                    ax.axhline(float(paper.iloc[0]), color=color, ls="--", lw=1.2, alpha=0.9)
                o = own[own["method"] == m]
                if len(o):
                    ax.plot(
                        o["steps_taken"],
                        o[metric],
                        marker="*",
                        ms=12,
                        color=color,
                        mec="black",
                        mew=0.6,
                        ls="",
                    )
            if metric == "nelbo" and len(exact):
                ax.axhline(float(exact.iloc[0]), color=EXACT_COLOR, ls=":", lw=1.4)
            ax.set_xscale("symlog", linthresh=1.0)
            ax.set_xlim(0, 1.5 * float(table["steps_taken"].max() or 1))
            ax.set_xlabel("per-datapoint optimisation steps (symlog)")
            ax.set_ylabel(ylabel)
        handles = [
            Line2D([], [], color=method_colour(m), marker=method_marker(m), ms=4, lw=1.6) for m in methods
        ]
        labels = [method_label(m) for m in methods]
        handles += [
            Line2D([], [], color="gray", ls="--", lw=1.2),
            Line2D([], [], color="gray", marker="*", ms=10, mec="black", ls=""),
        ]
        labels += ["paper (same colour)", "Fig. 3a setting (steps it took)"]
        if len(exact):
            handles.append(Line2D([], [], color=EXACT_COLOR, ls=":", lw=1.4))
            labels.append("exact −log p(x)")
        fig.legend(handles, labels, loc="outside lower center", ncol=len(handles), frameon=False)
        dataset = table["dataset"].iloc[0]
        fig.suptitle(
            title
            or f"Fig. 3a sensitivity on {dataset}: held-out metrics against per-datapoint steps "
            "(SVI: Adam steps; LB-CDI: E-step rounds)",
            fontsize=11,
        )
        save_figure(fig, path_png, path_pdf)


__all__ = ["plot_sensitivity"]
