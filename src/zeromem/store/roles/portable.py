"""The portability role: a store's records read out in row order (``zeromem export``), written
back with their row numbers (``zeromem import``), and copied whole while it runs (``zeromem
backup``). The file format (JSON lines, checks) is store/portable.py; this is what a backend
does for it."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...types import Scope


@dataclass(slots=True)
class ExportRows:
    """One consistent read of a store's records, valid inside ``export_rows``' ``with`` block.

    ``id_key``: the trace id key (hex, store/ids.py); ``last_row``: the highest row number the
    store has handed out (0 for none; deleted traces' numbers count, so a restore never hands
    them out again). ``traces``: trace rows (``rows.COLUMNS``) by row number; ``history``:
    (trace row number, user_key, agent_key, event, at, old_text, new_text, old_metadata JSON,
    new_metadata JSON) by row number, then event order (empty unless history was asked for).
    """

    id_key: str
    last_row: int
    traces: Iterator[tuple[Any, ...]]
    history: Iterator[tuple[Any, ...]]


@dataclass(frozen=True, slots=True)
class RestoredTrace:
    """A trace to write back as it was stored (checked by store/portable.py): its export's row
    number, its scope as stored (``""`` for none), metadata and attachments as JSON text."""

    rowid: int
    user: str
    agent: str
    session: str
    has_session: bool
    seq: int
    text: str
    speaker: str | None
    role: str
    session_time: str | None
    event_time: str | None
    recorded_at: str
    source_id: str | None
    metadata: str
    attachments: str
    version: int


@dataclass(frozen=True, slots=True)
class RestoredTombstone:
    """A deleted trace whose history is written back (its events follow it)."""

    rowid: int
    user: str
    agent: str


@dataclass(frozen=True, slots=True)
class RestoredEvent:
    """One history event of the trace or tombstone written just before it (metadata as JSON)."""

    event: str
    at: str
    old_text: str | None
    new_text: str | None
    old_metadata: str | None
    new_metadata: str | None


Restored = RestoredTrace | RestoredTombstone | RestoredEvent
EXPORT_PAGE = 512  # rows per read while exporting: memory stays constant, round trips few
NEW_IDS_HINT = "or pass --new-ids (new_ids=True) to give the imported traces new ids"


def key_taken_message(path: str) -> str:
    """Why a restore that keeps ids cannot run on ``path``: it has traces under another key."""
    return (f"{path} already holds traces (or their history) under its own trace id key, so the "
            "export's ids cannot be kept there; nothing was imported. Import into a new, empty "
            f"store, {NEW_IDS_HINT}")


def row_taken_message(trace_id: str) -> str:
    """Why a restore that keeps ids stopped: the row of ``trace_id`` is used in the store."""
    return (f"trace {trace_id} of the export is in this store already (or another trace, or a "
            "deleted trace's history, uses its row); nothing was imported. Import into an empty "
            "store, delete the restored scope first (`zeromem delete --scope --yes`), "
            f"{NEW_IDS_HINT}")


class Portable(ABC):
    """Records out in row order, back in with their row numbers, and a whole-store copy."""

    @abstractmethod
    def export_rows(self, scope: Scope | None, *, history: bool) -> AbstractContextManager[ExportRows]:
        """``with store.export_rows(scope, history=...) as rows:`` one consistent version of the
        records of ``scope`` (every scope when None), read a page at a time: memory stays
        constant whatever the store holds, and other callers of the store are not held up."""

    @abstractmethod
    def restore(self, items: Iterable[Restored], *, id_key: str | None, last_row: int) -> None:
        """Write ``items`` (checked already) in ONE transaction: all of them or nothing.

        With ``id_key`` the traces keep their row numbers, hence their ids: the store must
        hold no trace and no history (it takes ``id_key`` as its own) or already have that key
        with every one of those row numbers unused (InvalidInput otherwise, naming the first
        taken id). Without it every trace and tombstone gets a new row number, in order. Row
        numbers handed out later start above ``last_row`` and above every one written. Every
        session written is marked dirty and every scope's version is bumped as a wipe, so
        indexes are derived again from the traces. An exception from ``items`` (a bad line
        found late) rolls everything back.
        """

    @abstractmethod
    def backup(self, dest: Path) -> dict[str, Any]:
        """Copy the whole store into a new file ``dest`` while other connections keep writing:
        a consistent version of it. ``{"store", "backup", "bytes", "traces"}``. A backend that
        cannot (PostgreSQL) raises InvalidInput saying what to use instead."""
