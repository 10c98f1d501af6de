"""What the SQLite and PostgreSQL backends share: every statement that is the same on both
but for how a statement names its scope and binds its values.

``SQLStore`` implements those methods once, on four hooks each backend gives:

* ``_query(sql, params)``: one read; ``_transact(fn)``: ``fn(run)`` in one write transaction;
  ``_consistent(fn)``: ``fn(run)`` in one read transaction (one version of the data);
* ``_scoped(scope, alias)``: the condition that pins a statement to one scope, and its values
  (SQLite: ``user_key`` and ``agent_key``; PostgreSQL: ``scope_key``, which every statement on a
  per-scope table must name, docs/postgres.md).

Statements here are written with ``?`` placeholders; ``run`` and ``_query`` translate them to
the driver's style (PostgreSQL's ``%s``), so none of them may hold a literal ``?`` or ``%``.
"""

from __future__ import annotations

import builtins
from abc import abstractmethod
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from ..errors import InvalidInput, NotFound, StoreError
from ..types import HistoryEvent, Scope, Trace
from . import validate
from .base import StoreBase, TraceRows
from .checks import (
    check_flag,
    check_meta_key,
    check_meta_value,
    check_meta_write,
    not_found_message,
    scope_key,
)
from .keys import ApiKey, KeyIdTaken, check_key_id
from .rows import COLUMNS, KEY_COLUMNS, load_json, now, to_fields, to_key, to_trace

T = TypeVar("T")
# One statement inside a transaction: (sql with ? placeholders, parameters) → a DB-API cursor.
Run = Callable[..., Any]


