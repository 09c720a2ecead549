"""Configuration: safe YAML loading, JSON-schema validation and cross-field checks.

The same validation runs in the Snakefile (before any job is scheduled) and in the CLI, so a
bad value is reported once, up front, with the key path and the allowed values -- never as a
traceback from inside a job.
"""

from __future__ import annotations

import copy
import os
import warnings
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from noisyor_bench.experiments import papers
from noisyor_bench.infra.errors import ConfigError


def load_yaml(path: str | os.PathLike[str]) -> Any:
    """Parse a YAML file with the safe loader; a missing or malformed file is a ConfigError."""
    try:
        with open(path, encoding="utf-8") as fh:
            return yaml.safe_load(fh)
    except FileNotFoundError:
        raise ConfigError(f"config file not found: {path}") from None
    except yaml.YAMLError as err:
        raise ConfigError(yaml_error_message(path, err)) from None


def yaml_error_message(path: str | os.PathLike[str], err: yaml.YAMLError) -> str:
    """``<file>:<line>:<column>: <problem>`` of a YAML error (1-based, like an editor)."""
    mark = getattr(err, "problem_mark", None) or getattr(err, "context_mark", None)
    where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark is not None else str(path)
    problem = " ".join(
        str(x) for x in (getattr(err, "context", None), getattr(err, "problem", None)) if x
    ) or str(err)
    if "constructor for the tag" in problem:
        problem += " (tags such as !!python/... are refused: configs are read with YAML's safe loader)"
    return f"{where}: invalid YAML: {problem}"


def schema() -> dict[str, Any]:
    """The config schema: the ``papers`` enum from the paper registry, each paper's own keys
    (its ``config_schema`` fragment) and enums (e.g. method names, its config checks'
    ``adjust_schema``)."""
    text = (
        resources.files("noisyor_bench.experiments").joinpath("schemas/config.schema.yaml").read_text("utf-8")
    )
    loaded = yaml.safe_load(text)
    loaded["properties"]["papers"]["items"]["enum"] = list(papers.ids())
    loaded["properties"]["papers"]["description"] = "which papers `rule all` reproduces: " + ", ".join(
        f"{p.id} ({p.name})" for p in papers.papers()
    )
    for paper in papers.papers():
        fragment = papers.config_schema(paper)
        for name, definition in (fragment.get("$defs") or {}).items():
            if name in loaded["$defs"]:
                raise ValueError(f"{paper.config_schema}: $defs.{name} is defined twice")
            loaded["$defs"][name] = definition
        loaded["$defs"]["grid"]["properties"].update(fragment.get("grid_sections") or {})
        adjust = papers.config_check(paper, "adjust_schema")
        if adjust is not None:
            adjust(loaded)
    return loaded


def _key_path(error: jsonschema.ValidationError) -> str:
    parts = [str(p) for p in error.absolute_path]
    return ".".join(parts) if parts else "<top level>"


def _describe(error: jsonschema.ValidationError) -> str:
    """One readable line for a schema violation, naming the key and what is allowed."""
    # oneOf over dataset families: report the branch matching the declared family.
    if error.validator == "oneOf" and isinstance(error.instance, dict):
        family = error.instance.get("family")
        branch_of = {"pattern": 0, "random": 1}
        subs = [s for s in error.context or [] if s.schema_path and s.schema_path[0] == branch_of.get(family)]
        if subs:
            return "\n  ".join(_describe(s) for s in subs)
        return f"{_key_path(error)}: 'family' must be 'pattern' or 'random' (got {family!r})"
    if error.validator in ("additionalProperties", "unevaluatedProperties"):
        allowed = sorted((error.schema.get("properties") or {}).keys())
        hint = f"; allowed keys: {', '.join(allowed)}" if allowed else ""
        return f"{_key_path(error)}: {error.message}{hint}"
    if error.validator == "enum":
        return (
            f"{_key_path(error)}: {error.instance!r} is not allowed; allowed values: {error.validator_value}"
        )
    return f"{_key_path(error)}: {error.message}"


NEUTRAL_GRID_KEYS: tuple[str, ...] = ("device", "threads", "gpus_per_job")
"""The keys of ``grids.<grid>`` that belong to no paper (how jobs execute); every other key of a
grid is a registered paper's id, holding that paper's section (its schema fragment's
``grid_sections``). The schema's ``$defs.grid`` lists exactly these (a test checks)."""


