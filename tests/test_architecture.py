"""The package's architecture, enforced: layer order, the package root, no import cycles, and a
``docs/architecture.md`` picture that matches the real imports.

Everything is read from the source with :mod:`ast` (``docs/architecture_graph.py``), so the tests
need no torch and follow any module that is added, moved or renamed.
"""

from __future__ import annotations

import importlib.util
import sys
import warnings
from pathlib import Path

import pytest
from conftest import REPO

_spec = importlib.util.spec_from_file_location("architecture_graph", REPO / "docs" / "architecture_graph.py")
graph = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = graph  # dataclasses resolve their module by name
_spec.loader.exec_module(graph)

PACKAGE = graph.PACKAGE_DIR
LAYERS = graph.LAYERS

# Imports against the layer order that the tree had when this test was written, each with why it
# is there and how to remove it.  Keep this list empty: fix the import, then delete its entry (the
# test fails on an entry that no longer occurs, so the list cannot outlive its reason).
KNOWN_UPWARD: dict[tuple[str, str], str] = {}

# Import cycles between modules (counting imports inside functions), with why and the fix.
KNOWN_CYCLES: dict[frozenset[str], str] = {}


@pytest.fixture(scope="module")
def parsed() -> tuple[dict[str, Path], list]:
    return graph.import_graph(PACKAGE)


def _name(key: tuple[str, str] | frozenset[str]) -> str:
    return " -> ".join(key) if isinstance(key, tuple) else " <-> ".join(sorted(key))


def _report(kind: str, known: dict, found: set) -> list[str]:
    """Warn about the allowlisted entries still present (pytest prints them); return the stale ones."""
    for key in sorted(found & set(known), key=sorted):
        warnings.warn(
            f"known {kind}, allowlisted in tests/test_architecture.py: {_name(key)}: {known[key]}",
            stacklevel=1,
        )
    return [f"{_name(key)}: {known[key]}" for key in sorted(set(known) - found, key=sorted)]


def test_no_module_imports_a_higher_layer(parsed) -> None:
    """infra < models < data < evaluation < inference < experiments < reporting < commands < cli:
    a module imports only its own layer and lower ones (module-level, function-local and
    TYPE_CHECKING imports alike)."""
    _, imports = parsed
    upward = graph.upward_imports(imports)
    new = [graph.describe(i) for i in upward if (i.importer, i.imported) not in KNOWN_UPWARD]
    stale = _report("upward import", KNOWN_UPWARD, {(i.importer, i.imported) for i in upward})
    assert not new, "imports against the layer order " + " < ".join(LAYERS) + ":\n" + "\n".join(new)
    assert not stale, "KNOWN_UPWARD entries that no longer occur (delete them):\n" + "\n".join(stale)


def test_every_module_is_in_a_layer(parsed) -> None:
    modules, _ = parsed
    strays = sorted(m for m in modules if graph.layer_of(m) not in LAYERS)
    assert not strays, f"modules outside the layers {LAYERS}: {strays}"


def test_package_root_holds_only_the_face_and_the_layer_folders() -> None:
    allowed = {"__init__.py", "__main__.py", "cli.py", "__pycache__"} | set(LAYERS[:-1])
    extra = sorted(p.name for p in PACKAGE.iterdir() if p.name not in allowed)
    assert not extra, (
        f"{PACKAGE.relative_to(REPO)} holds only __init__.py, __main__.py, cli.py and the layer "
        f"folders {', '.join(LAYERS[:-1])}; move {extra} into a layer folder"
    )
    missing = sorted(layer for layer in LAYERS[:-1] if not (PACKAGE / layer / "__init__.py").is_file())
    assert not missing, f"layer folders without __init__.py: {missing}"


def test_no_import_cycles(parsed) -> None:
    """No two modules import each other, directly or through others (function-local imports
    count: a cycle hidden in a function is still a knot in the design)."""
    _, imports = parsed
    found = {frozenset(c) for c in graph.cycles({(i.importer, i.imported) for i in imports})}
    new = sorted(sorted(c) for c in found - set(KNOWN_CYCLES))
    stale = _report("import cycle", KNOWN_CYCLES, found)
    assert not new, "import cycles between modules:\n" + "\n".join(" <-> ".join(c) for c in new)
    assert not stale, "KNOWN_CYCLES entries that no longer occur (delete them):\n" + "\n".join(stale)


