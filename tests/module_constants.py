"""The module-level UPPER_CASE constants of source files, read from their syntax trees.

Both registers scan them: the ranking constants' (numbers, tests/test_ranking_constants_documented.py)
and the rule families' tables (everything else, tests/test_rule_register.py).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Iterator
from pathlib import Path

CONSTANT_NAME = re.compile(r"^_?[A-Z][A-Z0-9_]*$")


def module_constants(paths: Iterable[Path]) -> Iterator[tuple[Path, str, ast.expr]]:
    """(file, name, value expression) of each ``NAME = ...`` / ``NAME: T = ...`` at module level."""
    for path in paths:
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.Assign) and len(node.targets) == 1:
                target, expr = node.targets[0], node.value
            elif isinstance(node, ast.AnnAssign) and node.value is not None:
                target, expr = node.target, node.value
            else:
                continue
            if isinstance(target, ast.Name) and CONSTANT_NAME.match(target.id):
                yield path, target.id, expr
