"""Provenance records: what made a file -- code version, environment, inputs, config, time.

Every number in a table must be traceable to the configs, seeds, inputs and code that made it.
This module builds the records; where they are stored:

* run directories: ``metrics.json["provenance"]`` (:func:`run_record`, kind ``run``);
* datasets, corpora, PMI counts, search results: a ``"provenance"`` key in their JSON sidecar
  or record (:func:`artifact_record`, kinds ``dataset``, ``corpus``, ``pmi``, ``search`` ...);
* tables and figures: ``<output>.prov.json`` beside each output of a CLI command with
  ``--out-*`` arguments, written by :func:`write_sidecars` from ``cli.main`` (kind ``command``).

Every record has ``schema``, ``kind``, ``inputs`` and ``outputs`` (file entries: ``path`` as
given, ``relpath`` from the record's directory, ``sha256``, ``bytes``, ``role``),
``environment`` (:func:`environment`), ``time`` (start, end, wall seconds) and, when made by
the CLI, ``command`` (argv, cwd).  ``noisyor-bench provenance FILE`` walks these records back
to the raw inputs and re-checks every recorded sha256.

The expensive parts (git, package metadata, CPU model) are computed once per process.  The
records are checked by :mod:`noisyor_bench.infra.integrity` (where results are consumed) and
:mod:`noisyor_bench.infra.runcheck` (``verify``).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import functools
import os
import platform
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from noisyor_bench.infra.hashing import sha256_bytes, sha256_file_memo
from noisyor_bench.infra.version import __version__

SCHEMA = 1
SIDECAR_SUFFIX = ".prov.json"
#: Code version of an installed copy without its git checkout: ``<commit>`` or ``<commit>+dirty``.
CODE_VERSION_ENV = "NOISYOR_CODE_VERSION"
#: The checkout whose workflow runs the jobs (set by the Snakefile): the package a job imports
#: must be that checkout's own, or its records would name code that did not run.
CHECKOUT_ENV = "NOISYOR_CHECKOUT"
#: A commit named by ``$NOISYOR_CODE_VERSION``: hexadecimal, abbreviated to 7 digits at least.
_COMMIT = re.compile(r"[0-9a-fA-F]{7,64}")
GIT_TIMEOUT = 5.0
MAX_LISTED_CHANGES = 50
#: Directory inputs above these sizes are recorded without a digest.
MAX_DIR_FILES = 10_000
MAX_DIR_BYTES = 1 << 30
#: Packages recorded when ``envs/requirements.txt`` is not beside the package (installed copy).
FALLBACK_PACKAGES = (
    "torch",
    "numpy",
    "scipy",
    "pandas",
    "scikit-learn",
    "snakemake",
    "nltk",
    "matplotlib",
    "seaborn",
    "jsonschema",
    "PyYAML",
    "tqdm",
)
#: Files of a run directory besides metrics.json, recorded as companions of a run input.
RUN_COMPANIONS = ("posterior_test.npz", "curve.csv")
#: Files of a run directory that are not its outputs: the record itself and resume state.
NOT_RUN_OUTPUTS = ("metrics.json", "checkpoint.pt", "spec.json")
#: Argument destinations never scanned for input files.
_NOT_INPUTS = {"func", "command", "verbose"}

PACKAGE_DIR = Path(__file__).resolve().parents[1]  # the noisyor_bench package


# ---------------------------------------------------------------------------------- time
def utc_now() -> str:
    """ISO-8601 UTC timestamp with milliseconds, e.g. ``2026-01-31T12:00:00.123+00:00``."""
    return datetime.now(UTC).isoformat(timespec="milliseconds")


@dataclass
class Stopwatch:
    """Start time (wall clock, for the record) and a monotonic origin (for the duration)."""

    start: str = field(default_factory=utc_now)
    _t0: float = field(default_factory=time.perf_counter, repr=False)

    def record(self) -> dict[str, Any]:
        return {
            "start": self.start,
            "end": utc_now(),
            "wall_seconds": round(time.perf_counter() - self._t0, 3),
        }


# ---------------------------------------------------------------------------------- code version
def _git(directory: Path, *args: str) -> str:
    """stdout of ``git -C directory args``; RuntimeError with git's message on failure.

    ``GIT_OPTIONAL_LOCKS=0``: ``git status`` must not take the index lock, which would race
    with a commit made at the same time in the same tree.
    """
    env = {**os.environ, "GIT_OPTIONAL_LOCKS": "0", "LC_ALL": "C"}
    try:
        proc = subprocess.run(
            ["git", "-C", str(directory), *args],
            capture_output=True,
            text=True,
            timeout=GIT_TIMEOUT,
            env=env,
            check=False,
        )
    except FileNotFoundError:
        raise RuntimeError("git is not installed") from None
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"git {args[0]} timed out after {GIT_TIMEOUT:g} s") from None
    if proc.returncode != 0:
        raise RuntimeError(f"git {args[0]}: {proc.stderr.strip() or f'exit {proc.returncode}'}")
    return proc.stdout


def git_state(
    directory: str | os.PathLike[str], tracked_file: str | os.PathLike[str] | None = None
) -> dict[str, Any]:
    """Commit and dirtiness of the git checkout holding ``directory`` (not cached).

    Dirty means any change ``git status`` reports, untracked files included: a new module
    that is not committed yet changes what the code does as much as an edited one.
    ``tracked_file`` (if given) must be tracked by that repository, otherwise the directory
    is an installed copy that merely sits inside some checkout (e.g. a venv in the repo).
    """
    directory = Path(directory)
    record: dict[str, Any] = {
        "source": None,
        "commit": None,
        "dirty": None,
        "repository": None,
        "reason": None,
    }
    try:
        root = _git(directory, "rev-parse", "--show-toplevel").strip()
        if tracked_file is not None:
            _git(directory, "ls-files", "--error-unmatch", "--", str(tracked_file))
        commit = _git(directory, "rev-parse", "HEAD").strip()
        status = _git(directory, "status", "--porcelain=v1", "--untracked-files=normal").splitlines()
    except RuntimeError as err:
        record["reason"] = (
            f"not a git checkout of the code ({err}); set ${CODE_VERSION_ENV} for an installed copy"
        )
        return record
    record.update(source="git", commit=commit, dirty=bool(status), repository=root)
    record["changes"] = status[:MAX_LISTED_CHANGES]
    if len(status) > MAX_LISTED_CHANGES:
        record["changes_truncated"] = len(status)
    return record


def _code_version_from_env(value: str) -> dict[str, Any]:
    commit, _, flag = value.strip().partition("+")
    return {
        "source": f"${CODE_VERSION_ENV}",
        "commit": commit or None,
        "dirty": True if flag == "dirty" else False if commit else None,
        "repository": None,
        "reason": None,
    }


def _declared_agrees(declared: Mapping[str, Any], state: Mapping[str, Any]) -> bool:
    """Whether a ``$NOISYOR_CODE_VERSION`` value names the checkout's own commit and state."""
    commit = str(declared.get("commit") or "")
    return (
        bool(_COMMIT.fullmatch(commit))
        and str(state.get("commit") or "").lower().startswith(commit.lower())
        and bool(declared.get("dirty")) == bool(state.get("dirty"))
    )


