"""ACP's part of the experiment grid (``grids.<grid>.acp``, the grid chosen by ``--config
grid=...``): which runs exist, with which budget and search draws.

One grid, two kinds of cells: the synthetic experiments (this module: :class:`Cell`,
:func:`cells`, ...) and the real-corpus experiments of the grid's ``text`` section
(:mod:`noisyor_bench.experiments.acp.grid.corpora`: :class:`~.corpora.CorpusCell`, ...).

A *cell* is one (experiment, dataset, method, N_train) combination; it is trained once per
seed with the hyperparameters chosen by the cell's random search.  The Snakefile builds its
jobs from :func:`cells`, and the same functions are tested here, so the DAG and the package
agree on what the grid is.  ``N_train = 0`` marks non-amortized methods optimised directly on
the held-out set (paper Section 4.2).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from noisyor_bench.experiments.acp.grid import (
    corpora as corpora,  # the grid's real-corpus cells (grid.corpora)
)
from noisyor_bench.experiments.acp.search import DEFAULT_INITS_PER_DRAW, check_inits_per_draw, sample_hparams
from noisyor_bench.experiments.config import NEUTRAL_GRID_KEYS
from noisyor_bench.experiments.rundir import RunKey, cell_path
from noisyor_bench.inference.fitting import config_budget_defaults
from noisyor_bench.inference.noisyor.registry import AMORTIZED, LEARNING_ONLY, METHOD_NAMES, method_info
from noisyor_bench.infra.constants import (
    BASELINE_IW_SAMPLES,
    BASELINE_MAX_ROUNDS,
    BASELINE_MAX_ROWS,
    DEFAULT_N_SAMPLES,
    WORKFLOW_IW_SAMPLES,
)
from noisyor_bench.infra.errors import ConfigError

DEFAULT_BUDGET = config_budget_defaults()
DEFAULT_EVALUATION = {"samples": DEFAULT_N_SAMPLES, "iw_samples": WORKFLOW_IW_SAMPLES}


@dataclass(frozen=True, order=True)
class Cell:
    experiment: str
    dataset: str
    method: str
    n_train: int
    mode: str

    @property
    def path(self) -> str:
        """``<experiment>/<dataset>/<method>/n<N_train>``: the cell's place under runs/ and search/."""
        return cell_path(self.experiment, self.dataset, self.method, self.n_train)

    def run_key(self, seed: int) -> RunKey:
        """The key (and path) of the cell's run with ``seed``."""
        return RunKey(self.experiment, self.dataset, self.method, self.n_train, int(seed))


def active_grid(cfg: Mapping[str, Any], grid: str | None = None) -> dict[str, Any]:
    """ACP's view of the selected (or named) grid: the grid's paper-neutral keys (device,
    threads, ...) with its ``acp`` section; only the neutral keys where the grid has none."""
    whole = cfg["grids"][cfg["grid"] if grid is None else grid]
    view = {key: value for key, value in whole.items() if key in NEUTRAL_GRID_KEYS}
    view.update(whole.get("acp") or {})
    return view


