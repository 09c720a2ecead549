"""``figures/ape_noisyor.png``: ranking agreement and ELBO gap per method and family (mean ± 95% CI)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from noisyor_bench.reporting.ape_noisyor.labels import NOISYOR_LABELS
from noisyor_bench.reporting.plots import figure_style, save_figure


def plot_ape_noisyor(table: pd.DataFrame, png: str | Path, pdf: str | Path | None = None) -> None:
    """Two panels: agreement with the exact ranking (left), gap to the exact log p(x) (right)."""
    import matplotlib.pyplot as plt

    families = list(dict.fromkeys(table["dataset"]))
    methods = list(dict.fromkeys(table["method"]))
    width = 0.8 / max(len(families), 1)
    with figure_style():
        fig, axes = plt.subplots(1, 2, figsize=(11, 0.45 * len(methods) + 2.0), sharey=True)
        for ax, metric, title in (
            (axes[0], "agreement_exact", "agreement with the exact ranking (candidate pairs)"),
            (axes[1], "gap_exact", "log p(x) - ELBO (nats per row)"),
        ):
            for j, family in enumerate(families):
                part = table[table["dataset"] == family].set_index("method")
                means = np.array([part[f"{metric}_mean"].get(m, np.nan) for m in methods], dtype=float)
                cis = np.nan_to_num(
                    np.array([part[f"{metric}_ci95"].get(m, np.nan) for m in methods], dtype=float)
                )
                y = np.arange(len(methods)) + (j - (len(families) - 1) / 2) * width
                ax.barh(y, means, height=width, xerr=cis, label=family, capsize=2)
            ax.set_title(title)
            ax.set_yticks(np.arange(len(methods)))
            ax.set_yticklabels([NOISYOR_LABELS.get(m, m) for m in methods])
        axes[0].invert_yaxis()  # the y axis is shared: invert it once (config order, top to bottom)
        axes[0].set_xlim(0.0, 1.0)
        axes[1].legend(title="family", loc="lower right")
        fig.suptitle("APE's question on noisy-OR: unseen models, exact ground truth")
        fig.tight_layout()
        save_figure(fig, png, pdf)
        plt.close(fig)


__all__ = ["plot_ape_noisyor"]
