"""The change-log role: scope versions and what changed since a version (``session_changes``),
so an in-memory index catches up without reading the whole scope again."""

from __future__ import annotations

from abc import ABC, abstractmethod

from ...types import Scope


class ChangeLog(ABC):
    """Per-scope write counters and the sessions each write changed."""

    @abstractmethod
    def scope_version(self, scope: Scope) -> int:
        """A counter that goes up with every write to ``scope`` (0 for a scope never written)."""

    @abstractmethod
    def read_changes(self, scope: Scope, since: int, known_entities: set[str]) -> dict:
        """In one read transaction, what an in-memory index at version ``since`` lacks:
        ``version``, ``full`` (rebuild from scratch), ``sessions``, their ``traces`` ((rowid, Trace)),
        ``units`` rows (id, session, level, position, text, text_hash, rowids JSON, vector),
        ``mentions`` rows (unit id, entity, label, surface, count), and the vectors of
        mentioned ``entities`` not in ``known_entities``."""
