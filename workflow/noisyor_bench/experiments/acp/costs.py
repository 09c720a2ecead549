"""ACP's compute jobs for the cost model (:mod:`noisyor_bench.experiments.costs`).

Why here: the sizes that drive a job's cost are ACP's own (cells, N_train, epochs, draws,
seeds).  A fit costs ~ rows x epochs, where an AVI/ACP epoch is at least ``min_epoch_steps``
steps of ``batch_size`` rows (below that the cost per epoch is constant); a search chunk runs
its draws, a train job its seeds (the method of benchmarks/estimate_compute.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from noisyor_bench.experiments.acp import grid
from noisyor_bench.experiments.acp.grid import corpora as corpus_grid
from noisyor_bench.experiments.costs import BASE_MEM_MB, Job

#: Benchmark names of ACP's compute rules (the others are local).
COMPUTE_RULES = ("search_chunk", "train_cell", "train_cell_corpus", "baselines")
AMORTIZED = ("avi", "acp", "acp-sg")
"""Methods whose fits are minibatch network training (CUDA-capable); SVI, LB-CDI and UB-CDI fit
each data point on its own and stay on the CPU."""


def is_cuda_method(method: str) -> bool:
    """Whether a cell of ``method`` can use a GPU (its rules declare ``gpu`` for it)."""
    return method in AMORTIZED


#: Bytes per data row in memory with the training's copies (D <= 784, float32, ~10 copies).
ROW_BYTES = 784 * 4 * 10


def effective_rows(method: str, n: int, budget: Mapping[str, Any]) -> int:
    """Rows an epoch touches: amortized epochs are at least min_epoch_steps x batch_size rows."""
    floor = int(budget.get("min_epoch_steps", 20)) * int(budget.get("batch_size", 128))
    return max(n, floor) if method in AMORTIZED else max(n, 1)


def _mem(n_rows: int) -> int:
    return BASE_MEM_MB + n_rows * ROW_BYTES // 1_000_000


def _synthetic_jobs(cfg: Mapping[str, Any]) -> list[Job]:
    jobs = []
    for cell in grid.cells(cfg):
        budget = grid.budget(cfg, cell)
        fit = effective_rows(cell.method, cell.n_train, budget) * float(budget.get("max_epochs", 1))
        key = (cell.method, cell.dataset, cell.experiment)
        common = dict(
            key=key,
            size=float(max(cell.n_train, 1)),
            cuda=is_cuda_method(cell.method),
            mem_mb=_mem(cell.n_train),
            unit=fit,
            chain=cell.path,
        )
        if grid.n_draws(cfg, cell) > 1:
            for index, (start, stop) in enumerate(grid.search_chunks(cfg, cell)):
                jobs.append(
                    Job(
                        "search_chunk",
                        f"{cell.path}/{index}",
                        (stop - start) * fit,
                        measured_rule="search",
                        **common,
                    )
                )
        seeds = grid.seeds(cfg, cell.experiment, cell.dataset, cell.method)
        jobs.append(Job("train_cell", cell.path, len(seeds) * fit, stage=1, **common))
    return jobs


def _search_reference_jobs(cfg: Mapping[str, Any]) -> list[Job]:
    """Whole searches as the measured runs timed them (rule ``search``, all draws in one job,
    before searches were split into chunks); a table with ``search_chunk`` rows matches :func:`jobs`."""
    jobs = []
    for cell in grid.cells(cfg):
        if grid.n_draws(cfg, cell) > 1:
            budget = grid.budget(cfg, cell)
            fit = effective_rows(cell.method, cell.n_train, budget) * float(budget.get("max_epochs", 1))
            key = (cell.method, cell.dataset, cell.experiment)
            jobs.append(
                Job(
                    "search",
                    cell.path,
                    grid.n_draws(cfg, cell) * fit,
                    key=key,
                    size=float(max(cell.n_train, 1)),
                    unit=fit,
                )
            )
    return jobs


def _corpus_jobs(cfg: Mapping[str, Any]) -> list[Job]:
    epochs = float(corpus_grid.budget(cfg).get("max_epochs", 1))
    seeds = len(corpus_grid.seeds(cfg))
    return [
        Job(
            "train_cell_corpus",
            f"{c.experiment}/{c.dataset}/{c.method}/n{c.n_train}",
            seeds * max(c.n_train, 1) * epochs * c.latents,
            key=(c.method, c.dataset, c.experiment),
            size=float(max(c.n_train, 1)),
            cuda=is_cuda_method(c.method),
            mem_mb=_mem(c.n_train),
        )
        for c in corpus_grid.cells(cfg)
    ]


def _other_jobs(cfg: Mapping[str, Any]) -> list[Job]:
    settings = grid.baseline_settings(cfg)
    jobs = []
    for dataset in sorted({c.dataset for c in grid.cells(cfg)}):
        ns = grid.baseline_n_train(cfg, dataset)
        if ns:
            work = sum(min(n, int(settings["max_rows"])) for n in ns) * float(settings["iw_samples"])
            jobs.append(Job("baselines", dataset, work, key=(dataset,), cell=False, mem_mb=_mem(max(ns))))
    return jobs


def jobs(cfg: Mapping[str, Any]) -> list[Job]:
    """ACP's compute jobs in the active grid of ``cfg``."""
    if not grid.experiments(cfg) and not corpus_grid.corpus_section(cfg):
        return []
    return _synthetic_jobs(cfg) + _corpus_jobs(cfg) + _other_jobs(cfg)


def reference_jobs(cfg: Mapping[str, Any]) -> list[Job]:
    """As :func:`jobs`, plus whole searches as rule ``search`` (how config/job_seconds.csv measured them)."""
    return jobs(cfg) + (_search_reference_jobs(cfg) if grid.experiments(cfg) else [])
