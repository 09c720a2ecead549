"""ACP's compute jobs for the cost model (:mod:`noisyor_bench.experiments.costs`).

Why here: the sizes that drive a job's cost are ACP's own (cells, N_train, epochs, draws,
seeds).  A fit costs ~ rows x epochs, where an AVI/ACP epoch is at least ``min_epoch_steps``
steps of ``batch_size`` rows (below that the cost per epoch is constant); a search chunk runs
its draws, a train job its seeds (the method of benchmarks/estimate_compute.py).  The baselines
job is priced by what it runs (:mod:`~noisyor_bench.experiments.acp.baseline_costs`).  A train
job's held-out ``nll_test`` (``evaluation.nll``) is not priced on its own: it is in the measured
seconds only at the measured runs' settings (exact paths in the quick grid), so a grid scoring
it by AIS costs more than estimated (docs/cluster.md).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping, Sequence
from typing import Any

from noisyor_bench.experiments import segments
from noisyor_bench.experiments.acp import grid
from noisyor_bench.experiments.acp.baseline_costs import baselines_ns
from noisyor_bench.experiments.acp.grid import corpora as corpus_grid
from noisyor_bench.experiments.acp.search import chunk_count, chunk_ranges, even_ranges
from noisyor_bench.experiments.costs import (
    BASE_MEM_MB,
    REFERENCE_TABLES,
    Job,
    Reference,
    checkout_references,
    job_seconds,
)
from noisyor_bench.inference.noisyor.registry import AMORTIZED
from noisyor_bench.infra.errors import ConfigError

#: Benchmark names of ACP's compute rules (the others are local).
COMPUTE_RULES = ("search_chunk", "train_cell", "train_cell_corpus", "baselines")


def is_cuda_method(method: str) -> bool:
    """Whether a cell of ``method`` can use a GPU (its rules declare ``gpu`` for it): the
    registry's amortized methods, whose fits are minibatch network training."""
    return method in AMORTIZED


#: Bytes per data row in memory with the training's copies (D <= 784, float32, ~10 copies).
ROW_BYTES = 784 * 4 * 10


def effective_rows(method: str, n: int, budget: Mapping[str, Any]) -> int:
    """Rows an epoch touches: amortized epochs are at least min_epoch_steps x batch_size rows."""
    floor = int(budget.get("min_epoch_steps", 20)) * int(budget.get("batch_size", 128))
    return max(n, floor) if method in AMORTIZED else max(n, 1)


def _mem(n_rows: int) -> int:
    return BASE_MEM_MB + n_rows * ROW_BYTES // 1_000_000


def _common(cfg: Mapping[str, Any], cell: grid.Cell) -> dict[str, Any]:
    """What a cell's search and train jobs share: matching key, size, CUDA, memory, cost of one fit."""
    budget = grid.budget(cfg, cell)
    fit = effective_rows(cell.method, cell.n_train, budget) * float(budget.get("max_epochs", 1))
    return dict(
        key=(cell.method, cell.dataset, cell.experiment),
        size=float(max(cell.n_train, 1)),
        cuda=is_cuda_method(cell.method),
        mem_mb=_mem(cell.n_train),
        unit=fit,
        chain=cell.path,
        family=cell.method,
    )


def _whole_train_job(cfg: Mapping[str, Any], cell: grid.Cell) -> Job:
    """The cell's training as one job over all its seeds (rule train_cell)."""
    common = _common(cfg, cell)
    seeds = grid.seeds(cfg, cell.experiment, cell.dataset, cell.method)
    return Job("train_cell", cell.path, len(seeds) * common["unit"], stage=1, **common)


def _synthetic_jobs(cfg: Mapping[str, Any]) -> list[Job]:
    jobs = []
    for cell in grid.cells(cfg):
        common = _common(cfg, cell)
        fit = common["unit"]
        if grid.n_draws(cfg, cell) > 1:
            inits = grid.inits_per_draw(cfg, cell)  # each draw trains from this many initialisations
            for index, (start, stop) in enumerate(search_chunks(cfg, cell)):
                jobs.append(
                    Job(
                        "search_chunk",
                        f"{cell.path}/{index}",
                        (stop - start) * inits * fit,
                        measured_rule="search",
                        **common,
                    )
                )
        if train_per_seed(cfg, cell):  # rule train_cell_seed: benchmark train_cell/<cell>/seed<s>
            seeds = grid.seeds(cfg, cell.experiment, cell.dataset, cell.method)
            n = train_segments(cfg, cell)  # each seed's rule train_segment jobs, then train_cell_seed
            jobs += [
                Job(
                    "train_cell",
                    segments.segment_stem(f"{cell.path}/seed{s}", k, n),
                    fit / n,
                    stage=1 + k,
                    **common,
                )
                for s in seeds
                for k in range(n)
            ]
        else:
            jobs.append(_whole_train_job(cfg, cell))
    return jobs


