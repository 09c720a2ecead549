"""Fault catalogue, results directories: a results_dir that cannot be damaged, locks
that hold without hooks and for orphaned jobs, raw inputs judged by content.

CLI cases run in process on the faultworld (:mod:`faultworld`); the Snakemake cases run small
real invocations (dry runs where they suffice, one cheap dataset target otherwise).
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from conftest import REPO
from faultworld import FINISHED, RUN, Case, config_with, run_case, smoke_snakemake, train_argv

from noisyor_bench.cli import main

CONFIG = str(REPO / "config" / "config.yaml")


def _check_config(*sets: str) -> list[str]:
    return ["check-config", CONFIG, *[a for s in sets for a in ("--set", s)]]


def _results_dir_in_file(value: str):
    """A config file whose ``results_dir`` is ``value`` (the issue's ``results_dir: ""``)."""

    def argv(tmp: Path, mp: pytest.MonkeyPatch) -> list[str]:
        def edit(cfg: dict) -> None:
            cfg["results_dir"] = value

        return ["check-config", config_with(tmp, edit)]

    return argv


def _nothing_created() -> None:
    assert not Path("params").exists() and not Path("logs").exists()


CASES = [
    Case(
        "results-dir-empty-in-config-file",
        _results_dir_in_file(""),
        2,
        ("results_dir: '' is empty",),
        after=_nothing_created,
    ),
    Case(
        "results-dir-empty-on-command-line",
        lambda tmp, mp: _check_config("results_dir=''"),
        2,
        ("results_dir: '' is empty",),
        after=_nothing_created,
    ),
    Case(
        "results-dir-filesystem-root",
        lambda tmp, mp: _check_config("results_dir=/"),
        2,
        ("results_dir: '/' is the filesystem root",),
    ),
    Case(
        "results-dir-repository-root",
        lambda tmp, mp: _check_config(f"results_dir={REPO}"),
        2,
        (f"results_dir: '{REPO}' is the repository root",),
    ),
    Case(
        "results-dir-above-repository-root",
        lambda tmp, mp: _check_config(f"results_dir={REPO.parent}"),
        2,
        ("is the repository root", "or a folder above it"),
    ),
    Case(
        "results-dir-an-existing-file",
        lambda tmp, mp: _check_config(f"results_dir={RUN / 'metrics.json'}"),
        2,
        ("is an existing file, not a directory",),
        keep=FINISHED,
    ),
    Case(
        "results-dir-with-a-space-is-valid",
        lambda tmp, mp: _check_config("results_dir=My Results"),
        0,
        (),
        out_words=("results_dir My Results",),
    ),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_fault(case, template, tmp_path, monkeypatch, capsys):
    run_case(case, template, tmp_path, monkeypatch, capsys)


# ------------------------------------------------------------------- an orphaned writer of a run
def _hold(code: str, cwd: Path) -> subprocess.Popen[str]:
    """A second process running ``code`` (which prints 'held' once it holds its lock)."""
    holder = subprocess.Popen(
        [sys.executable, "-c", f"{code}; print('held', flush=True); time.sleep(120)"],
        cwd=cwd,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO / "workflow")},
    )
    assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
    return holder


def test_orphaned_writer_of_a_run_is_refused(template, tmp_path, monkeypatch, capsys):
    """A job still writing ``<run>.partial`` (orphaned by a SIGKILLed Snakemake, here a second
    process holding the run's lock with a half-written log): the rerun is refused with exit 2,
    naming the holder's pid, and leaves the orphan's files and the finished run untouched; once
    the orphan is gone the same command works."""
    world = tmp_path / "world"
    shutil.copytree(template, world, symlinks=True)
    monkeypatch.chdir(world)
    partial = Path(f"{RUN}.partial")
    holder = _hold(
        "import time; from pathlib import Path; from noisyor_bench.experiments.rundir import claim_partial_dir; "
        f"w = claim_partial_dir({str(RUN)!r}); (w / 'train.log').write_text('epoch 1 of the orphan')",
        world,
    )
    finished = {p: p.read_bytes() for p in FINISHED}
    try:
        code = main(train_argv())
        err = capsys.readouterr().err
        assert code == 2, err[-2000:]
        assert "Traceback" not in err and len(err.strip().splitlines()) == 1
        assert f"{partial} is being written by another process (pid {holder.pid})" in err
        assert f"kill {holder.pid}" in err
        assert (partial / "train.log").read_text() == "epoch 1 of the orphan"
        assert {p: p.read_bytes() for p in FINISHED} == finished
    finally:
        holder.kill()
        holder.wait()
    assert main(train_argv()) == 0, capsys.readouterr().err[-2000:]  # the lock died with the orphan
    assert not partial.exists() and (RUN / "metrics.json").is_file()


