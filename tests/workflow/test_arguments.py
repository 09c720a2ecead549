"""The one JSON-argument parser of the commands (inline or ``@file``, errors naming both)."""

from __future__ import annotations

import pytest

from noisyor_bench.commands.arguments import json_argument
from noisyor_bench.infra.errors import ConfigError, UserError


def test_inline_and_file_give_the_same_value(tmp_path):
    (tmp_path / "b.json").write_text('{"max_epochs": 3}\n')
    assert json_argument('{"max_epochs": 3}', "--budget") == {"max_epochs": 3}
    assert json_argument(f"@{tmp_path / 'b.json'}", "--budget") == {"max_epochs": 3}


def test_errors_name_the_argument_and_the_file(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{max_epochs: 3}")
    with pytest.raises(ConfigError, match=r"^--budget: not valid JSON"):
        json_argument("{max_epochs: 3}", "--budget")
    with pytest.raises(UserError, match=rf"^--budget: {bad}: not valid JSON"):
        json_argument(f"@{bad}", "--budget")
    with pytest.raises(UserError, match=r"^--draws: cannot read '/does/not/exist.json'"):
        json_argument("@/does/not/exist.json", "--draws")


def test_every_json_option_uses_the_one_parser():
    """No command keeps a JSON parser of its own (one home per concept)."""
    from pathlib import Path

    import noisyor_bench.commands as commands

    own = [
        p.name
        for p in Path(commands.__file__).parent.glob("*.py")
        if p.name != "arguments.py" and 'startswith("@")' in p.read_text(encoding="utf-8")
    ]
    assert own == []
