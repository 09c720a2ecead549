"""The ACP paper's config checks (its registry entry's ``config_checks``): the method enums of
the schema, the cross-field checks of its grid sections and the budget warnings."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from noisyor_bench.experiments.config import NEUTRAL_GRID_KEYS, check_name, deprecated
from noisyor_bench.inference.noisyor.registry import METHOD_NAMES, SEARCHED
from noisyor_bench.infra.errors import ConfigError


def adjust_schema(schema: dict[str, Any]) -> None:
    """The schema's method enums from the method registry (one list of methods)."""
    from noisyor_bench.experiments.acp.grid.corpora import corpus_methods

    schema["$defs"]["method"]["enum"] = list(METHOD_NAMES)
    schema["$defs"]["corpus_method"]["enum"] = list(corpus_methods())


def grid_keys() -> tuple[str, ...]:
    """The keys of ACP's grid section (its schema fragment's ``acp_grid``)."""
    from noisyor_bench.experiments import papers

    fragment = papers.config_schema(papers.get("acp"))
    return tuple(fragment["$defs"]["acp_grid"]["properties"])


def migrate(cfg: dict[str, Any]) -> None:
    """Grids of the older layout, with ACP's keys at the grid's root: those keys move into the
    grid's ``acp`` section, with one warning naming the new keys; both layouts at once is an error."""
    keys = set(grid_keys()) - set(NEUTRAL_GRID_KEYS)
    for gname, grid_ in cfg["grids"].items():
        if not isinstance(grid_, dict):
            continue
        legacy = [key for key in grid_ if key in keys]
        if not legacy:
            continue
        if "acp" in grid_:
            raise ConfigError(
                f"grids.{gname}: ACP's keys {', '.join(legacy)} stand both at the grid's root and in "
                f"grids.{gname}.acp; keep them in grids.{gname}.acp only"
            )
        grid_["acp"] = {key: grid_.pop(key) for key in legacy}
        deprecated(
            f"grids.{gname}: ACP's keys at the grid's root are the old layout: "
            + ", ".join(f"grids.{gname}.{key} is now grids.{gname}.acp.{key}" for key in legacy)
        )


def acp_sections(cfg: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """grid name -> its ``acp`` section (empty where a grid does not configure ACP)."""
    return {gname: dict(grid_.get("acp") or {}) for gname, grid_ in cfg["grids"].items()}


def training_pools(cfg: Mapping[str, Any]) -> dict[str, int]:
    """Rows available for training per dataset (runs take the first N_train of them)."""
    return {name: int(spec["n_train_pool"]) for name, spec in cfg["datasets"].items()}


def _check_names(cfg: Mapping[str, Any]) -> None:
    """Dataset, corpus and experiment names (the rules' wildcards) stay inside results_dir."""
    for name in cfg["datasets"]:
        check_name(name, f"datasets.{name}")
    for name in cfg.get("corpora") or {}:
        check_name(name, f"corpora.{name}")
    for gname, section in acp_sections(cfg).items():
        for ename in section.get("experiments") or {}:
            check_name(ename, f"grids.{gname}.acp.experiments.{ename}")


def validate(cfg: Mapping[str, Any]) -> None:
    """Cross-field checks of the datasets, the synthetic and text grids and the search spaces."""
    from noisyor_bench.experiments.acp.grid import validate_grid
    from noisyor_bench.experiments.acp.grid.corpora import validate_corpus_grid

    _check_names(cfg)
    for gname, section in acp_sections(cfg).items():
        for ds in section.get("datasets", []):
            if ds not in cfg["datasets"]:
                raise ConfigError(
                    f"grids.{gname}.acp.datasets: unknown dataset {ds!r}; allowed values: {sorted(cfg['datasets'])}"
                )
    unknown = sorted(set(cfg.get("search_spaces") or {}) - set(METHOD_NAMES))
    if unknown:
        raise ConfigError(
            f"search_spaces: unknown method(s) {', '.join(map(repr, unknown))}; allowed values: {list(METHOD_NAMES)}"
        )
    unsearched = sorted(set(cfg.get("search_spaces") or {}) - set(SEARCHED))
    if unsearched:  # the registry says which methods are searched; the config only gives their spaces
        raise ConfigError(
            f"search_spaces: {', '.join(map(repr, unsearched))} run with their documented defaults "
            f"(MethodInfo.searched is False); searched methods: {list(SEARCHED)}"
        )
    validate_grid(cfg, METHOD_NAMES, training_pools(cfg))
    validate_corpus_grid(cfg)


def warnings(cfg: Mapping[str, Any]) -> list[str]:
    """Schema-valid but absurd budgets of the active grid, each naming the keys.

    patience (in evaluations) not below max_epochs / eval_every: early stopping can never
    trigger; batch_size above N_train: every epoch is one full batch.
    """
    from noisyor_bench.experiments.acp.grid import budget, cells

    where = f"grids.{cfg['grid']}.acp"
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


def seed_table(cfg: Mapping[str, Any]) -> list[tuple[str, list[int]]]:
    """``experiment method [dataset]`` -> the seeds its runs use, after the grid's, the
    experiment's, the dataset's and the method's rules (``check-config --explain seeds``); a
    dataset is named only where its seeds differ from the experiment's other datasets."""
    from noisyor_bench.experiments.acp.grid import cells, corpora, seeds

    by_method: dict[tuple[str, str], dict[str, list[int]]] = {}
    for cell in cells(cfg):
        by_dataset = by_method.setdefault((cell.experiment, cell.method), {})
        by_dataset[cell.dataset] = seeds(cfg, cell.experiment, cell.dataset, cell.method)
    rows: list[tuple[str, list[int]]] = []
    for (experiment, method), by_dataset in by_method.items():
        distinct = {tuple(v) for v in by_dataset.values()}
        if len(distinct) == 1:
            rows.append((f"{experiment} {method}", list(next(iter(distinct)))))
        else:
            rows += [(f"{experiment} {method} {dataset}", v) for dataset, v in by_dataset.items()]
    corpus_seeds = corpora.seeds(cfg)
    for experiment, method in dict.fromkeys((c.experiment, c.method) for c in corpora.cells(cfg)):
        rows.append((f"{experiment} {method}", corpus_seeds))
    return rows
