"""CLI: ``noisyor-bench evaluate RUN_DIR --dataset PATH`` -- recompute a run's test metrics.

Reads ``posterior_test.npz`` and the settings recorded in ``metrics.json`` (samples, seed,
mode), recomputes every metric from the dataset's test split with the same code path as the
run (:func:`noisyor_bench.runs.evaluate_posterior`), prints recorded vs recomputed and exits
1 when any differs beyond the tolerance (evaluation is CPU float64 with a recorded seed, so
they agree to rounding).  The basis of a later ``verify`` command.
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path
from typing import Any, Mapping

from ..errors import DataError
from ..io import load_npz, read_json

DEFAULT_RTOL = 1e-9


def _close(a: Any, b: Any, rtol: float) -> bool:
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, float) or isinstance(b, float):
        if not (math.isfinite(a) and math.isfinite(b)):
            return a == b
        return abs(a - b) <= rtol * max(1.0, abs(a), abs(b))
    return a == b


def compare(recorded: Mapping[str, Any], recomputed: Mapping[str, Any], keys: tuple[str, ...], rtol: float) -> list[tuple[str, Any, Any, bool]]:
    """``(key, recorded, recomputed, ok)`` for each metric key."""
    return [(k, recorded.get(k), recomputed.get(k), _close(recorded.get(k), recomputed.get(k), rtol)) for k in keys]


def recompute(run: Path, dataset: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(recorded metrics, recomputed metrics)`` of a run directory."""
    from ..runs import METRICS_FILE, POSTERIOR_FILE, json_safe, evaluate_posterior, file_sha256, load_dataset

    metrics_path, posterior_path = run / METRICS_FILE, run / POSTERIOR_FILE
    for path in (metrics_path, posterior_path):
        if not path.is_file():
            raise DataError(f"{path} is missing: {run} is not a finished run directory")
    recorded = read_json(metrics_path)
    sha = file_sha256(dataset)
    if recorded.get("dataset_sha256") not in (None, sha):
        raise DataError(
            f"dataset {dataset} (sha256 {sha[:12]}...) is not the file the run used "
            f"(sha256 {str(recorded['dataset_sha256'])[:12]}..., {recorded.get('dataset_file')})"
        )
    data = load_dataset(dataset)
    posterior = load_npz(posterior_path)
    for key in ("q", "theta", "theta0", "mu"):
        if key not in posterior:
            raise DataError(f"{posterior_path} lacks array {key!r}")
    recomputed = evaluate_posterior(
        posterior,
        data,
        mode=recorded["mode"],
        n_samples=int(recorded["n_samples"]),
        iw_samples=int(recorded["iw_samples"] or 0),
        exact_max_k=int(recorded["exact_max_k"]),
        eval_seed=int(recorded["eval_seed"]),
    )
    return recorded, json_safe(recomputed)


def _fmt(v: Any) -> str:
    if v is None:
        return "null"
    return f"{v:.10g}" if isinstance(v, float) else str(v)


def cmd_evaluate(args: argparse.Namespace) -> int:
    from ..runs import RECOMPUTED_METRICS

    recorded, recomputed = recompute(Path(args.run_dir), Path(args.dataset))
    rows = compare(recorded, recomputed, RECOMPUTED_METRICS, args.rtol)
    rows.append(("latent_permutation", recorded.get("latent_permutation"), recomputed.get("latent_permutation"),
                 recorded.get("latent_permutation") == recomputed.get("latent_permutation")))
    width = max(len(r[0]) for r in rows)
    print(f"{'metric':<{width}}  {'recorded':>20}  {'recomputed':>20}")
    for key, a, b, ok in rows:
        print(f"{key:<{width}}  {_fmt(a):>20}  {_fmt(b):>20}{'' if ok else '  MISMATCH'}")
    bad = [r[0] for r in rows if not r[3]]
    if bad:
        print(f"{len(bad)} metric(s) differ beyond rtol={args.rtol}: {', '.join(bad)}")
        return 1
    print(f"all {len(rows)} metrics reproduced (rtol={args.rtol})")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("evaluate", help="recompute a run directory's test metrics and compare with metrics.json")
    p.add_argument("run_dir", help="a run directory (holding metrics.json and posterior_test.npz)")
    p.add_argument("--dataset", required=True, help="the dataset .npz the run was trained on")
    p.add_argument("--rtol", type=float, default=DEFAULT_RTOL, help="relative tolerance (default %(default)s)")
    p.set_defaults(func=cmd_evaluate)
