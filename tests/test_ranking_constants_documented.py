"""Every ranking constant of the retrieval engine is documented.

docs/ranking-constants.md, the register of decision D-024 (docs/decisions/0024-ranking-constants-the-register.md),
holds one table row per constant:
``| `NAME` | `value` | what it does | how it was chosen |``. This test reads the
module-level numeric constants (UPPER_CASE names; numbers, or dicts / tuples of numbers) of the
engine's modules and the numeric ``RetrievalConfig`` fields, and fails when one has no row or its
row gives another value — so a new or changed constant comes with the measurement that chose it.
"""

from __future__ import annotations

import ast
import dataclasses
import re
from pathlib import Path
from typing import Any

from module_constants import module_constants
from zeromem.config import RetrievalConfig

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "zeromem"
REGISTER = ROOT / "docs" / "ranking-constants.md"
SECTION = "# Ranking constants: the register"

# The modules whose constants rank, select candidates or score "no answer".
MODULES = sorted([
    *(PACKAGE / "retrieval").glob("*.py"),
    *(PACKAGE / "views").glob("*.py"),
    *(PACKAGE / "indexes" / name for name in ("lexical.py", "cells.py", "units.py", "dense.py")),
])

# Numeric constants of those modules that change no score, with why.
NOT_RANKING = {
    "FORMAT": "retrieval/persist.py: version of the persisted index format",
    "INT32_MAX": "retrieval/persist_checks.py: bounds of a persisted array (validation, not ranking)",
    "MAX_ORDINAL": "retrieval/persist_checks.py: the largest date ordinal a persisted index may hold",
    "MAX_QUERY_CHARS": "retrieval/query.py: input limit",
    "TRIM_EVERY": "retrieval/scopes.py: how often freed heap memory is returned to the OS",
    "FOLD_MAX_NEIGHBOURS": "views/ppr_folded.py: which nodes PPR folds (the same fixed point, cost only; D-054)",
    "ANN_THRESHOLD": "indexes/dense.py: HNSW of DenseIndex.search, which the engine never calls",
    "ANN_CONNECTIVITY": "indexes/dense.py: HNSW, as above",
    "ANN_EXPANSION_ADD": "indexes/dense.py: HNSW, as above",
    "ANN_EXPANSION_SEARCH": "indexes/dense.py: HNSW, as above",
    "ANN_OVERFETCH": "indexes/dense.py: HNSW, as above",
    "SINGLE_THREAD_ABOVE": "indexes/dense.py: einsum instead of BLAS above this many rows (same scores)",
    "LOCK_STRIPES": "retrieval/scopes.py: how many locks the scopes share",
    "RESAVE_MIN_CHANGES": "retrieval/snapshots.py: when a persisted index is written again",
    "MERGE_MIN": "indexes/lexical.py: when postings are merged (the scores are the same either way)",
    "MERGE_SHARE": "indexes/lexical.py: as above",
    "REMEASURE_GROWTH": "retrieval/cache.py: when a cached index is measured again",
    "SAMPLED_ABOVE": "retrieval/footprint.py: how an index's bytes are measured",
    "SAMPLE": "retrieval/footprint.py: as above",
    "TRIM_AFTER_EVICTED": "retrieval/scopes.py: how often freed heap memory is returned to the OS",
    "BYTES_PER_TURN": "retrieval/scopes.py: room made before a scope is loaded (eviction, not ranking)",
    "LOAD_PEAK": "retrieval/scopes.py: as above",
    "M_ARENA_MAX": "retrieval/snapshots.py: glibc's mallopt parameter number",
}
NOT_RANKING_FIELDS = {
    "snapshot_min_turns": "when a scope's prepared index is persisted",
    "snapshot_stale_share": "when it is written again",
}

_ROW = re.compile(r"^\|\s*`([^`]+)`\s*\|\s*`([^`]+)`\s*\|")
_ARITHMETIC = (ast.Expression, ast.BinOp, ast.UnaryOp, ast.Constant, ast.operator, ast.unaryop)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_numeric(value: Any) -> bool:
    if _is_number(value):
        return True
    if isinstance(value, dict):
        return bool(value) and all(_is_number(v) for v in value.values())
    if isinstance(value, (tuple, list)):
        return bool(value) and all(_is_number(v) for v in value)
    return False


