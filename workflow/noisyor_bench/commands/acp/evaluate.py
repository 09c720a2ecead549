"""CLI: ``noisyor-bench verify RUN_DIR`` (alias ``evaluate``) -- recompute a run's test metrics.

Reads ``posterior_test.npz`` and the settings recorded in ``metrics.json`` (samples, seed,
mode), recomputes every metric from the dataset's test split with the same code path as the
run (:func:`noisyor_bench.evaluation.run_metrics.evaluate_posterior`), prints recorded vs recomputed and exits
1 when any differs beyond the tolerance (evaluation is CPU float64 with a recorded seed, so
they agree to rounding) or when ``posterior_test.npz``/``curve.csv`` differ from the sha256
in the run's provenance record.  Without ``--dataset`` the dataset is found from that record
(its recorded path, relative to the run directory, the current directory or the results
directory the run lives in) and accepted only if its sha256 is the one the run used.

Runs of the other papers (APE, APE on noisy-OR, aviPAM) are verified by
:func:`noisyor_bench.commands.provenance.verify_run_kind` with the module their
paper's registry entry names (``run_verifier``): their files against the sha256 of their record, then the
metrics their files determine; a kind whose metrics only re-running recomputes (and a search
draw, validation only) exits 3 (``not supported for this run kind: <why>``).  Exit status: 0 reproduced,
1 a metric or a run file differs, 2 an error (dataset missing or changed, no record), 3 not
supported for this run kind (its files matched their record).
"""

from __future__ import annotations

import argparse
import math
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from noisyor_bench.infra.errors import DataError
from noisyor_bench.infra.io import read_json

DEFAULT_RTOL = 1e-9
SEARCH_DRAW = (
    "a run scored on validation data only (test_evaluated false, e.g. a search draw): it has no test "
    "metrics to recompute; its validation NELBO is a statistic of its training"
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


def recompute(run: Path, dataset: Path) -> tuple[dict[str, Any], dict[str, Any]]:
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


def check_run_files(run: Path, recorded: Mapping[str, Any]) -> list[tuple[str, str]]:
    """``(file, status)`` of the run files whose sha256 the provenance record holds."""
    from noisyor_bench.infra.hashing import sha256_file_memo

    rows = []
    for entry in (recorded.get("provenance") or {}).get("outputs") or []:
        path = run / entry["path"]
        if not path.is_file():
            status = "MISSING"
        else:
            status = "ok" if sha256_file_memo(path) == entry.get("sha256") else "CHANGED since recorded"
        rows.append((entry["path"], status))
    return rows


def _fmt(v: Any) -> str:
    if v is None:
        return "null"
    return f"{v:.10g}" if isinstance(v, float) else str(v)


def cmd_verify(args: argparse.Namespace) -> int:
    from noisyor_bench.experiments.acp.runs import RECOMPUTED_METRICS
    from noisyor_bench.experiments.rundir import METRICS_FILE, POSTERIOR_FILE

    run = Path(args.run_dir)
    metrics_path = run / METRICS_FILE
    if not metrics_path.is_file():
        raise DataError(f"{metrics_path} is missing: {run} is not a finished run directory")
    try:
        recorded = read_json(metrics_path)
    except ValueError as err:
        raise DataError(f"{metrics_path} is corrupt: not valid JSON ({err})") from None
    # Runs of a paper whose registry entry names a run_verifier (APE, APE on noisy-OR, aviPAM)
    from noisyor_bench.commands.provenance import not_supported, verify_run_kind
    from noisyor_bench.infra.provenance import RunCheck

    code = verify_run_kind(run, recorded, args.dataset, args.rtol)
    if code is not None:
        return code
    if recorded.get("test_evaluated") is False:  # a search draw: validation only
        return not_supported(RunCheck(run, recorded, args.rtol), SEARCH_DRAW)
    # The record's hashes first: a truncated, replaced or deleted run file is named as such,
    # never fed to the recomputation (issue 18).
    files = check_run_files(run, recorded)
    for name, status in files:
        print(f"{name}: {status}")
    changed = [name for name, status in files if status != "ok"]
    if POSTERIOR_FILE in changed:
        print(
            f"run file(s) differ from the provenance record: {', '.join(changed)}; {run / POSTERIOR_FILE} "
            "was truncated, replaced or deleted after the run: rerun the run (or restore the file)"
        )
        return 1
    dataset = Path(args.dataset) if args.dataset else locate_dataset(run, recorded)
    recorded, recomputed = recompute(run, dataset)
    print(f"run: {run}")
    print(f"dataset: {dataset} (sha256 matches the run's record)")
    rows = compare(recorded, recomputed, RECOMPUTED_METRICS, args.rtol)
    rows.append(
        (
            "latent_permutation",
            recorded.get("latent_permutation"),
            recomputed.get("latent_permutation"),
            recorded.get("latent_permutation") == recomputed.get("latent_permutation"),
        )
    )
    width = max(len(r[0]) for r in rows)
    print(f"{'metric':<{width}}  {'recorded':>20}  {'recomputed':>20}")
    for key, a, b, ok in rows:
        print(f"{key:<{width}}  {_fmt(a):>20}  {_fmt(b):>20}{'' if ok else '  MISMATCH'}")
    bad = [r[0] for r in rows if not r[3]]
    if bad:
        print(f"{len(bad)} metric(s) differ beyond rtol={args.rtol}: {', '.join(bad)}")
    if changed:
        print(f"run file(s) differ from the provenance record: {', '.join(changed)}")
    if bad or changed:
        return 1
    print(f"all {len(rows)} metrics reproduced (rtol={args.rtol})")
    return 0


cmd_evaluate = cmd_verify  # the original name of the command


def register(sub: argparse._SubParsersAction) -> None:
    for name, help_text in (
        (
            "verify",
            "check a run's files against their sha256 and recompute its metrics from them (ACP: from "
            "posterior_test.npz); exit 3: not supported for the run kind",
        ),
        ("evaluate", "alias of verify"),
    ):
        p = sub.add_parser(
            name,
            help=help_text,
            epilog="exit status: 0 metrics reproduced; 1 a metric or a run file differs from its record; "
            "2 error (no record, dataset missing or changed); 3 the run's files match their record but "
            "recomputing its metrics is not supported for its run kind (the message says why)",
        )
        p.add_argument("run_dir", help="a run directory (holding metrics.json)")
        p.add_argument(
            "--dataset",
            help="the dataset .npz the run was trained on, or an APE-on-noisy-OR run's problem file "
            "(default: found from the run's provenance)",
        )
        p.add_argument(
            "--rtol", type=float, default=DEFAULT_RTOL, help="relative tolerance (default %(default)s)"
        )
        p.set_defaults(func=cmd_verify)
