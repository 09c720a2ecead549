"""Reading run directories into frames: one validated row per run.

A run directory is ``<experiment>/<dataset>/<method>/n<N>/seed<s>/`` with a ``metrics.json``
(and, for some stages, ``posterior_test.npz``); :func:`collect_runs` checks that the path and
the file agree and that no run appears twice.

Convergence: :func:`convergence_counts` gives ``n_runs`` (runs in a cell) and
``n_converged`` (runs whose ``metrics.json`` does not say ``converged: false``; ``null`` --
no training budget to converge, e.g. SVI/LB-CDI/UB-CDI optimised on the held-out set -- and
runs written before the key existed count as converged).  Deterministic cells
(:func:`is_deterministic`) -- the non-amortized methods in inference mode, whose posterior
does not depend on the seed -- are one setting, not a sample.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from noisyor_bench.experiments.rundir import RunKey
from noisyor_bench.infra.errors import DataError, UserError
from noisyor_bench.infra.integrity import read_run_record
from noisyor_bench.infra.io import read_json
from noisyor_bench.reporting.methods import DETERMINISTIC_IN_INFERENCE, method_rank

REQUIRED_KEYS: tuple[str, ...] = ("experiment", "dataset", "method", "n_train", "seed")
IDENTITY_KEYS: tuple[str, ...] = (*REQUIRED_KEYS, "mode", "n_test", "device", "threads")
METRIC_KEYS: tuple[str, ...] = (
    "nelbo",
    "f1",
    "em",
    "exact_nll",
    "exact_elbo",
    "exact_nelbo",
    "exact_gap",
    "iw_nll",
    "train_seconds",
    "eval_seconds",
    "epochs",
)
RUN_KEYS: tuple[str, ...] = ("experiment", "dataset", "method", "n_train", "seed")
SETTINGS_KEYS: tuple[str, ...] = (
    "mode",
    "dataset_sha256",
    "n_latent",
    "n_val",
    "n_test",
    "budget",
    "hparams_resolved",
    "n_samples",
    "iw_samples",
    "exact_max_k",
)
"""What makes a run's numbers besides its key and seed (:func:`run_settings`): the data, the
model size, the training budget, the selected hyperparameters and the evaluation."""


PER_ROW_KEYS: tuple[str, ...] = ("nll_per_row",)
"""Per-row lists of a run record kept in its frame row (as float arrays; ``null`` = +inf): the
learned model's ``-log p(x)`` of each scored test row, paired with the baseline's by the tables."""


def per_row_values(path: Path, key: str, values: list[Any]) -> np.ndarray:
    """A record's per-row list as float64 (``null`` -> +inf: a row the model gives probability 0);
    DataError naming the file when an entry is not a number."""
    bad = [v for v in values if v is not None and (isinstance(v, bool) or not isinstance(v, _NUMBER))]
    if bad:
        raise DataError(f"{path}: {key!r} must hold numbers or null, found {bad[0]!r}")
    return np.array([np.inf if v is None else float(v) for v in values], dtype=np.float64)


def metrics_path(path: str | Path) -> Path:
    """``metrics.json`` of a run: the path itself, or ``<run dir>/metrics.json``."""
    p = Path(path)
    return p / "metrics.json" if p.is_dir() else p


_NUMBER = (int, float)


def read_json_record(path: Path, missing: str) -> Any:
    """A JSON file's content; DataError naming the file when it is missing (``missing`` says
    what to do) or not valid JSON."""
    try:
        return read_json(path)
    except FileNotFoundError:
        raise DataError(f"{path}: {missing}") from None
    except (OSError, json.JSONDecodeError) as err:
        raise DataError(f"{path}: not valid JSON ({err})") from None


def read_metrics(path: str | Path) -> dict[str, Any]:
    """One run's ``metrics.json`` as a flat dict, validated (self-hash, plausible metrics,
    identity keys); errors name the file."""
    path = metrics_path(path)
    # self-hash and plausibility checked: an edited or impossible record never reaches a table
    data = read_run_record(path, "metrics.json not found (did the run finish?)")
    if not isinstance(data, dict):
        raise DataError(f"{path}: expected a JSON object, found {type(data).__name__}")
    missing = [k for k in REQUIRED_KEYS if data.get(k) is None]
    if missing:
        raise DataError(f"{path}: missing required key(s) {missing}")
    for key in ("n_train", "seed"):
        if isinstance(data[key], bool) or not isinstance(data[key], int) or data[key] < 0:
            raise DataError(f"{path}: key {key!r} must be a non-negative integer, found {data[key]!r}")
    for key in ("experiment", "dataset", "method"):
        if not isinstance(data[key], str):
            raise DataError(f"{path}: key {key!r} must be a string, found {data[key]!r}")
    row: dict[str, Any] = {}
    for key, value in data.items():
        if key == "hparams":
            row["hparams"] = json.dumps(value, sort_keys=True)
        elif key == "convergence" and isinstance(value, dict):
            # the numbers behind `converged`, as convergence_<key> columns (convergence tables)
            row.update(
                {
                    f"convergence_{k}": v
                    for k, v in value.items()
                    if v is None or isinstance(v, (str, bool, *_NUMBER))
                }
            )
        elif key in PER_ROW_KEYS and isinstance(value, list):
            row[key] = per_row_values(path, key, value)
        elif key in METRIC_KEYS:
            if value is not None and (isinstance(value, bool) or not isinstance(value, _NUMBER)):
                raise DataError(f"{path}: metric {key!r} must be a number or null, found {value!r}")
            row[key] = float("nan") if value is None else float(value)
        elif value is None or isinstance(value, (str, bool, *_NUMBER)):
            row[key] = value  # identity keys and any extra scalar metric (f1_map, mc_gap, ...)
    for key in METRIC_KEYS:
        row.setdefault(key, float("nan"))
    _check_layout(path, row)
    row["settings"] = run_settings(data)
    row["run_dir"] = str(path.parent)
    return row


def _check_layout(path: Path, row: Mapping[str, Any]) -> None:
    """If the path follows ``<experiment>/<dataset>/<method>/n<N>/seed<s>/``, it must agree with the file."""
    try:
        key = RunKey.from_path(path.parent)
    except ValueError:
        return
    expected = dataclasses.asdict(key)
    wrong = {k: (v, row[k]) for k, v in expected.items() if row[k] != v}
    if wrong:
        detail = ", ".join(f"{k}: path says {a!r}, file says {b!r}" for k, (a, b) in wrong.items())
        raise DataError(f"{path}: run directory and metrics.json disagree ({detail})")


def run_settings(data: Mapping[str, Any]) -> str:
    """A 12-hex fingerprint of a run's settings (:data:`SETTINGS_KEYS`, and the evaluation
    settings its command was given, but for the NLL row cap, :data:`NLL_ROWS_PLACEHOLDER`): two runs of the same cell made with equal fingerprints differ
    only by their seed, whichever grid made them -- so a quick run and a reference of another grid
    share the cells whose settings match (:mod:`noisyor_bench.reporting.compare`)."""
    import hashlib

    picked: dict[str, Any] = {k: data.get(k) for k in SETTINGS_KEYS}
    argv = ((data.get("provenance") or {}).get("command") or {}).get("argv") or []
    if isinstance(argv, list) and "--evaluation" in argv[:-1]:
        picked["evaluation"] = _fingerprinted_evaluation(argv[argv.index("--evaluation") + 1])
    text = json.dumps(picked, sort_keys=True, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


NLL_ROWS_PLACEHOLDER = 100
"""The NLL row cap (``evaluation.nll.max_rows``) as every settings fingerprint reads it, whatever
the run's own cap: which test rows score the likelihood is an evaluation choice no training
metric depends on (the NLL columns are compared only on equal rows instead,
:mod:`noisyor_bench.reporting.compare`). 100 is the cap every fingerprint recorded before this
rule was made with, so those of the published references stay valid."""


def _fingerprinted_evaluation(text: Any) -> Any:
    """The ``--evaluation`` argument as :func:`run_settings` reads it: the NLL row cap set to
    :data:`NLL_ROWS_PLACEHOLDER`, re-serialised as the workflow writes it (compact, sorted keys);
    anything else (an ``@file`` argument, no ``nll`` mapping) unchanged."""
    if not isinstance(text, str):
        return text
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        return text
    nll = value.get("nll") if isinstance(value, dict) else None
    if not isinstance(nll, dict) or nll.get("max_rows") == NLL_ROWS_PLACEHOLDER:
        return text
    value = {**value, "nll": {**nll, "max_rows": NLL_ROWS_PLACEHOLDER}}
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def cell_settings(runs: pd.DataFrame) -> str:
    """The one settings fingerprint of a cell's runs; "" when the runs hold none or differ (then
    the cell is not comparable by its settings)."""
    if "settings" not in runs.columns:
        return ""
    values = set(runs["settings"].dropna().astype(str)) - {""}
    return values.pop() if len(values) == 1 else ""


def collect_runs(paths: Sequence[str | Path]) -> pd.DataFrame:
    """One row per run (identity + metrics + ``run_dir``) from metrics.json files or run dirs."""
    if not paths:
        raise UserError("no runs given (expected metrics.json files or run directories)")
    rows = [read_metrics(p) for p in paths]
    seen: dict[tuple[Any, ...], str] = {}
    for row in rows:
        key = tuple(row[k] for k in RUN_KEYS)
        if key in seen:
            raise DataError(f"duplicate run {dict(zip(RUN_KEYS, key))}: {seen[key]} and {row['run_dir']}")
        seen[key] = row["run_dir"]
    frame = pd.DataFrame(rows)
    first = [c for c in (*IDENTITY_KEYS, *METRIC_KEYS) if c in frame.columns]
    frame = frame[first + [c for c in frame.columns if c not in first]]
    frame["n_train"] = frame["n_train"].astype(int)
    frame["seed"] = frame["seed"].astype(int)
    return frame.sort_values(list(RUN_KEYS), key=_sort_key).reset_index(drop=True)


def _sort_key(col: pd.Series) -> pd.Series:
    return col.map(method_rank) if col.name == "method" else col


def single_value(runs: pd.DataFrame, column: str, what: str) -> Any:
    """The one value of ``column`` shared by all runs (e.g. one dataset per table), else an error."""
    values = sorted(set(runs[column].dropna()), key=str)
    if len(values) != 1:
        raise DataError(f"{what}: runs must share one {column}, found {values}")
    return values[0]


def _number(value: Any) -> float | None:
    if value is None or isinstance(value, bool) or not isinstance(value, (*_NUMBER, np.number)):
        return None
    return None if np.isnan(value) else float(value)


def last_window_nats(row: Mapping[str, Any]) -> float | None:
    """A run's last-window improvement of its monitored NELBO, nats per data point:
    ``convergence.last_window_nats``, else best-before minus best-within of runs written before it."""
    gain = _number(row.get("convergence_last_window_nats"))
    if gain is not None:
        return gain
    before, within = (
        _number(row.get("convergence_best_before_window")),
        _number(row.get("convergence_best_within_window")),
    )
    return None if before is None or within is None else before - within


def run_converged(row: Mapping[str, Any]) -> bool | None:
    """A run's convergence judged in nats (:func:`noisyor_bench.inference.convergence.rejudge_absolute`):
    its ``converged`` flag, except that a run judged at its epoch limit by the window is converged
    only if its last-window improvement is below ``ABS_TOL_NATS`` and its best evaluation is not
    the last one (then never).  Also re-judges runs written under the relative rule."""
    from noisyor_bench.inference.convergence import ABS_TOL_NATS, PLATEAU, STILL_IMPROVING

    flag = row.get("converged")
    flag = bool(flag) if isinstance(flag, (bool, np.bool_)) else None
    if flag is None or row.get("convergence_rule") not in (PLATEAU, STILL_IMPROVING):
        return flag
    at_limit = row.get("convergence_best_at_limit")
    if not isinstance(at_limit, (bool, np.bool_)):  # runs from before the key: best epoch == last epoch
        best, epochs = _number(row.get("convergence_best_epoch")), _number(row.get("convergence_epochs"))
        at_limit = row.get("convergence_stop_reason") == "max_epochs" and best is not None and best == epochs
    if at_limit:
        return False
    gain = last_window_nats(row)
    return flag if gain is None else gain < ABS_TOL_NATS


def projected_nats(row: Mapping[str, Any]) -> float:
    """How far a run judged at its epoch limit could still move in a doubled budget, nats per data
    point: its last-window improvement (if positive) times the windows of another ``max_epochs``
    epochs (``max_epochs * evaluations / (window * epochs)``; a linear extrapolation, an upper
    bound for a curve that flattens).  0 for a run stopped by early stopping or its own
    criterion, or with nothing recorded."""
    from noisyor_bench.inference.convergence import BEST_AT_LIMIT, PLATEAU, STILL_IMPROVING

    gain = last_window_nats(row)
    if (
        row.get("convergence_rule") not in (PLATEAU, STILL_IMPROVING, BEST_AT_LIMIT)
        or gain is None
        or gain <= 0
    ):
        return 0.0
    numbers = [
        _number(row.get(f"convergence_{k}")) for k in ("max_epochs", "evaluations", "window", "epochs")
    ]
    max_epochs, evaluations, window, epochs = numbers
    if None in numbers or not window or not epochs:
        return float("nan")
    return float(gain * max_epochs * evaluations / (window * epochs))


def convergence_counts(runs: pd.DataFrame) -> dict[str, Any]:
    """``n_runs`` and ``n_converged`` of a group of runs: a run counts as converged unless
    :func:`run_converged` says false (null = no fit to converge; no column = runs from before the
    key); ``max_last_window_nats``: the largest last-window improvement of the group's runs
    (nats per data point; NaN when none is recorded) and ``max_projected_nats`` (the largest
    :func:`projected_nats`), for the claims' ``unconverged`` qualifier."""
    n = int(len(runs))
    records = runs.to_dict("records")
    gains = [g for r in records if (g := last_window_nats(r)) is not None]
    moves = [m for r in records if not np.isnan(m := projected_nats(r))]
    out: dict[str, Any] = {
        "n_runs": n,
        "n_converged": n,
        "max_last_window_nats": max(gains) if gains else float("nan"),
        "max_projected_nats": max(moves) if moves else float("nan"),
    }
    if "converged" in runs.columns:
        out["n_converged"] = n - int(sum(run_converged(r) is False for r in records))
    return out


def is_deterministic(runs: pd.DataFrame) -> bool:
    """Whether every run of a group is an inference-mode SVI/LB-CDI/UB-CDI run (one setting)."""
    if runs.empty or "mode" not in runs.columns:
        return False
    return bool(((runs["mode"] == "inference") & runs["method"].isin(DETERMINISTIC_IN_INFERENCE)).all())


def load_dataset_truth(path: str | Path) -> tuple[np.ndarray, np.ndarray, tuple[int, int] | None, str]:
    """True ``theta``, ``theta0``, image shape (from the sidecar) and name of a dataset ``.npz``."""
    from noisyor_bench.data.loading import read_dataset

    path = Path(path)
    arrays = read_dataset(path, need=("theta", "theta0"))
    sidecar = path.with_suffix(".json")
    meta = read_json(sidecar) if sidecar.exists() else {}
    shape = tuple(meta["image_shape"]) if meta.get("image_shape") else None
    return arrays["theta"], arrays["theta0"], shape, str(meta.get("name", path.stem))
