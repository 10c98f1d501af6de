"""What the shared SQL layer (sqlstore.py, derived.py) needs to know about a backend's SQL.

Both stores key scopes the same way (``scope_key``, the scope as JSON: checks.scope_json) and
run the same statements, written with ``?`` placeholders. A ``Run`` executes one of them in
the caller's transaction (translating the placeholders where the driver wants ``%s``); a
``Dialect`` says the few things that are spelled differently:

* a list bound as one parameter (``any_of`` / ``array``): SQLite reads a JSON array with
  ``json_each`` (no cap on the number of values), PostgreSQL binds an array for ``= ANY``;
* vectors (``vec_join`` / ``vec_column`` / ``load_vec`` / ``dump_vec``): SQLite keeps them in
  ``unit_vectors`` beside the units, PostgreSQL in a pgvector column of ``units``;
* a unit's trace row numbers (``rowids_text`` / ``covers`` / ``rowids_equal``): JSON text in
  SQLite, ``bigint[]`` in PostgreSQL;
* the statements that differ whole (``lock_scope``, ``forget_scope``, ``insert_units``,
  ``first_units``, ``expiring``): a method each.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, Protocol

from .roles import DerivedUnit


class Cursor(Protocol):
    """What a statement returns (a DB-API cursor of sqlite3 or psycopg)."""

    @property
    def rowcount(self) -> int: ...

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...

    def __iter__(self) -> Iterator[Any]: ...


class Run(Protocol):
    """Statements inside one transaction (``?`` placeholders)."""

    def __call__(self, sql: str, params: Sequence[Any] = ..., /) -> Cursor: ...

    def many(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        """One statement for each of ``rows``."""

    def binary(self, sql: str, params: Sequence[Any] = ...) -> Cursor:
        """A read whose rows hold vectors (PostgreSQL sends them in binary)."""


class Dialect(ABC):
    """How one backend spells what the shared statements need (see the module docstring)."""

    # Prefix of the statements that read across scopes on purpose (PostgreSQL marks them).
    all_scopes = ""
    # The join that gives a unit ``u`` its vector, and that vector's column.
    vec_join = ""
    vec_column = "u.vec"
    # A unit's trace row numbers as JSON text ("[3,4]").
    rowids_text = "u.rowids"
    # The position of one text in another, 1-based (0: absent).
    strpos = "strpos"
    # A LIMIT that limits nothing.
    no_limit = "ALL"

    @abstractmethod
    def any_of(self, column: str) -> str:
        """``column`` is one of the values bound as ONE parameter by ``array``."""

    @abstractmethod
    def array(self, values: Iterable[Any]) -> Any:
        """A list of values as the one parameter ``any_of`` reads."""

    @abstractmethod
    def covers(self, alias: str) -> str:
        """Unit ``alias`` covers the trace whose row number is the next parameter."""

    @abstractmethod
    def rowids_equal(self, alias: str, rowids: Sequence[int]) -> tuple[str, Any]:
        """(condition, parameter): unit ``alias`` covers exactly ``rowids``, in that order."""

    def unindexed(self, column: str) -> str:
        """``column`` in a condition the planner must not answer from an index on it."""
        return column

    def load_vec(self, value: Any) -> bytes:
        """A stored vector as the interface's float32 little-endian bytes."""
        return bytes(value)

    def dump_vec(self, data: bytes) -> Any:
        """The interface's float32 bytes on their way into a vector column."""
        return data

    @abstractmethod
    def lock_scope(self, run: Run, key: str, *, reset: bool = False) -> int:
        """Count one more write to the scope, first thing in the write, holding its version row
        until commit; returns the version the write ends at. ``reset`` also marks a wipe
        (``reset_version``), after which an in-memory index of the scope is rebuilt whole. A
        new row starts above the version floor (``VERSION_FLOOR_KEY``), as a wipe when there is one."""

    @abstractmethod
    def forget_scope(self, run: Run, key: str) -> None:
        """Remove a deleted scope's version row, raising the version floor to its version first."""

    @abstractmethod
    def insert_units(self, run: Run, key: str, session: str, units: Sequence[DerivedUnit]) -> list[int]:
        """Insert a session's new units with their vectors; their ids, in order."""

    @abstractmethod
    def first_units(self, run: Run, key: str, text_hashes: Sequence[str]
                    ) -> tuple[dict[str, bytes], dict[str, int]]:
        """For each of ``text_hashes``: the vector of the scope's oldest turn or span unit of
        that text that has one, and the id of its oldest turn unit (where there are such)."""

    @abstractmethod
    def expiring(self, run: Run, key: str) -> dict[int, Any]:
        """rowid → metadata ``expires_at`` of the scope's traces that carry one."""
