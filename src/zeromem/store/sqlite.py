"""SQLite trace store: the embedded source of record.

Every public write runs in one ``BEGIN IMMEDIATE`` transaction (WAL mode), so a batch lands
whole or not at all, even if the process is killed mid-write, and several processes can write
to one file: SQLite serializes them and ``busy_timeout`` plus a bounded retry absorbs waits.
"""

from __future__ import annotations

import builtins
import datetime as dt
import json
import sqlite3
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..errors import InvalidInput, NotFound, StoreError
from ..types import HistoryEvent, Scope, Trace
from . import derived, validate
from .base import (
    CleanDraft,
    DerivedUnit,
    StoreBase,
    TraceDraft,
    TraceRows,
    TraceStoreBase,
    check_meta_key,
    check_meta_value,
    clean_list_filters,
    not_found_message,
    parse_trace_id,
    scope_key,
    scope_meta_suffix,
    trace_id,
)
from .derived import bump_version, purge_units_of_trace, read_changes
from .keys import ApiKey, check_key_id
from .schema import migrate

__all__ = ["SQLiteStore", "TraceDraft", "TraceStore", "TraceStoreBase"]

__all__ = ["SQLiteStore", "TraceDraft", "TraceStore", "parse_trace_id", "trace_id"]

_LOCK_RETRIES = 20
# What a failed statement can raise besides sqlite3's own errors: a value the driver cannot
# bind (an int over 64 bits, a lone surrogate). Input checks refuse these first; this is the
# backstop that keeps such a failure a rolled-back StoreError.
_WRITE_ERRORS = (sqlite3.Error, OverflowError, UnicodeError)


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="microseconds")