# ---------------------------------------------------------------------------------- Snakemake
_snakemake = smoke_snakemake


def _created(workdir: Path) -> set[str]:
    """What a Snakemake invocation left in its working directory besides its own .snakemake/."""
    return {p.name for p in workdir.iterdir()} - {".snakemake"}


@pytest.fixture(scope="module")
def spaced(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """One real run of a cheap smoke target into ``<tmp>/x/My Results`` beside an unrelated file
    ``<tmp>/x/My`` (the issue's data loss: unquoted paths wrote Snakemake's log onto it)."""
    root = tmp_path_factory.mktemp("spaced")
    (root / "x").mkdir()
    unrelated = root / "x" / "My"
    unrelated.write_bytes(b"an unrelated file of the user\n")
    results = root / "x" / "My Results"
    workdir = root / "work"
    workdir.mkdir()
    target = str(results / "data" / "syn-random-1.npz")
    done = _snakemake(workdir, results, None, target)
    return dict(root=root, unrelated=unrelated, results=results, workdir=workdir, target=target, done=done)


@pytest.mark.slow
def test_space_in_results_dir_leaves_the_unrelated_file_intact(spaced: dict) -> None:
    done = spaced["done"]
    assert done.returncode == 0, done.stderr[-3000:]
    assert spaced["unrelated"].read_bytes() == b"an unrelated file of the user\n"
    assert (spaced["results"] / "data" / "syn-random-1.npz").is_file()
    assert (spaced["results"] / "logs" / "make_dataset" / "syn-random-1.log").is_file()
    assert sorted(p.name for p in spaced["root"].joinpath("x").iterdir()) == ["My", "My Results"]


@pytest.mark.slow
def test_dry_run_quotes_every_path_and_writes_nothing(tmp_path: Path) -> None:
    """The whole smoke DAG printed (-n -p) with a results_dir holding a space: every shell line
    splits into arguments that keep the path whole; nothing is written (no results_dir, no
    params/ files), only Snakemake's own .snakemake/."""
    results = tmp_path / "x" / "My Results"
    done = _snakemake(tmp_path, results, None, "--dry-run", "--printshellcmds")
    assert done.returncode == 0, done.stderr[-3000:]
    lines = [ln.split("Shell command: ", 1)[1] for ln in done.stdout.splitlines() if "Shell command: " in ln]
    lines = [ln for ln in lines if ln != "None"]  # a rule without a shell command (rule all)
    assert len(lines) > 50  # every rule of the three papers
    spelled = str(results.relative_to(tmp_path))  # inside the working directory: spelled relative
    for line in lines:
        words = shlex.split(line)
        split = {str(tmp_path / "x" / "My"), "x/My"} & set(words) or any(
            w.startswith("Results/") for w in words
        )
        assert not split and any(spelled in w for w in words), line
    assert not (tmp_path / "x").exists()
    assert _created(tmp_path) == set()


@pytest.mark.slow
@pytest.mark.parametrize("value", ["/", "", "REPO"])
def test_snakemake_refuses_results_dir_root_empty_or_repository(tmp_path: Path, value: str) -> None:
    """``/``, an empty results_dir (from a config file) and the repository root are refused when
    the workflow is parsed, before anything is written (a dry run once created /params/)."""
    results = str(REPO) if value == "REPO" else value
    work = tmp_path / "work"
    work.mkdir()
    if value == "":
        cfg = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
        cfg["results_dir"] = ""
        (tmp_path / "empty.yaml").write_text(yaml.safe_dump(cfg))
        done = _snakemake_configfile(work, tmp_path / "empty.yaml")
    else:
        done = _snakemake(work, results, None, "--dry-run")
    assert done.returncode != 0
    expected = {"/": "is the filesystem root", "": "is empty", "REPO": "is the repository root"}[value]
    said = done.stdout + done.stderr  # a dry run logs to stdout
    assert f"results_dir: {results!r} {expected}" in said, said[-2000:]
    assert "Traceback" not in said
    assert not Path("/params").exists() and not (REPO / "params").exists()
    assert _created(work) == set()


def _snakemake_configfile(workdir: Path, configfile: Path) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "Snakefile"), "--directory"]
    cmd += [str(workdir), "--configfile", str(configfile), "--cores", "1", "--dry-run"]
    env = {**os.environ, "PYTHONPATH": str(REPO / "workflow")}
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env, cwd=workdir)


