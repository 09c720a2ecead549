"""The layout of a run directory, importable without torch: its file names, where it lives,
and the one reader of its posterior (``posterior_test.npz``).

Tables and figures read finished runs through this module; writing a run is
:func:`noisyor_bench.experiments.runs.execute_run`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from noisyor_bench.infra.errors import DataError
from noisyor_bench.infra.io import load_npz

METRICS_FILE = "metrics.json"
POSTERIOR_FILE = "posterior_test.npz"
CURVE_FILE = "curve.csv"
CHECKPOINT_FILE = "checkpoint.pt"
SPEC_FILE = "spec.json"


def run_dir(
    results_dir: str | Path, experiment: str, dataset: str, method: str, n_train: int, seed: int
) -> Path:
    """``results_dir/runs/<experiment>/<dataset>/<method>/n<N_train>/seed<seed>``; names that
    would leave ``results_dir/runs`` (``..``, ``/``) are a ConfigError."""
    from noisyor_bench.experiments.config import check_name

    check_name(experiment, "experiment")
    check_name(dataset, "dataset name")
    check_name(method, "method")
    return (
        Path(results_dir) / "runs" / experiment / dataset / method / f"n{int(n_train)}" / f"seed{int(seed)}"
    )


def partial_dir(out_dir: str | Path) -> Path:
    """The working directory of a run in progress: ``<out_dir>.partial``."""
    out = Path(out_dir)
    return out.with_name(out.name + ".partial")


def load_posterior(run_dir: str | Path, need: Sequence[str] = ("theta",)) -> dict[str, np.ndarray]:
    """The run's ``posterior_test.npz`` (``q``, ``theta``, ``theta0``, ``mu``) with the arrays
    ``need`` present: the one reader of a run's posterior (DataError naming the file otherwise)."""
    path = Path(run_dir) / POSTERIOR_FILE
    try:
        arrays = load_npz(path)
    except FileNotFoundError:
        raise DataError(f"{path}: {POSTERIOR_FILE} not found (did the run finish?)") from None
    except (OSError, ValueError) as err:
        raise DataError(f"{path}: not a readable .npz ({err})") from None
    missing = [k for k in need if k not in arrays]
    if missing:
        raise DataError(f"{path}: array(s) {missing} missing")
    return arrays


__all__ = [
    "CHECKPOINT_FILE",
    "CURVE_FILE",
    "METRICS_FILE",
    "POSTERIOR_FILE",
    "SPEC_FILE",
    "load_posterior",
    "partial_dir",
    "run_dir",
]
