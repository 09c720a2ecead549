"""The layout of a run directory, importable without torch: its key and path (:class:`RunKey`),
its file names, where it lives, how it is published, the generic parts of its records
(``metrics.json`` values, ``curve.csv``) and the one reader of its posterior (``posterior_test.npz``).

Tables and figures read finished runs through this module; writing a run is
:func:`noisyor_bench.experiments.acp.runs.execute_run` (ACP), and the APE and aviPAM run writers.
Every run writer builds its files in :func:`partial_dir` and ends with
:func:`publish_run_dir`, so a run directory is either complete or absent and a rerun
replaces the previous one only once it has finished.
"""

from __future__ import annotations

import csv
import io
import math
import os
import re
import shutil
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePath
from typing import Any

import numpy as np

from noisyor_bench.inference.convergence import Convergence
from noisyor_bench.inference.fitting import EpochRecord
from noisyor_bench.infra.errors import DataError
from noisyor_bench.infra.integrity import read_run_record, seal_record, verified_run_file
from noisyor_bench.infra.io import load_npz, lock_run_partial, release_run_partial, write_json_atomic

METRICS_FILE = "metrics.json"
POSTERIOR_FILE = "posterior_test.npz"
CURVE_FILE = "curve.csv"
CHECKPOINT_FILE = "checkpoint.pt"
SPEC_FILE = "spec.json"


RUNS_DIR = "runs"
"""The folder of every run directory under the results directory."""


_WILDCARD = re.compile(r"\{\w+\}")


def _number(value: int | str) -> str:
    """An ``n``/``seed`` field: an integer, or a Snakemake wildcard such as ``"{n}"`` kept as it is
    (the rules declare their run paths with the same functions as the code that writes them)."""
    return value if isinstance(value, str) and _WILDCARD.fullmatch(value) else str(int(value))


def cell_path(experiment: str, dataset: str, method: str, n_train: int | str) -> str:
    """``<experiment>/<dataset>/<method>/n<N_train>``: the folder of a cell's seeds (under ``runs/``;
    the hyperparameter search keeps its draws under the same path in ``search/``)."""
    return f"{experiment}/{dataset}/{method}/n{_number(n_train)}"


def _seed_path(cell: str, seed: int | str) -> str:
    return f"{cell}/seed{_number(seed)}"


def run_path(cell: str, seed: int | str, file: str | None = None) -> str:
    """``runs/<cell>/seed<s>[/<file>]``, relative to the results directory: the one spelling of
    a run's place.  ``cell`` is a :func:`cell_path`; :class:`RunKey` builds its directories with
    this function and the rules declare theirs with it (rules/common.smk: ``RUN``), so any field
    may be a Snakemake wildcard (``"{seed}"``, or ``"{cell}"`` for a whole cell path)."""
    path = f"{RUNS_DIR}/{_seed_path(cell, seed)}"
    return f"{path}/{file}" if file else path


_N_PART = re.compile(r"n(\d+)")
_SEED_PART = re.compile(r"seed(\d+)")


@dataclass(frozen=True)
class RunKey:
    """The identity of one run and so its place: ``<experiment>/<dataset>/<method>/n<N>/seed<s>``
    under ``runs/`` (the same five keys as its ``metrics.json``).  Every paper's cells build
    their run paths through it (ACP's grid cells, aviPAM's cells, APE and APE on noisy-OR)."""

    experiment: str
    dataset: str
    method: str
    n_train: int
    seed: int

    @property
    def cell_path(self) -> str:
        """The path without the seed (:func:`cell_path`)."""
        return cell_path(self.experiment, self.dataset, self.method, self.n_train)

    @property
    def path(self) -> str:
        """``<experiment>/<dataset>/<method>/n<N_train>/seed<seed>``, relative to ``runs/``."""
        return _seed_path(self.cell_path, int(self.seed))

    def directory(self, results_dir: str | Path) -> Path:
        """``results_dir/runs/<path>`` (no check of the names: :func:`run_dir` checks them)."""
        return Path(results_dir) / run_path(self.cell_path, int(self.seed))

    @classmethod
    def from_path(cls, path: str | PurePath) -> RunKey:
        """The key of a run directory path: its last five components
        ``<experiment>/<dataset>/<method>/n<N>/seed<s>`` (anything before them, e.g.
        ``results/runs/``, is ignored).  ValueError if the path does not end that way."""
        parts = PurePath(path).parts
        if len(parts) >= 5:
            n_part, seed_part = _N_PART.fullmatch(parts[-2]), _SEED_PART.fullmatch(parts[-1])
            if n_part and seed_part:
                return cls(parts[-5], parts[-4], parts[-3], int(n_part.group(1)), int(seed_part.group(1)))
        raise ValueError(f"{path}: not a run directory <experiment>/<dataset>/<method>/n<N>/seed<s>")


def run_dir(
    results_dir: str | Path, experiment: str, dataset: str, method: str, n_train: int, seed: int
) -> Path:
    """``results_dir/runs/<experiment>/<dataset>/<method>/n<N_train>/seed<seed>``; names that
    would leave ``results_dir/runs`` (``..``, ``/``) are a ConfigError."""
    from noisyor_bench.experiments.config import check_name

    check_name(experiment, "experiment")
    check_name(dataset, "dataset name")
    check_name(method, "method")
    return RunKey(experiment, dataset, method, int(n_train), int(seed)).directory(results_dir)


