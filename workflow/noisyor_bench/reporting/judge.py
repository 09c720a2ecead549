"""What every paper's judge shares: re-judging a folder of table CSVs with today's claim code.

A paper's judge (``Paper.judge``, resolved by :func:`noisyor_bench.experiments.papers.judge`)
builds that paper's claims from the tables in one folder -- a published reference's or a run's
``tables/`` -- exactly as its claims steps do in a run, and never reads a stored verdict
(``claims*.csv``): a reference published under older verdict rules is judged by today's.  What a
run's steps take from the config (which experiments the grid runs, the machine) comes from the
folder itself: the tables present, their provenance sidecars.

The helpers here name the folder in a way that does not depend on where it lies (its last two
path parts, ``paper-synpattern/tables``), so two clones judge a reference to the same text.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path

from noisyor_bench.infra.provenance import sidecar_path
from noisyor_bench.reporting.claims import Claim, no_data_claim


def tables_folder(path: str | Path) -> Path:
    """The folder of table CSVs of ``path``: a results or reference directory's ``tables/`` when
    it has one, else ``path`` itself."""
    path = Path(path)
    return path / "tables" if (path / "tables").is_dir() else path


def folder_label(tables_dir: str | Path) -> str:
    """The folder as claims name it: ``paper-synpattern/tables`` (its parent's name too when it
    is a ``tables`` folder), the same wherever the folder lies."""
    path = Path(tables_dir).resolve()
    return f"{path.parent.name}/{path.name}" if path.name == "tables" and path.parent.name else path.name


def present(tables_dir: str | Path, names: Iterable[str]) -> list[Path]:
    """The files of ``names`` the folder holds, in the order given."""
    folder = Path(tables_dir)
    return [folder / name for name in names if (folder / name).is_file()]


def absent(tables_dir: str | Path, name: str) -> str:
    """Why a claim on table ``name`` is not tested when judging a folder without it."""
    return f"{folder_label(tables_dir)} has no {name}"


def not_tested(claims: Sequence[Claim], why: str) -> list[Claim]:
    """The same claims (ids, statements, rules), each "not tested" for ``why``."""
    return [no_data_claim(c.claim_id, c.statement, c.location, c.rule, why) for c in claims]


def recorded_machines(paths: Iterable[str | Path]) -> list[str]:
    """The CPU models the provenance sidecars of ``paths`` record (each once, in order): the
    machine a table was made on; files without a readable sidecar add none."""
    machines: list[str] = []
    for path in paths:
        try:
            record = json.loads(sidecar_path(path).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError):
            continue
        device = ((record if isinstance(record, dict) else {}).get("environment") or {}).get("device") or {}
        model = device.get("cpu_model") if isinstance(device, dict) else None
        if model and model not in machines:
            machines.append(str(model))
    return machines


__all__ = ["absent", "folder_label", "not_tested", "present", "recorded_machines", "tables_folder"]
