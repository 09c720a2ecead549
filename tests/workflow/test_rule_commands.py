"""The commands the rules call, and where they live: a shared rule calls a shared command (never
one in a paper's command folder), a paper's steps carry its prefix, a job of one paper never
imports another paper's command code, and ``--help`` stays short enough to read."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest
from conftest import REPO

from noisyor_bench.cli import USER_COMMANDS, build_parser
from noisyor_bench.commands import catalogue
from noisyor_bench.experiments import papers

COMMAND = re.compile(r"\bnoisyor-bench ([a-z0-9][a-z0-9-]*)")


def rule_commands() -> dict[str, set[str]]:
    """rules file name -> the subcommands its shell strings call."""
    found = {}
    for path in sorted((REPO / "rules").glob("*.smk")):
        text = path.read_text(encoding="utf-8")
        shells = re.findall(r"\"noisyor-bench [^\"]*", text)
        found[path.name] = {m.group(1) for s in shells for m in COMMAND.finditer(s)}
    return found


def shared_rules_files() -> set[str]:
    """The rules files no paper's registry entry names."""
    owned = {f for p in papers.papers() for f in p.rules}
    return {name for name in rule_commands() if name not in owned}


@pytest.fixture(scope="module")
def commands() -> dict[str, catalogue.Command]:
    """Every registered command (aliases included) by name."""
    out = {}
    for c in build_parser().commands:
        out.update({name: c for name in (c.name, *c.aliases)})
    return out


def test_every_command_a_rule_calls_exists(commands):
    called = set().union(*rule_commands().values())
    assert len(called) > 40
    assert sorted(called - set(commands)) == []


def test_shared_rules_call_only_shared_commands(commands):
    shared = shared_rules_files()
    assert {"common.smk", "summary.smk", "report.smk", "rawdata.smk"} <= shared
    wrong = sorted(
        f"{name}: noisyor-bench {cmd} is registered in {commands[cmd].module}"
        for name in shared
        for cmd in rule_commands()[name]
        if catalogue.paper_of_module(commands[cmd].module) is not None
    )
    assert wrong == []


def test_every_step_carries_its_papers_prefix(commands):
    """From the registry: a command of ``commands/<paper>`` starts with the paper's prefix (and
    no longer one of another paper); a shared command starts with none."""
    wrong = []
    for name, c in commands.items():
        home = catalogue.paper_of_module(c.module)
        if catalogue.paper_of_command(name) != home:
            wrong.append(
                f"{name} ({c.module}): prefix of {catalogue.paper_of_command(name)}, module of {home}"
            )
    assert wrong == []
    groups = {c.group for c in commands.values()}
    assert groups == {catalogue.SHARED, *papers.ids()}


def test_prefixes_of_the_papers():
    assert [catalogue.paper_prefix(p) for p in ("acp", "ape", "ape_noisyor", "avipam")] == [
        "acp-",
        "ape-",
        "ape-noisyor-",
        "avipam-",
    ]
    assert catalogue.paper_of_command("ape-noisyor-train") == "ape_noisyor"
    assert catalogue.paper_of_command("ape-train") == "ape"
    assert catalogue.paper_of_command("claims-merge") is None


# Run in a fresh interpreter: the CLI as a job runs it, for each command, and report the command
# modules it imported.
PROBE = """
import contextlib, io, json, sys
from noisyor_bench import cli
loaded = {}
for command in sys.argv[1:]:
    before = set(sys.modules)
    with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):
        cli.main([command, "-h"])
    loaded[command] = sorted(m for m in set(sys.modules) - before if m.startswith("noisyor_bench.commands."))
    for m in loaded[command]:
        del sys.modules[m]
print(json.dumps(loaded))
"""


def modules_loaded(commands: list[str]) -> dict[str, list[str]]:
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, *commands], capture_output=True, text=True, check=True, cwd=REPO
    )
    return json.loads(proc.stdout)


def test_an_ape_only_run_never_imports_acps_command_code():
    """With papers=[ape] the jobs are the shared rules' and APE's rules' commands."""
    files = shared_rules_files() | set(papers.get("ape").rules)
    called = sorted(set().union(*(rule_commands()[f] for f in files)))
    assert "claims-merge" in called and "ape-train" in called
    loaded = modules_loaded([*called, "acp-table4"])
    assert any(
        m.startswith("noisyor_bench.commands.acp") for m in loaded.pop("acp-table4")
    )  # the probe sees it
    wrong = {c: [m for m in ms if m.startswith("noisyor_bench.commands.acp")] for c, ms in loaded.items()}
    assert {c: ms for c, ms in wrong.items() if ms} == {}


def test_help_is_short_and_lists_the_user_commands_first():
    env = {**os.environ, "COLUMNS": "80"}
    proc = subprocess.run(
        [sys.executable, "-m", "noisyor_bench", "-h"], capture_output=True, text=True, check=True, env=env
    )
    lines = proc.stdout.splitlines()
    assert len(lines) <= 30, proc.stdout
    assert max(map(len, lines)) <= 80
    listed = [line.split()[0] for line in lines if line.startswith("  ") and not line.startswith("   ")]
    users = [c for c in listed if c in USER_COMMANDS]
    assert users == list(USER_COMMANDS) and listed[: len(users)] == users
    groups = [line.split()[0] for line in lines if re.match(r"  \S+ \(\d+\)", line)]
    assert groups == [catalogue.SHARED, *papers.ids()]


def test_steps_lists_every_step_and_each_answers_help(commands, capsys):
    from conftest import cli

    code, out, _ = cli(["steps"], capsys)
    assert code == 0
    listed = {line.split()[0] for line in out.splitlines() if line.startswith("  ")}
    primary = {c.name for c in commands.values()}
    assert listed == primary - set(USER_COMMANDS)
    for name in sorted(listed):
        with pytest.raises(SystemExit) as stop:
            build_parser(name).parse_args([name, "-h"])
        assert stop.value.code == 0, name
    capsys.readouterr()
    code, out, _ = cli(["steps", "ape_noisyor"], capsys)
    assert code == 0 and out.splitlines()[0] == "ape_noisyor:"
    assert {line.split()[0] for line in out.splitlines()[1:]} == {
        c.name for c in commands.values() if c.group == "ape_noisyor"
    }
    assert cli(["steps", "nope"], capsys)[0] == 2


def test_every_paper_verifies_its_runs_through_its_registry_entry():
    import importlib

    for paper in papers.papers():
        assert paper.run_verifier, f"{paper.id} names no run verifier"
        assert callable(importlib.import_module(paper.run_verifier).recompute)
