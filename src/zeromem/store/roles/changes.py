"""The change-log role: scope versions and what changed since a version (``session_changes``),
so an in-memory index catches up without reading the whole scope again."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, Protocol

from ...types import Scope


class HeldRows(Protocol):
    """What an in-memory index already holds of the changed sessions, so ``read_changes`` reads
    only the rest: a write changes a few units of a session of hundreds (its turn, spans, window,
    episode), and reading every unit's text and vector again would cost O(session)."""

    def has_trace(self, rowid: int, version: int) -> bool:
        """Whether the index holds this version of the trace (and needs nothing else of it)."""

    def has_unit(self, session: str, level: str, position: int, text_hash: str, rowids: tuple[int, ...]) -> bool:
        """Whether the index holds a unit with exactly this key in ``session``."""

    def unit_ids(self, session: str) -> set[int] | None:
        """The store ids of the units the index holds in ``session`` (the store reads the rows of
        its other ids only), or None when it does not know them all (then it is read by keys).
        Asked after ``has_trace``: a turn whose trace is read again is not among them."""


class ChangeLog(ABC):
    """Per-scope write counters and the sessions each write changed."""

    @abstractmethod
    def scope_version(self, scope: Scope) -> int:
        """A counter that goes up with every write to ``scope`` (0 for a scope never written)."""

    @abstractmethod
    def read_changes(self, scope: Scope, since: int, known_entities: set[str],
                     held: HeldRows | None = None) -> dict[str, Any]:
        """In one read transaction, what an in-memory index at version ``since`` lacks:
        ``version``, ``full`` (rebuild from scratch), ``sessions``, their ``traces`` ((rowid, Trace)),
        ``units`` rows (id, session, level, position, text, text_hash, rowids JSON, vector),
        ``mentions`` rows (unit id, entity, label, surface, count), and the vectors of
        mentioned ``entities`` not in ``known_entities``.

        With ``held`` (and ``full`` False), the traces it holds are left out. A session whose unit
        ids the index knows comes with ``unit_ids[session]`` (the ids of all its units now) and
        only the rows of the ids it does not hold; any other session with every unit's key row,
        the units it holds with text and vector None (rowids of key rows as tuples of ints)."""
