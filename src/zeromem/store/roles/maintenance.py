"""The maintenance role: what the store takes and holds as a whole, compaction, closing."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, Self

from ...types import Scope


class Maintenance(ABC):
    """Whole-store facts and upkeep."""

    @abstractmethod
    def compact(self) -> dict[str, Any]:
        """Make the backend drop from its files what erasures freed (SQLite: VACUUM; PostgreSQL:
        VACUUM FULL, ANALYZE, CHECKPOINT); returns what it did and, for PostgreSQL, what it
        cannot remove (``retained``). Slow on a large store, and it locks the tables meanwhile."""

    @abstractmethod
    def size_bytes(self) -> int:
        """Bytes the whole store takes in its backend (file + write-ahead log for SQLite, the
        database for PostgreSQL): what a benchmark reports as storage size."""

    @abstractmethod
    def stats(self, scope: Scope | None = None) -> dict[str, Any]:
        """Counts for ``scope`` (or the whole store when None).

        Keys: ``path``, ``traces``, ``sessions``, ``characters``, ``scopes``, ``speakers``
        ({speaker: traces}), ``history_events`` ({event: count}), ``first_time``,
        ``last_time`` and ``units`` ({level: derived units}).
        """

    def placement(self) -> dict[str, Any] | None:
        """How the data is placed across the nodes of a cluster (PostgreSQL on Citus), or None
        where it is on one node: a file, a plain server."""
        return None

    @abstractmethod
    def close(self) -> None:
        """Release the connection; the object must not be used afterwards."""

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
