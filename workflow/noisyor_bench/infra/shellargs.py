"""Arguments of the workflow's shell commands: config values as JSON and file lists, inline
when short, else through a file named by the content's sha256.

The paper grid's search draws and long run lists would otherwise make shell lines of thousands
of characters.  The file's name changes with its content, so Snakemake's params trigger still
reruns a job whose value changed.  The CLI reads both forms back
(:mod:`noisyor_bench.commands.arguments`, ``@FILE`` items of list options).
"""

from __future__ import annotations

import hashlib
import json
import shlex
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from noisyor_bench.infra.io import write_text_atomic

INLINE_MAX = 160
"""A value longer than this many characters goes through a file."""


def _through_file(params_dir: str | Path, body: str, suffix: str, write: bool = True) -> str:
    path = Path(params_dir) / f"{hashlib.sha256(body.encode()).hexdigest()[:16]}{suffix}"
    if write and not path.is_file():  # write=False: a dry run names the file but writes nothing
        write_text_atomic(path, body)
    return shlex.quote(f"@{path}")


def json_argument(obj: Any, params_dir: str | Path, write: bool = True) -> str:
    """``obj`` as a shell-quoted compact JSON argument (sorted keys), or ``@<params_dir>/<sha>.json``
    (written unless ``write`` is false)."""
    text = json.dumps(obj, sort_keys=True, separators=(",", ":"))
    if len(text) <= INLINE_MAX:
        return shlex.quote(text)
    return _through_file(params_dir, f"{text}\n", ".json", write)


def list_argument(paths: Iterable[Any], params_dir: str | Path, write: bool = True) -> str:
    """File paths for a list option: inline when short, else ``@<params_dir>/<sha>.txt`` (one a line)."""
    items = [str(p) for p in paths]
    text = " ".join(shlex.quote(p) for p in items)
    if len(text) <= INLINE_MAX:
        return text
    return _through_file(params_dir, "".join(f"{p}\n" for p in items), ".txt", write)
