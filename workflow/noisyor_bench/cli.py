"""The ``noisyor-bench`` command line: every workflow step runs without Snakemake too."""

from __future__ import annotations

import argparse
import contextlib
import logging
import shutil
import sys
from collections.abc import Sequence

from noisyor_bench.commands import catalogue
from noisyor_bench.experiments import papers
from noisyor_bench.infra import provenance
from noisyor_bench.infra.errors import WRITE_ERRNOS, LastWord, UserError, out_of_memory_message
from noisyor_bench.infra.version import __version__

log = logging.getLogger("noisyor_bench")


USER_COMMANDS = (
    "answer",
    "explain",
    "compare",
    "judge",
    "verify",
    "provenance",
    "estimate-time",
    "check-config",
    "check-cluster",
    "publish-reference",
    "steps",
)
"""The commands for people reproducing the papers, in the order ``--help`` lists them; every
other command is a workflow step (Snakemake and the Makefile run them)."""


class _Parser(argparse.ArgumentParser):
    """The top-level parser: its help lists the user commands, then the steps by group."""

    commands: tuple[catalogue.Command, ...] = ()

    def format_help(self) -> str:
        head = self._get_formatter()
        head.add_usage(self.usage, self._actions, self._mutually_exclusive_groups)
        head.add_text(self.description)
        width = max(60, shutil.get_terminal_size().columns - 2)
        users = {c.name: c for c in self.commands if c.name in USER_COMMANDS}
        lines = ["commands:"]
        lines += [
            _line(f"  {name:<19}", _short(users[name].help), width) for name in USER_COMMANDS if name in users
        ]
        lines += [
            "",
            "workflow steps, run by Snakemake ('steps [GROUP]' lists them; 'STEP -h'):",
        ]
        steps = [c for c in self.commands if c.name not in USER_COMMANDS]
        for group, members in catalogue.groups(steps, ()).items():
            names = ", ".join(c.name for c in members)
            lines.append(_line(f"  {f'{group} ({len(members)})':<19}", names, width))
        options = self._get_formatter()
        options.start_section("options")
        options.add_arguments([a for a in self._actions if a.option_strings])
        options.end_section()
        return head.format_help() + "\n" + "\n".join(lines) + "\n\n" + options.format_help()


def _short(help_text: str) -> str:
    """A command's help cut to its first clause (before `` (``, ``: `` or ``; ``)."""
    text = help_text.replace("%%", "%")
    cuts = [i for i in (text.find(" ("), text.find(": "), text.find("; ")) if i >= 15]
    return text[: min(cuts)] if cuts else text


def _line(lead: str, text: str, width: int) -> str:
    """``lead + text`` on one line of at most ``width`` characters (cut at a word, with ...)."""
    line = lead + text
    if len(line) <= width:
        return line
    return line[: width - 3].rsplit(" ", 1)[0].rstrip(",") + " ..."


def _command_word(argv: Sequence[str]) -> str | None:
    """The subcommand named on a command line (the first word that is no option), or None."""
    return next((a for a in argv if not a.startswith("-")), None)


def build_parser(command: str | None = None) -> _Parser:
    """The parser with every command, or (``command``) with the module that registers it only:
    a job never imports another step's command code (start-up is part of every job's cost)."""
    parser = _Parser(
        prog="noisyor-bench",
        description="Reproduce the tables, figures and claims of "
        + ", ".join(p.name for p in papers.papers())
        + " ('make reproduce' runs the workflow). Every workflow step runs here without Snakemake too.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    sub = parser.add_subparsers(
        dest="command", metavar="COMMAND", required=True, parser_class=argparse.ArgumentParser
    )
    found = catalogue.register_modules(sub, catalogue.modules_for(command))
    if command is not None and command not in sub.choices and command != "steps":
        return build_parser()  # an unknown name: the full parser says so, with every choice
    _register_steps(sub)
    parser.commands = (*found, catalogue.Command("steps", STEPS_HELP, __name__, catalogue.SHARED))
    _default_output_help(parser)
    return parser


STEPS_HELP = "list the workflow steps with their help, by paper"


