"""CLI subcommands, one module per stage.

Each module defines ``register(subparsers)`` which adds its subcommand(s) and sets
``func`` on the parser (a callable taking the parsed ``argparse.Namespace`` and returning an
exit code).  :mod:`noisyor_bench.cli` discovers the modules here, so adding a stage never
touches a shared file.  A paper's steps live in ``commands/<paper>/`` (or ``commands/<paper>.py``)
and carry its prefix (``acp-``, ``ape-noisyor-``); the modules directly here are shared
(:mod:`noisyor_bench.commands.catalogue`).
"""

# Modules here that are no stage but shared by the stages (no ``register``): skipped by the CLI.
# arguments: JSON options given inline or as @file; catalogue: which module registers which command.
SHARED_MODULES = frozenset({"arguments", "catalogue"})