def experiments(cfg: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    return dict(active_grid(cfg).get("experiments") or {})


def not_run_experiments(cfg: Mapping[str, Any]) -> dict[str, str]:
    """Paper experiments the grid leaves out on purpose -> why (their claims: not tested)."""
    return {str(k): str(v) for k, v in (active_grid(cfg).get("not_run_experiments") or {}).items()}


def cells(cfg: Mapping[str, Any], experiment: str | None = None) -> list[Cell]:
    """Every cell of the selected grid (or of one experiment), in a stable order."""
    out = []
    for name, exp in sorted(experiments(cfg).items()):
        if experiment is not None and name != experiment:
            continue
        for dataset in exp["datasets"]:
            for method, sizes in runs_for(exp, dataset).items():
                for n in sizes:
                    out.append(Cell(name, dataset, method, int(n), exp["mode"]))
    return out


def runs_for(exp: Mapping[str, Any], dataset: str) -> dict[str, list[int]]:
    """method -> N_train list of one dataset: ``dataset_runs[dataset]`` if given, else ``runs``."""
    return dict((exp.get("dataset_runs") or {}).get(dataset) or exp["runs"])


def seeds(
    cfg: Mapping[str, Any],
    experiment: str | None = None,
    dataset: str | None = None,
    method: str | None = None,
) -> list[int]:
    """Seeds of the grid, of ``experiment`` or of one of its datasets: the experiment's
    ``dataset_seeds[dataset]`` if given, else its own ``seeds``, else the grid's.  More seeds
    where runs take seconds (a success rate or a CI over seeds is reported), fewer where a run
    takes minutes (e.g. quick's Fig. 5: 5 seeds on the D = 50 panels, 2 at D = 500).

    With ``method``: a method that is deterministic in the experiment's mode (SVI, LB-CDI,
    UB-CDI in inference mode: the same posterior for every seed) runs the first seed only --
    one setting is evaluated once, not replicated."""
    grid_ = active_grid(cfg)
    exp = (experiments(cfg).get(experiment) or {}) if experiment is not None else {}
    own = (exp.get("dataset_seeds") or {}).get(dataset) if dataset is not None else None
    if own is None:
        own = exp.get("seeds")
    out = [int(s) for s in (own if own is not None else grid_.get("seeds", [0]))]
    if method is not None and is_deterministic_cell(exp.get("mode"), method):
        return out[:1]
    return out


def is_deterministic_cell(mode: str | None, method: str) -> bool:
    """Whether a cell's runs give the same numbers for every seed (one run is the setting)."""
    return mode == "inference" and method in METHOD_NAMES and method_info(method).deterministic_in_inference


def deterministic_cells(cfg: Mapping[str, Any]) -> list[Cell]:
    """The cells of the grid that run one seed (:func:`is_deterministic_cell`)."""
    return [c for c in cells(cfg) if is_deterministic_cell(c.mode, c.method)]


@dataclass(frozen=True)
class SeedGroup:
    """Cells trained by one ``train_cell<suffix>`` rule: its experiments, its datasets (``None``:
    any) and their common seed list."""

    suffix: str
    experiments: tuple[str, ...]
    datasets: tuple[str, ...] | None
    seeds: tuple[int, ...]
    methods: tuple[str, ...] | None = None  # None: any; else the deterministic cells' methods


def seed_groups(cfg: Mapping[str, Any]) -> list[SeedGroup]:
    """How the training rules split the cells by seed list.  A Snakemake rule's outputs (one set
    of files per seed) are fixed per rule, so the experiments whose every dataset runs the
    grid's seeds share rule ``train_cell`` (suffix ``""``, listed first even when empty); an
    experiment with one seed list of its own gets ``train_cell_<name>`` (non-word characters as
    ``_``); one whose datasets differ (``dataset_seeds``) gets one rule per seed list,
    ``train_cell_<name>_<n>seeds``, restricted to those datasets."""
    default = seeds(cfg)
    shared: list[str] = []
    own: list[SeedGroup] = []
    for name in sorted(experiments(cfg)):
        exp = experiments(cfg)[name]
        by_seeds: dict[tuple[int, ...], list[str]] = {}
        for ds in exp["datasets"]:
            by_seeds.setdefault(tuple(seeds(cfg, name, ds)), []).append(ds)
        tag = re.sub(r"\W", "_", name)
        if len(by_seeds) == 1:
            (only,) = by_seeds
            if list(only) == default:
                shared.append(name)
            else:
                own.append(SeedGroup(f"_{tag}", (name,), None, only))
            continue
        for i, (group_seeds, datasets) in enumerate(
            sorted(by_seeds.items(), key=lambda kv: (len(kv[0]), kv[0]))
        ):
            suffix = f"_{tag}_{len(group_seeds)}seeds"
            if any(g.suffix == suffix for g in own):
                suffix += f"_{i}"
            own.append(SeedGroup(suffix, (name,), tuple(sorted(datasets)), group_seeds))
    return [SeedGroup("", tuple(shared), None, tuple(default)), *own, *single_seed_groups(cfg)]


def single_seed_groups(cfg: Mapping[str, Any]) -> list[SeedGroup]:
    """The deterministic cells (:func:`is_deterministic_cell`), one group per first seed: rule
    ``train_cell_once`` trains them on that seed alone and takes precedence over the groups
    above, whose patterns also match them (rules/acp_training.smk)."""
    by_seed: dict[int, list[Cell]] = {}
    for cell in deterministic_cells(cfg):
        by_seed.setdefault(seeds(cfg, cell.experiment, cell.dataset, cell.method)[0], []).append(cell)
    return [
        SeedGroup(
            "_once" if i == 0 else f"_once_{i}",
            tuple(sorted({c.experiment for c in group})),
            None,
            (seed,),
            tuple(sorted({c.method for c in group})),
        )
        for i, (seed, group) in enumerate(sorted(by_seed.items()))
    ]


def budget(cfg: Mapping[str, Any], cell: Cell) -> dict[str, int | float]:
    """Fit budget: defaults < grid ``budget`` < experiment ``budget`` < grid
    ``method_budget[method]`` < experiment ``method_budget[method]``.  Keys absent from every
    layer (e.g. ``convergence_window``, ``convergence_rel_tol``) take the
    :class:`~noisyor_bench.inference.fitting.FitBudget` defaults in the run."""
    grid_, exp = active_grid(cfg), experiments(cfg)[cell.experiment]
    merged = dict(DEFAULT_BUDGET)
    for layer in (
        grid_.get("budget"),
        exp.get("budget"),
        (grid_.get("method_budget") or {}).get(cell.method),
        (exp.get("method_budget") or {}).get(cell.method),
    ):
        merged.update(layer or {})
    return merged


def evaluation(cfg: Mapping[str, Any]) -> dict[str, int]:
    merged = dict(DEFAULT_EVALUATION)
    merged.update(active_grid(cfg).get("evaluation") or {})
    return merged


DEFAULT_BASELINES: dict[str, Any] = {
    "max_rows": BASELINE_MAX_ROWS,
    "iw_samples": BASELINE_IW_SAMPLES,
    "max_rounds": BASELINE_MAX_ROUNDS,
    "bounds": False,  # the IW bound / mean-field NELBO of the truth: superseded by nll
    "nll": {},  # the truth's -log p(x): a likelihood config (evaluation.noisyor_likelihood), defaults
}


def baseline_settings(cfg: Mapping[str, Any]) -> dict[str, Any]:
    """True-model scoring of ``noisyor-bench acp-baselines``: defaults < grid ``baselines``."""
    merged = dict(DEFAULT_BASELINES)
    merged.update(active_grid(cfg).get("baselines") or {})
    return merged


def calibration_datasets(cfg: Mapping[str, Any]) -> list[str]:
    """Synthetic datasets of the calibration panel: those of the grid's experiments, then the
    generator variants the grid adds (``calibration.datasets``), each named in ``datasets``."""
    names = {ds for exp in experiments(cfg).values() for ds in exp.get("datasets", [])}
    panel = sorted(ds for ds in names if ds in cfg["datasets"])
    for ds in (active_grid(cfg).get("calibration") or {}).get("datasets") or []:
        if ds not in cfg["datasets"]:
            raise ConfigError(
                f"grids.{cfg['grid']}.acp.calibration.datasets: {ds!r} is not a key of datasets"
            )
        if not cfg["datasets"][ds].get("variant_of"):
            raise ConfigError(
                f"grids.{cfg['grid']}.acp.calibration.datasets: {ds!r} has no variant_of (only generator "
                "variants are added; a paper dataset enters through an experiment)"
            )
        if ds not in panel:
            panel.append(ds)
    return panel


def calibration_truth_nll(cfg: Mapping[str, Any]) -> dict[str, Any] | None:
    """The calibration panel's own likelihood settings for the truth (grid ``calibration.truth_nll``);
    ``None``: the panel reads the baselines' estimate."""
    settings = (active_grid(cfg).get("calibration") or {}).get("truth_nll")
    return dict(settings) if settings else None


def baseline_n_train(cfg: Mapping[str, Any], dataset: str) -> list[int]:
    """Every N_train > 0 of the active grid's cells on ``dataset``: the baselines it needs."""
    return sorted({c.n_train for c in cells(cfg) if c.dataset == dataset and c.n_train > 0})


def search_space(cfg: Mapping[str, Any], method: str) -> dict[str, Any]:
    return dict((cfg.get("search_spaces") or {}).get(method) or {})


def n_draws(cfg: Mapping[str, Any], cell: Cell) -> int:
    """Number of search draws for a cell (1 = defaults only, no search job)."""
    search = dict(active_grid(cfg).get("search") or {})
    search.update(experiments(cfg)[cell.experiment].get("search") or {})
    if not search_space(cfg, cell.method):
        return 1
    return int(search.get("draws", 1))


def draws(cfg: Mapping[str, Any], cell: Cell) -> list[dict[str, Any]]:
    """Hyperparameters of every draw of the cell's search; draw 0 is the defaults."""
    search_seed = int((active_grid(cfg).get("search") or {}).get("seed", 0))
    space = search_space(cfg, cell.method)
    return [sample_hparams(space, search_seed, d) for d in range(n_draws(cfg, cell))]


def inits_per_draw(cfg: Mapping[str, Any], cell: Cell) -> int:
    """``search.inits_per_draw`` of the cell (experiment over grid; default 2): the
    initialisations each search draw is scored on (mean validation NELBO)."""
    search = dict(active_grid(cfg).get("search") or {})
    where = f"grids.{cfg.get('grid')}.acp.search.inits_per_draw"
    own = experiments(cfg)[cell.experiment].get("search") or {}
    if "inits_per_draw" in own:
        search["inits_per_draw"] = own["inits_per_draw"]
        where = f"grids.{cfg.get('grid')}.acp.experiments.{cell.experiment}.search.inits_per_draw"
    return check_inits_per_draw(search.get("inits_per_draw", DEFAULT_INITS_PER_DRAW), where)


def latents_factor(cfg: Mapping[str, Any], experiment: str) -> int:
    """``latents_factor`` of an experiment (default 1): its cells learn K = factor x the true K."""
    return int(experiments(cfg)[experiment].get("latents_factor", 1))


def recovery_experiments(cfg: Mapping[str, Any], experiment: str) -> list[str]:
    """``experiment`` and the experiments whose runs its recovery table lists as sensitivity
    rows (their ``recovery_of``), in name order after it."""
    exps = experiments(cfg)
    return [experiment] + sorted(n for n, e in exps.items() if e.get("recovery_of") == experiment)


def chunking(cfg: Mapping[str, Any], cell: Cell) -> dict[str, Any]:
    """The ``search`` section that sets the cell's chunking: the experiment's when it sets
    ``draws_per_job`` or ``max_job_hours``, else the grid's (an experiment's own split replaces
    the grid's policy instead of mixing with it)."""
    own = dict(experiments(cfg)[cell.experiment].get("search") or {})
    if own.get("draws_per_job") is not None or own.get("max_job_hours") is not None:
        return own
    return dict(active_grid(cfg).get("search") or {})


def draws_per_job(cfg: Mapping[str, Any], cell: Cell) -> int | None:
    """``search.draws_per_job`` of the cell (experiment over grid); None: not set."""
    value = chunking(cfg, cell).get("draws_per_job")
    return None if value is None else int(value)


def max_job_hours(cfg: Mapping[str, Any], cell: Cell) -> float | None:
    """``search.max_job_hours`` of the cell (experiment over grid); None: not set, or
    ``draws_per_job`` set beside it (an explicit count wins)."""
    search = chunking(cfg, cell)
    value = search.get("max_job_hours")
    return None if value is None or search.get("draws_per_job") is not None else float(value)


def validate_grid(cfg: Mapping[str, Any], known_methods: tuple[str, ...], pools: Mapping[str, int]) -> None:
    """Cross-field checks the schema cannot express; raises ConfigError naming the key."""
    for gname in cfg["grids"]:
        grid_ = active_grid(cfg, gname)
        for ename, exp in (grid_.get("experiments") or {}).items():
            where = f"grids.{gname}.acp.experiments.{ename}"
            target = exp.get("recovery_of")
            if target is not None and target not in (grid_.get("experiments") or {}):
                raise ConfigError(
                    f"{where}.recovery_of: {target!r} is not an experiment of grid {gname!r}; "
                    f"allowed values: {sorted(grid_.get('experiments') or {})}"
                )
            if exp.get("latents_factor", 1) != 1 and exp["mode"] != "learning":
                raise ConfigError(f"{where}.latents_factor: only learning-mode experiments learn their own K")
            for ds in exp["datasets"]:
                if ds not in pools:
                    raise ConfigError(
                        f"{where}.datasets: unknown dataset {ds!r}; allowed values: {sorted(pools)}"
                    )
            for ds in exp["datasets"]:
                parent = (cfg["datasets"].get(ds) or {}).get("variant_of")
                if parent and parent not in exp["datasets"]:
                    raise ConfigError(
                        f"{where}.datasets: {ds!r} is a generator variant of {parent!r} (datasets.{ds}.variant_of) "
                        f"and is judged beside it: add {parent!r} to the experiment's datasets"
                    )
            for key in ("dataset_runs", "dataset_seeds"):
                for ds in exp.get(key) or {}:
                    if ds not in exp["datasets"]:
                        raise ConfigError(
                            f"{where}.{key}: {ds!r} is not one of the experiment's datasets {exp['datasets']}"
                        )
            for ds in exp["datasets"]:
                runs_key = f"dataset_runs.{ds}" if ds in (exp.get("dataset_runs") or {}) else "runs"
                for method, sizes in runs_for(exp, ds).items():
                    if method not in known_methods:
                        raise ConfigError(
                            f"{where}.{runs_key}: unknown method {method!r}; allowed values: {list(known_methods)}"
                        )
                    if method in LEARNING_ONLY and exp["mode"] != "learning":
                        raise ConfigError(
                            f"{where}.{runs_key}.{method}: {method} is a learning-mode ablation (ACP with theta "
                            f"stopped in eq. 11; with theta fixed it equals acp); this experiment's mode is {exp['mode']!r}"
                        )
                    for n in sizes:
                        if n == 0 and method in AMORTIZED:
                            raise ConfigError(
                                f"{where}.{runs_key}.{method}: N_train = 0 is only for non-amortized methods "
                                f"(optimised on the held-out set); {method} needs training data"
                            )
                        if n > pools[ds]:
                            raise ConfigError(
                                f"{where}.{runs_key}.{method}: N_train = {n} exceeds the training pool of "
                                f"{ds} ({pools[ds]} rows, datasets.{ds}.n_train_pool)"
                            )