@functools.lru_cache(maxsize=1)
def code_version() -> dict[str, Any]:
    """The code's version: the package's git checkout, else ``$NOISYOR_CODE_VERSION`` (an
    installed copy without its checkout).  Inside a checkout the variable cannot overrule git:
    the record keeps git's answer, the value under ``declared`` and whether it agrees (the CLI
    refuses a disagreeing one before it runs anything, :func:`check_code_source`)."""
    state = git_state(PACKAGE_DIR, tracked_file=PACKAGE_DIR / "__init__.py")
    value = os.environ.get(CODE_VERSION_ENV)
    if not value:
        return state
    declared = _code_version_from_env(value)
    if state["source"] != "git":
        return declared
    return {**state, "declared": value, "declared_agrees": _declared_agrees(declared, state)}


def package_checkout() -> Path:
    """The folder the imported package's ``workflow/noisyor_bench`` lives in (its checkout, for
    an editable install; somewhere in site-packages for an installed copy)."""
    return PACKAGE_DIR.parents[1]


def check_code_source() -> None:
    """Refuse (UserError) to run code whose records would name other code: a package imported
    from another checkout than the workflow's (``$NOISYOR_CHECKOUT``, set by the Snakefile: e.g.
    a ``.venv`` linked to another checkout), or a ``$NOISYOR_CODE_VERSION`` that disagrees with
    the git checkout the package runs from.  Called by the CLI before a command runs."""
    from noisyor_bench.infra.errors import UserError

    checkout = os.environ.get(CHECKOUT_ENV)
    if checkout and Path(checkout).resolve() != package_checkout().resolve():
        raise UserError(
            f"the noisyor_bench package this command runs is {PACKAGE_DIR}, not the one of the "
            f"workflow's checkout {checkout} (${CHECKOUT_ENV}): its records would name code that did "
            f"not run; install that checkout's package into the environment the jobs use "
            f"(`python -m pip install --no-deps -e {checkout}`; a .venv linked to another checkout: "
            "remove the link, then `make setup`) and run again"
        )
    code = code_version()
    if code.get("declared") is not None and not code.get("declared_agrees"):
        state = "with uncommitted changes" if code.get("dirty") else "clean"
        raise UserError(
            f"${CODE_VERSION_ENV}={code['declared']} disagrees with the git checkout the code runs "
            f"from ({code.get('repository')}: commit {code.get('commit')}, {state}); unset "
            f"${CODE_VERSION_ENV} (it is for an installed copy without its checkout)"
        )


