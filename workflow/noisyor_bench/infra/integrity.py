"""Results checked where they are consumed, so that a hand edit is refused instead of spreading
into tables, claims, the README and published references: a run's ``metrics.json`` carries the
sha256 of its own canonical JSON (``provenance.self_sha256``), a table or claims file is checked
against the sha256 its ``.prov.json`` sidecar recorded, and a run record's metrics against
:data:`PLAUSIBLE`.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from noisyor_bench.infra.hashing import sha256_bytes, sha256_file_memo
from noisyor_bench.infra.provenance import sidecar_path

SELF_HASH_KEY = "self_sha256"
_LEGACY_NOTED: set[str] = set()


def canonical_json(doc: Any) -> bytes:
    """The bytes a record's self-hash is taken over: sorted keys, fixed separators, ASCII."""
    import json

    return json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode("ascii")


def _without_self_hash(doc: Mapping[str, Any]) -> dict[str, Any]:
    body = dict(doc)
    prov = body.get("provenance")
    if isinstance(prov, Mapping):
        body["provenance"] = {k: v for k, v in prov.items() if k != SELF_HASH_KEY}
    return body


def record_self_sha256(doc: Mapping[str, Any]) -> str:
    """sha256 of the canonical JSON of ``doc`` without its ``provenance.self_sha256``."""
    return sha256_bytes(canonical_json(_without_self_hash(doc)))


def seal_record(doc: Mapping[str, Any]) -> dict[str, Any]:
    """``doc`` as it will be read back (a JSON round trip) with ``provenance.self_sha256`` set:
    what every run writer stores as ``metrics.json`` (:func:`experiments.rundir.write_metrics`)."""
    import json

    from noisyor_bench.infra.io import to_json

    plain = json.loads(to_json(doc))
    if not isinstance(plain.get("provenance"), dict):
        plain["provenance"] = {}
    plain["provenance"].pop(SELF_HASH_KEY, None)
    plain["provenance"][SELF_HASH_KEY] = record_self_sha256(plain)
    return plain


def self_hash_status(doc: Any) -> str:
    """``ok``, ``absent`` (a record written before self-hashes) or ``CHANGED since recorded``."""
    prov = doc.get("provenance") if isinstance(doc, Mapping) else None
    recorded = prov.get(SELF_HASH_KEY) if isinstance(prov, Mapping) else None
    if recorded is None:
        return "absent"
    return "ok" if recorded == record_self_sha256(doc) else "CHANGED since recorded"


def _recover_hint(path: Path) -> str:
    return (
        f"delete {path} and rerun the step that makes it (e.g. `snakemake --cores 1 {path}`, "
        "or the whole workflow), so that it is made again from its inputs"
    )


def read_verified_json(path: str | os.PathLike[str], missing: str = "not found") -> dict[str, Any]:
    """A sealed JSON record (``metrics.json``), refused (DataError naming the file, saying how to
    recover) when it is missing, not a JSON object, or edited since it was written.  A record
    without ``self_sha256`` (written by older code) is accepted with a note in the log."""
    import json

    from noisyor_bench.infra.errors import DataError
    from noisyor_bench.infra.io import read_json

    p = Path(path)
    try:
        doc = read_json(p)
    except FileNotFoundError:
        raise DataError(f"{p}: {missing}") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise DataError(f"{p}: not valid JSON ({err})") from None
    if not isinstance(doc, dict):
        raise DataError(f"{p}: expected a JSON object, found {type(doc).__name__}")
    status = self_hash_status(doc)
    if status == "absent":
        _note_legacy(p)
    elif status != "ok":
        raise DataError(
            f"{p}: edited after it was written (its content no longer matches the provenance.self_sha256 "
            f"it was written with); {_recover_hint(p)}"
        )
    return doc


def _note_legacy(path: Path) -> None:
    """One log line per process for records that predate self-hashes (accepted, unverified)."""
    if not _LEGACY_NOTED:
        import logging

        logging.getLogger(__name__).info(
            "note: %s (and possibly other records) has no provenance.self_sha256 (written by older code); "
            "its content is not verified",
            path,
        )
    _LEGACY_NOTED.add(str(path))


