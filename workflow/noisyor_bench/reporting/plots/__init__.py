"""Figures (matplotlib, Agg backend): shared helpers for deterministic, atomic output.

Every figure is written through :func:`save_figure`: a temporary file in the target
directory renamed into place (an interrupted job leaves no half-written figure), with the
timestamps matplotlib would embed in PDFs removed so equal figures give equal bytes.
"""

from __future__ import annotations

import os
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # no display on cluster nodes; must precede pyplot imports

from matplotlib.figure import Figure  # noqa: E402

from noisyor_bench.infra.io import atomic_path  # noqa: E402

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
