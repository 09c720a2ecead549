"""Provenance one click away: a short block for a report page that says which commit, config and
run folders a table was built from, and the command that audits the whole chain.

The full record is the ``<file>.prov.json`` sidecar beside every table (infra.provenance); a
reader of the report needs its gist: the commit (and whether the tree was dirty), when it was
made, the results directory's config hash, how many inputs and which run folders, and
``noisyor-bench provenance <file>``, which re-hashes every input on the way to the raw data.
"""

from __future__ import annotations

import html
import json
from pathlib import Path, PurePosixPath
from typing import Any

from noisyor_bench.infra.provenance import SIDECAR_SUFFIX

MAX_FOLDERS = 8
"""Run folders named on the page; the rest are counted (the sidecar lists them all)."""


def _load(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def run_folders(record: dict[str, Any]) -> list[str]:
    """The folders of the inputs under ``runs/`` (one per run: the folder of its metrics.json),
    else the inputs' folders, relative to the results directory where the record says so."""
    folders: list[str] = []
    for entry in record.get("inputs") or []:
        rel = str(entry.get("relpath") or entry.get("path") or "")
        parts = PurePosixPath(rel).parts
        parts = parts[parts.index("runs") :] if "runs" in parts else parts
        if parts and "runs" in parts[:1]:
            folders.append(str(PurePosixPath(*parts[:-1])))
    return list(dict.fromkeys(folders))


def provenance_summary(file: str | Path, results_dir: str | Path | None = None) -> dict[str, Any]:
    """The gist of ``file``'s provenance record (empty values where there is none)."""
    file = Path(file)
    record = _load(file.with_name(file.name + SIDECAR_SUFFIX)) or {}
    code = (record.get("environment") or {}).get("code") or {}
    results = Path(results_dir) if results_dir is not None else file.parent.parent
    own = _load(results / ".noisyor-bench-results.json") or {}
    return {
        "file": file.name,
        "recorded": bool(record),
        "commit": code.get("commit"),
        "dirty": code.get("dirty"),
        "made": (record.get("time") or {}).get("end"),
        "config_hash": own.get("config_hash"),
        "grid": own.get("grid"),
        "inputs": len(record.get("inputs") or []),
        "run_folders": run_folders(record),
        "command": f"noisyor-bench provenance {file.as_posix()}",
    }


def provenance_html(file: str | Path, results_dir: str | Path | None = None) -> str:
    """The block shown at the foot of a report page (a ``<details>``: one click opens it; the
    commit and config hash are in its summary line, visible without the click)."""
    info = provenance_summary(file, results_dir)
    if not info["recorded"]:
        return (
            f'<p class="note">Provenance: no record beside {html.escape(info["file"])}; '
            f"audit with <code>{html.escape(info['command'])}</code>.</p>"
        )
    commit = (info["commit"] or "unknown")[:12] + (" (uncommitted changes)" if info["dirty"] else "")
    head = f"Provenance: commit {commit}; config {info['config_hash'] or 'unknown'}"
    head += f" (grid {info['grid']})" if info["grid"] else ""
    folders = info["run_folders"]
    shown = ", ".join(folders[:MAX_FOLDERS]) + (
        f" and {len(folders) - MAX_FOLDERS} more" if len(folders) > MAX_FOLDERS else ""
    )
    lines = [
        f"Made {info['made'] or 'at an unrecorded time'} from {info['inputs']} input file(s)"
        + (f"; run folders: {shown}" if folders else "")
        + ".",
        f"Record: {info['file']}{SIDECAR_SUFFIX} beside the file (every input with its sha256, the "
        "command, package versions, machine).",
    ]
    body = "".join(f"<p>{html.escape(line)}</p>" for line in lines)
    return (
        f'<details class="prov"><summary>{html.escape(head)}</summary>{body}'
        f"<p>Audit the chain to the raw data: <code>{html.escape(info['command'])}</code></p></details>"
    )
