"""A results directory tied to its grid: ``<results_dir>/.noisyor-bench-results.json``.

Run paths (``runs/<experiment>/<dataset>/<method>/n<N>/seed<s>``) do not name the grid, so a
second grid run into the same directory would replace the first grid's runs in place.  The
first real run records its grid, papers and config hash here; the workflow compares every
later invocation (dry runs included) with the record before it schedules a job
(:func:`check_identity`): another grid is refused unless ``overwrite_grid`` is set, more papers
are fine, a changed config is reported.  Importable without Snakemake.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from noisyor_bench.infra.errors import ConfigError, DataError
from noisyor_bench.infra.io import write_json_atomic

IDENTITY_FILE = ".noisyor-bench-results.json"

_NOT_HASHED = ("results_dir", "raw_data_dir", "overwrite_grid", "papers", "job_seconds")
"""Keys that do not change what a result is: where things live, scheduling, the paper selection
(recorded on its own) and the override itself."""


def config_hash(cfg: Mapping[str, Any]) -> str:
    """sha256 (16 hex digits) of the validated config without the keys in :data:`_NOT_HASHED`."""
    kept = {k: v for k, v in cfg.items() if k not in _NOT_HASHED}
    text = json.dumps(kept, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def read_identity(results_dir: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The record of ``results_dir``, or None when it has none (a new or older directory)."""
    path = Path(results_dir) / IDENTITY_FILE
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as err:
        raise DataError(
            f"{path}: corrupt results-directory record ({err}); move it away to start anew"
        ) from None
    if not isinstance(record, dict) or not isinstance(record.get("grid"), str):
        raise DataError(f"{path}: corrupt results-directory record (no grid); move it away to start anew")
    return record


def check_identity(
    results_dir: str | os.PathLike[str],
    cfg: Mapping[str, Any],
    workdir: str | os.PathLike[str] | None = None,
    aggregators: tuple[str, ...] = (),
) -> list[str]:
    """Refuse ``cfg`` for ``results_dir`` when the directory belongs to another grid (ConfigError
    naming both grids and the ways out); return warning lines (a changed config).

    Snakemake sees what a config change touches from its own records of how each file was made,
    kept in the working directory that ran it (``.snakemake/``). Results last run from another
    working directory ``workdir`` (a copy, a worktree) have no record here: a table whose inputs
    the change added would be kept as it is, so the warning then names the rules to rerun
    (``aggregators``: the rules that gather other jobs' outputs) with ``--forcerun``."""
    record = read_identity(results_dir)
    if record is None:
        return []
    if record["grid"] != cfg["grid"] and not cfg.get("overwrite_grid", False):
        raise ConfigError(
            f"results_dir {results_dir} holds results of grid {record['grid']!r}, not grid "
            f"{cfg['grid']!r}: its runs share paths and would be replaced. Use another results_dir "
            f"(--config results_dir=results-{cfg['grid']}), or --config overwrite_grid=true to replace them"
        )
    warnings = []
    if record["grid"] == cfg["grid"] and record.get("config_hash") != config_hash(cfg):
        changed = (
            f"results_dir {results_dir}: the config of grid {cfg['grid']!r} changed since its results "
            f"were made (config hash {record.get('config_hash')} -> {config_hash(cfg)})"
        )
        made_in = record.get("workdir")
        if workdir is not None and made_in and Path(made_in) != Path(workdir).resolve():
            rerun = f" --forcerun {' '.join(aggregators)}" if aggregators else " --forcerun <the table rules>"
            warnings.append(
                f"{changed}, and they were last run from another working directory ({made_in}): "
                "Snakemake here has no record of how they were made, so it cannot see which of them the "
                "change touches and keeps every table whose files exist. Add"
                f"{rerun} to rebuild the tables and claims from the runs the config now names"
            )
        else:
            warnings.append(f"{changed}; Snakemake's params and input triggers rerun what the change touches")
    return warnings


def write_identity(
    results_dir: str | os.PathLike[str],
    cfg: Mapping[str, Any],
    commit: str | None,
    rebuilt: bool = False,
    workdir: str | os.PathLike[str] | None = None,
) -> None:
    """Record (or update) the grid, papers and config hash of ``results_dir`` (a real run).

    Papers accumulate (a later run may add papers); ``created`` stays from the first run; a grid
    replaced with ``overwrite_grid`` is listed in ``replaced_grids``.  The config hash says which
    config the results were made under, so it changes only with ``rebuilt`` (the run finished
    every target of the new config, :func:`record_rebuilt`); a run that starts, fails or builds
    a subset keeps the old one (and the warning of :func:`check_identity`).  A new directory, or
    one whose grid is replaced, takes the current hash at once: nothing older is in it.
    ``workdir``: the working directory of the run (whose ``.snakemake/`` records the files),
    kept as ``workdir``; ``None`` keeps the recorded one."""
    previous = read_identity(results_dir) or {}
    now = {"commit": commit, "time": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
    replaced = list(previous.get("replaced_grids", []))
    if previous and previous["grid"] != cfg["grid"]:
        replaced.append(previous["grid"])
    papers = list(dict.fromkeys([*(previous.get("papers") or []), *cfg["papers"]]))
    same_grid = bool(previous) and previous["grid"] == cfg["grid"]
    record = {
        "grid": cfg["grid"],
        "papers": papers,
        "config_hash": previous.get("config_hash") if same_grid and not rebuilt else config_hash(cfg),
        "created": previous.get("created", now),
        "updated": now,
        "replaced_grids": replaced,
    }
    where = str(Path(workdir).resolve()) if workdir is not None else previous.get("workdir")
    if where:
        record["workdir"] = where
    if {k: v for k, v in record.items() if k != "updated"} != {
        k: v for k, v in previous.items() if k != "updated"
    }:
        write_json_atomic(Path(results_dir) / IDENTITY_FILE, record)


def record_rebuilt(
    results_dir: str | os.PathLike[str],
    cfg: Mapping[str, Any],
    commit: str | None,
    workdir: str | os.PathLike[str] | None = None,
) -> None:
    """A run built every target of ``cfg`` into ``results_dir``: its results are now the config's
    (the record's config hash becomes the current one)."""
    write_identity(results_dir, cfg, commit, rebuilt=True, workdir=workdir)
