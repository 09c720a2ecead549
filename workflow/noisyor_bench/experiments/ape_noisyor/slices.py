"""Calibration slices of APE-on-noisy-OR's encoder training: a few epochs at the grid's own sizes.

Why: an encoder's job is priced from a measured job of the same encoder at the quick grid's
sizes (30 training problems, batch 8), or not at all (ACP model-aware runs in the paper grid
only).  A slice builds the family's problems from the grid's settings, as ``ape-noisyor-problems``
does, and runs the job's own code (:func:`~noisyor_bench.experiments.ape_noisyor.runs.train_encoder`)
for its first seed, cut to :data:`SLICE_EPOCHS` epochs: the last epoch is timed (its steps and
its exact validation; the first also pays the warm-up), and what the run does once after its
fit (scoring the test problems, writing the run folder) is added spread over the job's epoch cap.
Its work is one epoch of one seed in the cost model's unit (training problems x rows), so a job
priced from its slice alone runs every seed's every epoch to the cap (an upper bound where
patience stops a fit earlier).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from noisyor_bench.experiments.costs import Job

#: Epochs a slice trains; the last one is timed.
SLICE_EPOCHS = 2
RULE = "ape_noisyor_train"


def _encoder(cfg: Mapping[str, Any], job: Job) -> tuple[Any, str, Any] | None:
    """(settings, family, encoder) of an ``ape_noisyor_train`` job (None: not one)."""
    from noisyor_bench.experiments.ape_noisyor.settings import parse_settings

    sec = (cfg.get("grids") or {}).get(cfg.get("grid"), {}).get("ape_noisyor")
    if job.rule != RULE or not sec:
        return None
    settings = parse_settings(sec)
    for family in settings.families:
        for name, encoder in settings.encoders.items():
            if job.job == f"{family}-{name}":
                return settings, family, encoder
    return None


def bench_name(cfg: Mapping[str, Any], job: Job) -> tuple[str, str] | None:
    """The (rule, job) a slice of ``job`` is recorded under: the job itself (None: no slice)."""
    return (job.rule, job.job) if _encoder(cfg, job) is not None else None


def run(cfg: Mapping[str, Any], job: Job, raw_data_dir: str | None) -> tuple[float, float, str]:
    """(seconds of one epoch and its share of the run's end, one epoch's work, what was run)."""
    import csv
    import dataclasses
    import json
    import tempfile
    import time
    from pathlib import Path

    from noisyor_bench.experiments.ape_noisyor.problems import build_problems
    from noisyor_bench.experiments.ape_noisyor.runs import train_encoder

    found = _encoder(cfg, job)
    assert found is not None
    settings, family, encoder = found
    arrays = build_problems(settings, family)
    seed = settings.seeds[0]
    budget = dataclasses.replace(settings.budget, max_epochs=SLICE_EPOCHS, patience=SLICE_EPOCHS + 1)
    sliced = dataclasses.replace(settings, budget=budget, seeds=(seed,))
    with tempfile.TemporaryDirectory(prefix="noisyor-slice-") as tmp:
        start = time.perf_counter()
        out = train_encoder(arrays, sliced, family, encoder, seed, Path(tmp) / "run")
        total = time.perf_counter() - start
        fit_seconds = float(json.loads((out / "metrics.json").read_text())["train_seconds"])
        with open(out / "curve.csv", newline="") as fh:
            epochs = list(csv.DictReader(fh))
    after = max(total - fit_seconds, 0.0)  # once per seed, after its fit
    cap = settings.budget.max_epochs
    seconds = float(epochs[-1]["seconds"]) + after / cap
    work = float(settings.problems["train"] * settings.rows["train"])
    what = (
        f"epoch {len(epochs)} of {family} {encoder.name} seed {seed} ({settings.problems['train']} problems x "
        f"{settings.candidates} candidates, {settings.rows['train']} rows) + {after:.1f} s after the fit / {cap} epochs"
    )
    return seconds, work, what


__all__ = ["RULE", "SLICE_EPOCHS", "bench_name", "run"]