def code_version_label() -> str:
    """``<commit> (clean|with uncommitted changes)``: the software page's param, so a run from
    another commit rewrites the page."""
    code = code_version()
    state = "with uncommitted changes" if code.get("dirty") else "clean"
    return f"{code.get('commit')} ({state})"


# ---------------------------------------------------------------------------------- packages
def _normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def requirements_file() -> Path | None:
    """``envs/requirements.txt`` of the checkout the package lives in, if there is one."""
    path = PACKAGE_DIR.parents[1] / "envs" / "requirements.txt"
    return path if path.is_file() else None


def pinned_requirements(path: str | os.PathLike[str]) -> dict[str, str | None]:
    """``{name: pinned version or None}`` from a pip requirements file (``name==version`` lines)."""
    pins: dict[str, str | None] = {}
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].split(";", 1)[0].strip()
        if not line or line.startswith("-"):
            continue
        m = re.match(r"([A-Za-z0-9][A-Za-z0-9._-]*)(?:\[[^\]]*\])?\s*(?:==\s*([^\s,]+))?", line)
        if m:
            pins[m.group(1)] = m.group(2)
    return pins


@functools.lru_cache(maxsize=1)
def _installed() -> dict[str, str]:
    from importlib import metadata

    found: dict[str, str] = {}
    for dist in metadata.distributions():
        name = dist.metadata["Name"]
        if name:
            found.setdefault(_normalise(name), dist.version)
    return found


def _same_version(installed: str | None, pinned: str) -> bool:
    """``2.13.0+cpu`` satisfies the pin ``2.13.0`` (pip's rule for local version labels)."""
    return installed is not None and (
        installed == pinned or ("+" not in pinned and installed.split("+")[0] == pinned)
    )