def _sidecar_entry(path: Path, record: Mapping[str, Any], sidecar: Path) -> dict[str, Any] | None:
    """The ``outputs`` entry of ``record`` that names ``path``: by relpath from the sidecar's
    folder (the record is stored beside the file), else by file name."""
    outputs = [e for e in (record.get("outputs") or []) if isinstance(e, Mapping)]
    target = path.resolve()
    for entry in outputs:
        rel = entry.get("relpath")
        if rel and (sidecar.parent / rel).resolve() == target:
            return dict(entry)
    return next((dict(e) for e in outputs if Path(str(e.get("path", ""))).name == path.name), None)


def verify_recorded_file(path: str | os.PathLike[str]) -> str:
    """Check a table / claims / figure file against the sha256 its ``<file>.prov.json`` recorded
    before it is consumed; DataError naming the file (and how to recover) when it was edited.

    Returns ``ok``, or ``no record`` when the file has no sidecar or one that hashes no output
    (made outside the CLI, e.g. by a library call): such a file is accepted, and ``provenance``
    says it has no usable record.  A sidecar that hashes other files but not this one is refused."""
    import json

    from noisyor_bench.infra.errors import DataError

    p = Path(path)
    sidecar = sidecar_path(p)
    if not sidecar.is_file() or not p.is_file():
        return "no record"
    try:
        record = json.loads(sidecar.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise DataError(f"{sidecar}: provenance record is corrupt ({err}); {_recover_hint(p)}") from None
    record = record if isinstance(record, Mapping) else {}
    if not record.get("outputs"):
        return "no record"
    entry = _sidecar_entry(p, record, sidecar)
    if entry is None or not entry.get("sha256"):
        raise DataError(f"{p}: its provenance record {sidecar} does not list its sha256; {_recover_hint(p)}")
    if sha256_file_memo(p) != entry["sha256"]:
        raise DataError(
            f"{p}: edited after it was made (its sha256 differs from the one recorded in {sidecar.name}); "
            f"{_recover_hint(p)}"
        )
    return "ok"


RUN_RECORD = "metrics.json"


def _run_file_hint(path: Path) -> str:
    return (
        f"delete the run directory {path.parent} and rerun the step that makes it "
        f"(e.g. `snakemake --cores 1 {path}`), so that the run is made again"
    )


def verified_run_file(path: str | os.PathLike[str]) -> Path:
    """``path`` (a file of a run directory: a posterior, an encoder, topics, scores, a curve),
    checked against the sha256 its run recorded in ``<run dir>/metrics.json``
    (``provenance.outputs``) before it is loaded; returns it.

    A file changed, truncated or replaced after its run wrote it (a valid posterior of another
    run copied in too: its hash is that run's) is a DataError naming the file and how to recover,
    as is a record that hashes the run's files but not this one.  A run without a record, or a
    record written before runs hashed their files (no ``outputs``), is accepted: the loaders'
    own checks of the arrays still apply.  The record's own self-hash is left to its readers
    (:func:`read_run_record`: every table refuses an edited record), so that ``verify`` can still
    report what an edited record states."""
    import json

    from noisyor_bench.infra.errors import DataError

    p = Path(path)
    record_path = p.parent / RUN_RECORD
    if not p.is_file() or not record_path.is_file():
        return p  # the loader names a missing file; a run without its record is not a run's
    try:
        record = json.loads(record_path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise DataError(f"{record_path}: not valid JSON ({err}); {_run_file_hint(p)}") from None
    prov = record.get("provenance") if isinstance(record, Mapping) else None
    outputs = prov.get("outputs") if isinstance(prov, Mapping) else None
    if not outputs:
        return p
    entry = next(
        (e for e in outputs if isinstance(e, Mapping) and (e.get("relpath") or e.get("path")) == p.name),
        None,
    )
    if entry is None or not entry.get("sha256"):
        raise DataError(
            f"{p}: not a file its run recorded (no sha256 for it in {record_path}); {_run_file_hint(p)}"
        )
    if sha256_file_memo(p) != entry["sha256"]:
        raise DataError(
            f"{p}: changed or replaced after its run wrote it (its sha256 differs from the one "
            f"recorded in {record_path}); {_run_file_hint(p)}"
        )
    return p


# Plausibility of the metrics a run record states: key -> (rule, bounds).  ``nonneg``: a
# -log probability of discrete (binary / count) data, or a bound on one, is >= 0; ``interval``:
# a value in [low, high]; ``at_most``: a count never above its total (another key).
PLAUSIBLE: dict[str, tuple[str, Any]] = {
    "nelbo": ("nonneg", None),
    "val_nelbo": ("nonneg", None),
    "best_curve_val_nelbo": ("nonneg", None),
    "exact_nll": ("nonneg", None),
    "exact_nelbo": ("nonneg", None),
    "iw_nll": ("nonneg", None),
    "nll_test": ("nonneg", None),
    "f1": ("interval", (0.0, 100.0)),  # percentages
    "em": ("interval", (0.0, 100.0)),
    "f1_map": ("interval", (0.0, 100.0)),
    "em_map": ("interval", (0.0, 100.0)),
    "collapsed_share": ("interval", (0.0, 1.0)),
    "npmi": ("interval", (-1.0, 1.0)),
    "npmi_external": ("interval", (-1.0, 1.0)),
    "npmi_internal": ("interval", (-1.0, 1.0)),
    "coherence_npmi": ("interval", (-1.0, 1.0)),
    "log_likelihood_per_word": ("interval", (-math.inf, 0.0)),
    "recovered": ("at_most", "n_true"),
    "n_recovered": ("at_most", "n_patterns"),
    "n_converged": ("at_most", "n_runs"),
    "best_epoch": ("at_most", "epochs"),
}
#: Keys ending so are rates: in [0, 1].
RATE_SUFFIXES = ("_rate", "_fraction")


def _rule(key: str) -> tuple[str, Any] | None:
    if key in PLAUSIBLE:
        return PLAUSIBLE[key]
    return ("interval", (0.0, 1.0)) if key.endswith(RATE_SUFFIXES) else None


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def implausible_metrics(values: Mapping[str, Any]) -> list[str]:
    """``key=value (why)`` for each value of ``values`` (a run record's top level) that
    :data:`PLAUSIBLE` rules out; non-numbers and non-finite values (diverged runs) are not judged."""
    found = []
    for key, value in values.items():
        rule, x = _rule(key), _number(value)
        if rule is None or x is None:
            continue
        kind, arg = rule
        if kind == "nonneg" and x < 0:
            found.append(f"{key}={value!r} (a -log probability of discrete data is never negative)")
        elif kind == "interval" and not arg[0] <= x <= arg[1]:
            found.append(f"{key}={value!r} (outside [{arg[0]:g}, {arg[1]:g}])")
        elif kind == "at_most" and (total := _number(values.get(arg))) is not None and x > total:
            found.append(f"{key}={value!r} (above its total {arg}={values.get(arg)!r})")
    return found


def check_plausible(path: str | os.PathLike[str], values: Mapping[str, Any]) -> None:
    """DataError naming the file, key and value when a metric of ``values`` is impossible."""
    from noisyor_bench.infra.errors import DataError

    bad = implausible_metrics(values)
    if bad:
        raise DataError(f"{path}: impossible metric {'; '.join(bad)}; {_recover_hint(Path(path))}")


def read_run_record(path: str | os.PathLike[str], missing: str = "not found") -> dict[str, Any]:
    """The one reader of a consumed run record: :func:`read_verified_json` (self-hash) then
    :func:`check_plausible` (impossible metrics)."""
    doc = read_verified_json(path, missing)
    check_plausible(path, doc)
    return doc
