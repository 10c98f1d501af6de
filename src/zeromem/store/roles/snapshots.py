"""The snapshot role: a scope's persisted in-memory index (retrieval/persist.py), with the
scope's traces read alongside it (``TraceRows``)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any

from ...types import Scope, Trace


class TraceRows:
    """A scope's traces as read in one go, by rowid, made into ``Trace`` objects only when one
    is asked for: opening a 100k-trace scope needs a few fields of every turn (``fields_many``) but
    whole traces only for the evidence it returns (``trace``)."""

    def __init__(self, rows: dict[int, Any], to_trace: Callable[[Any], Trace],
                 to_fields: Callable[[Any], tuple[Any, ...]], *, session_column: int | None = None,
                 unsettled: frozenset[str] | None = None) -> None:
        self._rows = rows
        self._to_trace = to_trace
        self._to_fields = to_fields
        self._session_column = session_column
        # The sessions whose traces a snapshot may rightly not hold as they are now (changed
        # since its version, or not derived yet), read in the same transaction; None: unknown.
        self.unsettled = unsettled

    def __len__(self) -> int:
        return len(self._rows)

    def __contains__(self, rowid: object) -> bool:
        return rowid in self._rows

    def trace(self, rowid: int) -> Trace | None:
        row = self._rows.get(rowid)
        return None if row is None else self._to_trace(row)

    def sessions(self) -> dict[int, str]:
        """Every trace's session as its units name it (the stored column), by rowid."""
        column = self._session_column
        if column is None:
            return {}
        return {rowid: row[column] for rowid, row in self._rows.items()}

    def fields_many(self, rowids: list[int]) -> list[tuple[Any, ...]]:
        """(text, attachments, speaker, session, event_time, session_time, recorded_at, role) of
        each of ``rowids``, every one of which must be a row here."""
        rows, to_fields = self._rows, self._to_fields
        return [to_fields(rows[rowid]) for rowid in rowids]


class SnapshotStore(ABC):
    """Persisted indexes: derived and disposable, never newer than the scope's last wipe."""

    @abstractmethod
    def save_snapshot(self, scope: Scope, version: int, facts: str, parts: dict[str, bytes],
                      format: int = 1) -> None:
        """Replace the scope's persisted in-memory index (retrieval/persist.py).

        Nothing is written when ``version`` is older than the scope's last wipe (an erasing
        delete, ``delete_scope``, ``reindex``): such an index could hold words of erased
        traces, and ``load_snapshot`` would ignore it anyway. A read-only store writes nothing.
        """

    @abstractmethod
    def load_snapshot(self, scope: Scope, format: int = 1
                      ) -> tuple[int, str, dict[str, bytes], TraceRows] | None:
        """(version, facts, parts, the scope's traces) in one read, or None if there is none
        of this ``format`` or a wipe made it useless."""

    @abstractmethod
    def snapshot_version(self, scope: Scope, format: int = 1) -> int | None:
        """The version of the scope's persisted index of this ``format``, if any."""