@pytest.mark.slow
def test_results_dir_is_tied_to_its_grid(spaced: dict) -> None:
    """The first real run records its grid; another grid into the same directory is refused
    before any job (a dry run too), naming both grids and the ways out; overwrite_grid=true
    allows it; a changed config of the same grid is a warning, not a refusal."""
    assert spaced["done"].returncode == 0, spaced["done"].stderr[-3000:]
    results, workdir = spaced["results"], spaced["workdir"]
    record = json.loads((results / ".noisyor-bench-results.json").read_text())
    assert record["grid"] == "smoke" and "acp" in record["papers"] and len(record["config_hash"]) == 16
    before = {p: p.stat().st_mtime_ns for p in results.rglob("*") if p.is_file()}

    refused = _snakemake(workdir, results, None, "--dry-run", config=("grid=quick",))
    said = refused.stdout + refused.stderr  # a dry run logs to stdout
    assert refused.returncode != 0
    assert "holds results of grid 'smoke', not grid 'quick'" in said
    assert "results_dir=results-quick" in said and "overwrite_grid=true" in said
    real = _snakemake(workdir, results, None, spaced["target"], config=("grid=quick",))
    assert real.returncode != 0 and "not grid 'quick'" in real.stderr

    allowed = _snakemake(workdir, results, None, "--dry-run", config=("grid=quick", "overwrite_grid=true"))
    assert allowed.returncode == 0, (allowed.stdout + allowed.stderr)[-3000:]
    assert {p: p.stat().st_mtime_ns for p in results.rglob("*") if p.is_file()} == before

    record["config_hash"] = "0123456789abcdef"  # as if the smoke grid's config had changed since
    (results / ".noisyor-bench-results.json").write_text(json.dumps(record))
    changed = _snakemake(workdir, results, None, "--dry-run", spaced["target"])
    assert changed.returncode == 0, changed.stderr[-3000:]
    assert "the config of grid 'smoke' changed since its results were made" in changed.stderr + changed.stdout


@pytest.mark.slow
def test_no_hooks_still_takes_the_results_lock(tmp_path: Path) -> None:
    """``--no-hooks`` switches off onstart, not the one-writer lock: taken when the DAG is built."""
    results = tmp_path / "results"
    holder = _hold(
        f"import time; from noisyor_bench.infra.io import lock_results_dir; f = lock_results_dir({str(results)!r})",
        tmp_path,
    )
    try:
        target = str(results / "data" / "syn-random-1.npz")
        done = _snakemake(tmp_path, results, None, "--no-hooks", target)
        assert done.returncode != 0
        assert "is being written by another invocation" in done.stderr and f"pid {holder.pid}" in done.stderr
        assert not (results / "data").exists()
    finally:
        holder.kill()
        holder.wait()


@pytest.mark.slow
def test_touched_raw_file_reruns_nothing_and_changed_content_is_caught(tmp_path: Path, mirror: Path) -> None:
    """A mirror file touched (mtime only): two successive real invocations both do nothing; the
    same file with changed content: verify_raw fails on the checksum, the dataset is kept."""
    from noisyor_bench.data.rawdata import REGISTRY, dataset_raw_keys

    cfg = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    keys = dataset_raw_keys(cfg["datasets"]["multi-mnist"])
    copy = tmp_path / "mirror"  # real copies: touching a symlink would touch the shared mirror
    for key in keys:
        rel = REGISTRY[key].relpath
        (copy / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(mirror / rel, copy / rel)
    results = tmp_path / "results"
    target = str(results / "data" / "multi-mnist.npz")
    first = _snakemake(tmp_path, results, copy, target)
    assert first.returncode == 0, first.stderr[-3000:]
    npz = Path(target)
    built = {p: p.read_bytes() for p in (npz, npz.with_suffix(".json"))}
    raw = copy / REGISTRY[keys[0]].relpath
    assert raw.stat().st_size > 1_000_000  # the case: files over 1 MB reran one invocation late
    time.sleep(1.1)
    os.utime(raw)
    for attempt in (1, 2):
        again = _snakemake(tmp_path, results, copy, target)
        assert again.returncode == 0, again.stderr[-3000:]
        assert "Nothing to be done" in again.stdout + again.stderr, (attempt, again.stderr[-3000:])
    raw.write_bytes(raw.read_bytes()[:-10] + b"0123456789")
    bad = _snakemake(tmp_path, results, copy, target)
    assert bad.returncode != 0
    log = (results / "logs" / "verify_raw" / f"{keys[0]}.log").read_text()
    assert "checksum mismatch" in log and keys[0] in log
    assert {p: p.read_bytes() for p in built} == built
