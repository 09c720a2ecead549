"""CLI: ``noisyor-bench verify RUN_DIR`` (alias ``evaluate``) -- re-check a run from its files.

Every paper verifies its runs the same way: the run's paper is found through the registry (the
longest run-kind prefix of its experiment folder) and its entry's ``run_verifier`` module
recomputes what the run's files determine.  First the files the run's record hashes are
re-hashed (exit 1 when one differs or is missing), then ``recompute(check)`` returns recorded
vs recomputed values (exit 0, or 1 when one differs beyond ``--rtol``).  A run kind whose values
only re-running recomputes raises ``NotRecomputable``: its files are checked and the command
exits 3 saying why.  Errors (no record, dataset missing or changed) exit 2.

A verifier module may also declare ``VERIFIES_UNHASHED_RUNS = True`` (its recomputation checks
the files' contents itself, so a run recorded before runs hashed their files is verified too)
and ``recognises(check) -> bool`` (a run under an experiment folder no paper registers is its
kind).
"""

from __future__ import annotations

import argparse
import importlib
from pathlib import Path
from types import ModuleType
from typing import Any

from noisyor_bench.infra.errors import DataError

DEFAULT_RTOL = 1e-9
NOT_SUPPORTED = 3
"""Exit status when a run's files match the sha256 of its record but recomputing its values is
not supported for its kind (distinct from 1, a failure, and 2, an error)."""


def _verifier(paper: Any) -> ModuleType | None:
    return None if paper.run_verifier is None else importlib.import_module(paper.run_verifier)


def run_verifier(check: Any) -> tuple[Any, ModuleType | None]:
    """``(paper entry, its verifier module)`` of a run: by the registry's run kinds, else the
    first paper whose verifier recognises the run; either may be None."""
    from noisyor_bench.experiments import papers

    paper = papers.paper_of_experiment(check.experiment) if check.experiment else None
    if paper is not None:
        return paper, _verifier(paper)
    for candidate in papers.papers():
        module = _verifier(candidate)
        if module is not None and getattr(module, "recognises", lambda _: False)(check):
            return candidate, module
    return None, None


def _fmt(v: Any) -> str:
    if v is None:
        return "null"
    return f"{v:.10g}" if isinstance(v, float) else str(v)


def check_run_files(check: Any, unhashed_ok: bool = False) -> int | None:
    """Print the status of every file the run's record hashes; 1 if one differs or is missing,
    None if all match.  A record that hashes no file is a DataError (exit 2), unless
    ``unhashed_ok`` (the verifier checks the files' contents itself)."""
    from noisyor_bench.infra.runcheck import run_file_status

    if unhashed_ok and not (check.recorded.get("provenance") or {}).get("outputs"):
        print("run files: no sha256 in the run's record (recorded before runs hashed their files)")
        return None
    files, others = run_file_status(check.path, check.recorded)
    for name, status in files:
        print(f"{name}: {status}")
    for name in others:
        print(f"{name}: not in the run's record (not checked)")
    changed = [name for name, status in files if status != "ok"]
    if changed:
        print(
            f"run file(s) differ from the provenance record: {', '.join(changed)}; they were truncated, "
            "replaced or deleted after the run: rerun the run (or restore the files)"
        )
        return 1
    print(f"all {len(files)} run file(s) match the sha256 in the run's record")
    return None


def verify_run(run: Path, recorded: dict[str, Any], dataset: str | None, rtol: float) -> int:
    """The exit status of ``verify`` on a run directory whose ``metrics.json`` is ``recorded``."""
    from noisyor_bench.infra.runcheck import NotRecomputable, RunCheck

    check = RunCheck(run, recorded, rtol, dataset)
    paper, verifier = run_verifier(check)
    print(f"run: {run} (experiment {check.experiment}, paper {paper.id if paper else 'none registered'})")
    code = check_run_files(check, unhashed_ok=bool(getattr(verifier, "VERIFIES_UNHASHED_RUNS", False)))
    if code is not None:
        return code
    try:
        if verifier is None:
            raise NotRecomputable(
                f"experiment {check.experiment!r} is no registered paper's run kind, and no paper's "
                "verifier recognises the run"
                if paper is None
                else f"paper {paper.id} names no run verifier"
            )
        result = verifier.recompute(check)
    except NotRecomputable as why:
        print(f"recomputing the metrics is not supported for this run kind: {why}")
        return NOT_SUPPORTED
    for path in result.inputs:
        print(f"input: {path} (sha256 matches the run's record)")
    width = max(len(r[0]) for r in result.rows)
    print(f"{'value':<{width}}  {'recorded':>20}  {'recomputed':>20}")
    for key, a, b, ok in result.rows:
        print(f"{key:<{width}}  {_fmt(a):>20}  {_fmt(b):>20}{'' if ok else '  MISMATCH'}")
    bad = [r[0] for r in result.rows if not r[3]]
    if bad:
        print(f"{len(bad)} value(s) differ beyond rtol={rtol}: {', '.join(bad)}")
        return 1
    print(
        f"all {len(result.rows)} values recomputable from the run's files reproduced (rtol={rtol}); "
        f"not recomputed: {result.not_recomputed}"
    )
    return 0


def cmd_verify(args: argparse.Namespace) -> int:
    from noisyor_bench.experiments.rundir import METRICS_FILE
    from noisyor_bench.infra.io import read_json

    run = Path(args.run_dir)
    metrics_path = run / METRICS_FILE
    if not metrics_path.is_file():
        raise DataError(f"{metrics_path} is missing: {run} is not a finished run directory")
    try:
        recorded = read_json(metrics_path)
    except ValueError as err:
        raise DataError(f"{metrics_path} is corrupt: not valid JSON ({err})") from None
    return verify_run(run, recorded, args.dataset, args.rtol)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "verify",
        aliases=["evaluate"],
        help="re-hash a run's files and recompute its metrics from them",
        description="Check a run's files against the sha256 of its record and recompute the values "
        "they determine (its paper's run verifier).",
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
