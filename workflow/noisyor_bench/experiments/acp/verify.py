"""``noisyor-bench verify`` of an ACP run (found through the paper registry).

A run stores ``posterior_test.npz`` (``q`` on the test split and the generative parameters) and
the evaluation settings in ``metrics.json`` (samples, seed, mode): every test metric is
recomputed from them and the dataset's test split with the run's own code path
(:func:`noisyor_bench.evaluation.run_metrics.evaluate_posterior`).  Evaluation is CPU float64
with a recorded seed, so recorded and recomputed agree to rounding.  Without ``--dataset`` the
dataset is found from the run's record (its recorded path, relative to the run directory, the
current directory or the results directory the run lives in) and accepted only with the sha256
the run used.  A search draw (validation only) has no test metrics: ``NotRecomputable``.

The recomputation checks the posterior's arrays themselves (shapes, probabilities in [0, 1]),
so a run recorded before runs hashed their files is verified too
(:data:`VERIFIES_UNHASHED_RUNS`); and a run written by ``acp-train`` under an experiment folder
no paper registers is recognised by its posterior file (:func:`recognises`).
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from noisyor_bench.infra.errors import DataError
from noisyor_bench.infra.io import read_json
from noisyor_bench.infra.runcheck import NotRecomputable, Recomputed, RunCheck

SEARCH_DRAW = (
    "a run scored on validation data only (test_evaluated false, e.g. a search draw): it has no test "
    "metrics to recompute; its validation NELBO is a statistic of its training"
)
VERIFIES_UNHASHED_RUNS = True
"""A record without the sha256 of the run's files is still verified: the posterior's arrays are
checked by the recomputation itself."""


def recognises(check: RunCheck) -> bool:
    """A run of no registered experiment folder that holds a posterior file (``acp-train
    --experiment <any name>``) is an ACP run."""
    from noisyor_bench.experiments.rundir import POSTERIOR_FILE

    return (check.path / POSTERIOR_FILE).is_file()


def recompute(check: RunCheck) -> Recomputed:
    from noisyor_bench.experiments.acp.runs import RECOMPUTED_METRICS

    if check.recorded.get("test_evaluated") is False:
        raise NotRecomputable(SEARCH_DRAW)
    dataset = Path(check.dataset_arg) if check.dataset_arg else locate_dataset(check.path, check.recorded)
    recorded, recomputed = recompute_metrics(check.path, dataset)
    rows = compare(recorded, recomputed, RECOMPUTED_METRICS, check.rtol)
    rows += [
        compare_newer(k, recorded, recomputed, check.rtol)
        for k in ("nll_rows_digest", "nll_per_row")
        if recorded.get(k) is not None or recomputed.get(k) is not None
    ]
    permutation = (recorded.get("latent_permutation"), recomputed.get("latent_permutation"))
    rows.append(("latent_permutation", *permutation, permutation[0] == permutation[1]))
    return Recomputed(
        rows,
        [str(dataset)],
        "training statistics (validation NELBO, epochs, convergence, timings) are the training's own",
    )


def _close(a: Any, b: Any, rtol: float) -> bool:
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, float) or isinstance(b, float):
        if not (math.isfinite(a) and math.isfinite(b)):
            return a == b
        return abs(a - b) <= rtol * max(1.0, abs(a), abs(b))
    return a == b


def compare(
    recorded: Mapping[str, Any], recomputed: Mapping[str, Any], keys: tuple[str, ...], rtol: float
) -> list[tuple[str, Any, Any, bool]]:
    """``(key, recorded, recomputed, ok)`` for each metric key."""
    return [
        (k, recorded.get(k), recomputed.get(k), _close(recorded.get(k), recomputed.get(k), rtol))
        for k in keys
    ]


def compare_newer(
    key: str, recorded: Mapping[str, Any], recomputed: Mapping[str, Any], rtol: float
) -> tuple[str, Any, Any, bool]:
    """``(key, recorded, recomputed, ok)`` for a key runs record since the per-row NLL
    (``nll_rows_digest``, ``nll_per_row``): a run recorded before it has nothing to compare (ok);
    a list is compared value by value (:func:`_close`) and shown as ``"<n> values"``."""
    a, b = recorded.get(key), recomputed.get(key)
    if not isinstance(a, list) and not isinstance(b, list):
        return (key, a, b, a is None or _close(a, b, rtol))
    show_a = f"{len(a)} values" if isinstance(a, list) else a
    show_b = f"{len(b)} values" if isinstance(b, list) else b
    if a is None:
        return (key, None, show_b, True)
    ok = isinstance(a, list) and isinstance(b, list) and len(a) == len(b)
    ok = ok and all(_close(x, y, rtol) for x, y in zip(a, b))
    return (key, show_a, show_b, ok)


def recompute_metrics(run: Path, dataset: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(recorded metrics, recomputed metrics)`` of a run directory."""
    from noisyor_bench.data.loading import load_dataset
    from noisyor_bench.evaluation.run_metrics import evaluate_posterior
    from noisyor_bench.experiments.rundir import METRICS_FILE, POSTERIOR_FILE, json_safe, load_posterior
    from noisyor_bench.infra.hashing import sha256_file

    metrics_path, posterior_path = run / METRICS_FILE, run / POSTERIOR_FILE
    for path in (metrics_path, posterior_path):
        if not path.is_file():
            raise DataError(f"{path} is missing: {run} is not a finished run directory")
    recorded = read_json(metrics_path)
    sha = sha256_file(dataset)
    if recorded.get("dataset_sha256") not in (None, sha):
        raise DataError(
            f"dataset {dataset} (sha256 {sha[:12]}...) is not the file the run used "
            f"(sha256 {str(recorded['dataset_sha256'])[:12]}..., {recorded.get('dataset_file')})"
        )
    data = load_dataset(dataset)
    posterior = load_posterior(run, need=())
    check_posterior_arrays(
        posterior, posterior_path, int(data["x_test"].shape[0]), int(data["x_test"].shape[1])
    )
    recomputed = evaluate_posterior(
        posterior,
        data,
        mode=recorded["mode"],
        n_samples=int(recorded["n_samples"]),
        iw_samples=int(recorded["iw_samples"] or 0),
        exact_max_k=int(recorded["exact_max_k"]),
        eval_seed=int(recorded["eval_seed"]),
        nll=recorded.get("nll_config"),
    )
    return recorded, json_safe(recomputed)


