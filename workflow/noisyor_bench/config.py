"""Configuration: safe YAML loading, JSON-schema validation and cross-field checks.

The same validation runs in the Snakefile (before any job is scheduled) and in the CLI, so a
bad value is reported once, up front, with the key path and the allowed values -- never as a
traceback from inside a job.
"""

from __future__ import annotations

import copy
import os
from importlib import resources
from pathlib import Path
from typing import Any, Mapping

import jsonschema
import yaml

from .errors import ConfigError

def load_yaml(path: str | os.PathLike[str]) -> Any:
    """Parse a YAML file with the safe loader; a missing or malformed file is a ConfigError."""
    try:
        with open(path, encoding="utf-8") as fh:
            return yaml.safe_load(fh)
    except FileNotFoundError:
        raise ConfigError(f"config file not found: {path}") from None
    except yaml.YAMLError as err:
        raise ConfigError(f"config file {path} is not valid YAML: {err}") from None


def schema() -> dict[str, Any]:
    text = resources.files("noisyor_bench").joinpath("schemas/config.schema.yaml").read_text("utf-8")
    return yaml.safe_load(text)


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
        return f"{_key_path(error)}: {error.instance!r} is not allowed; allowed values: {error.validator_value}"
    return f"{_key_path(error)}: {error.message}"


def validate_config(config: Mapping[str, Any]) -> dict[str, Any]:
    """Validate a config dict; return a copy with defaults filled in. Raises ConfigError."""
    cfg = copy.deepcopy(dict(config))
    cfg.setdefault("results_dir", "results")
    cfg.setdefault("raw_data_dir", None)
    validator_cls = jsonschema.validators.validator_for(schema())
    validator = validator_cls(schema())
    errors = sorted(validator.iter_errors(cfg), key=lambda e: list(e.absolute_path))
    if errors:
        lines = "\n  ".join(_describe(e) for e in errors)
        raise ConfigError(f"invalid configuration:\n  {lines}")
    _check_cross_references(cfg)
    return cfg


def training_pools(cfg: Mapping[str, Any]) -> dict[str, int]:
    """Rows available for training per dataset (runs take the first N_train of them)."""
    return {name: int(spec["n_train_pool"]) for name, spec in cfg["datasets"].items()}


def _check_cross_references(cfg: Mapping[str, Any]) -> None:
    from .grid import validate_grid
    from .methods import METHOD_NAMES

    profiles = cfg["profiles"]
    if cfg["profile"] not in profiles:
        raise ConfigError(f"profile: {cfg['profile']!r} is not defined; allowed values: {sorted(profiles)}")
    for pname, prof in profiles.items():
        for ds in prof.get("datasets", []):
            if ds not in cfg["datasets"]:
                raise ConfigError(
                    f"profiles.{pname}.datasets: unknown dataset {ds!r}; allowed values: {sorted(cfg['datasets'])}"
                )
    unknown = sorted(set(cfg.get("search_spaces") or {}) - set(METHOD_NAMES))
    if unknown:
        raise ConfigError(
            f"search_spaces: unknown method(s) {', '.join(map(repr, unknown))}; allowed values: {list(METHOD_NAMES)}"
        )
    validate_grid(cfg, METHOD_NAMES, training_pools(cfg))
    from .textexp.grid import validate_text

    validate_text(cfg)


def load_config(path: str | os.PathLike[str], overrides: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Load, apply top-level ``overrides`` (as ``snakemake --config`` does), validate."""
    cfg = load_yaml(path)
    if not isinstance(cfg, dict):
        raise ConfigError(f"config file {path} must hold a mapping at the top level")
    cfg.update(overrides or {})
    return validate_config(cfg)


def active_profile(cfg: Mapping[str, Any]) -> dict[str, Any]:
    return dict(cfg["profiles"][cfg["profile"]])


def raw_data_dir(cfg: Mapping[str, Any]) -> Path | None:
    """The raw-data mirror: config key ``raw_data_dir``, else ``$NOISYOR_RAW_DATA``, else None."""
    from .rawdata import resolve_raw_data_dir

    return resolve_raw_data_dir(cfg.get("raw_data_dir"))
