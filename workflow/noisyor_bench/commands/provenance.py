"""CLI: ``noisyor-bench provenance FILE`` -- the chain from a file back to raw inputs and configs.

Any table, figure, run file, dataset or corpus written by the workflow has a provenance record
(:mod:`noisyor_bench.infra.provenance`): a ``<file>.prov.json`` sidecar, a ``"provenance"`` key in
its own JSON (``metrics.json``, ``best.json``) or in a companion JSON (a dataset's
``<name>.json``).  This command follows the records input by input -- table -> runs ->
dataset -> raw files -- and re-hashes every input on the way: an input whose sha256 differs
from the one recorded is flagged ``CHANGED since recorded`` (exit 1), so a table built from
runs that were re-run later, or a dataset rebuilt after its runs, is caught.
"""

from __future__ import annotations

import argparse
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from noisyor_bench.infra.errors import DataError, UserError

OK, CHANGED, MISSING, UNHASHED = "ok", "CHANGED since recorded", "MISSING", "no sha256 recorded"
ARGV_CHARS = 300


@dataclass
class Found:
    """A provenance record and how the file it was found for relates to it."""

    record: dict[str, Any]
    record_file: Path  # the JSON holding the record
    base: Path  # directory the record's relative paths start from
    output: dict[str, Any] | None  # the file's entry in record["outputs"] (None: record inside the file)


