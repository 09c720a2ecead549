"""The numbers the docs quote come from the tool: every ``<!-- generated: ... -->`` block of the
pages matches what ``noisyor-bench docs-numbers`` generates now, and the command finds and
rewrites a block that drifted."""

from __future__ import annotations

from pathlib import Path

import pytest

from noisyor_bench.commands import docsnumbers
from noisyor_bench.infra.errors import UserError

REPO = Path(__file__).resolve().parents[1]


def test_the_repository_pages_have_generated_blocks_and_none_drifted():
    found = [b for page in docsnumbers.pages(REPO) for b in docsnumbers.blocks(page)]
    assert {b.spec.split()[0] for b in found} == {
        "cost-model",
        "synrandom-seeds",
        "generator-verdicts",
        "stop-epochs",
    }
    costs = [b for b in found if b.spec.startswith("cost-model")]
    assert {"paper", "quick"} <= {b.spec.split()[1] for b in costs}  # both grids' costs are quoted
    stale = docsnumbers.drifted(REPO)
    assert not stale, "run `noisyor-bench docs-numbers --write`; drifted: " + ", ".join(
        f"{b.page.relative_to(REPO)} ({b.spec})" for b, _ in stale
    )


def test_cost_model_block_names_every_paper_with_a_compute_job_and_the_total():
    body = docsnumbers.render(REPO, "cost-model paper 100")
    papers = [line.split("|")[1].strip() for line in body.splitlines() if line.startswith("| ")]
    assert papers[0] == "paper" and papers[-1] == "total"
    assert {"ACP", "APE", "aviPAM"} <= set(papers)
    assert "wall time on 100 slots" in body


def _fake_repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    calls = iter(range(100))
    monkeypatch.setitem(
        docsnumbers.GENERATORS, "counter", lambda root, *a: f"n = {next(calls)} {' '.join(a)}"
    )
    (tmp_path / "docs").mkdir()
    (tmp_path / "README.md").write_text(
        "# R\n\n<!-- generated: counter x -->\nold\n<!-- end generated -->\nend\n"
    )
    (tmp_path / "docs" / "a.md").write_text(
        "<!-- generated: counter x -->\nn = 0 x\n<!-- end generated -->\n"
        "<!-- generated: counter y -->\nstale\n<!-- end generated -->\n"
    )
    return tmp_path


def test_check_names_the_drifted_blocks_and_write_mends_them(tmp_path, monkeypatch, capsys):
    from noisyor_bench.cli import main

    root = _fake_repo(tmp_path, monkeypatch)
    stale = docsnumbers.drifted(root)  # 'counter x' runs once per check: both of its blocks read n = 0
    assert [(b.page.name, b.spec) for b, _ in stale] == [("README.md", "counter x"), ("a.md", "counter y")]
    docsnumbers.write(root, stale)
    assert (
        root / "README.md"
    ).read_text() == "# R\n\n<!-- generated: counter x -->\nn = 0 x\n<!-- end generated -->\nend\n"
    assert "n = 1 y\n<!-- end generated -->" in (root / "docs" / "a.md").read_text()

    (root / "docs" / "a.md").write_text("<!-- generated: counter x -->\nhand edit\n<!-- end generated -->\n")
    monkeypatch.setitem(docsnumbers.GENERATORS, "counter", lambda root, *a: "n = 0 x")
    assert main(["docs-numbers", "--check", "--root", str(root)]) == 1
    assert "docs/a.md: block 'generated: counter x' differs" in capsys.readouterr().err
    assert main(["docs-numbers", "--write", "--root", str(root)]) == 0
    assert main(["docs-numbers", "--check", "--root", str(root)]) == 0


def test_an_unknown_generator_is_a_user_error(tmp_path):
    (tmp_path / "README.md").write_text("<!-- generated: nothing-like-it -->\n\n<!-- end generated -->\n")
    with pytest.raises(UserError, match="unknown generator 'nothing-like-it'"):
        docsnumbers.drifted(tmp_path)