class SQLStore(StoreBase):
    """The statements both SQL backends share (see the module docstring)."""

    lock_timeout_s: float
    read_only: str | None = None  # why writes are refused (SQLite opened read-only), else None
    # Prefix of the statements that read across scopes on purpose (PostgreSQL marks them).
    _ALL_SCOPES = ""
    # One value per (scope, session) of the traces table, for counting sessions.
    _SESSION_OF_SCOPE = ""

    # -- hooks ------------------------------------------------------------------------------
    @abstractmethod
    def _query(self, sql: str, params: Sequence[Any] = ()) -> builtins.list[tuple]:
        """The rows of one read statement (``?`` placeholders)."""

    @abstractmethod
    def _transact(self, fn: Callable[[Run], T]) -> T:
        """``fn(run)`` in one write transaction: all of it or nothing."""

    @abstractmethod
    def _consistent(self, fn: Callable[[Run], T]) -> T:
        """``fn(run)`` in one read transaction: every statement sees the same version."""

    @abstractmethod
    def _scoped(self, scope: Scope, alias: str = "") -> tuple[str, tuple[str, ...]]:
        """(condition, values) that pin a statement to ``scope`` (columns of ``alias``)."""

    def _check_storable(self, value: str | None, field: str) -> None:
        """InvalidInput if the backend cannot store ``value`` (PostgreSQL: a NUL character)."""

    # -- plumbing shared by both ------------------------------------------------------------
    _closed: bool

    def _check_open(self) -> None:
        if self._closed:
            raise StoreError(f"the store {self.path} is closed: open it again (a new Memory)")

    def _locked_message(self) -> str:
        return (f"the database {self.path} is locked by another writer for more than "
                f"{self.lock_timeout_s:g} s; nothing was changed: raise lock_timeout_s "
                "(Config.lock_timeout_s, or --lock-timeout) or find the other process that holds it")

    def _clean_update(self, text: Any, metadata: Any, keep_history: Any
                      ) -> tuple[str | None, dict[str, Any] | None, bool]:
        """``update``'s arguments checked: (new text, new metadata, keep the history)."""
        if text is None and metadata is None:
            raise InvalidInput("update needs new text, new metadata, or both")
        new_text = validate.clean_text(text, max_chars=self.max_text_chars) if text is not None else None
        self._check_storable(new_text, "text")
        new_meta = validate.clean_metadata(metadata) if metadata is not None else None
        return new_text, new_meta, check_flag(keep_history, "keep_history")

    # -- traces -------------------------------------------------------------------------------
    def get(self, tid: str, scope: Scope) -> Trace:
        rowid = self.ids.parse(tid)
        where, params = self._scoped(scope)
        rows = self._query(f"SELECT {COLUMNS} FROM traces WHERE {where} AND rowid_ = ?", (*params, rowid))
        if not rows:
            raise NotFound(not_found_message(tid, scope))
        return to_trace(rows[0], self.ids)

    def history(self, tid: str, scope: Scope) -> builtins.list[HistoryEvent]:
        rowid = self.ids.parse(tid)
        where, params = self._scoped(scope)
        rows = self._query(
            "SELECT event, at, old_text, new_text, old_metadata, new_metadata FROM trace_history"
            f" WHERE {where} AND trace_rowid = ? ORDER BY id", (*params, rowid))
        if not rows:
            raise NotFound(not_found_message(tid, scope))
        return [HistoryEvent(tid, ev, at, old, new, load_json(om), load_json(nm))
                for ev, at, old, new, om, nm in rows]

    def count(self, scope: Scope) -> int:
        where, params = self._scoped(scope)
        return int(self._query(f"SELECT COUNT(*) FROM traces WHERE {where}", params)[0][0])

    def scopes(self) -> builtins.list[Scope]:
        rows = self._query(f"{self._ALL_SCOPES}SELECT DISTINCT user_key, agent_key FROM traces ORDER BY 1, 2")
        return [Scope(u or None, a or None) for u, a in rows]

    def sessions(self, scope: Scope) -> builtins.list[dict[str, Any]]:
        where, params = self._scoped(scope)
        time = "COALESCE(event_time, session_time, recorded_at)"
        rows = self._query(
            f"SELECT session, MAX(CASE WHEN has_session THEN 1 ELSE 0 END), COUNT(*), MIN({time}),"
            f" MAX({time}), MIN(CASE WHEN session_time IS NULL THEN 1 ELSE 0 END), MIN(session_time)"
            f" FROM traces WHERE {where} GROUP BY session ORDER BY 6, 7, 1", params)
        return [{"session": name if has else None, "traces": int(n), "first_time": first,
                 "last_time": last} for name, has, n, first, last, _, _ in rows]

    def trace_versions(self, scope: Scope) -> builtins.list[tuple[int, int]]:
        where, params = self._scoped(scope)
        rows = self._query(f"SELECT rowid_, version FROM traces WHERE {where}"
                           " ORDER BY session_time IS NULL, session_time, session, seq, rowid_", params)
        return [(int(r), int(v)) for r, v in rows]

    # -- change log and snapshots --------------------------------------------------------------
    def scope_version(self, scope: Scope) -> int:
        where, params = self._scoped(scope)
        rows = self._query(f"SELECT version FROM scope_versions WHERE {where}", params)
        return int(rows[0][0]) if rows else 0

    def snapshot_version(self, scope: Scope, format: int = 1) -> int | None:
        where, params = self._scoped(scope)
        rows = self._query(f"SELECT version FROM scope_snapshots WHERE {where} AND format = ?",
                           (*params, format))
        return int(rows[0][0]) if rows else None

    def load_snapshot(self, scope: Scope, format: int = 1
                      ) -> tuple[int, str, dict[str, bytes], TraceRows] | None:
        """The scope's persisted index — (version, facts, parts, every trace by rowid) — read
        in one read transaction, or None if there is none or a wipe made it useless."""
        where, params = self._scoped(scope)
        s_where, _ = self._scoped(scope, "s")
        v_where, v_params = self._scoped(scope, "v")

        def body(run: Run) -> tuple | None:
            # The version row is joined on the same bound scope, so each table is pinned to it.
            head = run(f"SELECT s.version, s.blob, COALESCE(v.reset_version, 0) FROM scope_snapshots s"
                       f" LEFT JOIN scope_versions v ON {v_where} WHERE {s_where} AND s.format = ?",
                       (*v_params, *params, format)).fetchone()
            if head is None or head[2] > head[0]:
                return None
            parts = self._snapshot_parts(run, where, params)
            # The sessions the catch-up re-reads (changed since the snapshot's version) or that
            # wait to be derived: outside them the snapshot must hold the traces read here.
            unsettled = frozenset(r[0] for sql, args in (
                (f"SELECT session FROM session_changes WHERE {where} AND version > ?", (*params, head[0])),
                (f"SELECT session FROM dirty_sessions WHERE {where}", params)) for r in run(sql, args).fetchall())
            return head, parts, run(f"SELECT {COLUMNS} FROM traces WHERE {where}", params).fetchall(), unsettled

        got = self._consistent(body)
        if got is None:
            return None
        head, parts, rows, unsettled = got
        ids = self.ids
        traces = TraceRows({row[0]: row for row in rows}, lambda row: to_trace(row, ids), to_fields,
                           session_column=4, unsettled=unsettled)
        # (Damaged bytes decode to replacement characters: the checksum then refuses the facts.)
        return int(head[0]), bytes(head[1]).decode("utf-8", errors="replace"), parts, traces

    def _snapshot_parts(self, run: Run, where: str, params: Sequence[Any]) -> dict[str, bytes]:
        """The persisted index's arrays by name (read inside ``load_snapshot``'s transaction)."""
        return {name: bytes(blob) for name, blob in run(
            f"SELECT name, blob FROM scope_snapshot_parts WHERE {where}", params).fetchall()}

    # -- whole store ---------------------------------------------------------------------------
    def stats(self, scope: Scope | None = None) -> dict[str, Any]:
        where, mark = "", self._ALL_SCOPES
        params: tuple[str, ...] = ()
        if scope is not None:
            where, params = self._scoped(scope)
            where, mark = f"WHERE {where}", ""

        def body(run: Run) -> dict[str, Any]:
            def rows(sql: str) -> builtins.list[tuple]:
                return run(mark + sql, params).fetchall()

            traces, sessions, chars = rows(
                f"SELECT COUNT(*), COUNT(DISTINCT {self._SESSION_OF_SCOPE}), COALESCE(SUM(length(text)), 0)"
                f" FROM traces {where}")[0]
            events = {e: int(n) for e, n in rows(
                f"SELECT event, COUNT(*) FROM trace_history {where} GROUP BY event")}
            speakers = {s: int(n) for s, n in rows(
                f"SELECT COALESCE(speaker, ''), COUNT(*) FROM traces {where} GROUP BY 1 ORDER BY 1")}
            span = rows("SELECT MIN(COALESCE(event_time, session_time)),"
                        f" MAX(COALESCE(event_time, session_time)) FROM traces {where}")[0]
            units = {level: int(n) for level, n in rows(
                f"SELECT level, COUNT(*) FROM units {where} GROUP BY level")}
            n_scopes = 1 if scope is not None else int(rows(
                "SELECT COUNT(*) FROM (SELECT DISTINCT user_key, agent_key FROM traces) s")[0][0])
            return {"path": self.path, "traces": int(traces), "sessions": int(sessions),
                    "characters": int(chars), "scopes": n_scopes, "speakers": speakers,
                    "history_events": events, "first_time": span[0], "last_time": span[1],
                    "units": units}

        return self._consistent(body)

    # -- API keys ------------------------------------------------------------------------------
    def add_api_key(self, key_id: str, key_hash: str, scope: Scope, label: str | None) -> ApiKey:
        user, agent = scope_key(scope)
        self._scoped(scope)  # the backend's own checks of the scope
        key_id = check_key_id(key_id)
        label = validate.clean_optional_str(label, "label")
        self._check_storable(label, "label")
        self._check_storable(key_hash, "key hash")
        created = now()
        added = self._transact(lambda run: run(
            "INSERT INTO api_keys (key_id, key_hash, user_key, agent_key, label, created_at)"
            " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
            (key_id, key_hash, user, agent, label, created)).rowcount)
        if not added:
            raise KeyIdTaken(f"an API key with id {key_id} already exists; make a new key")
        return ApiKey(key_id, scope, label, created)

    def api_key_by_hash(self, key_hash: str) -> ApiKey | None:
        if not isinstance(key_hash, str) or "\x00" in key_hash:
            return None  # no stored hash is anything else
        rows = self._query(f"SELECT {KEY_COLUMNS} FROM api_keys WHERE key_hash = ?", (key_hash,))
        return to_key(rows[0]) if rows else None

    def api_keys(self) -> builtins.list[ApiKey]:
        return [to_key(row) for row in
                self._query(f"SELECT {KEY_COLUMNS} FROM api_keys ORDER BY created_at, key_id")]

    def revoke_api_key(self, key_id: str) -> ApiKey:
        key_id = check_key_id(key_id)

        def body(run: Run) -> tuple | None:
            run("UPDATE api_keys SET revoked_at = ? WHERE key_id = ? AND revoked_at IS NULL", (now(), key_id))
            row: tuple | None = run(f"SELECT {KEY_COLUMNS} FROM api_keys WHERE key_id = ?", (key_id,)).fetchone()
            return row

        row = self._transact(body)
        if row is None:
            raise NotFound(f"no API key with id {key_id!r}: see `zeromem keys list`")
        return to_key(row)

    def _scope_keys(self, scope: Scope) -> int:
        """How many API keys (active or revoked) name this scope."""
        return int(self._query("SELECT COUNT(*) FROM api_keys WHERE user_key = ? AND agent_key = ?",
                               scope_key(scope))[0][0])

    # -- per-store facts -----------------------------------------------------------------------
    def get_meta(self, key: str) -> str | None:
        key = check_meta_key(key)
        self._check_storable(key, "store_meta key")
        rows = self._query("SELECT value FROM store_meta WHERE key = ?", (key,))
        return rows[0][0] if rows else None

    def _meta_args(self, key: str, value: str) -> tuple[str, str]:
        key, value = check_meta_write(key), check_meta_value(value)
        self._check_storable(key, "store_meta key")
        self._check_storable(value, "store_meta value")
        return key, value

    def set_meta(self, key: str, value: str) -> None:
        key, value = self._meta_args(key, value)
        self._transact(lambda run: run("INSERT INTO store_meta (key, value) VALUES (?, ?)"
                                       " ON CONFLICT (key) DO UPDATE SET value = excluded.value", (key, value)))

    def setdefault_meta(self, key: str, value: str) -> str:
        key, value = self._meta_args(key, value)
        if self.read_only is not None:
            # Nothing can be recorded through a read-only store: the stored value, else the one
            # offered (what a search's embedder check records on a scope that has none yet).
            recorded = self.get_meta(key)
            return value if recorded is None else recorded

        def body(run: Run) -> str:
            run("INSERT INTO store_meta (key, value) VALUES (?, ?) ON CONFLICT DO NOTHING", (key, value))
            # A new statement sees a concurrent winner's committed value (PostgreSQL's READ COMMITTED).
            return str(run("SELECT value FROM store_meta WHERE key = ?", (key,)).fetchone()[0])

        return self._transact(body)

    def delete_meta(self, key: str) -> bool:
        key = check_meta_write(key)
        self._check_storable(key, "store_meta key")
        return bool(self._transact(lambda run: run("DELETE FROM store_meta WHERE key = ?", (key,)).rowcount > 0))
