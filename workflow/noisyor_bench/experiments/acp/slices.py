"""Calibration slices of ACP's synthetic cells: a few epochs of one fit at the cell's own size.

Why: the paper grid's cells (N_train up to 40,000 at D = 500) were priced from cells a hundred
times smaller; an epoch at the real N, D, K and budget says what one costs there.  A slice
builds the cell's dataset from the config, fits draw 0's hyperparameters (the defaults) for
:data:`SLICE_EPOCHS` epochs of the cell's budget, and keeps the last epoch's seconds (training
steps and that epoch's validation; the first epoch also pays the warm-up).  Its work is one
epoch's rows (:func:`noisyor_bench.experiments.acp.costs.effective_rows`), the unit in which the
cost model prices the cell's fits.  The test protocol after the fit is not in it.
"""

from __future__ import annotations

import dataclasses
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from noisyor_bench.experiments.acp import grid
from noisyor_bench.experiments.acp.costs import effective_rows
from noisyor_bench.experiments.costs import Job

#: Epochs a slice fits; the last one is timed.
SLICE_EPOCHS = 2
#: Rules whose jobs a slice stands for (a search chunk's draws are priced per search, rule ``search``).
RULES = {"train_cell": "train_cell", "search_chunk": "search", "search": "search"}


def _cell(cfg: Mapping[str, Any], job: Job) -> grid.Cell | None:
    path = job.chain or job.job  # a whole search or training names its cell
    return next((c for c in grid.cells(cfg) if c.path == path), None)


def bench_name(cfg: Mapping[str, Any], job: Job) -> tuple[str, str] | None:
    """The (rule, job) a slice of ``job`` is recorded under (None: no slice for it): its cell's
    whole training or search (rule ``search``), whatever split the grid's bound makes of them (a
    row prices its seeds or chunks by their work, and sizes the split)."""
    cell = _cell(cfg, job) if job.rule in RULES else None
    return None if cell is None else (RULES[job.rule], cell.path)


def slice_key(cfg: Mapping[str, Any], job: Job) -> str | None:
    """What a slice of ``job`` runs: its cell (a search's slice and its training's fit the same
    draw at the same budget, so one run prices both)."""
    cell = _cell(cfg, job) if job.rule in RULES else None
    return None if cell is None else cell.path


def run(cfg: Mapping[str, Any], job: Job, raw_data_dir: str | None) -> tuple[float, float, str]:
    """(seconds of one epoch, its work, what was run) of the cell of ``job``."""
    from noisyor_bench.data.rawdata import resolve_raw_data_dir
    from noisyor_bench.data.synthetic.build import build_dataset
    from noisyor_bench.experiments.acp.runs import RunSpec, fit_only
    from noisyor_bench.inference.fitting import BUDGET_FIELDS, FitBudget
    from noisyor_bench.infra.io import write_npz_atomic

    cell = _cell(cfg, job)
    assert cell is not None
    budget = grid.budget(cfg, cell)
    fields = {k: v for k, v in budget.items() if k in BUDGET_FIELDS}
    fit_budget = dataclasses.replace(
        FitBudget(**fields), max_epochs=SLICE_EPOCHS, patience=SLICE_EPOCHS + 1, eval_every=1
    )
    factor = grid.latents_factor(cfg, cell.experiment)
    spec_data = cfg["datasets"][cell.dataset]
    with tempfile.TemporaryDirectory(prefix="noisyor-slice-") as tmp:
        arrays, _ = build_dataset(
            cell.dataset, spec_data, resolve_raw_data_dir(raw_data_dir), Path(tmp) / "cache"
        )
        path = Path(tmp) / f"{cell.dataset}.npz"
        write_npz_atomic(path, **arrays)
        k = int(arrays["theta"].shape[1]) if "theta" in arrays else None
        spec = RunSpec(
            dataset=path,
            method=cell.method,
            mode=cell.mode,
            n_train=cell.n_train,
            seed=0,
            out_dir=Path(tmp) / "run",
            dataset_name=cell.dataset,
            experiment=cell.experiment,
            hparams=grid.draws(cfg, cell)[0],
            budget=fit_budget,
            device="cpu",
            threads=1,
            n_latent=k * factor if factor != 1 and k else None,
            resume=False,
        )
        records = fit_only(spec)
    seconds = float(records[-1].seconds)
    work = float(effective_rows(cell.method, cell.n_train, budget))
    return seconds, work, f"last of {len(records)} epoch records ({cell.path}, draw 0)"


__all__ = ["RULES", "SLICE_EPOCHS", "bench_name", "run", "slice_key"]
