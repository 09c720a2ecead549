"""The part of an APE dataset's settings (``grids.<grid>.ape.datasets.<ds>``) each workflow step
reads. A rule passes exactly that part as its ``--settings``, and Snakemake reruns a job whose
params changed: a change to NUTS's seeds reruns NUTS and the evaluations that read it, not the
dataset and every encoder trained on it. Light (no torch): the rules import it at DAG time."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from noisyor_bench.infra.errors import ConfigError

BUDGET_KEYS = {"standard": "standard_training", "ape-naive": "naive_training"}
"""An encoder's own training budget section; any other encoder (and one without its section)
trains on ``training``."""

STEP_SECTIONS: dict[str, tuple[str, ...]] = {
    "ape-vi": ("vi",),
    "ape-nuts": ("nuts",),
    "ape-evaluate": ("evaluation", "ranking", "vi", "nuts"),
}
"""Whole sections a step reads; ``ape-data`` and ``ape-train`` are in :func:`step_settings`."""


def training_section(section: Mapping[str, Any], method: str) -> Mapping[str, Any]:
    """The budget of ``method``'s encoder: its own section (``standard_training``,
    ``naive_training``) when the grid has one, else the APE encoders' ``training``."""
    key = BUDGET_KEYS.get(method)
    return section[key] if key and section.get(key) else section["training"]


def step_settings(section: Mapping[str, Any], step: str, method: str | None = None) -> dict[str, Any]:
    """The settings ``step`` reads of one dataset's ``section``: ``ape-data`` its data, the
    theta pool and the number of evaluation documents it draws; ``ape-train`` the budget of
    ``method``'s encoder (as ``training``); the others their :data:`STEP_SECTIONS`."""
    if step == "ape-data":
        return {
            "data": dict(section["data"]),
            "theta_pool": dict(section["theta_pool"]),
            "evaluation": {"documents": section["evaluation"]["documents"]},
        }
    if step == "ape-train":
        if method is None:
            raise ConfigError("ape-train settings: an encoder method is needed")
        return {"training": dict(training_section(section, method))}
    if step not in STEP_SECTIONS:
        raise ConfigError(
            f"unknown APE step {step!r}; choose one of ape-data, ape-train, {', '.join(STEP_SECTIONS)}"
        )
    return {key: section[key] for key in STEP_SECTIONS[step] if key in section}
