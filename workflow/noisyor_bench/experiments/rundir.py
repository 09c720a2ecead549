"""The layout of a run directory, importable without torch: its file names, where it lives,
how it is published, and the one reader of its posterior (``posterior_test.npz``).

Tables and figures read finished runs through this module; writing a run is
:func:`noisyor_bench.experiments.acp.runs.execute_run` (ACP), and the APE and aviPAM run writers.
Every run writer builds its files in :func:`partial_dir` and ends with
:func:`publish_run_dir`, so a run directory is either complete or absent and a rerun
replaces the previous one only once it has finished.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable, Sequence
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


def _old_dir(out_dir: Path) -> Path:
    return out_dir.with_name(out_dir.name + ".old")


def fresh_partial_dir(out_dir: str | Path) -> Path:
    """An empty working directory ``<out_dir>.partial`` for a run that starts from scratch
    (what a killed earlier attempt left there is removed).  ``out_dir`` itself is untouched:
    a finished run stays until :func:`publish_run_dir` replaces it."""
    work = partial_dir(out_dir)
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    return work


def publish_run_dir(work: str | Path, out_dir: str | Path, drop: Iterable[str] = ()) -> Path:
    """Rename the finished working directory ``work`` onto ``out_dir``; return ``out_dir``.

    The previous run (if any) is first renamed to ``<out_dir>.old`` and removed only after the
    new one is in place, so ``out_dir`` is always a complete run or absent; if the final rename
    fails the previous run is put back.  ``drop``: files of ``work`` not to publish (resume
    state such as a checkpoint).  A ``.old`` left by a publish that was killed is removed.
    """
    work, out = Path(work), Path(out_dir)
    for name in drop:
        (work / name).unlink(missing_ok=True)
    old = _old_dir(out)
    if old.exists():
        shutil.rmtree(old)
    if out.exists():
        os.replace(out, old)
    try:
        os.replace(work, out)
    except OSError:
        if old.exists() and not out.exists():
            os.replace(old, out)
        raise
    if old.exists():
        shutil.rmtree(old)
    return out


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
    "fresh_partial_dir",
    "load_posterior",
    "partial_dir",
    "publish_run_dir",
    "run_dir",
]
