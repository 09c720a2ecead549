"""The ``noisyor-bench`` command line: every workflow step runs without Snakemake too."""

from __future__ import annotations

import argparse
import importlib
import logging
import pkgutil
import sys
from typing import Sequence

from . import __version__, commands, provenance
from .errors import UserError

log = logging.getLogger("noisyor_bench")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="noisyor-bench",
        description="Reproduce 'Amortized Inference of Variational Bounds for Learning Noisy-OR'.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for info in sorted(pkgutil.iter_modules(commands.__path__), key=lambda m: m.name):
        module = importlib.import_module(f"{commands.__name__}.{info.name}")
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one subcommand; a successful one that wrote ``--out-*`` files gets their provenance
    sidecars (``<output>.prov.json``, :func:`noisyor_bench.provenance.write_sidecars`)."""
    parser = build_parser()
    arguments = list(sys.argv[1:] if argv is None else argv)
    args = parser.parse_args(arguments)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        datefmt="%H:%M:%S",
    )
    try:
        with provenance.command_context(arguments, args.command) as ctx:
            code = int(args.func(args) or 0)
            if code == 0:
                provenance.write_sidecars(args, ctx)
            return code
    except UserError as err:
        print(f"noisyor-bench {args.command}: error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as err:  # Ctrl-C; resumable work raises errors.Interrupted saying how
        print(f"noisyor-bench {args.command}: {err or 'interrupted'}", file=sys.stderr)
        return 130
    except OSError as err:
        # The environment, not the code: an unreadable input, a read-only or full output
        # location (EACCES, EROFS, ENOSPC).  Name the path and the operating system's reason.
        if err.filename is None:
            raise
        print(f"noisyor-bench {args.command}: error: {os_error_message(err)}", file=sys.stderr)
        return 2


def os_error_message(err: OSError) -> str:
    """``<path>: <OS reason> (errno name)`` of an OSError, with both paths of a rename."""
    import errno

    where = str(err.filename) + (f" -> {err.filename2}" if err.filename2 is not None else "")
    code = errno.errorcode.get(err.errno or 0, "")
    reason = err.strerror or str(err)
    return f"{where}: {reason}{f' ({code})' if code else ''}"


if __name__ == "__main__":
    sys.exit(main())
