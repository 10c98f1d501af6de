"""The PostgreSQL side of export and import (the ``Portable`` role; PostgresStore calls these).

An export reads in one REPEATABLE READ, READ ONLY transaction through two server-side cursors
(traces by row number, history by row number then event), fetched a page at a time: one
version of the data, constant memory. One scope's rows come in primary-key order; every
scope's (``/* all-scopes */``) are sorted once by the server.

An import writes in one transaction, in batches sent with COPY. Keeping ids, it first raises
the row-number sequence above the export's, so no concurrent writer is handed one of them, and
at the end checks across scopes that no row number is used twice (only the primary key
``(scope_key, rowid_)`` guards a scope; that check covers the rest).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from functools import lru_cache
from typing import Any

from ..errors import InvalidInput, StoreError
from ..types import Scope
from . import derived
from . import postgres_derived as pgd
from .ids import ID_KEY, TraceIdCodec
from .roles.portable import (
    EXPORT_PAGE,
    ExportRows,
    Restored,
    RestoredEvent,
    RestoredTrace,
    key_taken_message,
    row_taken_message,
)
from .rows import COLUMNS

_BATCH = 1000  # rows per COPY while importing
_SEQUENCE = "zeromem_trace_ids"
_TRACE_COPY = ("COPY traces (scope_key, rowid_, user_key, agent_key, session, seq, text, speaker, role,"
               " session_time, event_time, recorded_at, source_id, metadata, attachments, version,"
               " has_session) FROM STDIN")
_HISTORY_COPY = ("COPY trace_history (scope_key, trace_rowid, event, at, old_text, new_text, old_metadata,"
                 " new_metadata) FROM STDIN")


@lru_cache(maxsize=4096)
def _scope_of(key: str) -> tuple[str, str]:
    """(user_key, agent_key) of a ``scope_key`` (the scope as JSON, ``["ana",""]``)."""
    user, agent = json.loads(key)
    return str(user), str(agent)


@contextmanager
def export_rows(conn: Any, key: str | None, history: bool, all_scopes: str) -> Iterator[ExportRows]:
    """The records of the scope ``key`` (every scope when None) by row number, inside the
    caller's read transaction (see ``ExportRows``); ``all_scopes`` marks the cross-scope reads."""
    row = conn.execute("SELECT value FROM store_meta WHERE key = %s", (ID_KEY,)).fetchone()
    if row is None:
        raise StoreError("the store has no trace id key (store_meta trace_id_key): it is damaged")
    last = conn.execute("SELECT pg_sequence_last_value(%s)", (_SEQUENCE,)).fetchone()[0]
    mark, where, params = (all_scopes, "", ()) if key is None else ("", " WHERE scope_key = %s", (key,))
    traces = conn.cursor(name="zeromem_export_traces")
    events = conn.cursor(name="zeromem_export_history") if history else None
    try:
        traces.itersize = EXPORT_PAGE
        traces.execute(f"{mark}SELECT {COLUMNS} FROM traces{where} ORDER BY rowid_", params)
        rows: Iterator[tuple[Any, ...]] = iter(())
        if events is not None:
            events.itersize = EXPORT_PAGE
            events.execute(f"{mark}SELECT trace_rowid, scope_key, event, at, old_text, new_text, old_metadata,"
                           f" new_metadata FROM trace_history{where} ORDER BY trace_rowid, id", params)
            rows = ((r[0], *_scope_of(r[1]), *r[2:]) for r in events)
        yield ExportRows(str(row[0]), int(last or 0), (tuple(r) for r in traces), rows)
    finally:
        for cursor in (traces, events):
            if cursor is not None and not cursor.closed:
                cursor.close()


class _Writer:
    """Batches of one import: trace and history rows sent with COPY, row numbers checked."""

    def __init__(self, conn: Any, codec: TraceIdCodec | None, check: bool) -> None:
        self.conn = conn
        self.codec = codec
        self.check = check  # keeping ids in a store that held records: look for taken rows
        self.traces: list[tuple[Any, ...]] = []
        self.history: list[tuple[Any, ...]] = []
        self.rows: dict[str, list[int]] = {}  # scope key → the row numbers of this batch
        self.dirty: dict[str, set[str]] = {}
        self.pool: list[int] = []  # row numbers allocated for new ids, not used yet

    def new_row(self) -> int:
        if not self.pool:
            self.pool = pgd.allocate(pgd.PgRun(self.conn), _SEQUENCE, _BATCH)[::-1]
        return self.pool.pop()

    def flush(self) -> None:
        if self.check and self.codec is not None:
            for key, rowids in sorted(self.rows.items()):
                taken = self.conn.execute(
                    "SELECT t.rowid_ FROM traces t WHERE t.scope_key = %s AND t.rowid_ = ANY(%s)"
                    " UNION ALL SELECT h.trace_rowid FROM trace_history h WHERE h.scope_key = %s"
                    " AND h.trace_rowid = ANY(%s) LIMIT 1", (key, rowids, key, rowids)).fetchone()
                if taken is not None:
                    raise InvalidInput(row_taken_message(self.codec.format(int(taken[0]))))
        cur = self.conn.cursor()
        if self.traces:
            with cur.copy(_TRACE_COPY) as copy:
                for row in self.traces:
                    copy.write_row(row)
        if self.history:
            with cur.copy(_HISTORY_COPY) as copy:
                for row in self.history:
                    copy.write_row(row)
        for key, sessions in sorted(self.dirty.items()):
            derived.mark_dirty(pgd.PgRun(self.conn), key, sorted(sessions))
        self.traces, self.history, self.rows, self.dirty = [], [], {}, {}


