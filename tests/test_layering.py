"""The layering of ARCHITECTURE.md, enforced on every import of every module under src/zeromem.

ARCHITECTURE.md lists the layers in a ```layers block, lowest first; this test reads that block,
so the document and the check cannot drift apart. Rules:

- every module belongs to exactly one layer (a new package has to be placed in the list);
- a module imports only from its own layer and the layers before it, never from a later one;
- the leaf modules (the first layer: value types, errors, settings, word tables) import only one
  another (the typed results build on ``Trace``), never a package;
- no import cycles between modules: no module reaches itself through the imports of others.

What counts as an import: every ``import`` / ``from … import`` statement anywhere in the file —
at module level, inside functions (a deferred import is still a dependency, only a later one)
and under ``if TYPE_CHECKING:`` (a type from a higher layer is knowledge of that layer, even if
nothing loads at run time) — plus ``importlib.import_module("zeromem…")`` with a literal name.
``from pkg import name`` is an import of ``pkg.name`` when that is a module, else of ``pkg``
(its ``__init__``). The parent packages Python initialises on the way are not counted: they
are not a choice the importing module makes.
"""

from __future__ import annotations

import ast
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from import_statements import import_statements

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "zeromem"
ARCHITECTURE = ROOT / "ARCHITECTURE.md"
_BLOCK = re.compile(r"^```layers\n(.*?)^```", re.M | re.S)


@dataclass(frozen=True)
class Layer:
    rank: int
    name: str
    members: tuple[str, ...]  # modules or packages; the package root ``zeromem`` means only itself


@dataclass(frozen=True)
class Import:
    source: str  # the importing module
    target: str  # the imported zeromem module
    path: Path
    line: int

    def where(self) -> str:
        path = self.path.relative_to(ROOT) if self.path.is_relative_to(ROOT) else self.path
        return f"{path}:{self.line}"


def read_layers(text: str) -> list[Layer]:
    """The ```layers block of ARCHITECTURE.md: ``rank  name  member member …`` per line."""
    found = _BLOCK.search(text)
    assert found, "ARCHITECTURE.md has no ```layers block (the layer list this test enforces)"
    layers = []
    for line in found.group(1).splitlines():
        if not line.strip():
            continue
        rank, name, *members = line.split()
        layers.append(Layer(int(rank), name, tuple(members)))
    return layers


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def all_modules() -> dict[str, Path]:
    return {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def _imports_of(name: str, path: Path, modules: dict[str, Path]) -> Iterator[Import]:
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for line, module, names, node in import_statements(path, package):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) != "import_module":
            continue
        targets = ([f"{module}.{alias}" if f"{module}.{alias}" in modules else module for alias in names]
                   if isinstance(node, ast.ImportFrom) else [module])
        for target in targets:
            if target != "zeromem" and not target.startswith("zeromem."):
                continue
            while target not in modules:  # `import zeromem.x.name` of a name, not a module
                target = target.rpartition(".")[0]
            yield Import(name, target, path, line)


def all_imports() -> list[Import]:
    modules = all_modules()
    return [imp for name, path in modules.items() for imp in _imports_of(name, path, modules)]


def layer_of(module: str, layers: list[Layer]) -> Layer | None:
    """The layer whose member is the longest prefix of ``module``."""
    best: tuple[int, Layer] | None = None
    for layer in layers:
        for member in layer.members:
            exact = member == "zeromem"
            matches = module == member or (not exact and module.startswith(member + "."))
            if matches and (best is None or len(member) > best[0]):
                best = (len(member), layer)
    return best[1] if best else None


def upward_imports(imports: list[Import], layers: list[Layer]) -> list[str]:
    """Each import of a later layer's module, as a line naming both modules and layers."""
    upward = []
    for imp in imports:
        source, target = layer_of(imp.source, layers), layer_of(imp.target, layers)
        assert source is not None and target is not None, f"{imp.where()}: a module in no layer"
        if target.rank > source.rank:
            upward.append(f"{imp.where()}: {imp.source} (layer {source.rank} {source.name}) imports "
                          f"{imp.target} (layer {target.rank} {target.name}), a later layer")
    return upward


def find_cycles(imports: list[Import]) -> list[tuple[list[str], list[Import]]]:
    """Each group of modules that reach one another (Tarjan's strongly connected components)
    with one cycle through it, as its imports."""
    graph: dict[str, dict[str, Import]] = {}
    for imp in imports:
        graph.setdefault(imp.source, {}).setdefault(imp.target, imp)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(node: str) -> None:  # recursion depth is bounded by the module count (~250)
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, {})):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                group.append(top)
                if top == node:
                    break
            if len(group) > 1 or node in graph.get(node, {}):
                groups.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return [(group, _cycle_in(group, graph)) for group in groups]


def _cycle_in(group: list[str], graph: dict[str, dict[str, Import]]) -> list[Import]:
    """A shortest path from the group's first module back to itself (breadth first)."""
    members = set(group)
    start = group[0]
    came_from: dict[str, Import] = {}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for nxt, imp in sorted(graph.get(node, {}).items()):
                if nxt not in members or nxt in came_from:
                    continue
                came_from[nxt] = imp
                if nxt == start:
                    path = [imp]
                    while path[0].source != start:
                        path.insert(0, came_from[path[0].source])
                    return path
                following.append(nxt)
        frontier = following
    raise AssertionError(f"no cycle found in {group}")


