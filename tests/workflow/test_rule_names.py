"""Rule names say what runs: each rule is named as the noisyor-bench subcommand it calls
(``-`` -> ``_``), or ``<subcommand>_<qualifier>`` where one subcommand runs in several rules."""

from __future__ import annotations

import re

from conftest import REPO

from noisyor_bench.cli import build_parser


def _rules_and_commands() -> list[tuple[str, str, str]]:
    """(file, rule name or name prefix, subcommand) of every rule that calls the CLI."""
    found = []
    for path in sorted((REPO / "rules").glob("*.smk")):
        text = path.read_text(encoding="utf-8")
        # a rule block runs until the next rule (named, or anonymous with `name:`)
        blocks = re.split(r"\n(?=\s*rule(?: \w+)?:\n)", text)
        for block in blocks:
            head = re.match(r"\s*rule(?: (\w+))?:\n", block)
            if not head:
                continue
            name = head.group(1)
            if name is None:
                dynamic = re.search(r"\n\s+name:\n\s+f?\"([\w]+)", block)
                assert dynamic, f"{path.name}: anonymous rule without a name"
                name = dynamic.group(1)
            commands = set(re.findall(r"\"noisyor-bench ([a-z0-9-]+)", block))
            for command in commands:
                found.append((path.name, name, command))
    return found


def test_every_rule_is_named_as_its_subcommand():
    pairs = _rules_and_commands()
    assert len(pairs) > 30
    wrong = [
        (f, rule, cmd)
        for f, rule, cmd in pairs
        if not (rule == cmd.replace("-", "_") or rule.startswith(cmd.replace("-", "_") + "_"))
    ]
    assert wrong == []


def test_every_subcommand_a_rule_calls_exists():
    sub = next(a for a in build_parser()._actions if a.dest == "command")
    missing = sorted({cmd for _, _, cmd in _rules_and_commands()} - set(sub.choices))
    assert missing == []


def test_renamed_subcommands_keep_their_old_names():
    sub = next(a for a in build_parser()._actions if a.dest == "command")
    for old, new in [
        ("sensitivity", "figure-fig3a-sensitivity"),
        ("claims", "claims-synthetic"),
        ("topics-table", "table5"),
        ("classify", "classification"),
        ("text-hparams", "corpus-hparams"),
    ]:
        assert sub.choices[old] is sub.choices[new], old