def _value(node: ast.expr) -> Any:
    """The value of a literal or of constant arithmetic (``64 << 20``); None for anything else."""
    try:
        return ast.literal_eval(node)
    except ValueError:
        pass
    tree = ast.Expression(node)
    if all(isinstance(n, _ARITHMETIC) for n in ast.walk(tree)):
        return eval(compile(tree, "<constant>", "eval"))  # numbers and operators only
    return None


def code_constants() -> dict[str, list[tuple[str, Any]]]:
    """Name → [(module, value)] for the numeric module-level constants of ``MODULES``."""
    found: dict[str, list[tuple[str, Any]]] = {}
    for path, name, expr in module_constants(MODULES):
        value = _value(expr)
        if _is_numeric(value):
            found.setdefault(name, []).append((str(path.relative_to(PACKAGE)), value))
    return found


def config_fields() -> dict[str, Any]:
    """The numeric ``RetrievalConfig`` fields that rank, with their defaults."""
    return {f.name: f.default for f in dataclasses.fields(RetrievalConfig)
            if _is_number(f.default) and f.name not in NOT_RANKING_FIELDS}


def documented() -> dict[str, list[str]]:
    """Name → the value cells of its rows in the section."""
    text = REGISTER.read_text(encoding="utf-8")
    assert text.startswith(SECTION), f"docs/ranking-constants.md does not open with {SECTION!r}"
    rows: dict[str, list[str]] = {}
    for line in text.splitlines():
        match = _ROW.match(line)
        if match:
            rows.setdefault(match.group(1), []).append(match.group(2))
    return rows


def _check(name: str, value: Any, cells: list[str]) -> str | None:
    """None when one of ``cells`` states ``value``, else what is wrong."""
    if not cells:
        return f"{name} = {value!r}: no row"
    stated = []
    for cell in cells:
        try:
            stated.append(ast.literal_eval(cell))
        except (ValueError, SyntaxError):
            return f"{name}: the row's value {cell!r} is not a Python literal"
    if value not in stated:
        return f"{name} = {value!r} in the code, {', '.join(cells)} in docs/ranking-constants.md"
    return None


def test_the_scan_finds_the_engine_constants() -> None:
    constants = code_constants()
    assert {"LEXICAL_SHARE", "NEXT_DECAY", "PPR_TOL", "LEVEL_WEIGHTS", "K1"} <= set(constants)
    assert len(constants) >= 30
    assert {"coverage_gain", "question_turn_prior", "ppr_damping"} <= set(config_fields())


def test_every_ranking_constant_is_documented_with_its_value() -> None:
    rows = documented()
    problems = [f"{module}: {problem}"
                for name, places in sorted(code_constants().items()) if name not in NOT_RANKING
                for module, value in places
                if (problem := _check(name, value, rows.get(name, [])))]
    assert not problems, ("ranking constants missing from or out of date in "
                          "docs/ranking-constants.md:\n" + "\n".join(problems))


def test_every_ranking_config_field_is_documented_with_its_default() -> None:
    rows = documented()
    problems = [f"RetrievalConfig.{problem}" for name, value in sorted(config_fields().items())
                if (problem := _check(name, value, rows.get(name, [])))]
    assert not problems, ("RetrievalConfig fields missing from or out of date in "
                          "docs/ranking-constants.md:\n" + "\n".join(problems))


def test_not_ranking_lists_name_existing_constants() -> None:
    """The exemptions stay honest: each names a constant or field that still exists."""
    constants = code_constants()
    assert set(NOT_RANKING) <= set(constants), set(NOT_RANKING) - set(constants)
    fields = {f.name for f in dataclasses.fields(RetrievalConfig)}
    assert set(NOT_RANKING_FIELDS) <= fields, set(NOT_RANKING_FIELDS) - fields
