"""What a command is told about its input checked against the input itself.

A run records the labels it was given (``--dataset-name``, ``--dataset``, ``--corpus``, the
experiment, the seed) and the tables trust them, so a label that disagrees with its file is
refused before anything is fitted: the dataset's own name is read from the sidecar that
``acp-make-dataset``, the corpus ingesters, ``ape-data`` and ``avipam-data`` write beside each
``.npz`` (``<name>.json``), and the kind of a file is read from the names of its arrays (the
zip's directory; nothing is unpickled or decompressed).  A file without a sidecar (hand-made,
a test's toy) is checked by its arrays only.  Every refusal is a ConfigError/DataError (one
line, exit code 2) naming the flag, the file and both values.
"""

from __future__ import annotations

import json
import zipfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from noisyor_bench.infra.errors import ConfigError, DataError
from noisyor_bench.infra.io import load_npz

# kind -> (arrays that identify it, what it is and which command writes it)
KINDS: dict[str, tuple[tuple[str, ...], str]] = {
    "noisyor-dataset": (
        ("x_train", "x_val", "x_test"),
        "a noisy-OR dataset (acp-make-dataset, acp-ingest-neurips, acp-ingest-reuters)",
    ),
    "bow-corpus": (
        ("train_data", "train_indices", "train_indptr", "train_shape", "test_data", "vocab"),
        "a bag-of-words corpus (avipam-data)",
    ),
    "topic-dataset": (
        (
            "documents",
            "test_thetas",
            "eval_documents",
            "theta_pool_seed",
            "theta_pool_size",
            "theta_pool_alpha",
        ),
        "an amortized-topic-model dataset (ape-data)",
    ),
    "noisyor-problems": (
        ("theta0", "mu", "train_theta", "train_x", "test_theta", "test_x", "test_log_px"),
        "a noisy-OR problem file (ape-noisyor-problems)",
    ),
}


def check_seed(value: Any, flag: str = "--seed") -> int:
    """A seed is an integer >= 0 (numpy and scikit-learn refuse others with a traceback)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ConfigError(f"{flag}: must be an integer >= 0; got {value!r}")
    return value


def check_choice(value: str, allowed: Iterable[str], flag: str) -> str:
    """``value`` is one of ``allowed`` (ConfigError listing them)."""
    allowed = list(allowed)
    if value not in allowed:
        raise ConfigError(f"{flag}: unknown value {value!r}; known: {', '.join(allowed)}")
    return value


def array_names(path: str | Path, flag: str) -> set[str]:
    """The array names of an ``.npz`` (from the zip directory: cheap, nothing loaded)."""
    path = Path(path)
    if not path.is_file():
        raise DataError(f"{flag}: file {path} does not exist")
    try:
        with zipfile.ZipFile(path) as zf:
            names = zf.namelist()
    except (zipfile.BadZipFile, OSError):
        load_npz(path)  # its own message: not an npz archive / corrupt / unreadable
        raise DataError(f"{flag}: {path} is not a readable npz archive") from None
    return {n.removesuffix(".npy") for n in names}


def file_kind(names: set[str]) -> str | None:
    """Which of :data:`KINDS` a file with these arrays is (None: none of them)."""
    for kind, (needed, _) in KINDS.items():
        if all(n in names for n in needed):
            return kind
    return None


def require_kind(path: str | Path, kind: str, flag: str) -> set[str]:
    """Refuse ``path`` unless it is a file of ``kind`` (naming what it is instead); its arrays."""
    names = array_names(path, flag)
    needed, what = KINDS[kind]
    if all(n in names for n in needed):
        return names
    found = file_kind(names)
    if found is not None:
        raise DataError(f"{flag}: {path} is {KINDS[found][1]}, not {what}")
    load_npz(path)  # a damaged archive (pickled, corrupt arrays) is named as such first
    missing = [n for n in needed if n not in names]
    raise DataError(f"{flag}: {path} is not {what}: it lacks arrays {missing} (it holds {sorted(names)})")


def sidecar(path: str | Path) -> dict[str, Any] | None:
    """The JSON sidecar beside a data file (``<stem>.json``), or None when there is none."""
    side = Path(path).with_suffix(".json")
    if not side.is_file():
        return None
    try:
        value = json.loads(side.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise DataError(f"sidecar {side} of {path} is corrupt ({err}); rebuild the file") from None
    return value if isinstance(value, dict) else None


def recorded_label(path: str | Path, key: str) -> str | None:
    """The label its sidecar records under ``key`` (None: no sidecar, or no such entry)."""
    side = sidecar(path)
    value = None if side is None else side.get(key)
    return value if isinstance(value, str) else None


def check_label(
    path: str | Path, given: str | None, key: str, flag: str, what: str = "dataset"
) -> str | None:
    """``given`` must be the label the file's sidecar records under ``key``; returns the label
    to record: ``given``, else the recorded one (None when neither is known)."""
    own = recorded_label(path, key)
    if given is not None and own is not None and given != own:
        raise ConfigError(
            f"{flag} {given!r} disagrees with {path}: the {what}'s own name is {own!r} "
            f"(its sidecar {Path(path).with_suffix('.json')}); {flag} says {given!r}"
        )
    return given if given is not None else own


__all__ = [
    "KINDS",
    "array_names",
    "check_choice",
    "check_label",
    "check_seed",
    "file_kind",
    "recorded_label",
    "require_kind",
    "sidecar",
]