def _search_reference_jobs(cfg: Mapping[str, Any]) -> list[Job]:
    """Whole searches as the measured runs timed them (rule ``search``, all draws in one job,
    before searches were split into chunks, and before ``search.inits_per_draw``: one initialisation
    per draw); a table with ``search_chunk`` rows matches :func:`jobs`."""
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
                    family=cell.method,
                )
            )
    return jobs


def _whole_train_jobs(cfg: Mapping[str, Any]) -> list[Job]:
    return [_whole_train_job(cfg, cell) for cell in grid.cells(cfg)]


def search_seconds(cfg: Mapping[str, Any], references: Sequence[Reference]) -> dict[str, float]:
    """One-core seconds of each searched cell's whole search in the active grid (cell path ->
    seconds), scaled from the measured whole searches (rule ``search``) as :func:`jobs`' chunks
    are, so a chunk's estimate is its share of this.  Only whole searches: the split of a
    reference grid does not enter its own plan (no recursion through :func:`jobs`)."""
    return job_seconds("acp", cfg, references, _search_reference_jobs)


def train_seconds(cfg: Mapping[str, Any], references: Sequence[Reference]) -> dict[str, float]:
    """One-core seconds of each cell's training over all its seeds in one job (cell path ->
    seconds), from the measured whole cells, as :func:`search_seconds` for searches."""
    return job_seconds("acp", cfg, references, _whole_train_jobs)


@functools.lru_cache(maxsize=16)
def _checkout_plan(cfg_json: str) -> tuple[dict[str, float], dict[str, float]]:
    """(search seconds, train seconds) per cell from the checkout's measured runs, once per config."""
    cfg = json.loads(cfg_json)
    references = checkout_references(cfg.get("job_seconds"))
    if not references:
        raise ConfigError(
            "search.max_job_hours: no measured runs to size the jobs from "
            f"({', '.join(p for _, p in REFERENCE_TABLES)}); set search.draws_per_job instead"
        )
    searches = search_seconds(cfg, references)  # one initialisation per draw, as measured
    inits = {c.path: grid.inits_per_draw(cfg, c) for c in grid.cells(cfg)}
    return {k: v * inits[k] for k, v in searches.items()}, train_seconds(cfg, references)


def _plan(cfg: Mapping[str, Any]) -> tuple[dict[str, float], dict[str, float]]:
    return _checkout_plan(json.dumps(cfg, sort_keys=True, default=str))


def search_chunk_count(cfg: Mapping[str, Any], cell: grid.Cell, max_job_hours: float) -> int:
    """Chunks of the cell's search under ``search.max_job_hours`` (:func:`search_chunks`): its whole
    search's estimate (the checkout's measured runs, :func:`~noisyor_bench.experiments.costs.checkout_references`)
    split so that each chunk stays under the bound; a small cell is one chunk."""
    n = grid.n_draws(cfg, cell)
    if n <= 1:
        return 1
    return chunk_count(n, _plan(cfg)[0][cell.path], max_job_hours)


def train_hours(cfg: Mapping[str, Any], cell: grid.Cell) -> float:
    """One-core hours of the cell's training in one job (:func:`train_per_seed` compares them with
    ``search.max_job_hours``), from the checkout's measured runs."""
    return _plan(cfg)[1][cell.path] / 3600


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
            family=c.method,
        )
        for c in corpus_grid.cells(cfg)
    ]