def grid_section(cfg: Mapping[str, Any], paper_id: str, grid: str | None = None) -> dict[str, Any]:
    """A paper's section of the selected (or named) grid, ``grids.<grid>.<paper_id>``; empty if
    the grid does not configure the paper."""
    return dict(cfg["grids"][cfg["grid"] if grid is None else grid].get(paper_id) or {})


class ConfigDeprecationWarning(FutureWarning):
    """A config spelling that still works but will go (shown by default, unlike DeprecationWarning)."""


_WARNED: dict[Any, Any] = {}  # warnings' registry of this module: each deprecation shown once


def deprecated(message: str) -> None:
    """Warn once per process, located at the config rather than at a line of this module."""
    warnings.warn_explicit(
        message, ConfigDeprecationWarning, "noisyor-bench config", 0, __name__, registry=_WARNED
    )


def rename_deprecated_keys(config: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of ``config`` with the old spellings (``profile``, ``profiles``) mapped to today's, warning once each.

    The experiment grid was selected by ``profile`` from a ``profiles`` section; "profile" also
    means Snakemake's execution profiles (``profiles/``, ``--workflow-profile``), so the keys are
    now ``grid`` and ``grids``.  When both ``grid`` and ``profile`` are set, the one given on the
    command line wins: ``profile`` with a ``grids`` section (today's config.yaml sets ``grid``),
    ``grid`` with a ``profiles`` section (an old config file sets ``profile``).
    """
    cfg = dict(config)
    if "profiles" in cfg:
        if "grids" in cfg:
            raise ConfigError(
                "profiles: the config has both 'grids' and the deprecated 'profiles' section; keep 'grids'"
            )
        deprecated("config section 'profiles' is deprecated: rename it to 'grids'")
        cfg["grids"] = cfg.pop("profiles")
        old_file = True
    else:
        old_file = False
    if "profile" in cfg:
        value = cfg.pop("profile")
        if "grid" not in cfg or not old_file:
            deprecated(f"config key 'profile' is deprecated: use grid={value}")
            cfg["grid"] = value
    return cfg


def _unshared_copy(node: Any) -> Any:
    """A deep copy in which no two places share an object.

    config.yaml's grids share sections through YAML anchors (``extended`` reuses quick's APE and
    aviPAM sections); ``copy.deepcopy`` would keep them one object, so a change made through one
    grid (a test's, a default filled in) would silently change the other."""
    if isinstance(node, Mapping):
        return {key: _unshared_copy(value) for key, value in node.items()}
    if isinstance(node, list):
        return [_unshared_copy(value) for value in node]
    return copy.deepcopy(node)


def validate_config(config: Mapping[str, Any]) -> dict[str, Any]:
    """Validate a config dict; return a copy with defaults filled in. Raises ConfigError."""
    cfg = _unshared_copy(rename_deprecated_keys(config))
    _migrate_grid_layouts(cfg)
    cfg.setdefault("results_dir", "results")
    cfg.setdefault("raw_data_dir", None)
    cfg.setdefault("papers", list(papers.ids()))
    cfg.setdefault("overwrite_grid", False)
    if str(cfg["overwrite_grid"]).lower() in ("true", "false"):  # `--config overwrite_grid=true` is a string
        cfg["overwrite_grid"] = str(cfg["overwrite_grid"]).lower() == "true"
    validator_cls = jsonschema.validators.validator_for(schema())
    validator = validator_cls(schema())
    _coerce_scalar_strings(cfg, validator)
    errors = sorted(validator.iter_errors(cfg), key=lambda e: list(e.absolute_path))
    if errors:
        lines = "\n  ".join(_describe(e) for e in errors)
        raise ConfigError(f"invalid configuration:\n  {lines}")
    _check_cross_references(cfg)
    check_results_dir(cfg["results_dir"])
    cfg["results_dir"] = normalise_results_dir(cfg["results_dir"])
    check_reference_dir(cfg)
    return cfg


_SCALAR_PARSERS: dict[str, Any] = {
    "integer": int,
    "number": lambda text: int(text) if text.strip().lstrip("+-").isdigit() else float(text),
    "boolean": lambda text: {"true": True, "false": False}[text.strip().lower()],
}


def _coerce_scalar_strings(cfg: dict[str, Any], validator: Any) -> None:
    """Numbers and booleans given as text where the schema wants them, converted in place.

    ``snakemake --config 'grids={smoke: {acp: {seeds: [3]}}}'`` reads nested values with YAML's
    base loader, so every nested scalar arrives as a string (``'3'``); the user meant the number.
    Only a value the schema refuses for its type, and whose text parses as that type, changes."""
    for _ in range(100):  # each pass fixes every value it can reach; a fixed value may reveal more
        changed = False
        for error in _leaf_errors(validator.iter_errors(cfg)):
            if error.validator != "type" or not isinstance(error.instance, str):
                continue
            wanted = (
                error.validator_value if isinstance(error.validator_value, list) else [error.validator_value]
            )
            value = _parse_scalar(error.instance, wanted)
            if value is not None and _set_at(cfg, list(error.absolute_path), error.instance, value):
                changed = True
        if not changed:
            return


def _leaf_errors(errors: Any) -> Any:
    for error in errors:
        yield error
        yield from _leaf_errors(error.context or [])


def _parse_scalar(text: str, wanted: list[str]) -> Any:
    for kind in wanted:
        parse = _SCALAR_PARSERS.get(kind)
        try:
            value = parse(text) if parse is not None else None
        except (KeyError, ValueError):
            continue
        return value
    return None


def _set_at(node: Any, path: list[Any], old: str, value: Any) -> bool:
    for key in path[:-1]:
        node = node[key]
    if not path or node[path[-1]] != old:
        return False
    node[path[-1]] = value
    return True


def check_reference_dir(cfg: dict[str, Any]) -> None:
    """A ``reference_dir`` path must be a folder with ``tables/``: a misspelt one would otherwise
    drop the comparison with the references without a word.  (``--config reference_dir=null``
    arrives as the text ``'null'``: it means no comparison.)"""
    setting = cfg.get("reference_dir")
    if isinstance(setting, str) and setting.strip().lower() in ("null", "none", "~", ""):
        cfg["reference_dir"] = None
        return
    if setting is None or setting == papers.REGISTERED_REFERENCES:
        return
    folder = Path(setting).expanduser()
    if not folder.is_absolute():
        folder = _repository_root() / folder
    if not (folder / "tables").is_dir():
        what = "has no tables/ folder" if folder.is_dir() else "does not exist"
        raise ConfigError(
            f"reference_dir: {setting!r} {what} ({folder}); set a folder that holds a published "
            f"reference's tables/ (relative to the repository root), '{papers.REGISTERED_REFERENCES}' "
            "for the selected papers' own references, or null for no comparison"
        )


def _repository_root() -> Path:
    """The folder relative ``reference_dir`` paths start from: the checkout this package runs
    from (the Snakefile's folder), else the working directory."""
    checkout = Path(__file__).resolve().parents[3]
    return checkout if (checkout / "Snakefile").is_file() else Path.cwd()


def _migrate_grid_layouts(cfg: dict[str, Any]) -> None:
    """Each paper's ``migrate(cfg)`` check: an older config layout mapped to today's in place,
    warning once per moved key (e.g. ACP's keys at a grid's root, before ACP had a section)."""
    if not isinstance(cfg.get("grids"), Mapping):
        return  # the schema names the problem
    for paper in papers.papers():
        migrate = papers.config_check(paper, "migrate")
        if migrate is not None:
            migrate(cfg)


def validate_dataset_spec(name: str, spec: Any, where: str) -> None:
    """One ``datasets.<name>`` entry (e.g. ``acp-make-dataset --spec``) against the config schema."""
    full = schema()
    sub = {
        "$schema": full["$schema"],
        "$defs": full["$defs"],
        **full["properties"]["datasets"]["additionalProperties"],
    }
    validator = jsonschema.validators.validator_for(sub)(sub)
    errors = sorted(validator.iter_errors(spec), key=lambda e: list(e.absolute_path))
    if errors:
        lines = "\n  ".join(_describe(e).replace("<top level>", f"datasets.{name}") for e in errors)
        raise ConfigError(f"{where}: invalid dataset entry:\n  {lines}")


def config_warnings(cfg: Mapping[str, Any]) -> list[str]:
    """Schema-valid but doubtful settings of the selected papers (each paper's ``warnings``
    check), one line each naming the keys."""
    found: list[str] = []
    for paper in papers.selected(cfg["papers"]):
        check = papers.config_check(paper, "warnings")
        if check is not None:
            found += check(cfg)
    return found


def check_name(value: Any, where: str) -> None:
    """A name used as a path component under results_dir must match NAME_PATTERN."""
    import re

    from noisyor_bench.infra.constants import NAME_PATTERN

    if not isinstance(value, str) or not re.fullmatch(NAME_PATTERN, value):
        raise ConfigError(
            f"{where}: name {value!r} is not allowed; names become paths under results_dir and must match "
            f"{NAME_PATTERN} (letters, digits, '_' and '-')"
        )


def _checkout_roots() -> list[Path]:
    """Source checkouts a results directory must not hold: the working directory when it is one
    (a Snakefile and workflow/noisyor_bench) and the checkout this package runs from."""
    roots = []
    for candidate in (Path.cwd(), Path(__file__).resolve().parents[3]):
        if (candidate / "Snakefile").is_file() and (candidate / "workflow" / "noisyor_bench").is_dir():
            roots.append(candidate.resolve())
    return roots


def check_results_dir(value: str) -> None:
    """``results_dir`` is a directory of its own: not empty, not ``/``, not a source checkout
    (or a folder above one), not an existing file.

    Jobs create ``logs/``, ``data/``, ``params/`` ... directly under it, and a file there would
    fail every job with ``Not a directory`` instead of one message up front."""
    where = f"results_dir: {value!r}"
    if not value.strip():
        raise ConfigError(f"{where} is empty; set a folder of its own, e.g. results_dir=results")
    path = Path(value).expanduser().resolve()
    if path == Path(path.anchor):
        raise ConfigError(
            f"{where} is the filesystem root; set a folder of its own, e.g. results_dir=results"
        )
    for root in _checkout_roots():
        if path == root or path in root.parents:
            raise ConfigError(
                f"{where} is the repository root {root}{'' if path == root else ' or a folder above it'}: "
                "results would mix with the source files; set a folder of its own, e.g. results_dir=results"
            )
    if path.exists() and not path.is_dir():
        raise ConfigError(f"{where} is an existing file, not a directory; choose another results_dir")


def normalise_results_dir(value: str) -> str:
    """One spelling per results directory: ``results``, ``results/``, ``./results`` and its
    absolute path all become ``results`` (relative to the working directory when inside it).

    Snakemake keys what it records of each job (params, input set, code) by the output's path
    as spelled: another spelling of the same folder finds no record, so a changed setting would
    rerun nothing, and the spellings would plan different jobs."""
    path = os.path.normpath(os.path.expanduser(value))
    if os.path.isabs(path):
        inside = os.path.relpath(path, os.getcwd())
        if inside != os.pardir and not inside.startswith(os.pardir + os.sep):
            return inside
    return path


def _check_cross_references(cfg: Mapping[str, Any]) -> None:
    """The checks the schema cannot express: the grid exists, and each paper's own checks."""
    grids = cfg["grids"]
    if cfg["grid"] not in grids:
        raise ConfigError(f"grid: {cfg['grid']!r} is not defined; allowed values: {sorted(grids)}")
    for paper in papers.papers():
        check = papers.config_check(paper, "validate")
        if check is not None:
            check(cfg)


def load_config(path: str | os.PathLike[str], overrides: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Load, apply ``overrides`` (as ``snakemake --config`` does: a mapping is merged into the
    file's, key by key; any other value replaces), validate."""
    cfg = load_yaml(path)
    if not isinstance(cfg, dict):
        raise ConfigError(f"config file {path} must hold a mapping at the top level")
    merge_overrides(cfg, overrides or {})
    return validate_config(cfg)


def merge_overrides(cfg: dict[str, Any], overrides: Mapping[str, Any]) -> None:
    """``overrides`` merged into ``cfg`` in place, mappings key by key (Snakemake's update_config)."""
    for key, value in overrides.items():
        if isinstance(value, Mapping) and isinstance(cfg.get(key), dict):
            merge_overrides(cfg[key], value)
        else:
            cfg[key] = value


def raw_data_dir(cfg: Mapping[str, Any]) -> Path | None:
    """The raw-data mirror: config key ``raw_data_dir``, else ``$NOISYOR_RAW_DATA``, else None."""
    from noisyor_bench.data.rawdata import resolve_raw_data_dir

    return resolve_raw_data_dir(cfg.get("raw_data_dir"))
