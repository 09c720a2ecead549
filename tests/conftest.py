"""Shared fixtures and helpers: the repository root, the raw-data mirror, deterministic torch,
the toy dataset and the in-process CLI.

Test modules import the constants and helpers by name (``from conftest import REPO, cli``:
``tests/`` is on ``sys.path`` through pyproject's ``pythonpath``); fixtures need no import.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from toydata import write_toy_dataset

from noisyor_bench.cli import main

REPO = Path(__file__).resolve().parents[1]


def _mirror() -> Path | None:
    env = os.environ.get("NOISYOR_RAW_DATA")
    for candidate in (env, REPO.parent / "shared" / "data"):
        if candidate and (Path(candidate) / "README.md").exists():
            return Path(candidate)
    return None


MIRROR = _mirror()


@pytest.fixture(autouse=True)
def _single_thread_torch():
    """Tests run in parallel (pytest-xdist); one torch thread each avoids oversubscription."""
    torch.set_num_threads(1)
    yield


@pytest.fixture
def repo() -> Path:
    return REPO


@pytest.fixture(scope="session")
def mirror() -> Path:
    """The raw-data mirror (../shared/data or $NOISYOR_RAW_DATA); CI always has it.

    Session-scoped so that module-scoped fixtures (a CLI run shared by a module) can use it.
    """
    if MIRROR is None:
        if os.environ.get("CI"):
            pytest.fail("CI needs the raw-data mirror at ../shared/data or $NOISYOR_RAW_DATA")
        pytest.skip("raw-data mirror not found (set NOISYOR_RAW_DATA)")
    return MIRROR


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny synthetic dataset (D=10, K=3, :func:`toydata.write_toy_dataset`) as
    ``acp-make-dataset`` would write it; one per test module."""
    return write_toy_dataset(tmp_path_factory.mktemp("data") / "toy.npz")


def cli(argv: list, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """Run ``noisyor-bench argv`` in process: (exit code, stdout, stderr)."""
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The world every fault-catalogue case copies (:mod:`faultworld`): data/toy.npz and a finished run at RUN."""
    from faultworld import DATA, train_argv

    root = tmp_path_factory.mktemp("world")
    write_toy_dataset(root / DATA)
    cwd = os.getcwd()
    os.chdir(root)
    try:
        assert main(train_argv()) == 0
    finally:
        os.chdir(cwd)
    return root


def smoke_dry_run(results_dir: Path, *config: str, print_shell: bool = False) -> str:
    """``snakemake -n`` of the smoke grid into ``results_dir`` (extra ``--config`` items, e.g.
    ``papers=[ape]``); Snakemake's plan as text, the shell commands too with ``print_shell``."""
    snakemake = Path(sys.executable).with_name("snakemake")
    argv = [str(snakemake), "-n", *(["-p"] if print_shell else [])]
    argv += ["--config", "grid=smoke", *config, f"results_dir={results_dir}"]
    env = {**os.environ, "NOISYOR_RAW_DATA": str(MIRROR)} if MIRROR else None
    proc = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


LONGEST_MODULES = ("workflow/test_workflow_smoke.py", "cluster/test_slurm_smoke.py")
"""The modules that take longest (the smoke DAG of every paper; a real SLURM cluster), run first.
Why: `make test` distributes whole modules (``--dist loadfile``) in collection order, so a long
module collected last runs alone at the end while the other workers sit idle."""


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list) -> None:
    """Longest modules first, then the modules with end-to-end (``slow``) tests, then the rest;
    each module's tests stay together and in their order."""

    def module(item) -> str:
        return Path(str(item.fspath)).resolve().relative_to(REPO / "tests").as_posix()

    slow = {module(item) for item in items if item.get_closest_marker("slow")}

    def rank(item) -> int:
        path = module(item)
        if path in LONGEST_MODULES:
            return LONGEST_MODULES.index(path)
        return len(LONGEST_MODULES) + (0 if path in slow else 1)

    items[:] = sorted(items, key=rank)  # stable: collection order within a rank