def _other_jobs(cfg: Mapping[str, Any]) -> list[Job]:
    """The baselines job of each dataset with learning cells, priced by what it runs (the true
    model's exact / AIS -log p(x), the IW rows only with ``baselines.bounds``:
    :mod:`~noisyor_bench.experiments.acp.baseline_costs`)."""
    settings = grid.baseline_settings(cfg)
    samples = int(grid.evaluation(cfg)["samples"])
    jobs = []
    for dataset in sorted({c.dataset for c in grid.cells(cfg)}):
        ns = grid.baseline_n_train(cfg, dataset)
        if ns:
            work = baselines_ns(cfg, dataset, settings, samples)
            jobs.append(Job("baselines", dataset, work, key=(dataset,), cell=False, mem_mb=_mem(max(ns))))
    return jobs


def jobs(cfg: Mapping[str, Any]) -> list[Job]:
    """ACP's compute jobs in the active grid of ``cfg``."""
    if not grid.experiments(cfg) and not corpus_grid.corpus_section(cfg):
        return []
    return _synthetic_jobs(cfg) + _corpus_jobs(cfg) + _other_jobs(cfg)


def reference_jobs(cfg: Mapping[str, Any]) -> list[Job]:
    """As :func:`jobs`, plus whole searches as rule ``search`` (how config/job_seconds.csv measured
    them) and the whole training of the cells trained one job per seed (how a calibration slice
    records them, whatever the split)."""
    if not grid.experiments(cfg):
        return jobs(cfg)
    split = {c.path for c in per_seed_cells(cfg)}
    wholes = [j for j in _whole_train_jobs(cfg) if j.job in split]
    return jobs(cfg) + _search_reference_jobs(cfg) + wholes


# ---------------------------------------------------------------- how a cell is split into jobs
# (here, not in grid: the split follows the cost model, which reads the grid)
def search_chunks(cfg: Mapping[str, Any], cell: grid.Cell) -> list[tuple[int, int]]:
    """Draw ranges ``[start, stop)`` of the cell's search jobs (rule search_chunk), in order:
    ``draws_per_job`` draws each; else as many nearly equal chunks as the cost model's estimate
    of the whole search needs to keep each under ``max_job_hours`` on one core
    (:func:`search_chunk_count`); else one chunk."""
    per_job = grid.draws_per_job(cfg, cell)
    hours = grid.max_job_hours(cfg, cell)
    if per_job is not None or hours is None:
        return chunk_ranges(grid.n_draws(cfg, cell), per_job)
    return even_ranges(grid.n_draws(cfg, cell), search_chunk_count(cfg, cell, hours))


def train_per_seed(cfg: Mapping[str, Any], cell: grid.Cell) -> bool:
    """Whether the cell trains as one job per seed (rule train_cell_seed) instead of one job for
    all (train_cell): the cost model puts its seeds together over ``search.max_job_hours`` (the
    bound of every job of the cell, whatever sets the search chunks) and it has several seeds."""
    hours = grid.chunking(cfg, cell).get("max_job_hours")
    if hours is None or len(grid.seeds(cfg, cell.experiment, cell.dataset, cell.method)) < 2:
        return False
    return train_hours(cfg, cell) > float(hours)


def train_segments(cfg: Mapping[str, Any], cell: grid.Cell) -> int:
    """Jobs each seed's training runs as (:mod:`noisyor_bench.experiments.segments`): one, or,
    for a cell trained one job per seed whose seed the cost model puts over
    ``search.max_job_hours``, enough segments to keep each under it; at most one per epoch
    (a segment fits at least one)."""
    if not train_per_seed(cfg, cell):
        return 1
    seeds = len(grid.seeds(cfg, cell.experiment, cell.dataset, cell.method))
    n = segments.count(train_hours(cfg, cell) * 3600 / seeds, grid.chunking(cfg, cell)["max_job_hours"])
    return min(n, max(1, int(grid.budget(cfg, cell).get("max_epochs", 1))))


def segment_seconds(cfg: Mapping[str, Any], cell: grid.Cell) -> float:
    """Fitting time of each of a seed's segment jobs: :data:`~noisyor_bench.experiments.segments.FILL`
    x its share of the seed's estimated training (a segment pauses at the first epoch end after it)."""
    seeds = len(grid.seeds(cfg, cell.experiment, cell.dataset, cell.method))
    return segments.FILL * train_hours(cfg, cell) * 3600 / seeds / train_segments(cfg, cell)


def per_seed_cells(cfg: Mapping[str, Any]) -> list[grid.Cell]:
    """The cells of the grid that train one job per seed (:func:`train_per_seed`)."""
    return [c for c in grid.cells(cfg) if train_per_seed(cfg, c)]