def restore(conn: Any, items: Iterable[Restored], codec: TraceIdCodec | None, id_key: str | None,
            last_row: int, path: str, scope_key_of: Callable[[Scope], str], all_scopes: str) -> None:
    """Write ``items`` inside the caller's transaction (see ``Portable.restore``)."""
    empty = not conn.execute(f"{all_scopes}SELECT EXISTS (SELECT 1 FROM traces)"
                             " OR EXISTS (SELECT 1 FROM trace_history)").fetchone()[0]
    if codec is not None:
        stored = conn.execute("SELECT value FROM store_meta WHERE key = %s", (ID_KEY,)).fetchone()
        if stored is None or stored[0] != id_key:
            if not empty:
                raise InvalidInput(key_taken_message(path))
            conn.execute("INSERT INTO store_meta (key, value) VALUES (%s, %s)"
                         " ON CONFLICT (key) DO UPDATE SET value = excluded.value", (ID_KEY, id_key))
        _raise_sequence(conn, last_row)  # at once (sequences are not transactional): see the docstring
    writer = _Writer(conn, codec, check=not empty)
    keys: dict[tuple[str, str], str] = {}
    owner: tuple[str, int] | None = None  # the scope key and row the next events belong to
    high = 0
    for item in items:
        if isinstance(item, RestoredEvent):
            if owner is None:
                raise InvalidInput("a history event comes before any trace")
            for value in (item.old_text, item.new_text, item.old_metadata, item.new_metadata):
                if value is not None and "\x00" in value:
                    raise InvalidInput(f"a history event of trace {_shown(codec, owner[1])} holds a NUL "
                                       "character (\\x00), which PostgreSQL cannot store")
            writer.history.append((*owner, item.event, item.at, item.old_text, item.new_text,
                                   item.old_metadata, item.new_metadata))
        else:
            scope = (item.user, item.agent)
            if scope not in keys:
                keys[scope] = scope_key_of(Scope(item.user or None, item.agent or None))
                pgd.lock_scope(pgd.PgRun(conn), keys[scope], reset=True)  # a wipe: indexes are built again
            key = keys[scope]
            rowid = item.rowid if codec is not None else writer.new_row()
            high = max(high, rowid)
            owner = (key, rowid)
            writer.rows.setdefault(key, []).append(rowid)
            if isinstance(item, RestoredTrace):
                writer.traces.append((key, rowid, item.user, item.agent, item.session, item.seq, item.text,
                                      item.speaker, item.role, item.session_time, item.event_time,
                                      item.recorded_at, item.source_id, item.metadata, item.attachments,
                                      item.version, item.has_session))
                writer.dirty.setdefault(key, set()).add(item.session)
        if len(writer.traces) + len(writer.history) >= _BATCH:
            writer.flush()
    writer.flush()
    if codec is not None:
        _raise_sequence(conn, high)
        twice = conn.execute(
            f"{all_scopes}SELECT r FROM (SELECT rowid_ AS r, scope_key FROM traces UNION"
            " SELECT trace_rowid, scope_key FROM trace_history) s GROUP BY r"
            " HAVING COUNT(DISTINCT scope_key) > 1 LIMIT 1").fetchone()
        if twice is not None:
            raise InvalidInput(row_taken_message(codec.format(int(twice[0]))))


def _raise_sequence(conn: Any, value: int) -> None:
    """Row numbers handed out from now on start above ``value``."""
    if value > 0:
        conn.execute("SELECT setval(%s, GREATEST(%s, COALESCE(pg_sequence_last_value(%s), 0)))",
                     (_SEQUENCE, value, _SEQUENCE))


def _shown(codec: TraceIdCodec | None, rowid: int) -> str:
    return codec.format(rowid) if codec is not None else "(new)"
