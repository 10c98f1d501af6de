"""The import statements of a source file, relative imports resolved: what the layering test
and the no-LLM test both read (each decides what the names mean)."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path


def import_statements(path: Path, package: str) -> Iterator[tuple[int, str, tuple[str, ...], ast.AST]]:
    """(line, module, imported names, node) for every ``import`` / ``from … import`` anywhere in
    ``path`` (``package``: the package its relative imports start from), and for
    ``import_module("…")`` / ``__import__("…")`` calls with a literal name. ``import a, b`` gives
    one row per module with no names; ``from m import x, y`` gives ``m`` with ``("x", "y")``."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name, (), node
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            yield node.lineno, module, tuple(alias.name for alias in node.names), node
        elif (isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", ""))
              in ("import_module", "__import__") and node.args
              and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
            yield node.lineno, node.args[0].value, (), node
