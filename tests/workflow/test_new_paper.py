"""A fourth paper, added as a newcomer would: its own new files plus one registration line.

The test copies the checkout, adds a throw-away paper ``toy`` from a template (a registry entry,
one rules file whose one rule writes a table and a claim, a report caption), registers it with
one line in ``experiments/papers.py``, and checks that the paper appears everywhere the shared
code derives from the registry: the config schema, ``--papers``, the time estimate, the smoke
targets, the claims table (its own section) and the report.  Nothing else of the checkout is
edited, which the test checks too.
"""

from __future__ import annotations

import csv
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from checkout_copy import checkout_env, copy_checkout, run_python

pytestmark = pytest.mark.slow

ENTRY = '''"""A throw-away paper of the test suite (tests/workflow/test_new_paper.py)."""

from noisyor_bench.experiments.papers import Paper, register

PAPER = register(
    Paper(
        id="toy",
        name="TOY",
        title="A Toy Paper for the Registry Test",
        citation="Nobody. Nowhere, 2026.",
        rules=("toy.smk",),
        grid_sections=(),
        claim_prefixes=("toy-",),
        paper_numbers=None,
        run_kinds=("toy-",),
        docs="docs/captions/toy.rst",
        config_schema="experiments/toy/config_schema.yaml",
        smoke_artifacts=("tables/toy_table.csv", "tables/claims_toy.csv"),
        runtime={"smoke": {"wall_seconds": 7, "cores": 2, "how": "the toy's own estimate"}},
    )
)
'''

SCHEMA = """grid_sections:
  toy: {$ref: "#/$defs/toy_grid"}
$defs:
  toy_grid:
    type: object
    additionalProperties: false
    properties:
      rows: {type: integer, minimum: 1}
"""

RULES = """# The toy paper's one rule: a table and one claim.
REPORT_TOY = "Toy paper"


def toy_results():
    return [R("tables/toy_table.csv"), R("tables/claims_toy.csv")] if paper_selected("toy") else []


paper_hooks(
    "toy",
    toy_results,
    lambda: [R("tables/claims_toy.csv")] if paper_selected("toy") else [],
    lambda: {},
)


rule toy_table:
    output:
        table=paper_report(R("tables/toy_table.csv"), "toy", REPORT_TOY, "Toy table"),
        claims=R("tables/claims_toy.csv"),
    shell:
        "printf 'x,y\\\\n1,2\\\\n' > {output.table} && "
        "printf 'claim_id,statement,location,verdict,numbers,rule\\\\n"
        "toy-one-is-one,one is one,Table 1,reproduced,1 = 1,equality\\\\n' > {output.claims}"
"""


@pytest.fixture(scope="module")
def toy_checkout(tmp_path_factory):
    from conftest import REPO

    dest = tmp_path_factory.mktemp("toy") / "checkout"
    copy_checkout(REPO, dest)
    before = {p.relative_to(dest): p.read_bytes() for p in dest.rglob("*") if p.is_file()}
    # the paper's own new files
    folder = dest / "workflow" / "noisyor_bench" / "experiments" / "toy"
    folder.mkdir()
    (folder / "__init__.py").write_text('"""The toy paper."""\n')
    (folder / "paper.py").write_text(ENTRY)
    (folder / "config_schema.yaml").write_text(SCHEMA)
    (dest / "rules" / "toy.smk").write_text(RULES)
    (dest / "docs" / "captions" / "toy.rst").write_text("The toy paper's table.\n")
    # the one registration line
    registry = dest / "workflow" / "noisyor_bench" / "experiments" / "papers.py"
    text = registry.read_text()
    assert '    "avipam",\n)' in text
    registry.write_text(text.replace('    "avipam",\n)', '    "avipam",\n    "toy",\n)'))
    return dest, before


