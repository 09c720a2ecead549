"""Finished runs made from another dataset content or budget than the current ones.

Snakemake decides what to rerun from mtimes and from what it recorded of each job in its
metadata.  Neither sees content: results copied with future timestamps, or a directory whose
metadata is not at hand (another working directory, another spelling), keep runs trained on a
dataset since rebuilt.  Every run records the sha256 of the dataset it read and its budget
(``metrics.json``), so the workflow compares those with the current ones when it plans a job
(rules/acp_training.smk) and reruns the runs that differ.  Importable without Snakemake.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict
from pathlib import Path
from typing import Any

from noisyor_bench.experiments.acp.settings_key import stale_settings
from noisyor_bench.inference.fitting import budget_from_mapping, fit_budget_fields


def current_dataset_sha256(npz: str | Path) -> str | None:
    """sha256 of the dataset file as it is now; None while it is not built (its rebuild reruns
    every run that reads it anyway)."""
    from noisyor_bench.infra.hashing import sha256_file_memo

    return sha256_file_memo(npz) if Path(npz).is_file() else None


def stale_runs(
    metrics_files: Iterable[str | Path],
    dataset: str | Path,
    budget: Mapping[str, Any],
    fit_only: bool = False,
) -> dict[str, list[str]]:
    """The finished runs among ``metrics_files`` whose record states another dataset content
    than ``dataset``'s or another ``budget`` (the grid's mapping): ``{metrics.json: reasons}``.

    ``fit_only``: compare only the budget keys that shape the fit (search draws, reused under
    that key by ``acp-search``); otherwise every key, as each run records its whole budget.
    A missing or unreadable record is not judged here (Snakemake reruns a missing output; a
    damaged one is named by its readers)."""
    from noisyor_bench.infra.io import read_json

    sha = current_dataset_sha256(dataset)
    full = budget_from_mapping(dict(budget), "budget")
    fields = fit_budget_fields(full) if fit_only else asdict(full)
    found: dict[str, list[str]] = {}
    for path in metrics_files:
        if not Path(path).is_file():
            continue
        try:
            record = read_json(path)
        except (OSError, ValueError):
            continue
        if isinstance(record, Mapping) and (reasons := stale_settings(record, sha, fields)):
            found[str(path)] = reasons
    return found
