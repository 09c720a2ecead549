"""Rule names say what runs: each rule is named as the noisyor-bench subcommand it calls
(``-`` -> ``_``), or ``<subcommand>_<qualifier>`` where one subcommand runs in several rules.
A paper's subcommands carry its prefix, which its rule names may leave out or put last (rule
``table4`` runs ``acp-table4``, rule ``claims_avipam`` runs ``avipam-claims``)."""

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


def rule_names_of(command: str) -> set[str]:
    """The names a rule running ``command`` may have (before any ``_<qualifier>``)."""
    from noisyor_bench.commands.catalogue import paper_of_command, paper_prefix

    paper = paper_of_command(command)
    names = {command}
    if paper is not None:
        bare = command.removeprefix(paper_prefix(paper))
        names |= {bare, f"{bare}-{paper}"}
    return {n.replace("-", "_") for n in names}


def test_rule_names_of_a_prefixed_command():
    assert rule_names_of("acp-table4") == {"acp_table4", "table4", "table4_acp"}
    assert rule_names_of("ape-noisyor-train") == {"ape_noisyor_train", "train", "train_ape_noisyor"}
    assert rule_names_of("claims-merge") == {"claims_merge"}


def test_every_rule_is_named_as_its_subcommand():
    pairs = _rules_and_commands()
    assert len(pairs) > 30
    wrong = [
        (f, rule, cmd)
        for f, rule, cmd in pairs
        if not any(rule == name or rule.startswith(name + "_") for name in rule_names_of(cmd))
    ]
    assert wrong == []


def test_every_subcommand_a_rule_calls_exists():
    sub = next(a for a in build_parser()._actions if a.dest == "command")
    missing = sorted({cmd for _, _, cmd in _rules_and_commands()} - set(sub.choices))
    assert missing == []


def test_verify_keeps_its_old_name():
    sub = next(a for a in build_parser()._actions if a.dest == "command")
    assert sub.choices["evaluate"] is sub.choices["verify"]