@functools.lru_cache(maxsize=1)
def package_versions() -> dict[str, Any]:
    """Installed versions of the pinned packages, and where they differ from the pins."""
    req = requirements_file()
    pins = pinned_requirements(req) if req else {}
    names = list(pins) or list(FALLBACK_PACKAGES)
    names += [n for n in FALLBACK_PACKAGES if _normalise(n) not in {_normalise(p) for p in names}]
    installed = _installed()
    versions = {n: installed.get(_normalise(n)) for n in sorted(names, key=str.lower)}
    mismatches = {
        n: {"pinned": pins[n], "installed": versions[n]}
        for n in sorted(pins, key=str.lower)
        if pins[n] is not None and not _same_version(versions.get(n), str(pins[n]))
    }
    return {
        "requirements": str(req) if req else None,
        "versions": versions,
        "differ_from_pins": mismatches,
    }


# ---------------------------------------------------------------------------------- machine
@functools.lru_cache(maxsize=1)
def cpu_model() -> str:
    """CPU model name from /proc/cpuinfo (Linux), else what :mod:`platform` knows."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                key, _, value = line.partition(":")
                if key.strip() in ("model name", "Model", "Hardware", "cpu model") and value.strip():
                    return value.strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


def _torch() -> Any:
    """torch if this process already imported it: a record never pays torch's import time."""
    return sys.modules.get("torch")


def device_record(device: Any = None, threads: int | None = None) -> dict[str, Any]:
    """The compute device (CPU model, or GPU name when CUDA is used) and thread counts."""
    torch = _torch()
    kind = getattr(device, "type", None) or (str(device).split(":")[0] if device is not None else "cpu")
    record: dict[str, Any] = {
        "device": str(device) if device is not None else "cpu",
        "cpu_model": cpu_model(),
        "logical_cpus": os.cpu_count(),
        "gpu_name": None,
        "cuda_version": None,
        "torch_threads": threads if threads is not None else (torch.get_num_threads() if torch else None),
        "omp_num_threads": os.environ.get("OMP_NUM_THREADS"),
    }
    if hasattr(os, "sched_getaffinity"):
        record["cpus_available"] = len(os.sched_getaffinity(0))
    if kind == "cuda" and torch is not None and torch.cuda.is_available():
        record["gpu_name"] = torch.cuda.get_device_name(device if getattr(device, "type", None) else None)
        record["cuda_version"] = torch.version.cuda
    return record


def environment(device: Any = None, threads: int | None = None) -> dict[str, Any]:
    """Code version, software versions and machine of the current process."""
    return {
        "code": code_version(),
        "noisyor_bench_version": __version__,
        "python": {
            "version": platform.python_version(),
            "implementation": platform.python_implementation(),
            "executable": sys.executable,
        },
        "packages": package_versions(),
        "platform": {
            "system": platform.system(),
            "release": platform.release(),
            "machine": platform.machine(),
            "platform": platform.platform(),
            "hostname": socket.gethostname(),
        },
        "device": device_record(device, threads),
    }


# ---------------------------------------------------------------------------------- files
def directory_sha256(path: str | os.PathLike[str]) -> tuple[str | None, int]:
    """Digest of a directory and its file count: the sha256 of the sorted lines
    ``<relative path> TAB <sha256> NEWLINE`` of its files (hidden ones left out), so a directory
    input (e.g. Snakemake's benchmarks) is checked like a file; ``None`` above the size caps."""
    root = Path(path)
    files: list[Path] = []
    for p in root.rglob("*"):
        if p.is_file() and not any(part.startswith(".") for part in p.relative_to(root).parts):
            files.append(p)
            if len(files) > MAX_DIR_FILES:  # stop walking: a directory this big is not an input
                return None, len(files)
    files.sort()
    if sum(p.stat().st_size for p in files) > MAX_DIR_BYTES:
        return None, len(files)
    lines = "".join(f"{p.relative_to(root).as_posix()}\t{sha256_file_memo(p)}\n" for p in files)
    return sha256_bytes(lines.encode("utf-8")), len(files)


def current_sha256(path: str | os.PathLike[str]) -> str | None:
    """sha256 of a file, the :func:`directory_sha256` of a directory, None if absent."""
    p = Path(path)
    if p.is_file():
        return sha256_file_memo(p)
    if p.is_dir():
        return directory_sha256(p)[0]
    return None


