"""Which command modules exist, which paper each belongs to, and the names they register.

A module in ``commands/<paper>/`` or ``commands/<paper>.py`` (a registered paper id) holds that
paper's workflow steps, each named with the paper's prefix (:func:`paper_prefix`); any other
module holds shared commands, named without one.  So a command's name says where it lives and
the CLI imports only the module that registers a command (:func:`modules_for`): a shared step
never loads a paper's command code, a table step never loads a training step's.
"""

from __future__ import annotations

import argparse
import importlib
import os
import pkgutil
from dataclasses import dataclass

from noisyor_bench import commands
from noisyor_bench.experiments import papers

SHARED = "shared"
"""The group of the commands no paper owns."""


def paper_prefix(paper_id: str) -> str:
    """The name prefix of a paper's commands: ``acp-``, ``ape-noisyor-`` (``_`` -> ``-``)."""
    return paper_id.replace("_", "-") + "-"


def paper_of_module(module: str) -> str | None:
    """The paper whose command folder holds a dotted module name, or None (shared)."""
    parts = module.split(".")
    return parts[2] if len(parts) > 2 and parts[2] in papers.ids() else None


def paper_of_command(name: str) -> str | None:
    """The paper whose prefix a command name carries (the longest wins: ``ape-noisyor-`` over
    ``ape-``), or None: a shared command."""
    owners = [p for p in papers.ids() if name.startswith(paper_prefix(p))]
    return max(owners, key=len, default=None)


def stage_modules() -> list[str]:
    """Every module that registers commands, sorted by name (helpers without commands excluded).
    Found on disk, one folder level deep, without importing a package (``walk_packages`` would)."""
    names = []
    for info in pkgutil.iter_modules(commands.__path__, prefix=f"{commands.__name__}."):
        if info.ispkg:
            folders = [os.path.join(p, info.name.rsplit(".", 1)[-1]) for p in commands.__path__]
            names += [
                sub.name for sub in pkgutil.iter_modules(folders, prefix=f"{info.name}.") if not sub.ispkg
            ]
        elif info.name.rsplit(".", 1)[-1] not in commands.SHARED_MODULES:
            names.append(info.name)
    return sorted(names)


def modules_for(name: str | None) -> list[str]:
    """The modules to import for a command name: those of its group (its paper's, or the shared
    ones) whose source names it in double quotes, else the whole group; every module when the
    name is None.  A job then imports its own command module only: another command's
    ``register`` (and what it imports for its defaults) costs it nothing."""
    if name is None:
        return stage_modules()
    paper = paper_of_command(name)
    group = [m for m in stage_modules() if paper_of_module(m) == paper]
    return [m for m in group if f'"{name}"' in _source(m)] or group


def _source(module: str) -> str:
    """The text of a command module, read from disk without importing it."""
    parts = module.split(".")[2:]  # below noisyor_bench.commands
    for folder in commands.__path__:
        path = os.path.join(folder, *parts[:-1], parts[-1] + ".py")
        if os.path.exists(path):
            with open(path, encoding="utf-8") as handle:
                return handle.read()
    return ""


@dataclass(frozen=True)
class Command:
    """One registered command: its name, one-line help, module and group (paper id or shared)."""

    name: str
    help: str
    module: str
    group: str
    aliases: tuple[str, ...] = ()


def register_modules(sub: argparse._SubParsersAction, modules: list[str]) -> list[Command]:
    """Import and register the modules; the commands each added, in registration order."""
    found: list[Command] = []
    for module in modules:
        before = len(sub._choices_actions)
        importlib.import_module(module).register(sub)
        group = paper_of_module(module) or SHARED
        for action in sub._choices_actions[before:]:
            parser = sub.choices[action.dest]
            aliases = tuple(n for n, p in sub.choices.items() if p is parser and n != action.dest)
            found.append(Command(action.dest, action.help or "", module, group, aliases))
    return found


def groups(found: list[Command], order: tuple[str, ...]) -> dict[str, list[Command]]:
    """The commands by group: shared first, then the papers in registry order; ``order`` lists
    command names that lead their group (the rest follow alphabetically)."""
    rank = {name: i for i, name in enumerate(order)}
    out: dict[str, list[Command]] = {g: [] for g in (SHARED, *papers.ids())}
    for command in sorted(found, key=lambda c: (rank.get(c.name, len(rank)), c.name)):
        out[command.group].append(command)
    return {g: cs for g, cs in out.items() if cs}