def test_only_new_files_and_one_registration_line(toy_checkout) -> None:
    dest, before = toy_checkout
    after = {p.relative_to(dest): p.read_bytes() for p in dest.rglob("*") if p.is_file()}
    changed = sorted(str(p) for p in before if after.get(p) != before[p])
    assert changed == ["workflow/noisyor_bench/experiments/papers.py"]
    old, new = (b[p].decode().splitlines() for b in (before, after) for p in [Path(changed[0])])
    assert len(new) == len(old) + 1 and set(old) <= set(new)
    added = sorted(str(p) for p in set(after) - set(before))
    assert added == [
        "docs/captions/toy.rst",
        "rules/toy.smk",
        "workflow/noisyor_bench/experiments/toy/__init__.py",
        "workflow/noisyor_bench/experiments/toy/config_schema.yaml",
        "workflow/noisyor_bench/experiments/toy/paper.py",
    ]


def test_schema_papers_help_and_time_estimate(toy_checkout) -> None:
    dest, _ = toy_checkout
    out = run_python(
        dest,
        "import noisyor_bench, sys; from noisyor_bench.experiments.config import schema; s = schema(); "
        "print(noisyor_bench.__file__); print(s['properties']['papers']['items']['enum']); "
        "print(s['$defs']['grid']['properties']['toy'])",
    )
    lines = out.splitlines()
    assert str(dest) in lines[0], "the copy's package must be the one imported"
    assert "'toy'" in lines[1]  # the papers enum
    assert "toy_grid" in lines[2]  # its grid section, from its own schema file
    cli = [sys.executable, "-m", "noisyor_bench"]
    help_text = subprocess.run(
        [*cli, "estimate-time", "--help"], cwd=dest, env=checkout_env(dest), capture_output=True, text=True
    ).stdout
    assert "toy" in " ".join(help_text.split())
    estimate = subprocess.run(
        [*cli, "estimate-time", "--grid", "smoke", "--papers", "toy"],
        cwd=dest,
        env=checkout_env(dest),
        capture_output=True,
        text=True,
    )
    assert estimate.returncode == 0, estimate.stderr
    assert "the toy's own estimate" in estimate.stdout


def test_the_default_run_includes_it(toy_checkout, tmp_path) -> None:
    """config.yaml names no papers: a registered paper is reproduced by default."""
    from conftest import MIRROR

    dest, _ = toy_checkout
    env = checkout_env(dest)
    if MIRROR is not None:
        env["NOISYOR_RAW_DATA"] = str(MIRROR)
    snakemake = str(Path(sys.executable).parent / "snakemake")
    cmd = [snakemake, "-n", "--quiet", "rules", "--config", "grid=smoke", f"results_dir={tmp_path / 'r'}"]
    proc = subprocess.run(cmd, cwd=dest, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "toy_table" in proc.stdout and "train_cell" in proc.stdout  # the toy beside the papers


def test_smoke_targets_claims_section_and_report(toy_checkout, tmp_path) -> None:
    from conftest import MIRROR

    dest, _ = toy_checkout
    results = tmp_path / "results"
    snakemake = [
        str(Path(sys.executable).parent / "snakemake"),
        "--cores",
        "2",
        "--config",
        "grid=smoke",
        "papers=[toy]",
        f"results_dir={results}",
        "reference_dir=null",
    ]
    env = checkout_env(dest)
    if MIRROR is not None:
        env["NOISYOR_RAW_DATA"] = str(MIRROR)
    proc = subprocess.run(snakemake, cwd=dest, env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-4000:]
    smoke_artifacts = run_python(
        dest,
        "from noisyor_bench.experiments import papers; print('\\n'.join(papers.get('toy').smoke_artifacts))",
    ).split()
    assert all((results / a).is_file() for a in smoke_artifacts)
    with open(results / "tables" / "claims.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert [(r["claim_id"], r["paper"], r["verdict"]) for r in rows] == [
        ("toy-one-is-one", "toy", "reproduced")
    ]
    assert "## TOY: A Toy Paper for the Registry Test" in (results / "tables" / "claims.md").read_text()
    report = tmp_path / "report.zip"
    proc = subprocess.run(
        [*snakemake, "--report", str(report)], cwd=dest, env=env, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    with zipfile.ZipFile(report) as zf:
        assert any(name.endswith("toy_table.csv") for name in zf.namelist())