def _read_json(path: Path) -> Any:
    """A JSON file's content; None if unreadable; DataError if it is not valid JSON (a corrupt
    metrics.json or sidecar is reported as corrupt, not as a file without a record)."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except OSError:
        return None
    except ValueError as err:
        raise DataError(f"{path} is corrupt: not valid JSON ({err}); rebuild it (or restore it)") from None


def _embedded(path: Path) -> dict[str, Any] | None:
    data = _read_json(path) if path.suffix == ".json" and path.is_file() else None
    record = data.get("provenance") if isinstance(data, dict) else None
    return record if isinstance(record, dict) else None


def _output_entry(record: dict[str, Any], base: Path, path: Path) -> dict[str, Any] | None:
    target = path.resolve()
    for entry in record.get("outputs") or []:
        for rel in (entry.get("relpath"), entry.get("path")):
            if rel and (base / rel).resolve() == target:
                return entry
    return None


def _record_candidates(path: Path) -> list[Path]:
    """JSON files that may hold the record of ``path``, most specific first."""
    from noisyor_bench.infra.provenance import sidecar_path

    cands = [sidecar_path(path), path.parent / "metrics.json"]
    name = path.name
    if name.endswith(".vocab.txt"):
        cands.append(path.with_name(name.removesuffix(".vocab.txt") + ".json"))
    elif path.suffix != ".json":
        cands.append(path.with_suffix(".json"))
    cands.append(path.parent / "best.json")
    return cands


def find_record(path: str | os.PathLike[str]) -> Found | None:
    """The provenance record of ``path`` (a file or a run directory), or None."""
    p = Path(path)
    if p.is_dir() and (p / "metrics.json").is_file():
        p = p / "metrics.json"
    record = _embedded(p)
    if record is None and p.name.endswith(".prov.json") and isinstance(data := _read_json(p), dict):
        record = data  # a sidecar given directly
    if record is not None:
        return Found(record, p, p.parent, None)
    for cand in _record_candidates(p):
        if cand.resolve() == p.resolve() or not cand.is_file():
            continue
        record = _read_json(cand) if cand.name.endswith(".prov.json") else _embedded(cand)
        if isinstance(record, dict):
            entry = _output_entry(record, cand.parent, p)
            if entry is not None:
                return Found(record, cand, cand.parent, entry)
    return None


def resolve_input(entry: dict[str, Any], base: Path, record: dict[str, Any]) -> Path | None:
    """Where a recorded input is now: relative to the record, as given, or from the recorded cwd."""
    cands: list[Path] = []
    if entry.get("relpath"):
        cands.append(base / entry["relpath"])
    path = Path(entry["path"])
    cands.append(path)
    cwd = (record.get("command") or {}).get("cwd")
    if cwd and not path.is_absolute():
        cands.append(Path(cwd) / path)
    return next((c for c in cands if c.exists()), None)


def check(entry: dict[str, Any], current: Path | None) -> tuple[str, str | None]:
    """``(status, current sha256)`` of a recorded file entry against the file now."""
    from noisyor_bench.infra.provenance import current_sha256

    if current is None:
        return MISSING, None
    now = current_sha256(current)
    recorded = entry.get("sha256")
    if recorded is None:
        return UNHASHED, now
    return (OK if now == recorded else CHANGED), now


def _display(path: Path) -> str:
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return str(path)
    return str(path.resolve()) if rel.startswith("..") else rel


# ---------------------------------------------------------------------------------- the tree
def summary(record: dict[str, Any]) -> dict[str, Any]:
    """The lines of a record worth printing: command, config, code, environment, time."""
    env = record.get("environment") or {}
    code = env.get("code") or {}
    dev = env.get("device") or {}
    versions = (env.get("packages") or {}).get("versions") or {}
    return {
        "kind": record.get("kind"),
        "argv": (record.get("command") or {}).get("argv"),
        "config": record.get("config"),
        "code": {k: code.get(k) for k in ("source", "commit", "dirty", "reason")},
        "environment": {
            "noisyor_bench": env.get("noisyor_bench_version"),
            "python": (env.get("python") or {}).get("version"),
            "torch": versions.get("torch"),
            "numpy": versions.get("numpy"),
            "snakemake": versions.get("snakemake"),
            "host": (env.get("platform") or {}).get("hostname"),
            "device": dev.get("gpu_name") or dev.get("cpu_model"),
            "threads": dev.get("torch_threads"),
            "packages_differ_from_pins": sorted((env.get("packages") or {}).get("differ_from_pins") or {}),
        },
        "time": record.get("time"),
    }


def build(path: str | os.PathLike[str], depth: int | None = None) -> dict[str, Any]:
    """The provenance tree of ``path``: UserError if it has no record."""
    p = Path(path)
    if not p.exists():
        raise DataError(f"{path}: no such file or directory")
    found = find_record(p)
    if found is None:
        raise UserError(
            f"{path} has no provenance record (no {p.name}.prov.json beside it, no 'provenance' key in it or in a "
            "metrics.json / sidecar JSON listing it as an output). Was it produced by noisyor-bench? Rebuild it with "
            "snakemake (e.g. 'snakemake --cores 2 --forcerun <rule> <file>') or with the noisyor-bench command that "
            "writes it; files made before provenance records existed have none."
        )
    return _node(p, found, 0, depth, set())


def _self_status(record_file: Path) -> str:
    """Status of a record stored inside its file (``metrics.json``): its ``self_sha256`` against
    its content now -- an edit of the record itself (a metric changed by hand) is ``CHANGED``."""
    from noisyor_bench.infra.integrity import self_hash_status

    status = self_hash_status(_read_json(record_file))
    if status == "absent":
        return "record inside the file (no self_sha256: written by older code, not checked)"
    return OK if status == "ok" else CHANGED


def _node(path: Path, found: Found, level: int, depth: int | None, seen: set[Path]) -> dict[str, Any]:
    seen.add(found.record_file.resolve())
    status, now = (
        check(found.output, path) if found.output is not None else (_self_status(found.record_file), None)
    )
    node: dict[str, Any] = {
        "path": _display(path),
        "record_file": _display(found.record_file),
        "status": status,
        "self_hashed": found.output is None,
        **summary(found.record),
        "inputs": [],
    }
    for entry in found.record.get("inputs") or []:
        current = resolve_input(entry, found.base, found.record)
        st, sha = check(entry, current)
        item: dict[str, Any] = {
            "path": _display(current) if current else entry.get("path"),
            "role": entry.get("role"),
            "recorded_sha256": entry.get("sha256"),
            "current_sha256": sha,
            "status": st,
        }
        if entry.get("pinned_sha256"):
            item["pinned_sha256"] = entry["pinned_sha256"]
        sub = find_record(current) if current is not None else None
        if sub is not None:
            if sub.record_file.resolve() in seen:
                item["expanded"] = "above"
            elif depth is not None and level >= depth:
                item["expanded"] = "depth limit"
            else:
                item["node"] = _node(current, sub, level + 1, depth, seen)
        elif current is not None and not str(entry.get("role", "")).startswith(("raw:", "config")):
            item["expanded"] = "no record"  # made by hand or by code older than the records
        node["inputs"].append(item)
    # Every other output the record names (a run's posterior_test.npz and curve.csv, a table's
    # .md beside its .csv): an auditing command checks every file of its record.
    node["outputs"] = [
        _output_item(entry, found.base)
        for entry in found.record.get("outputs") or []
        if entry is not found.output
    ]
    return node


def _output_item(entry: dict[str, Any], base: Path) -> dict[str, Any]:
    """A file the record lists as an output of the same command (e.g. a run's posterior_test.npz)."""
    rel = entry.get("relpath") or entry.get("path")
    path = base / rel if rel else None
    st, sha = check(entry, path if path is not None and path.exists() else None)
    return {
        "path": _display(path) if path else entry.get("path"),
        "role": "output",
        "recorded_sha256": entry.get("sha256"),
        "current_sha256": sha,
        "status": st,
    }


def problems(node: dict[str, Any], own: bool = True) -> list[str]:
    """Every file of the tree whose hash differs from its record, or that is missing (once: an
    input flagged as changed is not flagged again by its own record's self-hash, ``own``)."""
    bad = (CHANGED, MISSING)
    out = []
    if own and node["status"] in bad:  # a record inside its file (metrics.json): name that file
        where = node["record_file"] if node.get("self_hashed") else node["path"]
        out.append(f"{where}: {node['status']}")
    for item in [*node.get("outputs", []), *node["inputs"]]:
        if item["status"] in bad:
            out.append(f"{item['path']} ({item['role']}): {item['status']}")
        if "node" in item:
            out += problems(item["node"], own=item["status"] not in bad)
    return out


# ---------------------------------------------------------------------------------- text
def _short(sha: str | None) -> str:
    return sha[:12] if sha else "-"


def _compact(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)


def _code_line(node: dict[str, Any]) -> str:
    code, env = node["code"], node["environment"]
    if code.get("commit"):
        version = f"{code['source']} {code['commit'][:12]}{' (dirty)' if code.get('dirty') else ''}"
    else:
        version = f"unknown ({code.get('reason')})"
    parts = [f"code {version}", f"noisyor-bench {env['noisyor_bench']}", f"python {env['python']}"]
    parts += [f"{k} {env[k]}" for k in ("torch", "numpy", "snakemake") if env.get(k)]
    parts += [f"host {env['host']}", f"device {env['device']}"]
    if env.get("threads") is not None:
        parts.append(f"threads {env['threads']}")
    if env.get("packages_differ_from_pins"):
        parts.append(f"differ from pins: {', '.join(env['packages_differ_from_pins'])}")
    return "; ".join(parts)


def _config_line(node: dict[str, Any]) -> str | None:
    cfg = node.get("config")
    if not cfg:
        return None
    if node["kind"] == "run":
        keys = ("experiment", "dataset_name", "method", "mode", "n_train", "seed", "n_latent")
        ident = " ".join(f"{k}={cfg.get(k)}" for k in keys if cfg.get(k) is not None)
        rest = {k: v for k, v in cfg.items() if k not in keys}
        return f"run {ident}; " + _compact(rest)
    return _compact(cfg)


def render(node: dict[str, Any], indent: int = 0, head: bool = True) -> list[str]:
    """The tree as indented text; ``head=False`` for a node whose input line says its path."""
    pad = " " * indent
    lines = [f"{pad}{node['path']}  [{node['status']}]"] if head else []
    pad += "    " if head else ""
    lines.append(f"{pad}record: {node['record_file']} ({node['kind']})")
    if node.get("argv"):
        argv = " ".join(node["argv"])
        lines.append(f"{pad}command: {argv if len(argv) <= ARGV_CHARS else argv[:ARGV_CHARS] + ' ...'}")
    config = _config_line(node)
    if config:
        lines.append(f"{pad}config: {config}")
    lines.append(f"{pad}{_code_line(node)}")
    t = node.get("time") or {}
    if t:
        lines.append(f"{pad}time: {t.get('start')} -> {t.get('end')} ({t.get('wall_seconds')} s)")
    for item in node.get("outputs", []):
        flag = item["status"] + (
            f": recorded {_short(item['recorded_sha256'])}, now {_short(item['current_sha256'])}"
            if item["status"] == CHANGED
            else ""
        )
        lines.append(f"{pad}output {item['path']}  (sha256 {_short(item['recorded_sha256'])})  [{flag}]")
    lines.append(f"{pad}inputs ({len(node['inputs'])}):" if node["inputs"] else f"{pad}inputs: none")
    for item in node["inputs"]:
        flag = item["status"]
        if item["status"] == CHANGED:
            flag += f": recorded {_short(item['recorded_sha256'])}, now {_short(item['current_sha256'])}"
        pinned = ""
        if item.get("pinned_sha256"):
            same = item["pinned_sha256"] == item["current_sha256"]
            pinned = ", pinned" if same else ", differs from the pin (content-verified)"
        lines.append(
            f"{pad}- {item['path']}  ({item['role']}; sha256 {_short(item['recorded_sha256'])}{pinned})  [{flag}]"
        )
        if "node" in item:
            lines += render(item["node"], len(pad) + 4, head=False)
        elif item.get("expanded") == "above":
            lines.append(f"{pad}    (its record is shown above)")
        elif item.get("expanded") == "depth limit":
            lines.append(f"{pad}    (record not expanded: --depth)")
        elif item.get("expanded") == "no record":
            lines.append(f"{pad}    (no provenance record)")
    return lines


def cmd_provenance(args: argparse.Namespace) -> int:
    if args.depth is not None and args.depth < 0:
        raise UserError(f"--depth must be >= 0; got {args.depth}")
    tree = build(args.file, args.depth)
    bad = problems(tree)
    if args.json:
        print(json.dumps({"tree": tree, "problems": bad}, indent=2, sort_keys=True, default=str))
    else:
        print("\n".join(render(tree)))
        print()
        if bad:
            print(f"{len(bad)} file(s) differ from their provenance record:")
            print("\n".join(f"  {b}" for b in bad))
        else:
            print("every recorded sha256 matches the current files")
    return 1 if bad else 0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "provenance",
        help="print the chain from a table/figure/run/dataset file back to raw inputs and configs, re-checking sha256s",
    )
    p.add_argument(
        "file", help="a table, figure, run directory or file, dataset .npz/.json, corpus or search file"
    )
    p.add_argument("--json", action="store_true", help="print the tree as JSON")
    p.add_argument("--depth", type=int, help="levels of records to follow below FILE (default: all)")
    p.set_defaults(func=cmd_provenance)