class SQLiteStore(StoreBase):
    """Verbatim traces, their history, scope versions, and the connection for derived tables."""

    def __init__(self, path: str | Path, *, max_text_chars: int = validate.DEFAULT_MAX_TEXT_CHARS,
                 timeout_s: float = 30.0) -> None:
        self.path = str(path) if str(path) == ":memory:" else str(Path(path).expanduser())
        self.max_text_chars = max_text_chars
        if self.path != ":memory:":
            parent = Path(self.path).expanduser().resolve().parent
            try:
                parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise StoreError(f"cannot create the folder for {self.path}: {exc}") from None
        try:
            self.conn = sqlite3.connect(self.path, timeout=timeout_s, isolation_level=None,
                                        check_same_thread=False)
            self.conn.execute(f"PRAGMA busy_timeout = {int(timeout_s * 1000)}")
            if self.path != ":memory:":
                self.conn.execute("PRAGMA journal_mode = WAL")
            self.conn.execute("PRAGMA synchronous = NORMAL")
            self.conn.execute("PRAGMA foreign_keys = ON")
            migrate(self.conn)
        except (sqlite3.DatabaseError, StoreError) as exc:
            if hasattr(self, "conn"):
                self.conn.close()  # a refused file must not stay open
            if isinstance(exc, StoreError):
                raise
            raise StoreError(f"cannot open {self.path} as a zeromem store: {exc}") from None
        self._lock = threading.RLock()
        self._closed = False

    # -- plumbing -----------------------------------------------------------------------
    def close(self) -> None:
        with self._lock:
            self._closed = True
            self.conn.close()

    def _check_open(self) -> None:
        if self._closed:
            raise StoreError(f"the store {self.path} is closed: open it again (a new Memory)")

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """One atomic write: BEGIN IMMEDIATE, retried while another writer holds the lock."""
        with self._lock:
            self._check_open()
            for attempt in range(_LOCK_RETRIES):
                try:
                    self.conn.execute("BEGIN IMMEDIATE")
                    break
                except sqlite3.OperationalError as exc:
                    if "locked" not in str(exc) and "busy" not in str(exc):
                        raise StoreError(f"cannot start a write on {self.path}: {exc}") from None
                    time.sleep(min(0.05 * (attempt + 1), 1.0))
            else:
                raise StoreError(f"{self.path} stayed locked by another writer; try again")
            try:
                yield self.conn
            except _WRITE_ERRORS as exc:
                self._rollback()
                raise StoreError(f"write failed on {self.path}, nothing was changed: {exc}") from None
            except BaseException:
                self._rollback()
                raise
            else:
                try:
                    self.conn.execute("COMMIT")
                except sqlite3.DatabaseError as exc:
                    self._rollback()
                    raise StoreError(f"commit failed on {self.path}: {exc}") from None

    def _rollback(self) -> None:
        # SQLite may already have rolled back by itself (e.g. disk full); a second ROLLBACK
        # would raise and hide the original error.
        if self.conn.in_transaction:
            self.conn.execute("ROLLBACK")

    # -- derived rows (DerivedStoreBase; the SQL is in derived.py) ------------------------
    def dirty_sessions(self, scope: Scope) -> list[str]:
        user, agent = scope_key(scope)
        with self._lock:
            self._check_open()
            return derived.dirty_sessions(self.conn, user, agent)

    def reset_derived(self, scope: Scope) -> None:
        user, agent = scope_key(scope)
        with self.transaction() as conn:
            derived.reset_derived(conn, user, agent)

    def stored_encodings(self, scope: Scope, text_hashes: Sequence[str]
                         ) -> tuple[dict[str, bytes], dict[str, list[tuple]]]:
        user, agent = scope_key(scope)
        with self._lock:
            self._check_open()
            return derived.stored_encodings(self.conn, user, agent, text_hashes)

    def entities_with_vectors(self, scope: Scope, names: Sequence[str]) -> set[str]:
        user, agent = scope_key(scope)
        with self._lock:
            self._check_open()
            return derived.entities_with_vectors(self.conn, user, agent, names)

    def commit_session(self, scope: Scope, session: str, expected: Sequence[tuple[int, int]],
                       units: Sequence[DerivedUnit], entity_vectors: dict[str, bytes]) -> bool:
        user, agent = scope_key(scope)
        with self.transaction() as conn:
            return derived.commit_session(conn, user, agent, session, expected, units, entity_vectors)

    def trace_entities(self, scope: Scope, rowid: int, limit: int = 20
                       ) -> tuple[builtins.list[tuple[str, str, str, int, int]],
                                  builtins.list[tuple[int, builtins.list[str]]]]:
        user, agent = scope_key(scope)
        with self._lock:
            self._check_open()
            return derived.trace_entities(self.conn, user, agent, rowid, limit)

    def add_encoder_timings(self, seconds: dict[str, float], items: dict[str, int]) -> None:
        with self.transaction() as conn:
            derived.add_encoder_timings(conn, seconds, items)

    def read_changes(self, scope: Scope, since: int, known_entities: set[str]) -> dict:
        """The derived rows an in-memory index at version ``since`` lacks, read in one read
        transaction: a consistent version of the scope, whatever other writers do meanwhile
        (WAL readers see the database as of their first read). See ``derived.read_changes``."""
        user, agent = scope_key(scope)
        with self._lock:
            try:
                self.conn.execute("BEGIN")
                try:
                    out = read_changes(self.conn, user, agent, since, known_entities, _COLUMNS)
                finally:
                    self.conn.execute("COMMIT")
            except sqlite3.DatabaseError as exc:
                raise StoreError(f"read failed on {self.path}: {exc}") from None
        out["traces"] = [_row_to_trace(row) for row in out["traces"]]
        return out

    def save_snapshot(self, scope: Scope, version: int, facts: str, parts: dict[str, bytes],
                      format: int = 1) -> None:
        """Replace the scope's persisted index (derived, disposable) in one transaction."""
        user, agent = scope_key(scope)
        with self.transaction() as conn:
            conn.execute("DELETE FROM scope_snapshot_parts WHERE user_key=? AND agent_key=?", (user, agent))
            conn.executemany("INSERT INTO scope_snapshot_parts VALUES (?,?,?,?)",
                             [(user, agent, name, blob) for name, blob in sorted(parts.items())])
            conn.execute("INSERT OR REPLACE INTO scope_snapshots VALUES (?,?,?,?,?)",
                         (user, agent, version, format, facts.encode("utf-8")))

    def load_snapshot(self, scope: Scope, format: int = 1
                      ) -> tuple[int, str, dict[str, bytes], TraceRows] | None:
        """The scope's persisted index — (version, facts, parts, every trace by rowid) — read
        in one transaction, or None if there is none or a wipe made it useless."""
        user, agent = scope_key(scope)
        with self._lock:
            self._check_open()
            try:
                self.conn.execute("BEGIN")
                try:
                    head = self.conn.execute(
                        "SELECT s.version, s.blob, COALESCE(v.reset_version, 0) FROM scope_snapshots s"
                        " LEFT JOIN scope_versions v ON v.user_key = s.user_key AND v.agent_key = s.agent_key"
                        " WHERE s.user_key=? AND s.agent_key=? AND s.format=?", (user, agent, format)).fetchone()
                    if head is None or head[2] > head[0]:
                        return None
                    parts = dict(self.conn.execute(
                        "SELECT name, blob FROM scope_snapshot_parts WHERE user_key=? AND agent_key=?",
                        (user, agent)).fetchall())
                    rows = self.conn.execute(f"SELECT {_COLUMNS} FROM traces WHERE user_key=? AND agent_key=?",
                                             (user, agent)).fetchall()
                finally:
                    self.conn.execute("COMMIT")
            except sqlite3.DatabaseError as exc:
                raise StoreError(f"read failed on {self.path}: {exc}") from None
        traces = TraceRows({row[0]: row for row in rows}, _row_to_trace, _row_fields)
        return int(head[0]), bytes(head[1]).decode("utf-8"), parts, traces

    def snapshot_version(self, scope: Scope, format: int = 1) -> int | None:
        rows = self.read("SELECT version FROM scope_snapshots WHERE user_key=? AND agent_key=? AND format=?",
                         (*scope_key(scope), format))
        return int(rows[0][0]) if rows else None

    def read(self, sql: str, params: Sequence[Any] = ()) -> list[tuple]:
        with self._lock:
            self._check_open()
            try:
                return self.conn.execute(sql, params).fetchall()
            except sqlite3.DatabaseError as exc:
                raise StoreError(f"read failed on {self.path}: {exc}") from None

    # -- writes -------------------------------------------------------------------------
    def add_batches(self, batches: Sequence[tuple[Sequence[TraceDraft], Scope]]) -> list[list[str]]:
        """Check every draft of every batch first, then store all of them in one transaction."""
        cleaned = self.clean_batches(batches)
        if not any(drafts for drafts, _ in cleaned):
            return [[] for _ in cleaned]
        now = _now()
        out: list[list[str]] = []
        with self.transaction() as conn:
            touched: set[tuple[str, str]] = set()
            for drafts, (user, agent) in cleaned:
                out.append(_insert(conn, drafts, user, agent, now))
                if drafts:
                    touched.add((user, agent))
            for user, agent in sorted(touched):
                bump_version(conn, user, agent)
        return out

    def update(self, tid: str, scope: Scope, *, text: Any = None, metadata: Any = None) -> Trace:
        """Replace text and/or metadata; the previous version stays in the history."""
        if text is None and metadata is None:
            raise InvalidInput("update needs new text, new metadata, or both")
        new_text = validate.clean_text(text, max_chars=self.max_text_chars) if text is not None else None
        new_meta = validate.clean_metadata(metadata) if metadata is not None else None
        rowid = parse_trace_id(tid)
        user, agent = scope_key(scope)
        with self.transaction() as conn:
            old_text, old_meta, session = _owned_row(conn, rowid, tid, scope)
            text_out = new_text if new_text is not None else old_text
            meta_out = (json.dumps(new_meta, ensure_ascii=False, sort_keys=True)
                        if new_meta is not None else old_meta)
            conn.execute("UPDATE traces SET text=?, metadata=?, version=version+1 WHERE rowid_=?",
                         (text_out, meta_out, rowid))
            conn.execute(
                "INSERT INTO trace_history (trace_rowid, user_key, agent_key, event, at, old_text,"
                " new_text, old_metadata, new_metadata) VALUES (?,?,?,?,?,?,?,?,?)",
                (rowid, user, agent, "update", _now(), old_text, text_out, old_meta, meta_out))
            _mark_dirty(conn, user, agent, session)
            purge_units_of_trace(conn, user, agent, session, rowid)
            bump_version(conn, user, agent)
        return self.get(tid, scope)

    def delete(self, tid: str, scope: Scope) -> None:
        """Remove a trace from the record (its history keeps a 'delete' event)."""
        rowid = parse_trace_id(tid)
        user, agent = scope_key(scope)
        with self.transaction() as conn:
            row = _owned_row(conn, rowid, tid, scope)
            conn.execute("DELETE FROM traces WHERE rowid_=?", (rowid,))
            conn.execute(
                "INSERT INTO trace_history (trace_rowid, user_key, agent_key, event, at, old_text,"
                " old_metadata) VALUES (?,?,?,?,?,?,?)",
                (rowid, user, agent, "delete", _now(), row[0], row[1]))
            _mark_dirty(conn, user, agent, row[2])
            purge_units_of_trace(conn, user, agent, row[2], rowid)
            bump_version(conn, user, agent)

    def delete_scope(self, scope: Scope) -> int:
        """Remove every trace, history event, derived row and per-scope fact (the embedder
        fingerprint) of one scope; returns the number of traces removed."""
        user, agent = scope_key(scope)
        suffix = scope_meta_suffix(scope)
        with self.transaction() as conn:
            count = conn.execute("DELETE FROM traces WHERE user_key=? AND agent_key=?",
                                 (user, agent)).rowcount
            for table in ("trace_history", "units", "dirty_sessions", "entity_vectors",
                          "session_changes", "scope_snapshots", "scope_snapshot_parts"):
                conn.execute(f"DELETE FROM {table} WHERE user_key=? AND agent_key=?", (user, agent))
            conn.execute("DELETE FROM store_meta WHERE instr(key, ':') > 0"
                         " AND substr(key, instr(key, ':') + 1) = ?", (suffix,))
            bump_version(conn, user, agent, reset=True)
        return count

    # -- per-file facts -------------------------------------------------------------------
    def get_meta(self, key: str) -> str | None:
        rows = self.read("SELECT value FROM store_meta WHERE key=?", (check_meta_key(key),))
        return rows[0][0] if rows else None

    def set_meta(self, key: str, value: str) -> None:
        key, value = check_meta_key(key), check_meta_value(value)
        with self.transaction() as conn:
            conn.execute("INSERT INTO store_meta (key, value) VALUES (?, ?)"
                         " ON CONFLICT(key) DO UPDATE SET value = excluded.value", (key, value))

    def setdefault_meta(self, key: str, value: str) -> str:
        key, value = check_meta_key(key), check_meta_value(value)
        with self.transaction() as conn:
            conn.execute("INSERT OR IGNORE INTO store_meta (key, value) VALUES (?, ?)", (key, value))
            stored: str = conn.execute("SELECT value FROM store_meta WHERE key=?", (key,)).fetchone()[0]
        return stored

    def delete_meta(self, key: str) -> bool:
        key = check_meta_key(key)
        with self.transaction() as conn:
            return conn.execute("DELETE FROM store_meta WHERE key=?", (key,)).rowcount > 0

    # -- reads --------------------------------------------------------------------------
    def get(self, tid: str, scope: Scope) -> Trace:
        rowid = parse_trace_id(tid)
        user, agent = scope_key(scope)
        rows = self.read(f"SELECT {_COLUMNS} FROM traces WHERE rowid_=? AND user_key=? AND agent_key=?",
                         (rowid, user, agent))
        if not rows:
            raise NotFound(not_found_message(tid, scope))
        return _row_to_trace(rows[0])

    def get_rowids(self, rowids: Sequence[int]) -> dict[int, Trace]:
        out: dict[int, Trace] = {}
        ids = list(rowids)
        for start in range(0, len(ids), 900):
            chunk = ids[start:start + 900]
            marks = ",".join("?" * len(chunk))
            for row in self.read(f"SELECT {_COLUMNS} FROM traces WHERE rowid_ IN ({marks})", chunk):
                out[row[0]] = _row_to_trace(row)
        return out

    def list(self, scope: Scope, *, session: str | None = None, since: Any = None,
             until: Any = None, metadata: dict[str, Any] | None = None,
             limit: int | None = None, offset: int = 0) -> list[Trace]:
        """Traces of one scope in (session, seq) order, optionally filtered."""
        user, agent = scope_key(scope)
        where = ["user_key=?", "agent_key=?"]
        params: list[Any] = [user, agent]
        if session is not None:
            where.append("session=?")
            params.append(validate.clean_optional_str(session, "session") or "")
        time_expr = "COALESCE(event_time, session_time, recorded_at)"
        if since is not None:
            where.append(f"{time_expr} >= ?")
            params.append(validate.clean_time(since, "since"))
        if until is not None:
            where.append(f"{time_expr} <= ?")
            params.append(validate.clean_time(until, "until"))
        for key, value in clean_list_filters(metadata, limit, offset).items():
            if value is None:
                where.append(f"json_extract(metadata, '$.{key}') IS NULL")
            else:
                where.append(f"json_extract(metadata, '$.{key}') = ?")
                params.append(int(value) if isinstance(value, bool) else value)
        sql = (f"SELECT {_COLUMNS} FROM traces WHERE {' AND '.join(where)} "
               f"ORDER BY session_time IS NULL, session_time, session, seq, rowid_")
        if limit is not None or offset:
            # SQLite takes OFFSET only after a LIMIT; -1 means no limit.
            sql += f" LIMIT {-1 if limit is None else int(limit)} OFFSET {int(offset)}"
        return [_row_to_trace(row) for row in self.read(sql, params)]

    def history(self, tid: str, scope: Scope) -> builtins.list[HistoryEvent]:
        rowid = parse_trace_id(tid)
        user, agent = scope_key(scope)
        rows = self.read(
            "SELECT event, at, old_text, new_text, old_metadata, new_metadata FROM trace_history"
            " WHERE trace_rowid=? AND user_key=? AND agent_key=? ORDER BY id", (rowid, user, agent))
        if not rows:
            raise NotFound(not_found_message(tid, scope))
        return [HistoryEvent(tid, ev, at, old, new, _load(om), _load(nm))
                for ev, at, old, new, om, nm in rows]

    def sessions(self, scope: Scope) -> builtins.list[dict[str, Any]]:
        time_expr = "COALESCE(event_time, session_time, recorded_at)"
        rows = self.read(
            f"SELECT session, MAX(has_session), COUNT(*), MIN({time_expr}), MAX({time_expr}),"
            " MIN(session_time IS NULL), MIN(session_time) FROM traces"
            " WHERE user_key=? AND agent_key=? GROUP BY session ORDER BY 6, 7, 1", scope_key(scope))
        return [{"session": name if has else None, "traces": n, "first_time": first, "last_time": last}
                for name, has, n, first, last, _, _ in rows]

    def add_api_key(self, key_id: str, key_hash: str, scope: Scope, label: str | None) -> ApiKey:
        user, agent = scope_key(scope)
        key_id = check_key_id(key_id)
        label = validate.clean_optional_str(label, "label")
        created = _now()
        with self.transaction() as conn:
            clash = conn.execute("SELECT 1 FROM api_keys WHERE key_id=? OR key_hash=?",
                                 (key_id, key_hash)).fetchone()
            if clash:
                raise InvalidInput(f"an API key with id {key_id} already exists; make a new key")
            conn.execute("INSERT INTO api_keys (key_id, key_hash, user_key, agent_key, label, created_at)"
                         " VALUES (?, ?, ?, ?, ?, ?)", (key_id, key_hash, user, agent, label, created))
        return ApiKey(key_id, scope, label, created)

    def api_key_by_hash(self, key_hash: str) -> ApiKey | None:
        rows = self.read(f"SELECT {_KEY_COLUMNS} FROM api_keys WHERE key_hash=?", (key_hash,))
        return _row_to_key(rows[0]) if rows else None

    def api_keys(self) -> builtins.list[ApiKey]:
        return [_row_to_key(row) for row in
                self.read(f"SELECT {_KEY_COLUMNS} FROM api_keys ORDER BY created_at, key_id")]

    def revoke_api_key(self, key_id: str) -> ApiKey:
        key_id = check_key_id(key_id)
        with self.transaction() as conn:
            conn.execute("UPDATE api_keys SET revoked_at=? WHERE key_id=? AND revoked_at IS NULL",
                         (_now(), key_id))
            row = conn.execute(f"SELECT {_KEY_COLUMNS} FROM api_keys WHERE key_id=?", (key_id,)).fetchone()
        if row is None:
            raise NotFound(f"no API key with id {key_id!r}: see `zeromem keys list`")
        return _row_to_key(row)

    def size_bytes(self) -> int:
        pages, page_size = self.read("PRAGMA page_count")[0][0], self.read("PRAGMA page_size")[0][0]
        wal = Path(f"{self.path}-wal")
        return int(pages * page_size) + (wal.stat().st_size if self.path != ":memory:" and wal.exists() else 0)

    def count(self, scope: Scope) -> int:
        return self.read("SELECT COUNT(*) FROM traces WHERE user_key=? AND agent_key=?", scope_key(scope))[0][0]

    def scope_version(self, scope: Scope) -> int:
        rows = self.read("SELECT version FROM scope_versions WHERE user_key=? AND agent_key=?",
                         scope_key(scope))
        return rows[0][0] if rows else 0

    def scopes(self) -> builtins.list[Scope]:
        rows = self.read("SELECT DISTINCT user_key, agent_key FROM traces ORDER BY 1, 2")
        return [Scope(u or None, a or None) for u, a in rows]

    def stats(self, scope: Scope | None = None) -> dict[str, Any]:
        params: tuple[str, ...] = ()
        where = ""
        if scope is not None:
            where, params = "WHERE user_key=? AND agent_key=?", scope_key(scope)
        traces, sessions, chars = self.read(
            f"SELECT COUNT(*), COUNT(DISTINCT user_key||'\x1f'||agent_key||'\x1f'||session),"
            f" COALESCE(SUM(LENGTH(text)), 0) FROM traces {where}", params)[0]
        events = dict(self.read(f"SELECT event, COUNT(*) FROM trace_history {where} GROUP BY event",
                                params))
        speakers = dict(self.read(
            f"SELECT COALESCE(speaker, ''), COUNT(*) FROM traces {where} GROUP BY 1 ORDER BY 1", params))
        span = self.read(f"SELECT MIN(COALESCE(event_time, session_time)),"
                         f" MAX(COALESCE(event_time, session_time)) FROM traces {where}", params)[0]
        units = dict(self.read(f"SELECT level, COUNT(*) FROM units {where} GROUP BY level", params))
        return {
            "path": self.path,
            "traces": traces,
            "sessions": sessions,
            "characters": chars,
            "scopes": len(self.scopes()) if scope is None else 1,
            "speakers": speakers,
            "history_events": events,
            "first_time": span[0],
            "last_time": span[1],
            "units": units,
        }


