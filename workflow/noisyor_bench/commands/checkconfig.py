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


def _override(text: str) -> dict[str, object]:
    """``KEY=VALUE`` as ``snakemake --config`` takes it (VALUE parsed as YAML); a dotted KEY
    (``grids.smoke.acp.seeds=[3]``) sets one nested key, which ``--config`` spells as a mapping
    (``'grids={smoke: {acp: {seeds: [3]}}}'``)."""
    key, sep, value = text.partition("=")
    parts = key.split(".")
    if not sep or not all(parts):
        raise ConfigError(f"--set: expected KEY=VALUE or A.B.C=VALUE, got {text!r}")
    try:
        nested: object = yaml.safe_load(value)
    except yaml.YAMLError as err:
        raise ConfigError(
            f"--set {key}: the value {value!r} is not valid YAML ({err.__class__.__name__})"
        ) from None
    for part in reversed(parts):
        nested = {part: nested}
    return nested  # type: ignore[return-value]


def cmd_check_config(args: argparse.Namespace) -> int:
    from noisyor_bench.experiments.config import (
        NEUTRAL_GRID_KEYS,
        config_warnings,
        load_config,
        merge_overrides,
    )

    overrides: dict[str, object] = {}
    for item in args.set or []:
        merge_overrides(overrides, _override(item))
    cfg = load_config(args.config, overrides)
    for warning in config_warnings(cfg):
        print(f"warning: {warning}", file=sys.stderr)
    sections = [key for key in cfg["grids"][cfg["grid"]] if key not in NEUTRAL_GRID_KEYS]
    print(
        f"{args.config}: valid (grid {cfg['grid']}: sections {', '.join(sections) or 'none'}; "
        f"results_dir {cfg['results_dir']})"
    )
    if args.explain == "seeds":
        print(explain_seeds(cfg))
    return 0


def explain_seeds(cfg: dict) -> str:
    """Each selected paper's effective seeds in the grid (its ``seed_table(cfg)`` config check:
    rows of what -> seeds), as a plain table: where a seed list is set in several places, which wins."""
    from noisyor_bench.experiments import papers

    lines = [f"effective seeds of grid {cfg['grid']} (what the grid runs after every override):"]
    for paper in papers.selected(cfg["papers"]):
        table = papers.config_check(paper, "seed_table")
        rows = table(cfg) if table is not None else []
        if not rows:
            continue
        lines.append(f"{paper.name}:")
        width = max(len(what) for what, _ in rows)
        lines += [f"  {what:<{width}}  {', '.join(map(str, seeds))}" for what, seeds in rows]
    return "\n".join(lines)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "check-config",
        help="validate a config file as the workflow does (YAML location, key paths, budget warnings)",
    )
    p.add_argument(
        "config", nargs="?", default="config/config.yaml", help="config file (default %(default)s)"
    )
    p.add_argument(
        "--set",
        action="append",
        metavar="KEY=VALUE",
        help="override, as snakemake --config; a dotted KEY sets one nested key (grids.smoke.acp.seeds=[3])",
    )
    p.add_argument(
        "--explain",
        choices=["seeds"],
        help="seeds: print each experiment x method's effective seeds (after the grid's, the "
        "experiment's and the dataset's overrides)",
    )
    p.set_defaults(func=cmd_check_config)