def _relpath(path: Path, base: Path | None) -> str | None:
    if base is None:
        return None
    try:
        return os.path.relpath(path.resolve(), Path(base).resolve())
    except ValueError:  # another drive (Windows)
        return None


def file_entry(
    path: str | os.PathLike[str], role: str, base: str | os.PathLike[str] | None = None, **extra: Any
) -> dict[str, Any]:
    """A file as recorded: path as given, path relative to the record's directory, sha256, size.

    A directory gets the :func:`directory_sha256` of its files (``kind: directory``); a
    missing path ``sha256: null`` and ``missing: true``.
    """
    p = Path(path)
    entry: dict[str, Any] = {
        "path": str(path),
        "relpath": _relpath(p, Path(base) if base else None),
        "role": role,
    }
    if p.is_file():
        entry.update(sha256=sha256_file_memo(p), bytes=p.stat().st_size)
    elif p.is_dir():
        digest, n_files = directory_sha256(p)
        entry.update(sha256=digest, kind="directory", files=n_files)
    else:
        entry.update(sha256=None, missing=True)
    entry.update(extra)
    return entry


def _unique(entries: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    seen: set[str] = set()
    out = []
    for e in entries:
        key = str(Path(e["path"]).resolve())
        if key not in seen:
            seen.add(key)
            out.append(e)
    return out


# ---------------------------------------------------------------------------------- CLI context
@dataclass
class CommandContext:
    """The CLI invocation in progress: argv, cwd, start time and inputs commands noted."""

    argv: list[str]
    name: str | None = None
    cwd: str = field(default_factory=os.getcwd)
    clock: Stopwatch = field(default_factory=Stopwatch)
    noted: list[tuple[str, str]] = field(default_factory=list)
    noted_outputs: list[str] = field(default_factory=list)

    def record(self) -> dict[str, Any]:
        return {"argv": ["noisyor-bench", *self.argv], "name": self.name, "cwd": self.cwd}


_CURRENT: CommandContext | None = None


@contextlib.contextmanager
def command_context(argv: Iterable[str], name: str | None = None) -> Iterator[CommandContext]:
    """Make the running CLI command visible to the records made while it runs, once
    :func:`check_code_source` has accepted the code that runs it (UserError otherwise)."""
    global _CURRENT
    check_code_source()
    previous, _CURRENT = _CURRENT, CommandContext(list(argv), name)
    try:
        yield _CURRENT
    finally:
        _CURRENT = previous


def current() -> CommandContext | None:
    return _CURRENT


def note_input(path: str | os.PathLike[str] | None, role: str) -> None:
    """Declare a file the running command reads that its arguments do not name directly
    (e.g. the ``--best`` hyperparameters a run was trained with); no-op outside the CLI."""
    if path is not None and _CURRENT is not None:
        _CURRENT.noted.append((str(path), role))


def note_output(path: str | os.PathLike[str]) -> None:
    """Declare a table or figure the running command writes that no ``--out-*`` argument names
    (e.g. the files of an ``--out-dir``): it gets a ``<output>.prov.json`` sidecar like an
    ``--out-*`` file (:func:`write_sidecars`); no-op outside the CLI."""
    if _CURRENT is not None:
        _CURRENT.noted_outputs.append(str(path))


def _noted_entries(base: Path | None) -> list[dict[str, Any]]:
    return [file_entry(p, role, base) for p, role in (_CURRENT.noted if _CURRENT else [])]


# ---------------------------------------------------------------------------------- records
def artifact_record(
    kind: str,
    inputs: Iterable[dict[str, Any]],
    outputs: Iterable[str | os.PathLike[str]],
    base: str | os.PathLike[str],
    config: Mapping[str, Any] | None = None,
    clock: Stopwatch | None = None,
    device: Any = None,
    threads: int | None = None,
) -> dict[str, Any]:
    """A provenance record stored in (or beside) a file in directory ``base``.

    ``inputs`` are :func:`file_entry` dicts; inputs noted with :func:`note_input` are added.
    ``clock`` defaults to the CLI command's (start = when the command started).
    """
    ctx = current()
    clock = clock or (ctx.clock if ctx else Stopwatch())
    base = Path(base)
    return {
        "schema": SCHEMA,
        "kind": kind,
        "command": ctx.record() if ctx else None,
        "config": dict(config) if config is not None else None,
        "inputs": _unique([*inputs, *_noted_entries(base)]),
        "outputs": [file_entry(p, "output", base) for p in outputs],
        "environment": environment(device, threads),
        "time": clock.record(),
    }


def run_config(spec: Any, device: Any, threads: int) -> dict[str, Any]:
    """Everything of a RunSpec that shapes the result, plus the device and threads used.

    ``out_dir`` is left out (the directory's own path says it; two identical runs in two
    directories get identical records), ``resume`` too (it changes nothing in the result).
    """
    values = dataclasses.asdict(spec)
    for key in ("out_dir", "resume", "dataset"):
        values.pop(key, None)
    values["device_requested"] = values.pop("device")
    values["threads_requested"] = values.pop("threads")
    values.update(device=str(device), threads=int(threads))
    return values


def run_record(
    spec: Any, dataset_sha256: str, device: Any, threads: int, work_dir: Path, clock: Stopwatch
) -> dict[str, Any]:
    """``metrics.json["provenance"]`` of a run being written in ``work_dir`` (its .partial dir).

    Relative paths are taken from the final run directory ``spec.out_dir``: the work
    directory is renamed onto it, next to it.
    """
    base = Path(spec.out_dir)
    dataset = file_entry(spec.dataset, "dataset", base)
    if dataset.get("sha256") != dataset_sha256:  # rewritten while the run trained: record what it read
        dataset.update(sha256=dataset_sha256, changed_during_run=True)
    # Only the .npz: a run never reads the dataset's sidecar (whose timestamps change on every
    # rebuild); ``provenance`` finds the dataset's record through the .npz.
    record = artifact_record(
        "run", [dataset], [], base, run_config(spec, device, threads), clock, device, threads
    )
    record["outputs"] = run_outputs(work_dir, RUN_COMPANIONS)
    return record


def run_outputs(work_dir: str | os.PathLike[str], names: Iterable[str] | None = None) -> list[dict[str, Any]]:
    """``outputs`` of a run record: the files of a run being written in ``work_dir`` (its
    ``.partial`` directory, or the run directory itself), named by their file names so they
    resolve from the published run directory (``verify`` and ``provenance`` re-hash them).

    ``names`` default: every file of ``work_dir`` but :data:`NOT_RUN_OUTPUTS` (the record
    itself, resume state) and hidden files, sorted; a name that is not a file is left out.
    """
    work = Path(work_dir)
    if names is None:
        names = sorted(
            p.name
            for p in work.iterdir()
            if p.is_file() and p.name not in NOT_RUN_OUTPUTS and not p.name.startswith(".")
        )
    return [
        {**file_entry(work / name, "output"), "path": name, "relpath": name}
        for name in names
        if (work / name).is_file()
    ]


# ---------------------------------------------------------------------------------- CLI sidecars
def sidecar_path(output: str | os.PathLike[str]) -> Path:
    return Path(f"{output}{SIDECAR_SUFFIX}")


def declared_outputs(args: argparse.Namespace) -> list[Path]:
    """Files named by ``--out-*`` arguments (dest ``out_<x>``): the command's tables/figures.

    ``--out`` (datasets, corpora: provenance in their own sidecar) and directories
    (``--out-dir`` of a search: provenance in best.json and metrics.json) do not count.
    """
    out = []
    for dest, value in sorted(vars(args).items()):
        if dest.startswith("out_") and isinstance(value, (str, os.PathLike)) and _is_file(value):
            out.append(Path(value))
    return out


def _is_file(value: Any) -> bool:
    try:
        return Path(value).is_file()
    except (OSError, ValueError):  # a JSON argument too long to be a file name, a NUL byte
        return False


def _is_dir(value: Any) -> bool:
    try:
        return Path(value).is_dir()
    except (OSError, ValueError):
        return False


def argument_inputs(args: argparse.Namespace) -> list[tuple[Path, str]]:
    """``(path, role)`` of every existing file an argument names (``@file`` too), plus companions.

    Companions are files a command reads next to the one named: a run's
    ``posterior_test.npz`` and ``curve.csv`` beside its ``metrics.json`` (a run directory
    counts as its files).  Other files read beside a named one (a dataset's ``.json`` sidecar)
    are declared by the command with :func:`note_input`: guessing them would flag inputs the
    command never read as changed.
    """
    found: list[tuple[Path, str]] = []
    for dest, value in sorted(vars(args).items()):
        if dest in _NOT_INPUTS or dest.startswith("out_") or dest == "out":
            continue
        values = value if isinstance(value, (list, tuple)) else [value]
        for item in values:
            if not isinstance(item, (str, os.PathLike)):
                continue
            text = str(item)
            if text.strip() in ("", ".", "@"):
                continue  # not a file a command reads (an empty title, the current directory)
            path = Path(text[1:] if text.startswith("@") else text)
            role = f"--{dest.replace('_', '-')}"
            if _is_dir(path) and (path / "metrics.json").is_file():
                path = path / "metrics.json"  # a run directory: its files, below
            elif _is_dir(path):
                found.append((path, role))
                continue
            if not _is_file(path):
                continue
            found.append((path, role))
            if path.name == "metrics.json":
                found += [
                    (path.parent / c, f"{role} (run file)")
                    for c in RUN_COMPANIONS
                    if (path.parent / c).is_file()
                ]
    return found


def _encloses(path: Path, outputs: Iterable[Path]) -> bool:
    """Whether the directory ``path`` holds one of ``outputs`` (e.g. ``compare --results``)."""
    if not _is_dir(path):
        return False
    root = path.resolve()
    return any(root in out.resolve().parents for out in outputs)


def _enclosing_entry(path: Path, role: str, base: Path) -> dict[str, Any]:
    """A directory input that holds the command's own outputs, recorded without a digest: the
    outputs and their sidecars (and whatever later steps write there) change its digest right
    after the record is made, so a digest would read ``CHANGED`` however the inputs stand."""
    return {
        "path": str(path),
        "relpath": _relpath(path, base),
        "role": role,
        "sha256": None,
        "kind": "directory",
        "not_hashed": "holds this command's outputs",
    }


def write_sidecars(args: argparse.Namespace, ctx: CommandContext) -> list[Path]:
    """``<output>.prov.json`` beside each ``--out-*`` file of a finished command, and each file
    it declared with :func:`note_output`; returns them.

    Each sidecar lists all outputs of the command (with sha256), so ``provenance`` can tell
    whether an output was rewritten after its record (a stale sidecar).
    """
    outputs = declared_outputs(args)
    named = {p.resolve() for p in outputs}
    for noted in ctx.noted_outputs:  # note_output: files of an --out-dir
        if _is_file(noted) and Path(noted).resolve() not in named:
            named.add(Path(noted).resolve())
            outputs.append(Path(noted))
    written = []
    if not outputs:
        return written
    from noisyor_bench.infra.io import write_json_atomic

    inputs = argument_inputs(args)
    for out in outputs:
        base = out.parent
        entries = [
            _enclosing_entry(p, role, base) if _encloses(p, outputs) else file_entry(p, role, base)
            for p, role in inputs
        ]
        record = artifact_record("command", entries, outputs, base, clock=ctx.clock)
        write_json_atomic(sidecar_path(out), record)
        written.append(sidecar_path(out))
    return written
