"""The layer picture of ``docs/architecture.md``, drawn from the package's real imports.

Every module under ``workflow/noisyor_bench/`` is parsed with :mod:`ast` (nothing is imported,
so torch is not needed); each ``import noisyor_bench...`` / ``from noisyor_bench... import``
(and relative imports), at module level, inside functions and under ``if TYPE_CHECKING:``, is
one edge from the importing module to the imported one.  A module's layer is the first folder
under the package (``inference/noisyor/amortized.py`` is in ``inference``); the package's face
(``__init__``, ``__main__``, ``cli``) is the layer ``cli``.

    python docs/architecture_graph.py                 # rewrite the generated block (make architecture)
    python docs/architecture_graph.py --check         # exit 1 when the block is stale
    python docs/architecture_graph.py --package-dir /other/checkout/workflow/noisyor_bench

``--package-dir`` prints the block for another checkout instead of writing it (a flat layout
gives one node per root module, which is how the picture looked before the layers existed).
``tests/test_architecture.py`` imports this file: the layer order, the package root, cycles
and the freshness of the block are tested from the same parse.
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGE_DIR = REPO / "workflow" / "noisyor_bench"
DOC = REPO / "docs" / "architecture.md"
BEGIN = "<!-- BEGIN GENERATED: import graph (make architecture) -->"
END = "<!-- END GENERATED: import graph -->"

# Lower never imports higher.  The order data flows in and imports run.
LAYERS: tuple[str, ...] = (
    "infra",
    "models",
    "data",
    "evaluation",
    "inference",
    "experiments",
    "reporting",
    "commands",
    "cli",
)
FACE: tuple[str, ...] = ("__init__", "__main__", "cli")  # root modules: the layer "cli"


@dataclass(frozen=True, order=True)
class Import:
    """One import of a package module by another (``kind``: module, function or type-checking)."""

    importer: str  # dotted module names, e.g. "noisyor_bench.inference.noisyor.base"
    imported: str
    path: str  # the importer's file, relative to the package's parent ("noisyor_bench/x.py")
    line: int
    kind: str  # "module" (runs at import), "function" (runs when called), "type-checking"


def find_modules(package_dir: Path) -> dict[str, Path]:
    """Every module of the package: dotted name -> file (a package is its ``__init__.py``)."""
    package_dir = Path(package_dir).resolve()
    modules: dict[str, Path] = {}
    for path in sorted(package_dir.rglob("*.py")):
        rel = path.relative_to(package_dir.parent).with_suffix("")
        if "__pycache__" in rel.parts:
            continue
        parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
        modules[".".join(parts)] = path
    return modules


def layer_of(module: str) -> str:
    """The layer of a dotted module name: the first folder under the package, or ``cli``.

    A root module outside the face (a flat layout's ``model.py``) is its own layer.
    """
    parts = module.split(".")
    if len(parts) == 1 or parts[1] in FACE:
        return "cli"
    return parts[1]


def _resolve(target: str, modules: dict[str, Path]) -> str | None:
    """The package module ``target`` names: itself, or the longest module prefix (an attribute)."""
    parts = target.split(".")
    for n in range(len(parts), 0, -1):
        name = ".".join(parts[:n])
        if name in modules:
            return name
    return None


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def imports_of(module: str, path: Path, modules: dict[str, Path]) -> list[Import]:
    """The package modules that ``module`` (file ``path``) imports, each with where and how."""
    root = module.split(".")[0]
    is_package = path.name == "__init__.py"
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    rel_path = (
        Path(*module.split("."), "__init__.py") if is_package else Path(*module.split(".")).with_suffix(".py")
    )
    found: list[Import] = []

    def add(target: str, node: ast.stmt, kind: str) -> None:
        resolved = _resolve(target, modules)
        if resolved is not None and resolved != module:
            found.append(Import(module, resolved, rel_path.as_posix(), node.lineno, kind))

    def visit(node: ast.AST, kind: str) -> None:
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == root:
                    add(alias.name, node, kind)
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: from the importer's package, up level - 1
                base = module.split(".") if is_package else module.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            if source.split(".")[0] == root:
                for alias in node.names:  # `from pkg.sub import mod` imports the module pkg.sub.mod
                    add(
                        f"{source}.{alias.name}" if f"{source}.{alias.name}" in modules else source,
                        node,
                        kind,
                    )
        for child in ast.iter_child_nodes(node):
            child_kind = kind
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) and kind == "module":
                child_kind = "function"
            if isinstance(node, ast.If) and _is_type_checking(node.test) and child in node.body:
                child_kind = "type-checking"
            visit(child, child_kind)

    visit(tree, "module")
    return found


def import_graph(package_dir: Path = PACKAGE_DIR) -> tuple[dict[str, Path], list[Import]]:
    """The package's modules and all their imports of each other, sorted."""
    modules = find_modules(package_dir)
    imports = sorted({imp for name, path in modules.items() for imp in imports_of(name, path, modules)})
    return modules, imports


def _rank(layer: str) -> int | None:
    return LAYERS.index(layer) if layer in LAYERS else None


def upward_imports(imports: list[Import]) -> list[Import]:
    """Imports of a module of a higher layer (only between layers of :data:`LAYERS`)."""
    out = []
    for imp in imports:
        low, high = _rank(layer_of(imp.importer)), _rank(layer_of(imp.imported))
        if low is not None and high is not None and high > low:
            out.append(imp)
    return out


def describe(imp: Import) -> str:
    """``reporting/x.py:12 imports noisyor_bench.commands.y (reporting < commands)``."""
    where = imp.path.split("/", 1)[-1]
    how = "" if imp.kind == "module" else f" [{imp.kind}]"
    return (
        f"{where}:{imp.line} imports {imp.imported}{how} "
        f"({layer_of(imp.importer)} < {layer_of(imp.imported)})"
    )


def cycles(edges: set[tuple[str, str]]) -> list[list[str]]:
    """The strongly connected components with more than one node (Tarjan), each sorted."""
    graph: dict[str, set[str]] = {}
    for a, b in edges:
        graph.setdefault(a, set()).add(b)
        graph.setdefault(b, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []

    def connect(v: str) -> None:  # recursion depth <= number of modules (~100)
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            connect(v)
    return sorted(components)


def _layer_order(layers: set[str]) -> list[str]:
    """Top-down: a layered package's layers from ``cli`` to ``infra``; any other layout (a flat
    one, where every root module is its own node) ``cli`` first, then by name."""
    if layers <= set(LAYERS):
        return [layer for layer in reversed(LAYERS) if layer in layers]
    return sorted(layers, key=lambda layer: (layer != "cli", layer))


def _node(layer: str) -> str:
    return "L_" + "".join(c if c.isalnum() else "_" for c in layer)


def render(package_dir: Path = PACKAGE_DIR) -> str:
    """The generated block: a Mermaid graph of the layers (arrows: importer -> imported, labelled
    with the number of module pairs) and the modules of each layer."""
    modules, imports = import_graph(package_dir)
    pairs = {(imp.importer, imp.imported) for imp in imports}
    members: dict[str, list[str]] = {}
    for name in modules:
        members.setdefault(layer_of(name), []).append(name)
    order = _layer_order(set(members))
    between = Counter((layer_of(a), layer_of(b)) for a, b in pairs if layer_of(a) != layer_of(b))
    within = Counter(layer_of(a) for a, b in pairs if layer_of(a) == layer_of(b))
    # Red arrows only in a layered package (a flat layout has no order to break).
    layered = set(members) <= set(LAYERS)
    upward = (
        {(layer_of(i.importer), layer_of(i.imported)) for i in upward_imports(imports)} if layered else set()
    )

    lines = ["```mermaid", "flowchart TB"]
    for layer in order:
        n = len(members[layer])
        label = f"{layer}<br/>{n} file{'s' * (n != 1)}"
        if within[layer]:
            label += f", {within[layer]} internal import{'s' * (within[layer] != 1)}"
        lines.append(f'    {_node(layer)}["{label}"]')
    edges = sorted(between, key=lambda e: (order.index(e[0]), order.index(e[1])))
    red = []
    for i, (a, b) in enumerate(edges):
        lines.append(f"    {_node(a)} -->|{between[(a, b)]}| {_node(b)}")
        if (a, b) in upward:
            red.append(str(i))
    if red:
        lines.append(f"    linkStyle {','.join(red)} stroke:#d00,stroke-width:3px")
    lines += [
        "```",
        "",
        "Arrows point from the importing layer to the imported one, labelled with the number of "
        "(importer, imported) module pairs; imports inside functions and under `TYPE_CHECKING` "
        f"count too{'; an arrow against the layer order is red' if layered else ''}. "
        f"{len(modules)} files, {len(pairs)} module pairs.",
        "",
        "| layer | modules (`x/` is the package `x/__init__.py`) |",
        "|---|---|",
    ]
    for layer in order:
        lines.append(f"| {layer} | {', '.join(f'`{n}`' for n in _short_names(layer, members[layer]))} |")
    return "\n".join(lines) + "\n"


def _short_names(layer: str, names: list[str]) -> list[str]:
    """Module names inside their layer: ``acp/ablation``, a subpackage as ``plots/``; the layer's
    own ``__init__`` is left out (every folder has one), the face's root modules are named as files."""
    out = []
    for name in sorted(names):
        parts = name.split(".")[1:]
        is_package = any(n.startswith(name + ".") for n in names)
        if layer == "cli":
            out.append(parts[0] if parts else "__init__")
        elif len(parts) == 1 and not is_package:  # a root module (flat layout): its own layer
            out.append(parts[0])
        elif len(parts) > 1:
            out.append("/".join(parts[1:]) + ("/" if is_package else ""))
    return sorted(out)


def generated_block(text: str) -> str | None:
    """The text between the markers of ``docs/architecture.md``, None without markers."""
    if BEGIN not in text or END not in text:
        return None
    return text.split(BEGIN, 1)[1].split(END, 1)[0].strip("\n") + "\n"


def replace_block(text: str, block: str) -> str:
    head, rest = text.split(BEGIN, 1)
    tail = rest.split(END, 1)[1]
    return f"{head}{BEGIN}\n{block}{END}{tail}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--package-dir", type=Path, help="print the block for this package instead")
    parser.add_argument("--check", action="store_true", help="exit 1 when docs/architecture.md is stale")
    args = parser.parse_args(argv)
    if args.package_dir is not None:
        sys.stdout.write(render(args.package_dir))
        return 0
    text = DOC.read_text(encoding="utf-8")
    if generated_block(text) is None:
        print(f"{DOC}: markers not found ({BEGIN} ... {END})", file=sys.stderr)
        return 1
    new = replace_block(text, render())
    if args.check:
        if new != text:
            print(f"{DOC}: the import graph is stale; run `make architecture`", file=sys.stderr)
            return 1
        return 0
    if new != text:
        DOC.write_text(new, encoding="utf-8")
        print(f"{DOC}: import graph updated")
    return 0


if __name__ == "__main__":
    sys.exit(main())
