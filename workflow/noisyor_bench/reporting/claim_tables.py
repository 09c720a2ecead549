"""Where the files beside a headline ``claims.csv`` live. Light (the standard library only): the
writer (reporting.evidence), the pages (reporting.summary) and ``explain`` (which loads no
statistics library) name them through it."""

from __future__ import annotations

from pathlib import Path


def timing_path(claims_csv: str | Path) -> Path:
    """Where the wall-clock times of a headline ``claims.csv`` go: ``claims_timing.csv`` beside it."""
    path = Path(claims_csv)
    return path.with_name(f"{path.stem}_timing.csv")
