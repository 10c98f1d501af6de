"""The scope-filter check of the PostgreSQL backend: every statement it sends is recorded and
each one over a per-scope table must pin ``scope_key`` — the property that lets Citus route
every statement to one scope's shard and never join across scopes (docs/postgres.md).

Rules (``violation`` returns why a statement breaks them, or None):

* every table a statement names is either per-scope (``SCOPED_TABLES``) or listed as
  per-database (``GLOBAL_TABLES``); an unlisted table is a failure, so a new table must be
  classified;
* ``INSERT INTO`` / ``COPY`` a per-scope table lists ``scope_key`` among its columns;
* every other reference to a per-scope table (FROM, JOIN, UPDATE, DELETE) is tied to a bound
  value: ``x.scope_key = %s``, or ``x.scope_key = y.scope_key`` with ``y`` so tied — a join or
  subquery across scopes cannot pass; several per-scope tables in one statement need aliases;
* a write to a table that is a reference table on Citus (``CITUS_REFERENCE``) reads no
  per-scope table: Citus refuses to modify a reference table while reading a distributed one
  (``UPDATE store_meta ... FROM scope_versions`` is why store_meta is not one);
* catalog tables (``pg_*``, ``citus_*``) are not zeromem's;
* the only exceptions are read-only statements marked ``/* all-scopes */`` (``scopes()``,
  the whole store's ``stats()``, ``get_rowids``), which must be SELECTs, and the schema
  migrations' own statements (``MIGRATIONS``: run once per database, over every scope).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager

from zeromem.store.postgres import ALL_SCOPES
from zeromem.store.postgres_schema import CITUS_REFERENCE, GLOBAL_TABLES, MIGRATIONS, SCOPED_TABLES

NOT_TABLES = {"generate_series", "stdin"}  # a function, COPY's input
CATALOG = re.compile(r"(pg|citus)_")  # PostgreSQL's and Citus's catalogs (pg_extension, pg_dist_node)
_KEYWORDS = {"where", "on", "set", "values", "left", "right", "inner", "join", "order", "group",
             "limit", "offset", "for", "using", "returning", "select", "from", "as", "union"}
_REF = re.compile(r"\b(from|join|(?<!do )update)\s+([a-z_][a-z0-9_]*)\b(?!\s*\()"
                  r"(?:\s+(?:as\s+)?([a-z_][a-z0-9_]*))?(\s*,)?")
_WRITE = re.compile(r"\b(into|copy)\s+([a-z_][a-z0-9_]*)\b(?:\s+as\s+[a-z_][a-z0-9_]*)?\s*(?:\(([^)]*)\))?")
_BOUND = re.compile(r"(?<![\w.])(?:([a-z_][a-z0-9_]*)\.)?scope_key\s*=\s*%s")
_TIED = re.compile(r"(?<![\w.])([a-z_][a-z0-9_]*)\.scope_key\s*=\s*([a-z_][a-z0-9_]*)\.scope_key")


def _normal(statement: str) -> str:
    return " ".join(statement.split()).lower()


_MIGRATION_STATEMENTS = {_normal(s) for step in MIGRATIONS for s in step.split(";") if s.strip()}


def violation(statement: str) -> str | None:
    """Why ``statement`` breaks the scope-filter rules, or None when it keeps them."""
    sql = _normal(statement)
    if sql in _MIGRATION_STATEMENTS:
        return None
    if sql.startswith(ALL_SCOPES.strip().lower()):
        return None if sql[len(ALL_SCOPES.strip()):].lstrip().startswith("select") else \
            "an all-scopes statement must be a SELECT"
    if re.match(r"(create|alter|drop|begin|commit|rollback)\b", sql):
        return None  # migrations and transaction control
    reference_write = _reference_write(sql)
    for kind, table, columns in _WRITE.findall(sql):
        if table in NOT_TABLES or CATALOG.match(table) or table in GLOBAL_TABLES:
            continue
        if table not in SCOPED_TABLES:
            return f"table {table!r} is neither per-scope nor listed as global"
        if "scope_key" not in columns.replace(" ", "").split(","):
            return f"{kind.upper()} {table} without a scope_key column"
    refs: list[tuple[str, str]] = []  # (table, alias) of every filtered reference
    for _kind, table, alias, comma in _REF.findall(sql):
        if table in NOT_TABLES or CATALOG.match(table) or table in GLOBAL_TABLES:
            continue
        if reference_write:
            return (f"a write to the reference table {reference_write!r} that reads the per-scope table "
                    f"{table!r}: Citus refuses it (make the table local, or split the statement)")
        if table not in SCOPED_TABLES:
            return f"table {table!r} is neither per-scope nor listed as global"
        if comma:
            return f"a comma join after {table}: join per-scope tables with JOIN ... ON scope_key"
        refs.append((table, table if not alias or alias in _KEYWORDS else alias))
    if not refs:
        return None
    if len(refs) > 1 and len({alias for _, alias in refs}) < len(refs):
        return "several per-scope tables without distinct aliases"
    anchored = {alias or "" for alias in _BOUND.findall(sql)}
    edges = _TIED.findall(sql)
    names = {alias for _, alias in refs}
    bound = {a for a in names if a in anchored or (len(refs) == 1 and "" in anchored)}
    changed = True
    while changed:
        changed = False
        for a, b in edges:
            for x, y in ((a, b), (b, a)):
                if x in bound and y in names and y not in bound:
                    bound.add(y)
                    changed = True
    loose = sorted(names - bound)
    return f"no scope_key = %s reaches {', '.join(loose)}" if loose else None


def _reference_write(sql: str) -> str | None:
    """The Citus reference table (postgres_schema.CITUS_REFERENCE) ``sql`` writes, if any."""
    match = re.match(r"(?:insert\s+into|update|delete\s+from)\s+([a-z_][a-z0-9_]*)", sql)
    return match.group(1) if match and match.group(1) in CITUS_REFERENCE else None


class Recorder:
    """Every statement psycopg cursors execute, executemany or copy while ``recording()``."""

    def __init__(self) -> None:
        self.statements: list[str] = []

    @contextmanager
    def recording(self) -> Iterator[Recorder]:
        import psycopg

        originals = {name: getattr(psycopg.Cursor, name) for name in ("execute", "executemany", "copy")}

        def wrap(name):
            original = originals[name]

            def recorded(cursor, query, *args, **kwargs):
                self.statements.append(query if isinstance(query, str) else str(query))
                return original(cursor, query, *args, **kwargs)

            return recorded

        for name in originals:
            setattr(psycopg.Cursor, name, wrap(name))
        try:
            yield self
        finally:
            for name, original in originals.items():
                setattr(psycopg.Cursor, name, original)

    def violations(self) -> list[tuple[str, str]]:
        """(statement, why) for every recorded statement that breaks the rules."""
        return [(s, why) for s in dict.fromkeys(self.statements) if (why := violation(s))]
