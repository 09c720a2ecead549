"""The ACP paper's config checks (its registry entry's ``config_checks``): the method enums of
the schema, the cross-field checks of its grid sections and the budget warnings."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from noisyor_bench.experiments.config import check_name
from noisyor_bench.inference.noisyor.registry import METHOD_NAMES
from noisyor_bench.infra.errors import ConfigError


def adjust_schema(schema: dict[str, Any]) -> None:
    """The schema's method enums from the method registry (one list of methods)."""
    from noisyor_bench.experiments.acp.grid.corpora import corpus_methods

    schema["$defs"]["method"]["enum"] = list(METHOD_NAMES)
    schema["$defs"]["corpus_method"]["enum"] = list(corpus_methods())


def training_pools(cfg: Mapping[str, Any]) -> dict[str, int]:
    """Rows available for training per dataset (runs take the first N_train of them)."""
    return {name: int(spec["n_train_pool"]) for name, spec in cfg["datasets"].items()}


def _check_names(cfg: Mapping[str, Any]) -> None:
    """Dataset, corpus and experiment names (the rules' wildcards) stay inside results_dir."""
    for name in cfg["datasets"]:
        check_name(name, f"datasets.{name}")
    for name in cfg.get("corpora") or {}:
        check_name(name, f"corpora.{name}")
    for gname, grid_ in cfg["grids"].items():
        for ename in grid_.get("experiments") or {}:
            check_name(ename, f"grids.{gname}.experiments.{ename}")


def validate(cfg: Mapping[str, Any]) -> None:
    """Cross-field checks of the datasets, the synthetic and text grids and the search spaces."""
    from noisyor_bench.experiments.acp.grid import validate_grid
    from noisyor_bench.experiments.acp.grid.corpora import validate_corpus_grid

    _check_names(cfg)
    for gname, grid_ in cfg["grids"].items():
        for ds in grid_.get("datasets", []):
            if ds not in cfg["datasets"]:
                raise ConfigError(
                    f"grids.{gname}.datasets: unknown dataset {ds!r}; allowed values: {sorted(cfg['datasets'])}"
                )
    unknown = sorted(set(cfg.get("search_spaces") or {}) - set(METHOD_NAMES))
    if unknown:
        raise ConfigError(
            f"search_spaces: unknown method(s) {', '.join(map(repr, unknown))}; allowed values: {list(METHOD_NAMES)}"
        )
    validate_grid(cfg, METHOD_NAMES, training_pools(cfg))
    validate_corpus_grid(cfg)


def warnings(cfg: Mapping[str, Any]) -> list[str]:
    """Schema-valid but absurd budgets of the active grid, each naming the keys.

    patience (in evaluations) not below max_epochs / eval_every: early stopping can never
    trigger; batch_size above N_train: every epoch is one full batch.
    """
    from noisyor_bench.experiments.acp.grid import budget, cells

    where = f"grids.{cfg['grid']}"
    found: dict[tuple[str, str], list[str]] = {}  # (experiment, problem) -> cells, one line each
    for cell in cells(cfg):
        b = budget(cfg, cell)
        evaluations = b["max_epochs"] // max(1, b.get("eval_every", 1))
        if b["patience"] >= evaluations:
            problem = (
                f"budget patience = {b['patience']} is not below max_epochs / eval_every = {evaluations} "
                "evaluations: early stopping can never trigger"
            )
            found.setdefault((cell.experiment, problem), []).append(f"{cell.method} n{cell.n_train}")
        if 0 < cell.n_train < b["batch_size"]:
            problem = f"budget batch_size = {b['batch_size']} exceeds N_train (the training set): one full batch per epoch"
            found.setdefault((cell.experiment, problem), []).append(f"{cell.method} n{cell.n_train}")
    return [
        f"{where}.experiments.{exp}: {problem} ({', '.join(cells_)})"
        for (exp, problem), cells_ in found.items()
    ]
