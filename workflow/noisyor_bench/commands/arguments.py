"""Command-line values shared by the commands: JSON arguments given inline or as ``@file``, and
the table outputs ``--out-csv``/``--out-md``.

The workflow passes config values to the CLI as compact JSON (``rules/common.smk``:
``json_param``), long ones through a file (``@<results>/params/<sha>.json``), so every JSON
option of every command reads both forms, here, with one error wording.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from noisyor_bench.infra.errors import ConfigError


def json_argument(text: str, name: str) -> Any:
    """The value of the JSON argument ``name`` (e.g. ``--budget``): ``text`` itself, or the
    content of the file ``text[1:]`` when ``text`` starts with ``@``.

    Raises ConfigError (a UserError: a message, exit code 2, no traceback) naming the argument
    and, for ``@file``, the file.
    """
    if text.startswith("@"):
        path = text[1:]
        try:
            content = Path(path).read_text(encoding="utf-8")
        except OSError as err:
            raise ConfigError(f"{name}: cannot read {path!r} ({err.strerror})") from None
        where = f"{name}: {path}"
    else:
        content, where = text, name
    try:
        return json.loads(content)
    except json.JSONDecodeError as err:
        raise ConfigError(f"{where}: not valid JSON ({err})") from None


def add_table_outputs(parser: argparse.ArgumentParser, markdown_required: bool = True) -> None:
    """``--out-csv`` and ``--out-md``: where a command writes its table (CSV, and Markdown)."""
    parser.add_argument("--out-csv", required=True, help="output file: the table as CSV")
    parser.add_argument("--out-md", required=markdown_required, help="output file: the table as Markdown")


def add_segment_arguments(parser: argparse.ArgumentParser, last_job: str, state: str) -> None:
    """``--segment``, ``--segments`` and ``--out`` of a command that runs one segment of a
    training split into jobs (:mod:`noisyor_bench.experiments.segments`); ``last_job``: the
    command that runs the last one, ``state``: what ``--out`` holds."""
    parser.add_argument("--segment", type=int, required=True, help="this segment, 0-based (before the last)")
    parser.add_argument(
        "--segments", type=int, required=True, help=f"segments of the training (the last: {last_job})"
    )
    parser.add_argument("--out", required=True, help=state)
