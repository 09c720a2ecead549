"""Weight patterns as pictures (paper Fig. 2a/2b: generating patterns; Fig. 4: learned ones).

Image datasets: one panel per latent k showing column theta_:k reshaped to the image, black
= large rate, white = 0, with the leak theta0 as the last panel (as in Fig. 2).  Other
datasets (SYN-RANDOM): the D x K matrix as one heatmap, the leak as an extra column.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from typing import Literal

import matplotlib.pyplot as plt  # noqa: E402  (backend chosen in reporting/plots.py)
import numpy as np

from noisyor_bench.reporting.plots import save_figure

_CMAP = "gray_r"


def _checked(theta: np.ndarray, leak: np.ndarray | None) -> tuple[np.ndarray, np.ndarray | None]:
    theta = np.asarray(theta, dtype=np.float64)
    if theta.ndim != 2 or theta.size == 0:
        raise ValueError(f"theta must be a non-empty (D, K) array, got shape {theta.shape}")
    if not np.all(np.isfinite(theta)) or np.any(theta < 0):
        raise ValueError("theta must be finite and non-negative")
    if leak is not None:
        leak = np.asarray(leak, dtype=np.float64)
        if leak.shape != (theta.shape[0],) or not np.all(np.isfinite(leak)) or np.any(leak < 0):
            raise ValueError(
                f"leak must be finite, non-negative, of shape ({theta.shape[0]},); got {leak.shape}"
            )
    return theta, leak


def _positive_or_one(x: float) -> float:
    return x if x > 0 else 1.0


def plot_patterns(
    theta: np.ndarray,
    image_shape: tuple[int, int] | None,
    path_png: str | os.PathLike[str],
    path_pdf: str | os.PathLike[str] | None = None,
    title: str | None = None,
    leak: np.ndarray | None = None,
    *,
    scale: Literal["panel", "common"] = "panel",
    labels: Sequence[str] | None = None,
    ncols: int | None = None,
) -> None:
    """Draw the columns of a non-negative ``theta`` (D, K); write PNG (and PDF) atomically.

    ``image_shape`` (rows, cols) with rows*cols = D gives a grid of image panels; None gives
    a heatmap.  ``scale``: 'panel' maps each panel's own maximum to black (shapes of learned
    weights of different strength stay visible), 'common' uses the maximum over all of
    theta (strengths comparable).  The leak panel always uses the common maximum, so a 1%
    leak looks faint next to 0.8-probability weights instead of black.  Each panel is
    labelled with its maximum as a probability ``1 - exp(-theta)``.
    """
    theta, leak = _checked(theta, leak)
    if scale not in ("panel", "common"):
        raise ValueError(f"scale must be 'panel' or 'common', got {scale!r}")
    d, k = theta.shape
    if labels is not None and len(labels) != k:
        raise ValueError(f"labels: {len(labels)} given for {k} patterns")
    if image_shape is not None:
        if len(image_shape) != 2 or int(image_shape[0]) * int(image_shape[1]) != d:
            raise ValueError(f"image_shape {image_shape} does not hold D={d} pixels")
        fig = _image_grid(theta, (int(image_shape[0]), int(image_shape[1])), leak, scale, labels, ncols)
    else:
        fig = _heatmap(theta, leak)
    if title:
        fig.suptitle(title, fontsize=10)
    try:
        save_figure(fig, path_png, path_pdf)
    finally:
        plt.close(fig)


def _prob(rate: float) -> float:
    return -math.expm1(-rate)


def _image_grid(
    theta: np.ndarray,
    shape: tuple[int, int],
    leak: np.ndarray | None,
    scale: str,
    labels: Sequence[str] | None,
    ncols: int | None,
) -> plt.Figure:
    k = theta.shape[1]
    n = k + (leak is not None)
    cols = ncols or math.ceil(math.sqrt(n))
    rows = math.ceil(n / cols)
    common = _positive_or_one(max(theta.max(), leak.max() if leak is not None else 0.0))
    fig, axes = plt.subplots(
        rows, cols, figsize=(1.7 * cols, 1.85 * rows + 0.4), squeeze=False, layout="constrained"
    )
    names = list(labels) if labels is not None else [f"k={j + 1}" for j in range(k)]
    for j, ax in enumerate(axes.flat):
        if j >= n:
            ax.axis("off")
            continue
        if j < k:
            values, name = theta[:, j], names[j]
            vmax = _positive_or_one(values.max()) if scale == "panel" else common
        else:
            assert leak is not None
            values, name, vmax = leak, "leak", common
        ax.imshow(values.reshape(shape), cmap=_CMAP, vmin=0.0, vmax=vmax, interpolation="nearest")
        ax.set_title(f"{name}\nmax p={_prob(values.max()):.2f}", fontsize=7)
        ax.set_xticks([])
        ax.set_yticks([])
        for spine in ax.spines.values():
            spine.set_linewidth(0.5)
    return fig


def _heatmap(theta: np.ndarray, leak: np.ndarray | None) -> plt.Figure:
    d, k = theta.shape
    vmax = _positive_or_one(max(theta.max(), leak.max() if leak is not None else 0.0))
    width = min(12.0, 3.0 + 0.02 * k)
    height = min(10.0, 2.5 + 0.015 * d)
    if leak is None:
        fig, ax = plt.subplots(figsize=(width, height), layout="constrained")
        axes = [ax]
    else:
        fig, axes = plt.subplots(
            1,
            2,
            figsize=(width + 0.6, height),
            gridspec_kw={"width_ratios": [max(k, 1), max(k / 25.0, 1.0)]},
            layout="constrained",
        )
    im = axes[0].imshow(theta, cmap=_CMAP, vmin=0.0, vmax=vmax, aspect="auto", interpolation="nearest")
    axes[0].set_xlabel("latent k")
    axes[0].set_ylabel("observed i")
    axes[0].set_title(r"$\theta_{ik}$", fontsize=9)
    if leak is not None:
        axes[1].imshow(leak[:, None], cmap=_CMAP, vmin=0.0, vmax=vmax, aspect="auto", interpolation="nearest")
        axes[1].set_xticks([])
        axes[1].set_yticks([])
        axes[1].set_title(r"leak $\theta_{i0}$", fontsize=9)
    fig.colorbar(im, ax=list(axes), label="rate (black = large)", shrink=0.8)
    return fig
