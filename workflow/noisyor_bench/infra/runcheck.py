"""Verification of a run against its record: the types ``noisyor-bench verify RUN_DIR`` hands
to a paper's recomputation, and the sha256 status of the files a run's record hashes.

A paper whose runs it can recompute declares ``recompute(check: RunCheck) -> Recomputed`` in
the module its registry entry names (``Paper.run_verifier``, found by the run's experiment).
The records themselves are built by :mod:`noisyor_bench.infra.provenance`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from noisyor_bench.infra.provenance import NOT_RUN_OUTPUTS, current_sha256


class NotRecomputable(Exception):
    """The run's metrics are not determined by its files (the message says why): ``verify``
    checks the files' sha256 and reports ``not supported for this run kind``."""


@dataclass
class Recomputed:
    """Values of a run recomputed from its files: ``(name, recorded, recomputed, ok)`` rows, the
    inputs read besides the run's files, and which recorded values are not recomputed (why)."""

    rows: list[tuple[str, Any, Any, bool]]
    inputs: list[str]
    not_recomputed: str


def same_value(a: Any, b: Any, rtol: float) -> bool:
    """Equal, or floats within ``rtol`` (relative, at least 1 absolute); NaN equals NaN (a
    diverged run's value recomputed as NaN), None only None."""
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, float) or isinstance(b, float):
        import math

        if math.isnan(a) and math.isnan(b):
            return True
        if not (math.isfinite(a) and math.isfinite(b)):
            return a == b
        return abs(a - b) <= rtol * max(1.0, abs(a), abs(b))
    return a == b


@dataclass
class RunCheck:
    """A run directory being verified: its ``metrics.json`` (``recorded``), the tolerance, and
    the dataset passed with ``--dataset`` (if any)."""

    path: Path
    recorded: dict[str, Any]
    rtol: float
    dataset_arg: str | None = None

    @property
    def experiment(self) -> str | None:
        """The ``experiment`` key, else the folder below ``runs/`` in the run's path."""
        if isinstance(self.recorded.get("experiment"), str):
            return self.recorded["experiment"]
        parts = self.path.resolve().parts
        return parts[parts.index("runs") + 1] if "runs" in parts[:-1] else None

    def rows(
        self, recorded: Mapping[str, Any], recomputed: Mapping[str, Any]
    ) -> list[tuple[str, Any, Any, bool]]:
        """``(key, recorded, recomputed, ok)`` for each recomputed key."""
        return [
            (k, recorded.get(k), v, same_value(recorded.get(k), v, self.rtol)) for k, v in recomputed.items()
        ]

    def _dataset_entry(self) -> dict[str, Any] | None:
        inputs = (self.recorded.get("provenance") or {}).get("inputs") or []
        return next((e for e in inputs if e.get("role") == "dataset"), None)

    def dataset(self) -> Path:
        """The file of the record's ``dataset`` input (or ``--dataset``), accepted only with the
        recorded sha256: relative to the run directory, as recorded, from the recorded cwd, or
        ``<results>/data/<name>`` for a run under ``<results>/runs/``; DataError otherwise."""
        from noisyor_bench.infra.errors import DataError

        entry = self._dataset_entry() or {}
        want = entry.get("sha256")
        if self.dataset_arg:
            given = Path(self.dataset_arg)
            if want and current_sha256(given) != want:
                raise DataError(f"--dataset {given} is not the file the run used (sha256 {want[:12]}...)")
            return given
        if not entry:
            raise DataError(
                f"the record of run {self.path} names no dataset input; pass it with --dataset PATH"
            )
        cands = [self.path / entry["relpath"]] if entry.get("relpath") else []
        path = Path(entry["path"])
        cands.append(path)
        cwd = ((self.recorded.get("provenance") or {}).get("command") or {}).get("cwd")
        if cwd and not path.is_absolute():
            cands.append(Path(cwd) / path)
        parts = self.path.resolve().parts
        if "runs" in parts[:-1]:
            cands.append(Path(*parts[: parts.index("runs")]) / "data" / path.name)
        existing = list(dict.fromkeys(c.resolve() for c in cands if c.is_file()))
        for c in existing:
            if want is None or current_sha256(c) == want:
                return Path(os.path.relpath(c))
        if not existing:
            tried = ", ".join(str(c) for c in cands)
            raise DataError(
                f"the dataset of run {self.path} was not found; looked at: {tried}. Pass it with --dataset PATH"
            )
        raise DataError(
            f"the dataset of run {self.path} has changed: the run used sha256 {str(want)[:12]}..., but "
            + ", ".join(f"{c} has {str(current_sha256(c))[:12]}..." for c in existing)
            + "; rebuild it from the recorded config or pass the original file with --dataset PATH"
        )


def run_file_status(run: Path, recorded: Mapping[str, Any]) -> tuple[list[tuple[str, str]], list[str]]:
    """``(file, "ok" | "CHANGED since recorded" | "MISSING")`` of every file the run's record
    hashes (``provenance.outputs``), and the names of the run's other files (not in the record:
    unchecked).  DataError when the record hashes no file."""
    from noisyor_bench.infra.errors import DataError

    outputs = (recorded.get("provenance") or {}).get("outputs") or []
    if not outputs:
        raise DataError(
            f"{run / 'metrics.json'} records no sha256 of the run's files (no provenance.outputs: written "
            "by code older than the run records' output hashes); rerun the run to verify it"
        )
    rows, named = [], set()
    for entry in outputs:
        rel = entry.get("relpath") or entry.get("path")
        path = run / rel
        named.add(path.resolve())
        now = current_sha256(path) if path.is_file() else None
        if now is None or entry.get("sha256") is None:
            status = "MISSING" if now is None else "no sha256 recorded"
        else:
            status = "ok" if now == entry["sha256"] else "CHANGED since recorded"
        rows.append((str(rel), status))
    others = sorted(
        p.name
        for p in run.iterdir()
        if p.is_file() and p.name not in NOT_RUN_OUTPUTS and p.resolve() not in named
    )
    return rows, others
