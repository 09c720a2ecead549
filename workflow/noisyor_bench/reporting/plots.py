"""Figures (matplotlib, Agg backend): helpers every paper's figures share.

Every figure is written through :func:`save_figure`: a temporary file in the target
directory renamed into place (an interrupted job leaves no half-written figure), with the
timestamps matplotlib would embed in PDFs removed so equal figures give equal bytes.  Figures
use one seaborn style (:func:`figure_style`) and the registry's colour and marker per method
(:mod:`noisyor_bench.reporting.methods`).  This package holds only what is not tied to one paper
(and :mod:`.patterns`, pictures of any noisy-OR weight matrix); a paper's own figures live with
that paper (e.g. :mod:`noisyor_bench.reporting.acp.figures`).
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # no display on cluster nodes; must precede pyplot imports

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.axes import Axes  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from noisyor_bench.infra.io import atomic_path  # noqa: E402
from noisyor_bench.reporting.methods import method_colour, method_label, method_marker  # noqa: E402

#: Resolution of PNG figures.
DPI = 150


def save_figure(
    fig: Figure, path_png: str | os.PathLike[str], path_pdf: str | os.PathLike[str] | None = None
) -> None:
    """Write ``fig`` as PNG (and optionally PDF), each atomically, without timestamps."""
    targets: list[tuple[Path, str, dict[str, object]]] = [(Path(path_png), "png", {"Software": None})]
    if path_pdf is not None:
        targets.append((Path(path_pdf), "pdf", {"CreationDate": None, "ModDate": None, "Producer": None}))
    for path, fmt, metadata in targets:
        with atomic_path(path) as tmp:
            fig.savefig(tmp, format=fmt, dpi=DPI, metadata=metadata, bbox_inches="tight")


def figure_style() -> contextlib.ExitStack:
    """Seaborn style scoped to one figure (no global rcParams change)."""
    import seaborn as sns  # imported here: pattern pictures (plots.patterns) do not need it

    stack = contextlib.ExitStack()
    stack.enter_context(sns.axes_style("whitegrid"))
    stack.enter_context(sns.plotting_context("paper", font_scale=1.1))
    return stack


def n_train_tick(n: float) -> str:
    """``1000 -> "1k"``, ``40000 -> "40k"``, ``200 -> "200"`` (as in the paper's Table 4)."""
    n = int(n)
    return f"{n // 1000}k" if n >= 1000 and n % 1000 == 0 else str(n)


def plot_method_curve(ax: Axes, rows: pd.DataFrame, method: str, metric: str) -> None:
    """One method's ``<metric>_mean`` against N_train with its 95% CI as a band (``<metric>_ci95``;
    a missing CI draws no band), in the method's colour, marker and label."""
    g = rows.sort_values("n_train")
    x = g["n_train"].to_numpy(float)
    mean = g[f"{metric}_mean"].to_numpy(float)
    ci = np.nan_to_num(g[f"{metric}_ci95"].to_numpy(float), nan=0.0)
    colour = method_colour(method)
    ax.plot(x, mean, marker=method_marker(method), ms=4, lw=1.6, color=colour, label=method_label(method))
    ax.fill_between(x, mean - ci, mean + ci, color=colour, alpha=0.18, lw=0)