def test_no_import_cycles_at_import_time(parsed) -> None:
    """Module-level imports alone must form no cycle at all (no allowlist): a cycle there makes
    the result depend on which module is imported first."""
    _, imports = parsed
    cycles = graph.cycles({(i.importer, i.imported) for i in imports if i.kind == "module"})
    assert not cycles, "import-time cycles:\n" + "\n".join(" <-> ".join(c) for c in cycles)


def test_layers_form_no_cycle(parsed) -> None:
    _, imports = parsed
    layer_edges = {
        (graph.layer_of(i.importer), graph.layer_of(i.imported))
        for i in imports
        if graph.layer_of(i.importer) != graph.layer_of(i.imported)
        and (i.importer, i.imported) not in KNOWN_UPWARD
    }
    assert not graph.cycles(layer_edges)


def test_architecture_doc_picture_is_current() -> None:
    doc = graph.DOC.read_text(encoding="utf-8")
    block = graph.generated_block(doc)
    assert block is not None, f"{graph.DOC}: the markers {graph.BEGIN} ... {graph.END} are missing"
    assert block == graph.render(PACKAGE), (
        "docs/architecture.md's import graph is stale (modules or imports changed): run `make architecture`"
    )


def dynamic_imports(package: Path) -> list[str]:
    """Every call of ``importlib.import_module`` in ``package`` (``path:line``): imports by name,
    which the import graph cannot see."""
    import ast

    found = []
    for path in sorted(package.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            func = getattr(node, "func", None) if isinstance(node, ast.Call) else None
            name = getattr(func, "attr", None) or getattr(func, "id", None)
            if name == "import_module":
                found.append(f"{path.relative_to(package.parent)}:{node.lineno}")
    return found


def test_architecture_doc_counts_the_imports_by_name() -> None:
    """docs/architecture.md says in how many places modules are imported by name; the count is
    the package's, so a new ``import_module`` (or one removed) fails here until the page says so."""
    import re

    said = re.search(r"through `importlib` in (\d+) places", graph.DOC.read_text(encoding="utf-8"))
    assert said is not None, f"{graph.DOC}: the sentence 'through `importlib` in N places' is missing"
    found = dynamic_imports(PACKAGE)
    assert int(said.group(1)) == len(found), "imports by name:\n" + "\n".join(found)


def test_imports_by_name_are_found(tmp_path: Path) -> None:
    pkg = tmp_path / "noisyor_bench"
    pkg.mkdir()
    (pkg / "a.py").write_text(
        "import importlib\nfrom importlib import import_module\n\n"
        "def f(m):\n    importlib.import_module(m)\n    return import_module(m)\n"
    )
    assert dynamic_imports(pkg) == ["noisyor_bench/a.py:5", "noisyor_bench/a.py:6"]


def snakemake_private_uses(text: str) -> list[str]:
    """Lines of a Snakefile that touch a private attribute of Snakemake's ``workflow`` object."""
    import re

    private = re.compile(r"\bworkflow\._[A-Za-z]")
    return [line.strip() for line in text.splitlines() if private.search(line)]


def test_rules_use_only_public_snakemake_names() -> None:
    """The Snakefile and rules reach Snakemake through its public names: a private attribute
    replaced or read breaks silently when Snakemake changes it."""
    files = [REPO / "Snakefile", *sorted((REPO / "rules").glob("*.smk"))]
    found = [
        f"{f.relative_to(REPO)}: {line}" for f in files for line in snakemake_private_uses(f.read_text())
    ]
    assert not found, "\n".join(found)
    assert snakemake_private_uses("workflow._build_dag = guarded\nworkflow.basedir") == [
        "workflow._build_dag = guarded"
    ]


# ---------------------------------------------------------------------------------- the parser itself
def test_parser_sees_every_kind_of_import(tmp_path: Path) -> None:
    """Absolute, relative, ``from pkg import module``, function-local and TYPE_CHECKING imports."""
    pkg = tmp_path / "noisyor_bench"
    for folder in ("infra", "models", "models/noisyor", "reporting"):
        (pkg / folder).mkdir(parents=True)
        (pkg / folder / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text('__version__ = "0"\n')
    (pkg / "infra" / "io.py").write_text("from . import errors\n")
    (pkg / "infra" / "errors.py").write_text("")
    (pkg / "models" / "noisyor" / "model.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "import noisyor_bench.infra.io\n"
        "from ...infra.errors import X\n"
        "if TYPE_CHECKING:\n"
        "    from noisyor_bench.reporting import plots\n"
        "def f():\n"
        "    from noisyor_bench import __version__\n"
    )
    (pkg / "reporting" / "plots.py").write_text("import numpy\nimport noisyor_bench.models.noisyor\n")
    modules, imports = graph.import_graph(pkg)
    got = {(i.importer.removeprefix("noisyor_bench."), i.imported, i.kind) for i in imports}
    assert got == {
        ("infra.io", "noisyor_bench.infra.errors", "module"),
        ("models.noisyor.model", "noisyor_bench.infra.io", "module"),
        ("models.noisyor.model", "noisyor_bench.infra.errors", "module"),
        ("models.noisyor.model", "noisyor_bench.reporting.plots", "type-checking"),
        ("models.noisyor.model", "noisyor_bench", "function"),
        ("reporting.plots", "noisyor_bench.models.noisyor", "module"),
    }
    assert [graph.describe(i) for i in graph.upward_imports(imports)] == [
        "models/noisyor/model.py:7 imports noisyor_bench [function] (models < cli)",
        "models/noisyor/model.py:5 imports noisyor_bench.reporting.plots [type-checking] (models < reporting)",
    ]
    assert graph.layer_of("noisyor_bench.models.noisyor.model") == "models"
    assert graph.layer_of("noisyor_bench.__main__") == graph.layer_of("noisyor_bench") == "cli"


def test_cycles_are_found() -> None:
    edges = {("a", "b"), ("b", "c"), ("c", "a"), ("c", "d"), ("d", "e"), ("e", "d")}
    assert graph.cycles(edges) == [["a", "b", "c"], ["d", "e"]]
    assert graph.cycles({("a", "b"), ("b", "c")}) == []


def test_generated_block_round_trip() -> None:
    text = f"intro\n{graph.BEGIN}\nold\n{graph.END}\noutro\n"
    new = graph.replace_block(text, "new\n")
    assert graph.generated_block(new) == "new\n"
    assert new.startswith("intro\n") and new.endswith(f"{graph.END}\noutro\n")


# ------------------------------------------------------------------------- papers as units of code
# Science by model family (models/<family>/, inference/<family>/), protocol by paper
# (experiments/<paper>/, reporting/<paper>/, commands/<paper>[.py]): a paper's folder is found by
# its registry id (noisyor_bench.experiments.papers.REGISTERED, read here from the source).
PROTOCOL_LAYERS = ("experiments", "reporting", "commands")

# Imports of a paper's folder by generic code, and of one paper by another, with why and the fix.
# Keep both empty: generic code reaches a paper through its registry entry, by name.
KNOWN_GENERIC_TO_PAPER: dict[tuple[str, str], str] = {}
KNOWN_PAPER_TO_PAPER: dict[tuple[str, str], str] = {}


def registered_papers() -> tuple[str, ...]:
    import ast

    tree = ast.parse((PACKAGE / "experiments" / "papers.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.AnnAssign) and getattr(node.target, "id", "") == "REGISTERED":
            return tuple(ast.literal_eval(node.value))
    raise AssertionError("experiments/papers.py defines no REGISTERED tuple")


def paper_of_module(module: str, paper_ids: tuple[str, ...]) -> str | None:
    """The paper whose folder holds a dotted module (``noisyor_bench.reporting.ape.claims`` -> ape)."""
    parts = module.split(".")
    if len(parts) > 2 and parts[1] in PROTOCOL_LAYERS and parts[2] in paper_ids:
        return parts[2]
    return None


def _paper_imports(imports, paper_ids):
    generic, crossing = set(), set()
    for i in imports:
        mine, theirs = paper_of_module(i.importer, paper_ids), paper_of_module(i.imported, paper_ids)
        if theirs is None or mine == theirs:
            continue
        (generic if mine is None else crossing).add((i.importer, i.imported, f"{i.path}:{i.line}"))
    return generic, crossing


def missing_paper_files(paper: str) -> list[str]:
    """What a registered paper lacks of its entry point and its rules (empty: it has both)."""
    missing = []
    entry = PACKAGE / "experiments" / paper / "paper.py"
    if not entry.is_file():
        missing.append(f"paper {paper!r} is registered but {entry.relative_to(REPO)} is missing")
    if not sorted((REPO / "rules").glob(f"{paper}*.smk")):
        missing.append(f"paper {paper!r} has no rules/{paper}*.smk")
    return missing


def test_every_registered_paper_has_its_folders() -> None:
    missing = [m for paper in registered_papers() for m in missing_paper_files(paper)]
    assert not missing, "\n".join(missing)


def test_a_paper_without_its_files_is_found() -> None:
    """The check above can fail: an id with neither an entry point nor rules is named twice."""
    missing = missing_paper_files("no_such_paper")
    assert missing == [
        "paper 'no_such_paper' is registered but workflow/noisyor_bench/experiments/no_such_paper/paper.py is missing",
        "paper 'no_such_paper' has no rules/no_such_paper*.smk",
    ]


def test_generic_code_never_imports_a_paper(parsed) -> None:
    """Code at a layer root (or of a model family) reaches a paper only through the registry."""
    _, imports = parsed
    generic, _ = _paper_imports(imports, registered_papers())
    new = sorted(
        f"{where}: {a} imports {b}" for a, b, where in generic if (a, b) not in KNOWN_GENERIC_TO_PAPER
    )
    stale = _report("generic-to-paper import", KNOWN_GENERIC_TO_PAPER, {(a, b) for a, b, _ in generic})
    assert not new, "generic code importing a paper's folder:\n" + "\n".join(new)
    assert not stale, "KNOWN_GENERIC_TO_PAPER entries that no longer occur (delete them):\n" + "\n".join(
        stale
    )


def test_no_paper_imports_another(parsed) -> None:
    _, imports = parsed
    _, crossing = _paper_imports(imports, registered_papers())
    new = sorted(
        f"{where}: {a} imports {b}" for a, b, where in crossing if (a, b) not in KNOWN_PAPER_TO_PAPER
    )
    stale = _report("paper-to-paper import", KNOWN_PAPER_TO_PAPER, {(a, b) for a, b, _ in crossing})
    assert not new, "a paper importing another paper's folder:\n" + "\n".join(new)
    assert not stale, "KNOWN_PAPER_TO_PAPER entries that no longer occur (delete them):\n" + "\n".join(stale)


def test_paper_ids_live_only_in_their_papers_files() -> None:
    """Outside a paper's own files (its folders, rules/<paper>*.smk) a paper id appears as a quoted
    string only in the registry: shared code and rules never branch on a paper.  The science
    layers (models, data, evaluation, inference) are by model family, not by paper, and name
    methods and models, some of which share a paper's name (the method ``acp``, the model aviPAM)."""
    import re

    ids = registered_papers()
    quoted = re.compile("|".join(rf"['\"]{re.escape(p)}['\"]" for p in ids))
    offenders = []
    science = ("models", "data", "evaluation", "inference")
    shared = [p for p in PACKAGE.rglob("*.py") if p.relative_to(PACKAGE).parts[0] not in science]
    for path in sorted([*shared, *(REPO / "rules").glob("*.smk"), REPO / "Snakefile"]):
        rel = path.relative_to(REPO)
        parts = path.relative_to(PACKAGE).parts if path.is_relative_to(PACKAGE) else ()
        own = (len(parts) > 1 and parts[0] in PROTOCOL_LAYERS and Path(parts[1]).stem in ids) or any(
            path.name.startswith(p) and path.suffix == ".smk" for p in ids
        )
        if own or rel.as_posix() == "workflow/noisyor_bench/experiments/papers.py":
            continue
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if quoted.search(line):
                offenders.append(f"{rel}:{n}: {line.strip()}")
    assert not offenders, "paper ids outside the registry and the papers' own files:\n" + "\n".join(offenders)
