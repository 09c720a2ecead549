"""The one dataset loader: a dataset ``.npz`` read and checked (keys, shapes, valid ground truth).

Every reader of a dataset -- a run, ``noisyor-bench acp-baselines``, the tables'
truth columns, the sensitivity study -- goes through :func:`load_dataset`, so a broken file is
refused everywhere with the same message naming the file and the array.  A synthetic dataset
carries its generative ground truth (``theta``, ``theta0``, ``mu``, the latents ``z_*``); a
real corpus (paper Section 4.5, supplement 5.1) only the splits ``x_train``, ``x_val``, ``x_test``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from noisyor_bench.infra.errors import DataError
from noisyor_bench.infra.io import load_npz

if TYPE_CHECKING:  # torch only for the model; reading and checking a dataset stays numpy-only
    from noisyor_bench.models.noisyor.model import NoisyOR

REQUIRED_ARRAYS = ("x_train", "x_val", "x_test")
# Ground truth of synthetic datasets: all three or none (real corpora have none).
TRUTH_ARRAYS = ("theta", "theta0", "mu")


def read_dataset(path: str | Path, need: Sequence[str] = ()) -> dict[str, np.ndarray]:
    """The arrays of a dataset ``.npz`` with ``need`` present, not checked further.

    For readers that need only some arrays (e.g. the true ``theta`` of a figure); a run reads
    the whole, checked dataset with :func:`load_dataset`.  DataError naming the file otherwise.
    """
    path = Path(path)
    if not path.is_file():
        raise DataError(f"dataset file {path} does not exist; build it with 'noisyor-bench acp-make-dataset'")
    try:
        data = load_npz(path)
    except Exception as err:  # corrupt zip / pickled arrays
        raise DataError(f"cannot read dataset {path}: {err}") from None
    missing = [k for k in need if k not in data]
    if missing:
        raise DataError(f"dataset {path} lacks arrays {missing}; it holds {sorted(data)}")
    return data


def load_dataset(path: str | Path) -> dict[str, np.ndarray]:
    """Load and check a dataset ``.npz`` (keys and shapes); DataError names file and key."""
    path = Path(path)
    data = read_dataset(path)
    missing = [k for k in REQUIRED_ARRAYS if k not in data]
    truth = [k for k in TRUTH_ARRAYS if k in data]
    if truth and len(truth) < len(TRUTH_ARRAYS):
        missing += [k for k in TRUTH_ARRAYS if k not in data]
    if missing:
        raise DataError(f"dataset {path} lacks arrays {missing}; it holds {sorted(data)}")
    if truth:
        d, k = np.shape(data["theta"]) if np.ndim(data["theta"]) == 2 else (None, None)
        if d is None or np.shape(data["theta0"]) != (d,) or np.shape(data["mu"]) != (k,):
            raise DataError(
                f"dataset {path}: inconsistent parameters theta {np.shape(data['theta'])}, "
                f"theta0 {np.shape(data['theta0'])}, mu {np.shape(data['mu'])}"
            )
    else:  # a real corpus (paper Section 4.5, supplement 5.1): no parameters, no latents
        d, k = (data["x_train"].shape[1] if data["x_train"].ndim == 2 else None), None
        stray = [f"z_{s}" for s in ("train", "val", "test") if f"z_{s}" in data]
        if stray:
            raise DataError(f"dataset {path} has latents {stray} but no ground-truth theta/theta0/mu")
    for split in ("train", "val", "test"):
        x = data[f"x_{split}"]
        if x.ndim != 2 or x.shape[1] != d:
            raise DataError(f"dataset {path}: x_{split} has shape {x.shape}, expected (N, D={d})")
        z = data.get(f"z_{split}")
        if z is not None and z.shape != (x.shape[0], k):
            raise DataError(f"dataset {path}: z_{split} has shape {z.shape}, expected ({x.shape[0]}, K={k})")
    if truth:
        check_generative(data, f"dataset {path}")
    return data


def check_generative(arrays: Mapping[str, np.ndarray], where: str) -> None:
    """Noisy-OR parameters must be valid: finite theta, theta0 >= 0 (failure log-probabilities)
    and prior probabilities mu in (0, 1); otherwise DataError naming the array (an
    invalid truth used to surface as a fake divergence or a traceback in the matching)."""
    for key in ("theta", "theta0"):
        a = np.asarray(arrays[key], dtype=float)
        if not np.all(np.isfinite(a)):
            raise DataError(
                f"{where}: {key} has {int(np.sum(~np.isfinite(a)))} non-finite value(s) (NaN/inf)"
            )
        if np.any(a < 0):
            raise DataError(
                f"{where}: {key} has negative value(s) (min {a.min():.4g}); noisy-OR weights are >= 0"
            )
    mu = np.asarray(arrays["mu"], dtype=float)
    if not np.all((mu > 0) & (mu < 1)):
        raise DataError(
            f"{where}: mu must lie in (0, 1) (prior probabilities); got values in [{np.nanmin(mu):.4g}, {np.nanmax(mu):.4g}]"
        )


def training_rows(data: Mapping[str, np.ndarray], n_train: int, path: str | Path) -> np.ndarray:
    """The first ``n_train`` rows of the training pool (smaller sets are prefixes of larger)."""
    pool = data["x_train"].shape[0]
    if n_train > pool:
        raise DataError(
            f"n_train={n_train} exceeds the training pool of {path} ({pool} rows); "
            f"use n_train <= {pool} or rebuild the dataset with a larger n_train_pool"
        )
    return data["x_train"][:n_train]


def has_truth(data: Mapping[str, np.ndarray]) -> bool:
    """Whether a dataset carries generative ground truth (synthetic) or not (real corpora)."""
    return "theta" in data


def ground_truth(data: Mapping[str, np.ndarray]) -> NoisyOR:
    """The dataset's generative model (synthetic datasets; see :func:`has_truth`)."""
    from noisyor_bench.models.noisyor.model import NoisyOR

    return NoisyOR.from_numpy(data["theta"], data["theta0"], data["mu"])


__all__ = [
    "REQUIRED_ARRAYS",
    "TRUTH_ARRAYS",
    "check_generative",
    "ground_truth",
    "has_truth",
    "load_dataset",
    "read_dataset",
    "training_rows",
]