def _register_steps(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("steps", help=STEPS_HELP)
    p.add_argument(
        "group",
        nargs="?",
        help=f"one group: {catalogue.SHARED} or a paper id ({', '.join(papers.ids())}); default: all",
    )
    p.set_defaults(func=_cmd_steps)


def _cmd_steps(args: argparse.Namespace) -> int:
    everything = build_parser().commands
    steps = catalogue.groups([c for c in everything if c.name not in USER_COMMANDS], ())
    if args.group is not None and args.group not in steps:
        raise UserError(f"no group {args.group!r}; groups: {', '.join(steps)}")
    for group, members in steps.items():
        if args.group in (None, group):
            print(f"{group}:")
            width = max(len(c.name) for c in members) + 2
            for c in members:
                alias = f" (also: {', '.join(c.aliases)})" if c.aliases else ""
                print(f"  {c.name:<{width}}{c.help.replace('%%', '%')}{alias}")
    return 0


OUTPUT_HELP = {
    "csv": "the table as CSV",
    "md": "the table as Markdown",
    "png": "the figure as PNG",
    "pdf": "the figure as PDF",
    "html": "the page as HTML",
    "json": "the record as JSON",
}


def _default_output_help(parser: argparse.ArgumentParser) -> None:
    """Help text for ``--out-<kind>`` options registered without one ("output file: the table as CSV")."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                _default_output_help(sub)
        elif not action.help:
            kind = next((o[len("--out-") :] for o in action.option_strings if o.startswith("--out-")), None)
            if kind is not None:
                what = OUTPUT_HELP.get(kind.split("-")[0], f"the {kind.replace('-', ' ')} output")
                action.help = f"output file: {what}" + (" (required)" if action.required else "")


def _expand_list_files(args: argparse.Namespace) -> None:
    """``@FILE`` items of list-valued options (``--runs @list.txt``): one item per line of FILE.

    The workflow passes long file lists this way to keep its printed commands short.
    (JSON options, which read ``@FILE`` as JSON, take one string, never a list.)
    """
    from pathlib import Path

    for dest, value in vars(args).items():
        if not isinstance(value, list) or not any(isinstance(v, str) and v.startswith("@") for v in value):
            continue
        items: list[str] = []
        for v in value:
            if isinstance(v, str) and v.startswith("@"):
                try:
                    items += [
                        line.strip()
                        for line in Path(v[1:]).read_text(encoding="utf-8").splitlines()
                        if line.strip()
                    ]
                except OSError as err:
                    raise UserError(f"--{dest.replace('_', '-')} {v}: cannot read the list ({err})") from None
            else:
                items.append(v)
        setattr(args, dest, items)


def main(argv: Sequence[str] | None = None) -> int:
    """Run one subcommand; a successful one that wrote ``--out-*`` files gets their provenance
    sidecars (``<output>.prov.json``, :func:`noisyor_bench.infra.provenance.write_sidecars`)."""
    arguments = list(sys.argv[1:] if argv is None else argv)
    try:  # a command's modules (numpy, torch) are imported here: the first allocation to fail
        parser = build_parser(_command_word(arguments))
    except (MemoryError, SystemError, ImportError, OSError) as err:
        no_memory = out_of_memory_message(err)
        if no_memory is None:
            raise
        prog = " ".join(w for w in ("noisyor-bench", _command_word(arguments)) if w)
        print(f"{prog}: error: {no_memory}", file=sys.stderr)
        return 2
    args = parser.parse_args(arguments)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        datefmt="%H:%M:%S",
        handlers=[_LogHandler()],
    )
    last_word = LastWord(sys.stderr)  # room for the final message if the log's disk fills
    try:
        _expand_list_files(args)
        with provenance.command_context(arguments, args.command) as ctx:
            code = int(args.func(args) or 0)
            if code == 0:
                provenance.write_sidecars(args, ctx)
            sys.stdout.flush()  # a full log disk fails here (reported below), not at exit (code 120)
            return code
    except UserError as err:
        _final(last_word, f"noisyor-bench {args.command}: error: {err}")
        return 2
    except KeyboardInterrupt as err:  # Ctrl-C; resumable work raises errors.Interrupted saying how
        _final(last_word, f"noisyor-bench {args.command}: {err or 'interrupted'}")
        return 130
    except (MemoryError, SystemError, ImportError, OSError) as err:
        # The environment, not the code: no memory left (ulimit -v), an unreadable input, a
        # read-only or full output location (EACCES, EROFS, ENOSPC).  Name the limit, or the path
        # and the operating system's reason.
        no_memory = out_of_memory_message(err)
        if no_memory is not None:
            _final(last_word, f"noisyor-bench {args.command}: error: {no_memory}")
            return 2
        if not isinstance(err, OSError) or (err.filename is None and err.errno not in WRITE_ERRNOS):
            raise
        _final(last_word, f"noisyor-bench {args.command}: error: {os_error_message(err)}")
        return 2
    finally:
        last_word.release()  # before a bug's traceback is printed, too


class _LogHandler(logging.StreamHandler):
    """The log on stderr; a line that cannot be written (the log's disk is full) is dropped
    without logging's "--- Logging error ---" traceback: the final message names the cause."""

    def handleError(self, record: logging.LogRecord) -> None:
        if isinstance(sys.exc_info()[1], OSError):
            return
        super().handleError(record)


def _final(last_word: LastWord, message: str) -> None:
    """Print the final message, after freeing the reserve (:class:`LastWord`) so that it fits
    on a full disk; pending stdout goes first.  If even that fails there is nowhere to say it."""
    last_word.release()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    with contextlib.suppress(OSError, ValueError):
        print(message, file=sys.stderr, flush=True)


def os_error_message(err: OSError) -> str:
    """``<path>: <OS reason> (errno name)`` of an OSError, with both paths of a rename."""
    import errno

    where = str(err.filename) + (f" -> {err.filename2}" if err.filename2 is not None else "")
    code = errno.errorcode.get(err.errno or 0, "")
    reason = err.strerror or str(err)
    hint = (
        "; free some space and run the same command again"
        if err.errno in (errno.ENOSPC, errno.EDQUOT)
        else ""
    )
    if err.filename is None:  # e.g. the log itself (stdout) could not be written
        where = "writing output"
    return f"{where}: {reason}{f' ({code})' if code else ''}{hint}"


if __name__ == "__main__":
    sys.exit(main())
