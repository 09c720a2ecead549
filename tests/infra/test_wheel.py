"""The package as a user installs it: a wheel, installed (not editable) into a throwaway venv.

The development install is editable: ``noisyor_bench`` is imported from the repository, so a
package-data file that ``pyproject.toml`` fails to ship (aviPAM's ``paper_numbers.yaml`` once)
goes unnoticed until someone installs the wheel.  Here the wheel is built from a copy of the
source (the build writes ``build/`` and ``*.egg-info``, never into the working tree), installed
with ``pip --python`` into a venv made ``--without-pip`` and run from a folder outside the
repository.  Its dependencies come from the test interpreter's site-packages through a ``.pth``
file *line*: a directory named in a ``.pth`` file is appended to ``sys.path`` but its own
``.pth`` files are not read, so the editable install's ``__editable__.noisyor_bench-*.pth``
(which adds ``<repo>/workflow``) has no effect, and the wheel's copy, earlier on ``sys.path``,
is the one imported.  The tests assert that (``noisyor_bench.__file__``) before they trust the
rest: every registered paper's numbers load through the one loader, the config schema loads,
and ``noisyor-bench --help`` and each paper's ``table_command`` run from the entry point.
Offline: ``--no-index``, no build isolation.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import site
import subprocess
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import REPO

from noisyor_bench.experiments import papers

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("pip") is None or importlib.util.find_spec("setuptools") is None,
    reason="building the wheel needs pip and setuptools in the test environment (make setup installs them)",
)

PACKAGE = REPO / "workflow" / "noisyor_bench"
SOURCE_FILES = ("pyproject.toml", "README.md", "LICENSE")  # what the build reads besides workflow/


@dataclass(frozen=True)
class Installed:
    wheel: Path
    venv: Path
    site_packages: Path
    env: dict[str, str]
    cwd: Path

    def run(self, *argv: str | Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        """A command of the venv (``python`` or ``noisyor-bench``), outside the repository."""
        exe = self.venv / "bin" / str(argv[0])
        return subprocess.run(
            [str(exe), *map(str, argv[1:])],
            cwd=self.cwd,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )


def _clean_env() -> dict[str, str]:
    """The environment without anything that would put the repository on ``sys.path``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "PIP_", "VIRTUAL_ENV"))}
    env.update(PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_INPUT="1", PYTHONNOUSERSITE="1")
    return env


def _check(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 0, f"{proc.args} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


def _run(argv: list[str | Path], cwd: Path, env: dict[str, str]) -> str:
    """stdout of a build step (an AssertionError with its output when it fails)."""
    return _check(
        subprocess.run(
            [str(a) for a in argv], cwd=cwd, env=env, capture_output=True, text=True, timeout=300, check=False
        )
    )


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    root = tmp_path_factory.mktemp("wheel")
    env = _clean_env()
    # 1. the wheel, built offline from a copy of the source
    src = root / "src"
    src.mkdir()
    for name in SOURCE_FILES:
        shutil.copy2(REPO / name, src / name)
    shutil.copytree(
        REPO / "workflow",
        src / "workflow",
        ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info"),
    )
    dist = root / "dist"
    pip = [sys.executable, "-m", "pip"]
    offline = ["--no-deps", "--no-index", "--no-cache-dir", "-q"]
    _run([*pip, "wheel", "--no-build-isolation", *offline, "-w", dist, src], root, env)
    (wheel,) = dist.glob("noisyor_bench-*.whl")
    # 2. a venv without pip or the test environment's packages; the wheel installed by our pip
    venv = root / "venv"
    python = venv / "bin" / "python"
    _run([sys.executable, "-m", "venv", "--without-pip", venv], root, env)
    _run([*pip, "--python", python, "install", *offline, wheel], root, env)
    probe = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
    purelib = Path(_run([python, "-c", probe], root, env).strip())
    # 3. the dependencies: the test interpreter's site-packages as .pth lines (their .pth files,
    # the editable install's among them, are not processed), after the venv's own site-packages
    deps = [p for p in site.getsitepackages() if Path(p).is_dir() and Path(p) != purelib]
    (purelib / "zz_test_dependencies.pth").write_text("".join(f"{p}\n" for p in deps), encoding="utf-8")
    cwd = root / "elsewhere"
    cwd.mkdir()
    return Installed(wheel, venv, purelib, env, cwd)


def test_the_wheel_ships_every_data_file_of_the_package(installed: Installed) -> None:
    """Every non-Python file under ``noisyor_bench/`` (the config schema, the papers' numbers)."""
    data = sorted(
        str(p.relative_to(PACKAGE.parent))
        for p in PACKAGE.rglob("*")
        if p.is_file() and p.suffix not in (".py", ".pyc") and "__pycache__" not in p.parts
    )
    assert data, "no package data found in the source tree"
    with zipfile.ZipFile(installed.wheel) as whl:
        shipped = set(whl.namelist())
    assert [f for f in data if f not in shipped] == []
    numbers = [p.paper_numbers for p in papers.papers() if p.paper_numbers is not None]
    assert numbers and all(f"noisyor_bench/{f}" in shipped for f in numbers)


def test_the_code_under_test_is_the_wheels(installed: Installed) -> None:
    out = _check(
        installed.run(
            "python",
            "-c",
            "import json, sys, noisyor_bench; print(json.dumps([noisyor_bench.__file__, sys.path]))",
        )
    )
    module_file, path = json.loads(out)
    assert Path(module_file).is_relative_to(installed.site_packages), module_file
    assert str(REPO / "workflow") not in path and str(REPO) not in path


_LOAD_EVERYTHING = """
import json, noisyor_bench
from noisyor_bench.experiments import config, papers
numbers = {p.id: papers.paper_numbers(p.id) for p in papers.papers() if p.paper_numbers is not None}
schema = config.schema()
print(json.dumps({"file": noisyor_bench.__file__, "numbers": numbers, "papers_enum": schema["properties"]["papers"]["items"]["enum"]}, default=str))
"""


def test_every_papers_numbers_and_the_config_schema_load_from_the_wheel(installed: Installed) -> None:
    got = json.loads(_check(installed.run("python", "-c", _LOAD_EVERYTHING)))
    assert Path(got["file"]).is_relative_to(installed.site_packages)
    expected = {p.id: papers.paper_numbers(p.id) for p in papers.papers() if p.paper_numbers is not None}
    assert sorted(got["numbers"]) == sorted(expected) and expected
    assert got["numbers"] == json.loads(json.dumps(expected, default=str))
    assert got["papers_enum"] == list(papers.ids())


def test_the_entry_point_runs_help_and_every_table_command(installed: Installed) -> None:
    assert "explain" in _check(installed.run("noisyor-bench", "--help"))
    assert "paper-numbers" in _check(installed.run("noisyor-bench", "steps", "shared"))
    commands = [p.table_command for p in papers.papers() if p.table_command]
    assert commands, "no registered paper names a table_command"
    for command in commands:
        out = _check(installed.run("noisyor-bench", *command))
        assert out.strip(), f"noisyor-bench {' '.join(command)} printed nothing"
