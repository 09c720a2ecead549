"""CLI: ``noisyor-bench check-config [CONFIG] [--set KEY=VALUE ...]`` -- validate a config.

The same validation the Snakefile runs before scheduling anything, with a precise location for
YAML errors (``file:line:column``), the key path of every invalid value, and warnings for
schema-valid but absurd budgets of the selected experiment grid.  Exit 0 when valid (warnings included),
2 otherwise.
"""

from __future__ import annotations

import argparse
import sys

import yaml

from noisyor_bench.infra.errors import ConfigError


def _override(text: str) -> tuple[str, object]:
    """``KEY=VALUE`` as ``snakemake --config`` takes it (VALUE parsed as YAML)."""
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise ConfigError(f"--set: expected KEY=VALUE, got {text!r}")
    return key, yaml.safe_load(value)


def cmd_check_config(args: argparse.Namespace) -> int:
    from noisyor_bench.experiments.config import config_warnings, load_config

    cfg = load_config(args.config, dict(_override(item) for item in args.set or []))
    for warning in config_warnings(cfg):
        print(f"warning: {warning}", file=sys.stderr)
    selected = cfg["grids"][cfg["grid"]]
    print(
        f"{args.config}: valid (grid {cfg['grid']}: {len(selected.get('datasets', []))} datasets, "
        f"{len(selected.get('experiments') or {})} experiments; results_dir {cfg['results_dir']})"
    )
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "check-config",
        help="validate a config file as the workflow does (YAML location, key paths, budget warnings)",
    )
    p.add_argument(
        "config", nargs="?", default="config/config.yaml", help="config file (default %(default)s)"
    )
    p.add_argument(
        "--set", action="append", metavar="KEY=VALUE", help="top-level override, as snakemake --config"
    )
    p.set_defaults(func=cmd_check_config)
