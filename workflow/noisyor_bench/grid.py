"""The experiment grid of a profile: which runs exist, with which budget and search draws.

A *cell* is one (experiment, dataset, method, N_train) combination; it is trained once per
seed with the hyperparameters chosen by the cell's random search.  The Snakefile builds its
jobs from :func:`cells`, and the same functions are tested here, so the DAG and the package
agree on what the grid is.  ``N_train = 0`` marks non-amortized methods optimised directly on
the held-out set (paper Section 4.2).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from .errors import ConfigError
from .methods import LEARNING_ONLY
from .search import sample_hparams

AMORTIZED = ("avi", "acp", "acp-sg")
DEFAULT_BUDGET = {"max_epochs": 200, "patience": 10, "batch_size": 128}
DEFAULT_EVALUATION = {"samples": 100, "iw_samples": 1000}


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
        return f"{self.experiment}/{self.dataset}/{self.method}/n{self.n_train}"


def profile(cfg: Mapping[str, Any]) -> dict[str, Any]:
    return dict(cfg["profiles"][cfg["profile"]])


def experiments(cfg: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    return dict(profile(cfg).get("experiments") or {})


def cells(cfg: Mapping[str, Any], experiment: str | None = None) -> list[Cell]:
    """Every cell of the active profile (or of one experiment), in a stable order."""
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


def seeds(cfg: Mapping[str, Any]) -> list[int]:
    return [int(s) for s in profile(cfg).get("seeds", [0])]


def budget(cfg: Mapping[str, Any], cell: Cell) -> dict[str, int]:
    """Fit budget: defaults < profile ``budget`` < experiment ``budget`` < profile
    ``method_budget[method]`` < experiment ``method_budget[method]``."""
    prof, exp = profile(cfg), experiments(cfg)[cell.experiment]
    merged = dict(DEFAULT_BUDGET)
    for layer in (
        prof.get("budget"),
        exp.get("budget"),
        (prof.get("method_budget") or {}).get(cell.method),
        (exp.get("method_budget") or {}).get(cell.method),
    ):
        merged.update(layer or {})
    return merged


def evaluation(cfg: Mapping[str, Any]) -> dict[str, int]:
    merged = dict(DEFAULT_EVALUATION)
    merged.update(profile(cfg).get("evaluation") or {})
    return merged


def search_space(cfg: Mapping[str, Any], method: str) -> dict[str, Any]:
    return dict((cfg.get("search_spaces") or {}).get(method) or {})


def n_draws(cfg: Mapping[str, Any], cell: Cell) -> int:
    """Number of search draws for a cell (1 = defaults only, no search job)."""
    search = dict(profile(cfg).get("search") or {})
    search.update(experiments(cfg)[cell.experiment].get("search") or {})
    if not search_space(cfg, cell.method):
        return 1
    return int(search.get("draws", 1))


def draws(cfg: Mapping[str, Any], cell: Cell) -> list[dict[str, Any]]:
    """Hyperparameters of every draw of the cell's search; draw 0 is the defaults."""
    search_seed = int((profile(cfg).get("search") or {}).get("seed", 0))
    space = search_space(cfg, cell.method)
    return [sample_hparams(space, search_seed, d) for d in range(n_draws(cfg, cell))]


def validate_grid(cfg: Mapping[str, Any], known_methods: tuple[str, ...], pools: Mapping[str, int]) -> None:
    """Cross-field checks the schema cannot express; raises ConfigError naming the key."""
    for pname, prof in cfg["profiles"].items():
        for ename, exp in (prof.get("experiments") or {}).items():
            where = f"profiles.{pname}.experiments.{ename}"
            for ds in exp["datasets"]:
                if ds not in pools:
                    raise ConfigError(f"{where}.datasets: unknown dataset {ds!r}; allowed values: {sorted(pools)}")
            for ds in exp.get("dataset_runs") or {}:
                if ds not in exp["datasets"]:
                    raise ConfigError(
                        f"{where}.dataset_runs: {ds!r} is not one of the experiment's datasets {exp['datasets']}"
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
