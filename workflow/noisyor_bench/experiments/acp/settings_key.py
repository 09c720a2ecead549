"""What a training run's result depends on, as one comparable key.

A checkpoint in ``<run>.partial`` is resumed, and a finished search draw is reused, only when
the settings it was made under are the current ones.  :func:`resume_key` is what a checkpoint
must agree on (the fit: dataset content, method, mode, N_train, seed, initialisation key,
hyperparameters, budget, latents, device type); :func:`result_key` adds the evaluation of the
fitted model (validation and test protocol), which a finished run's numbers also depend on.
:func:`recorded_result_key` rebuilds the same key from a finished run's ``metrics.json``, so a
draw made by any earlier invocation is judged by what it recorded, not by its folder name.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict
from typing import Any

from noisyor_bench.inference.fitting import BUDGET_FIELDS, FitBudget, fit_budget_fields

FIELD_NAMES = {
    "dataset_sha256": "dataset content",
    "n_latent": "latents",
    "device_type": "device",
    "init_key": "initialisation",
    "n_train": "N_train",
}
"""How a key field is named in messages (the others by their own name)."""


def resume_key(spec: Any, dataset_sha256: str, device_type: str) -> dict[str, Any]:
    """What a checkpoint in the partial directory must agree on to be resumed."""
    return {
        "dataset_sha256": dataset_sha256,
        "method": spec.method,
        "mode": spec.mode,
        "n_train": int(spec.n_train),
        "seed": int(spec.seed),
        "init_key": spec.init_key,
        "hparams": dict(spec.hparams),
        "budget": fit_budget_fields(spec.budget),
        "n_latent": spec.n_latent,
        "device_type": device_type,
    }


def _evaluation(values: Mapping[str, Any]) -> dict[str, Any]:
    """The evaluation settings of a RunSpec (or of a record's copy of one)."""
    return {
        "n_samples": values.get("n_samples"),
        "iw_samples": values.get("iw_samples"),
        "exact_max_k": values.get("exact_max_k"),
        "nll": values.get("nll"),
        "val_metrics": values.get("val_metrics"),
        "evaluate_test": values.get("evaluate_test"),
    }


def result_key(spec: Any, dataset_sha256: str, device_type: str) -> dict[str, Any]:
    """The resume key plus the evaluation: a finished run is reused only under this key."""
    return {**resume_key(spec, dataset_sha256, device_type), "evaluation": _evaluation(vars(spec))}


def recorded_budget(record: Mapping[str, Any]) -> FitBudget | None:
    """The FitBudget a run's record states (fields it predates take their defaults); None when
    the record holds no readable budget."""
    values = record.get("budget")
    if not isinstance(values, Mapping):
        return None
    try:
        return FitBudget(**{k: v for k, v in values.items() if k in BUDGET_FIELDS})
    except (TypeError, ValueError):
        return None


def recorded_result_key(record: Mapping[str, Any]) -> dict[str, Any] | None:
    """:func:`result_key` of the run whose ``metrics.json`` is ``record``; None when the record
    lacks what the key needs (a record from before these fields: never reused)."""
    config = (record.get("provenance") or {}).get("config")
    budget = recorded_budget(record)
    device = record.get("device")
    if not isinstance(config, Mapping) or budget is None or not isinstance(device, str):
        return None
    try:
        return {
            "dataset_sha256": record["dataset_sha256"],
            "method": record["method"],
            "mode": record["mode"],
            "n_train": int(record["n_train"]),
            "seed": int(record["seed"]),
            "init_key": record.get("init_key"),
            "hparams": dict(record.get("hparams") or {}),
            "budget": fit_budget_fields(budget),
            "n_latent": record.get("n_latent"),
            "device_type": device.partition(":")[0],
            "evaluation": _evaluation(config),
        }
    except (KeyError, TypeError, ValueError):
        return None


def changed_fields(recorded: Mapping[str, Any] | None, current: Mapping[str, Any]) -> list[str]:
    """The fields (message names) in which ``recorded`` differs from ``current``;
    ``["unrecorded settings"]`` when nothing was recorded."""
    if recorded is None:
        return ["unrecorded settings"]
    return [FIELD_NAMES.get(k, k) for k in current if recorded.get(k) != current[k]]


def stale_settings(
    record: Mapping[str, Any], dataset_sha256: str | None, budget: Mapping[str, Any] | None
) -> list[str]:
    """Why a finished run no longer matches the current dataset content and budget: one phrase per
    difference (``dataset content 1a2b3c4d5e6f -> ...``, ``budget max_epochs 2 -> 3``); empty when
    it matches or the record does not say.  ``budget``: the budget's fields to compare (all of
    :class:`FitBudget`, or only :func:`fit_budget_fields`, as the reader of the run reuses it)."""
    reasons = []
    recorded_sha = record.get("dataset_sha256")
    if dataset_sha256 is not None and isinstance(recorded_sha, str) and recorded_sha != dataset_sha256:
        reasons.append(f"dataset content {recorded_sha[:12]} -> {dataset_sha256[:12]}")
    made_under = recorded_budget(record)
    if budget is not None and made_under is not None:
        was = asdict(made_under)
        moved = [f"{k} {was.get(k)} -> {v}" for k, v in budget.items() if was.get(k) != v]
        if moved:
            reasons.append("budget " + ", ".join(moved))
    return reasons