def check_out_dir(out_dir: str | Path, key: RunKey, option: str = "--out-dir") -> Path:
    """``out_dir`` of a run writer, checked against the run it writes: its names (as
    :func:`run_dir`) and its last five components, which must be ``key``'s path, so that the
    folder a rule declares and the identity its ``metrics.json`` records agree (ConfigError)."""
    from noisyor_bench.experiments.config import check_name
    from noisyor_bench.infra.errors import ConfigError

    check_name(key.experiment, "experiment")
    check_name(key.dataset, "dataset name")
    check_name(key.method, "method")
    try:
        found = RunKey.from_path(out_dir)
    except ValueError:
        found = None
    if found != key:
        raise ConfigError(
            f"{option} {out_dir}: expected a run folder ending in {key.path} (the run it writes)"
        )
    return Path(out_dir)


def partial_dir(out_dir: str | Path) -> Path:
    """The working directory of a run in progress: ``<out_dir>.partial``."""
    out = Path(out_dir)
    return out.with_name(out.name + ".partial")


def _old_dir(out_dir: Path) -> Path:
    return out_dir.with_name(out_dir.name + ".old")


def claim_partial_dir(out_dir: str | Path) -> Path:
    """``<out_dir>.partial``, created if needed and locked for this process (one writer per run:
    a job orphaned by a killed Snakemake still writing it makes this a UserError naming its pid,
    :func:`~noisyor_bench.infra.io.lock_run_partial`); its contents are kept (resume state)."""
    work = partial_dir(out_dir)
    lock_run_partial(work)
    return work


def empty_dir(work: Path) -> None:
    """Remove what ``work`` holds but keep the directory (and so the lock held on it)."""
    for entry in work.iterdir():
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        else:
            entry.unlink()


def fresh_partial_dir(out_dir: str | Path) -> Path:
    """An empty working directory ``<out_dir>.partial``, locked, for a run that starts from
    scratch (what a killed earlier attempt left there is removed).  ``out_dir`` itself is
    untouched: a finished run stays until :func:`publish_run_dir` replaces it."""
    work = claim_partial_dir(out_dir)
    empty_dir(work)
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
    release_run_partial(work)
    return out


def load_posterior(run_dir: str | Path, need: Sequence[str] = ("theta",)) -> dict[str, np.ndarray]:
    """The run's ``posterior_test.npz`` (``q``, ``theta``, ``theta0``, ``mu``) with the arrays
    ``need`` present: the one reader of a run's posterior (DataError naming the file otherwise),
    checked first against the sha256 its run recorded (:func:`verified_run_file`)."""
    path = verified_run_file(Path(run_dir) / POSTERIOR_FILE)
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


# ---------------------------------------------------------------------------------- run records
CURVE_COLUMNS = ("epoch", "train_nelbo", "val_nelbo", "seconds")


def json_safe(metrics: dict[str, Any]) -> dict[str, Any]:
    """Replace non-finite floats by ``None`` (strict JSON) and list them in ``nonfinite_metrics``."""
    out, bad = {}, []
    for key, value in metrics.items():
        if isinstance(value, float) and not math.isfinite(value):
            out[key] = None
            bad.append(f"{key}={value}")
        else:
            out[key] = value
    out["nonfinite_metrics"] = bad
    return out


def json_safe_nested(values: Mapping[str, Any]) -> dict[str, Any]:
    """Non-finite floats of a flat mapping as ``None`` (strict JSON)."""
    return {k: None if isinstance(v, float) and not math.isfinite(v) else v for k, v in values.items()}


def convergence_keys(verdict: Convergence) -> dict[str, Any]:
    """metrics.json's ``converged`` (true / false / null) and ``convergence`` (the numbers)."""
    return {"converged": verdict.converged, "convergence": json_safe_nested(verdict.as_dict())}


def curve_csv(records: list[EpochRecord]) -> str:
    """``curve.csv`` of epoch records: ``epoch, train_nelbo, val_nelbo, seconds``, then
    ``cpu_seconds`` where a record has it, then the sorted union of ``extra`` keys."""
    extras = sorted({k for r in records for k in r.extra})
    cpu = ["cpu_seconds"] if any(r.cpu_seconds is not None for r in records) else []
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow([*CURVE_COLUMNS, *cpu, *extras])
    for r in records:
        own = [r.cpu_seconds] if cpu else []
        row = [r.epoch, r.train_nelbo, r.val_nelbo, r.seconds, *own, *(r.extra.get(k) for k in extras)]
        writer.writerow(["" if v is None else repr(float(v)) if isinstance(v, float) else v for v in row])
    return buf.getvalue()


def write_metrics(path: str | Path, values: Mapping[str, Any]) -> None:
    """Write a run's ``metrics.json`` sealed with its own sha256 (``provenance.self_sha256``):
    the one writer of run records, so that an edit made afterwards is refused where the record
    is consumed (:func:`read_metrics_record`)."""
    write_json_atomic(path, seal_record(values))


def read_metrics_record(path: str | Path) -> dict[str, Any]:
    """A run's ``metrics.json`` (the file, or ``<run dir>/metrics.json``) for consumers: its
    self-hash and the plausibility of its metrics checked (DataError naming file, key, value)."""
    p = Path(path)
    p = p / METRICS_FILE if p.is_dir() else p
    return read_run_record(p, f"{METRICS_FILE} not found (did the run finish?)")


__all__ = [
    "CHECKPOINT_FILE",
    "CURVE_COLUMNS",
    "CURVE_FILE",
    "METRICS_FILE",
    "POSTERIOR_FILE",
    "RUNS_DIR",
    "SPEC_FILE",
    "RunKey",
    "cell_path",
    "check_out_dir",
    "claim_partial_dir",
    "convergence_keys",
    "curve_csv",
    "empty_dir",
    "fresh_partial_dir",
    "json_safe",
    "json_safe_nested",
    "load_posterior",
    "partial_dir",
    "publish_run_dir",
    "read_metrics_record",
    "run_dir",
    "run_path",
    "write_metrics",
]
