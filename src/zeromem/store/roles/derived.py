"""The derived-rows role: units, vectors, mentions, entity vectors and lifecycle signals,
rebuildable from the traces: what the indexer writes and retrieval reads."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ...types import Scope


@dataclass(slots=True)
class DerivedUnit:
    """One derived unit as a backend stores it (indexes/units.py makes them)."""

    level: str
    position: int
    text: str
    text_hash: str
    rowids: tuple[int, ...]
    first_seq: int
    last_seq: int
    speaker: str | None
    time: str | None
    vector: bytes | None  # float32 little-endian
    mentions: tuple[tuple[str, str, str, int], ...] = ()  # (entity, label, surface, count), turns


@dataclass(frozen=True, slots=True)
class Replacing:
    """What a commit of appended turns replaces (``DerivedStore.commit_session``): ``since`` is the
    session's change version its derivation started from (the previous commit's return) and
    ``units`` the (level, position) of the stored units that the new ones replace; every other
    unit row of the session stays as it is."""

    since: int
    units: tuple[tuple[str, int], ...]


class DerivedStore(ABC):
    """Derived rows of each scope. Every method is scoped; a backend never reads or writes
    across scopes."""

    @abstractmethod
    def dirty_sessions(self, scope: Scope) -> list[str]:
        """Sessions whose traces changed since they were last derived."""

    @abstractmethod
    def reset_derived(self, scope: Scope) -> None:
        """Drop every derived row of the scope and mark all its sessions dirty (reindex)."""

    @abstractmethod
    def stored_encodings(self, scope: Scope, text_hashes: Sequence[str], sessions: Sequence[str] = ()
                         ) -> tuple[dict[str, bytes], dict[str, list[tuple[Any, ...]]]]:
        """(vector by text hash, mentions by text hash) already stored in the scope; a text that
        the ``sessions``' own turn / span units have is answered from them (one read)."""

    @abstractmethod
    def entities_with_vectors(self, scope: Scope, names: Sequence[str]) -> set[str]:
        """Which of ``names`` already have an entity vector in the scope."""

    @abstractmethod
    def commit_session(self, scope: Scope, session: str, expected: Sequence[tuple[int, int]],
                       units: Sequence[DerivedUnit], entity_vectors: dict[str, bytes],
                       replacing: Replacing | None = None) -> int | None:
        """In one transaction: if the session's traces are still ``expected`` ((rowid, version)
        in conversation order), replace its derived rows, add the entity vectors its mentions
        need, clear its dirty mark, log the change and return the session's change version;
        else change nothing and return None.

        ``units`` are all the session's units (rows that did not change are kept), or, with
        ``replacing``, only the new ones: they replace the units it names, and the commit
        happens only if the session's change version is still ``replacing.since``."""

    @abstractmethod
    def turn_vectors(self, scope: Scope, session: str) -> dict[int, bytes]:
        """The vector of each turn unit of the session, by its trace's row number."""

    @abstractmethod
    def trace_entities(self, scope: Scope, rowid: int, limit: int = 20
                       ) -> tuple[list[tuple[str, str, str, int, int]], list[tuple[int, list[str]]]]:
        """The trace's place in the entity graph: its turn's mentions ``(entity, label,
        surface, count, turns of the scope mentioning it)`` and up to ``limit`` other turns
        sharing an entity ``(rowid, shared entities)``, most shared first (rowid breaks ties).
        Empty until the trace's session is derived."""

    @abstractmethod
    def add_encoder_timings(self, seconds: dict[str, float], items: dict[str, int]) -> None:
        """Accumulate encoder time and items (reported by ``zeromem stats``)."""

    @abstractmethod
    def trace_signals(self, scope: Scope, *, missing_only: bool = False,
                      rowids: Sequence[int] | None = None) -> dict[int, str | None]:
        """Each trace of the scope (rowid), or each of ``rowids`` that the scope holds → its
        lifecycle signals (JSON) stored for its current version, or None when they still
        have to be computed; ``missing_only`` returns only the None ones (a refresh after a
        write asks for the traces it wrote, and reads no other row)."""

    @abstractmethod
    def put_signals(self, scope: Scope, rows: Sequence[tuple[int, int, str]]) -> None:
        """Store (trace rowid, version, signals JSON) rows, except those of traces deleted
        meanwhile (a delete takes a trace's signals with it)."""