# -- the checks ---------------------------------------------------------------------------

LAYERS = read_layers(ARCHITECTURE.read_text(encoding="utf-8"))
MODULES = all_modules()
IMPORTS = all_imports()


def test_the_layer_list_is_well_formed():
    assert [layer.rank for layer in LAYERS] == list(range(len(LAYERS))), \
        "ARCHITECTURE.md's ```layers block must number its layers 0, 1, 2, … in order"
    members = [member for layer in LAYERS for member in layer.members]
    assert len(members) == len(set(members)), "a module or package is listed in two layers"
    stale = [member for member in members if member not in MODULES]
    assert not stale, f"ARCHITECTURE.md's layers name modules that do not exist: {stale}"


def test_every_module_belongs_to_a_layer():
    unplaced = [name for name in MODULES if layer_of(name, LAYERS) is None]
    assert not unplaced, (f"modules in no layer of ARCHITECTURE.md's ```layers block: {unplaced}; "
                          "add their package to the layer it belongs to")


def test_no_import_goes_up_a_layer():
    upward = upward_imports(IMPORTS, LAYERS)
    assert not upward, ("imports that go up a layer (ARCHITECTURE.md, ```layers):\n"
                        + "\n".join(upward))


def test_the_leaf_modules_import_only_leaves():
    leaves = LAYERS[0]
    inward = [f"{imp.where()}: {imp.source} imports {imp.target}" for imp in IMPORTS
              if layer_of(imp.source, LAYERS) == leaves and layer_of(imp.target, LAYERS) != leaves]
    assert not inward, f"the leaf modules ({', '.join(leaves.members)}) must stay leaves:\n" + "\n".join(inward)


def test_no_import_cycles():
    cycles = find_cycles(IMPORTS)
    described = [f"{', '.join(group)} reach one another, e.g.:\n"
                 + "\n".join(f"  {imp.where()}: {imp.source} imports {imp.target}" for imp in cycle)
                 for group, cycle in cycles]
    assert not cycles, "import cycles:\n" + "\n\n".join(described)


def test_the_product_never_imports_the_lab():
    # The lab (bench/src/zeromem_bench) drives the product; `zeromem bench` reaches it through
    # the zeromem.cli entry point (main.py), never through an import.
    assert not (PACKAGE / "bench").exists(), "the benchmark harness belongs to the lab, bench/"
    offenders = []
    for name, path in MODULES.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        offenders += [f"{path.relative_to(ROOT)}:{line} imports {module}"
                      for line, module, _, _ in import_statements(path, package)
                      if module.split(".")[0] == "zeromem_bench"]
    assert not offenders, "the product imports the lab:\n" + "\n".join(offenders)


# -- the checker itself, on small made-up packages ------------------------------------------

_TOY_LAYERS = [Layer(0, "leaves", ("zeromem.types",)), Layer(1, "low", ("zeromem.low",)),
               Layer(2, "top", ("zeromem.top", "zeromem"))]


def test_layers_are_read_from_the_block_and_matched_by_longest_prefix():
    text = "intro\n```layers\n0  leaves  zeromem.types\n\n1  low  zeromem.low\n```\nafter"
    assert read_layers(text) == _TOY_LAYERS[:2]
    assert layer_of("zeromem.low.deep.module", _TOY_LAYERS).name == "low"
    assert layer_of("zeromem", _TOY_LAYERS).name == "top"
    assert layer_of("zeromem.unlisted", _TOY_LAYERS) is None  # the root matches only itself


def test_imports_inside_functions_and_type_checking_count(tmp_path, monkeypatch):
    package = tmp_path / "zeromem"
    (package / "low").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "top.py").write_text("X = 1\n")
    (package / "low" / "__init__.py").write_text("")
    (package / "low" / "a.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..top import X\n"
        "def f():\n    from . import b\n    import importlib\n    importlib.import_module('zeromem.top')\n")
    (package / "low" / "b.py").write_text("from .a import f\n")
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", package)
    modules = all_modules()
    found = sorted((imp.source, imp.target, imp.line) for name, path in modules.items()
                   for imp in _imports_of(name, path, modules))
    assert found == [("zeromem.low.a", "zeromem.low.b", 5), ("zeromem.low.a", "zeromem.top", 3),
                     ("zeromem.low.a", "zeromem.top", 7), ("zeromem.low.b", "zeromem.low.a", 1)]
    imports = [imp for name, path in modules.items() for imp in _imports_of(name, path, modules)]
    [(group, cycle)] = find_cycles(imports)
    assert group == ["zeromem.low.a", "zeromem.low.b"]
    assert [(imp.source, imp.target) for imp in cycle] == [("zeromem.low.a", "zeromem.low.b"),
                                                          ("zeromem.low.b", "zeromem.low.a")]


def test_an_upward_import_is_named_with_its_file_line_and_layers():
    imports = [Import("zeromem.low.a", "zeromem.top", Path("/x/a.py"), 3),
               Import("zeromem.top", "zeromem.low.a", Path("/x/top.py"), 1),
               Import("zeromem.low.a", "zeromem.low.b", Path("/x/a.py"), 4)]
    assert upward_imports(imports, _TOY_LAYERS) == [
        "/x/a.py:3: zeromem.low.a (layer 1 low) imports zeromem.top (layer 2 top), a later layer"]