def check_posterior_arrays(posterior: Mapping[str, Any], path: Path, n_test: int, d: int) -> None:
    """``posterior_test.npz`` holds q (N_test x K, in [0, 1]) and valid parameters of matching
    shapes; DataError naming the file and the array otherwise."""
    import numpy as np

    from noisyor_bench.data.loading import check_generative

    missing = [k for k in ("q", "theta", "theta0", "mu") if k not in posterior]
    if missing:
        raise DataError(f"{path} lacks array(s) {missing}; it holds {sorted(posterior)}")
    q, theta = np.asarray(posterior["q"]), np.asarray(posterior["theta"])
    k = theta.shape[1] if theta.ndim == 2 else None
    shapes = {
        "q": (q.shape, (n_test, k)),
        "theta": (theta.shape, (d, k)),
        "theta0": (np.shape(posterior["theta0"]), (d,)),
        "mu": (np.shape(posterior["mu"]), (k,)),
    }
    wrong = [
        f"{name} has shape {got}, expected {want}" for name, (got, want) in shapes.items() if got != want
    ]
    if wrong:
        raise DataError(f"{path}: wrong shapes ({'; '.join(wrong)}; N_test={n_test}, D={d})")
    if not (np.issubdtype(q.dtype, np.number) and np.all(np.isfinite(q)) and np.all((q >= 0) & (q <= 1))):
        raise DataError(f"{path}: q must hold finite probabilities in [0, 1]")
    check_generative(posterior, str(path))


def results_dir_of(run: Path) -> Path | None:
    """``<results>`` of ``<results>/runs/<exp>/<dataset>/<method>/n<N>/seed<S>``, if the run is laid out so."""
    parents = run.resolve().parents
    return parents[5] if len(parents) > 5 and parents[4].name == "runs" else None


def _dataset_entry(recorded: Mapping[str, Any]) -> dict[str, Any] | None:
    prov = recorded.get("provenance") or {}
    return next((e for e in prov.get("inputs") or [] if e.get("role") == "dataset"), None)


def dataset_candidates(run: Path, recorded: Mapping[str, Any]) -> list[Path]:
    """Where the run's dataset may be now, most specific first (duplicates removed)."""
    entry = _dataset_entry(recorded)
    prov = recorded.get("provenance") or {}
    cands: list[Path] = []
    name = recorded.get("dataset_file")
    if entry is not None:
        path = Path(entry["path"])
        name = path.name
        if entry.get("relpath"):
            cands.append(run / entry["relpath"])
        cands.append(path)  # absolute, or relative to the current directory
        cwd = (prov.get("command") or {}).get("cwd")
        if cwd and not path.is_absolute():
            cands.append(Path(cwd) / path)
    results = results_dir_of(run)
    if results is not None and name:
        cands.append(results / "data" / name)
    unique: dict[Path, Path] = {}
    for c in cands:
        unique.setdefault(c.resolve(), c)
    return list(unique.values())


def locate_dataset(run: Path, recorded: Mapping[str, Any]) -> Path:
    """The dataset file the run used, found from its record and checked by sha256."""
    from noisyor_bench.infra.hashing import sha256_file_memo

    entry = _dataset_entry(recorded)
    want = (entry or {}).get("sha256") or recorded.get("dataset_sha256")
    cands = dataset_candidates(run, recorded)
    existing = [c for c in cands if c.is_file()]
    for c in existing:
        if want is None or sha256_file_memo(c) == want:
            return Path(os.path.relpath(c.resolve()))
    tried = ", ".join(str(c) for c in cands) or "(the run records no dataset path)"
    if not existing:
        raise DataError(
            f"the dataset of run {run} was not found; looked at: {tried}. "
            "Pass it with --dataset PATH, or rebuild it (noisyor-bench provenance on the run's metrics.json "
            "shows its config)"
        )
    found = ", ".join(f"{c} (sha256 {sha256_file_memo(c)[:12]}...)" for c in existing)
    raise DataError(
        f"the dataset of run {run} has changed: the run used sha256 {str(want)[:12]}..., but {found}. "
        "It was rebuilt with another config or is corrupt; rebuild it from the recorded config or pass the "
        "original file with --dataset PATH"
    )