TraceStore = SQLiteStore  # the name before backends existed; existing imports keep working

_COLUMNS = ("rowid_, text, user_key, agent_key, session, has_session, session_time, speaker, role,"
            " event_time, recorded_at, seq, source_id, metadata, attachments, version")


_KEY_COLUMNS = "key_id, user_key, agent_key, label, created_at, revoked_at"


def _row_to_key(row: tuple) -> ApiKey:
    key_id, user, agent, label, created, revoked = row
    return ApiKey(key_id, Scope(user or None, agent or None), label, created, revoked)


def _intern(value: str | None) -> str | None:
    return None if value is None else sys.intern(value)


def _row_fields(row: tuple) -> tuple:
    """What an index needs of every turn, without building a Trace (see TraceRows.fields)."""
    attachments = row[14]
    return (row[1], () if attachments == "[]" else tuple(json.loads(attachments)), row[7],
            row[4] if row[5] else None, row[9], row[6], row[10])


def _row_to_trace(row: tuple) -> Trace:
    (rowid, text, user, agent, session, has_session, session_time, speaker, role, event_time,
     recorded_at, seq, source_id, metadata, attachments, version) = row
    # Scopes, sessions, speakers, roles and times repeat across rows: one string object each.
    intern = _intern
    return Trace(
        id=trace_id(rowid), text=text, user=intern(user) or None, agent=intern(agent) or None,
        session=intern(session) if has_session else None, session_time=intern(session_time),
        speaker=intern(speaker), role=sys.intern(role), event_time=intern(event_time),
        recorded_at=sys.intern(recorded_at), seq=seq, source_id=source_id,
        metadata={} if metadata == "{}" else json.loads(metadata),
        attachments=() if attachments == "[]" else tuple(json.loads(attachments)), version=version)


