"""Fault catalogue: the records name the code that really ran.

Four ways the recorded code version could be wrong: a package imported from another checkout
than the workflow's (a ``.venv`` linked to another checkout), a ``.venv`` link that git sees as an
untracked file (every record dirty), uncommitted changes left out of the answer, README block and
results page, and a ``$NOISYOR_CODE_VERSION`` that overrules the git checkout.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO
from faultworld import RUN, Case, run_case
from test_faults_integrity import claims_world

from noisyor_bench.infra import provenance as P
from noisyor_bench.reporting.answer import write_run_record

HAS_GIT = shutil.which("git") is not None
IN_CHECKOUT = HAS_GIT and (REPO / ".git").exists()
COMMIT = "0123456789abcdef0123456789abcdef01234567"
DIRTY = f"commit {COMMIT[:12]} with uncommitted changes"


def table_argv() -> list[str]:
    """A table of the template's run: a command that writes records (the table's sidecar)."""
    return ["convergence-table", "--runs", str(RUN), "--out-csv", "t.csv", "--out-md", "t.md"]


@pytest.fixture(autouse=True)
def fresh_code_version(monkeypatch: pytest.MonkeyPatch):
    """Each case sees its own environment: the cached code version is dropped before and after."""
    monkeypatch.delenv(P.CODE_VERSION_ENV, raising=False)
    monkeypatch.delenv(P.CHECKOUT_ENV, raising=False)
    P.code_version.cache_clear()
    yield
    P.code_version.cache_clear()


def _git(repo: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t"}
    env["GIT_COMMITTER_EMAIL"] = "t@t"
    return subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, check=True, env=env
    ).stdout


# ---------------------------------------------------------------------------------- another checkout
def test_package_of_another_checkout_refused(tmp_path: Path) -> None:
    """A job of this checkout's workflow whose environment imports another checkout's package
    (what a .venv linked to another checkout does) is refused before it runs anything."""
    other = tmp_path / "other-checkout"
    shutil.copytree(REPO / "workflow" / "noisyor_bench", other / "workflow" / "noisyor_bench")
    (tmp_path / "runs").mkdir()
    env = {**os.environ, "PYTHONPATH": str(other / "workflow"), P.CHECKOUT_ENV: str(REPO)}
    env.pop(P.CODE_VERSION_ENV, None)
    code = "import sys; from noisyor_bench.cli import main; sys.exit(main(sys.argv[1:]))"
    argv = ["acp-table-fig3a", "--runs", "runs", "--out-csv", "t.csv", "--out-md", "t.md"]
    proc = subprocess.run(
        [sys.executable, "-c", code, *argv], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert proc.returncode == 2, proc.stderr[-2000:]
    errors = [line for line in proc.stderr.splitlines() if "error:" in line]
    assert len(errors) == 1 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    for word in (
        str(other / "workflow" / "noisyor_bench"),
        str(REPO),
        "not the one of the workflow's checkout",
    ):
        assert word in errors[0], errors[0]
    assert not (tmp_path / "t.csv").exists()


CASES = [
    Case(
        "package-of-another-checkout-refused",
        lambda t, m: (m.setenv(P.CHECKOUT_ENV, str(t / "elsewhere")), table_argv())[1],
        2,
        ("elsewhere", "not the one of the workflow's checkout", "pip install"),
        after=lambda: Path("t.csv").exists() and pytest.fail("t.csv written"),
    ),
    Case(
        "package-of-this-checkout-runs",
        lambda t, m: (m.setenv(P.CHECKOUT_ENV, str(REPO)), table_argv())[1],
        0,
        (),
    ),
]
if IN_CHECKOUT:
    CASES += [
        Case(
            "code-version-garbage-refused-in-a-checkout",
            lambda t, m: (m.setenv(P.CODE_VERSION_ENV, "garbage"), table_argv())[1],
            2,
            ("NOISYOR_CODE_VERSION=garbage disagrees with the git checkout", "unset"),
            after=lambda: Path("t.csv").exists() and pytest.fail("t.csv written"),
        ),
        Case(
            "code-version-of-another-commit-refused-in-a-checkout",
            lambda t, m: (m.setenv(P.CODE_VERSION_ENV, COMMIT), table_argv())[1],
            2,
            (f"NOISYOR_CODE_VERSION={COMMIT} disagrees",),
        ),
    ]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_fault(
    case: Case,
    template: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    run_case(case, template, tmp_path, monkeypatch, capsys)


@pytest.mark.skipif(not IN_CHECKOUT, reason="not a git checkout")
def test_code_version_naming_the_checkout_is_recorded_with_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """A value that names the checkout's own commit and state is accepted; the record is git's."""
    state = P.git_state(P.PACKAGE_DIR, tracked_file=P.PACKAGE_DIR / "__init__.py")
    value = state["commit"][:12] + ("+dirty" if state["dirty"] else "")
    monkeypatch.setenv(P.CODE_VERSION_ENV, value)
    P.check_code_source()
    code = P.code_version()
    assert (code["source"], code["commit"], code["declared"], code["declared_agrees"]) == (
        "git",
        state["commit"],
        value,
        True,
    )


# ---------------------------------------------------------------------------------- .venv as a link
@pytest.mark.skipif(not HAS_GIT, reason="git is not installed")
def test_venv_link_does_not_make_the_checkout_dirty(tmp_path: Path) -> None:
    """With the repository's .gitignore, a .venv that is a symbolic link (to an environment
    elsewhere) is ignored like a .venv directory: the records of a clean checkout stay clean."""
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    shutil.copyfile(REPO / ".gitignore", repo / ".gitignore")
    (repo / "code.py").write_text("x = 1\n")
    _git(repo, "add", ".gitignore", "code.py")
    _git(repo, "commit", "-q", "-m", "one")
    (tmp_path / "env").mkdir()
    (repo / ".venv").symlink_to(tmp_path / "env", target_is_directory=True)
    state = P.git_state(repo, tracked_file=repo / "code.py")
    assert state["dirty"] is False, state["changes"]


# ---------------------------------------------------------------------------------- uncommitted edits said
def dirty_run_world() -> None:
    """Claims with their sidecars, and a run record of a checkout with uncommitted changes."""
    claims_world()
    write_run_record("results", 1000.0, 1600.0, 3, "smoke", ["acp"], COMMIT, dirty=True)


def _readme_and_page_say_dirty() -> None:
    readme, page = Path("README.md").read_text(), Path("docs/results.md").read_text()
    assert DIRTY in readme, readme
    assert DIRTY in page, page


DIRTY_CASES = [
    Case(
        "uncommitted-changes-said-by-run-summary",
        lambda t, m: (dirty_run_world(), ["run-summary", "--results", "results"])[1],
        0,
        (),
        out_words=(DIRTY,),
    ),
    Case(
        "uncommitted-changes-said-in-readme-and-results-page",
        lambda t, m: (dirty_run_world(), ["readme-results", "--results", "results", "--readme", "README.md"])[
            1
        ],
        0,
        (),
        after=_readme_and_page_say_dirty,
    ),
]


@pytest.mark.parametrize("case", DIRTY_CASES, ids=lambda c: c.id)
def test_dirty_said(
    case: Case,
    template: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    run_case(case, template, tmp_path, monkeypatch, capsys)


def test_clean_run_says_no_uncommitted_changes(
    template: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The label depends on the record: a clean run's summary names its commit alone."""
    shutil.copytree(template, tmp_path / "world", symlinks=True)
    monkeypatch.chdir(tmp_path / "world")
    claims_world()
    write_run_record("results", 1000.0, 1600.0, 3, "smoke", ["acp"], COMMIT, dirty=False)
    from noisyor_bench.cli import main

    capsys.readouterr()
    assert main(["run-summary", "--results", "results"]) == 0
    out = capsys.readouterr().out
    assert f"commit {COMMIT[:12]};" in out and DIRTY not in out, out