def _owned_row(conn: sqlite3.Connection, rowid: int, tid: str, scope: Scope) -> tuple:
    """(text, metadata, session) of a trace in ``scope``, or NotFound: writes never cross scopes."""
    row = conn.execute(
        "SELECT text, metadata, session FROM traces WHERE rowid_=? AND user_key=? AND agent_key=?",
        (rowid, *scope.key)).fetchone()
    if row is None:
        raise NotFound(not_found_message(tid, scope))
    return row


def _mark_dirty(conn: sqlite3.Connection, user: str, agent: str, session: str) -> None:
    conn.execute("INSERT OR IGNORE INTO dirty_sessions VALUES (?,?,?)", (user, agent, session))


def _insert(conn: sqlite3.Connection, drafts: Sequence[CleanDraft], user: str, agent: str,
            now: str) -> list[str]:
    """Insert checked drafts into one scope (inside the caller's transaction); their ids."""
    ids: list[str] = []
    next_seq: dict[str, int] = {}
    for item in drafts:
        if item.seq is None:
            if item.session not in next_seq:
                row = conn.execute(
                    "SELECT MAX(seq) FROM traces WHERE user_key=? AND agent_key=? AND session=?",
                    (user, agent, item.session)).fetchone()
                next_seq[item.session] = -1 if row[0] is None else row[0]
            seq = next_seq[item.session] + 1
            if seq > validate.MAX_INT:
                raise InvalidInput(f"session {validate.printable(item.session)!r} already holds "
                                   f"seq {validate.MAX_INT}, the largest: pass seq explicitly")
            next_seq[item.session] = seq
        else:
            seq = item.seq
            next_seq[item.session] = max(next_seq.get(item.session, -1), seq)
        meta = json.dumps(item.metadata, ensure_ascii=False, sort_keys=True)
        cur = conn.execute(
            "INSERT INTO traces (user_key, agent_key, session, seq, text, speaker, role,"
            " session_time, event_time, recorded_at, source_id, metadata, attachments,"
            " has_session) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (user, agent, item.session, seq, item.text, item.speaker, item.role,
             item.session_time, item.event_time, now, item.source_id, meta,
             json.dumps(list(item.attachments), ensure_ascii=False), int(item.has_session)))
        rowid = cur.lastrowid
        if rowid is None:
            raise StoreError("the insert returned no row id; nothing was changed")
        conn.execute(
            "INSERT INTO trace_history (trace_rowid, user_key, agent_key, event, at,"
            " new_text, new_metadata) VALUES (?,?,?,?,?,?,?)",
            (rowid, user, agent, "add", now, item.text, meta))
        ids.append(trace_id(rowid))
    for session in next_seq:
        _mark_dirty(conn, user, agent, session)
    return ids


def _load(value: str | None) -> Any:
    return None if value is None else json.loads(value)
