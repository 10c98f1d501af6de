"""What the SQLite and PostgreSQL backends share: every statement. Both key scopes by
``scope_key`` (the scope as JSON, checks.scope_json) and write their statements with ``?``
placeholders; what a backend spells differently is its ``Dialect`` (dialect.py), and the SQL of
derived rows is in derived.py.

``SQLStore`` implements the roles once, on the hooks each backend gives:

* ``_query(sql, params)``: one read; ``_reading(fn)``: ``fn(run)`` for reads that need no
  transaction; ``_transact(fn)``: ``fn(run)`` in one write transaction; ``_consistent(fn)``:
  ``fn(run)`` in one read transaction (one version of the data);
* ``_insert`` (new traces: SQLite row by row, PostgreSQL with COPY), ``_insert_parts`` (a
  persisted index's arrays), ``_receipt`` (what an erasure leaves in the files), ``list``'s
  time and metadata conditions (``_time_condition``, ``_metadata_condition``).

``run`` and ``_query`` translate the placeholders to the driver's style (PostgreSQL's ``%s``),
so no statement may hold a literal ``?`` or ``%``.
"""

from __future__ import annotations

import builtins
from abc import abstractmethod
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from ..errors import InvalidInput, NotFound, StoreError
from ..types import HistoryEvent, Scope, Trace
from . import derived, validate
from .base import StoreBase, TraceRows
from .checks import (
    check_flag,
    check_meta_key,
    check_meta_value,
    check_meta_write,
    clean_list_filters,
    not_found_message,
    scope_json,
    scope_key,
)
from .dialect import Dialect, Run
from .keys import ApiKey, KeyIdTaken, check_key_id
from .receipts import DeleteReceipt
from .roles import CleanDraft, DerivedUnit, HeldRows, Replacing, TraceDraft
from .rows import (
    COLUMNS,
    KEY_COLUMNS,
    dump_metadata,
    load_json,
    no_session_message,
    now,
    session_name,
    to_fields,
    to_key,
    to_trace,
)

T = TypeVar("T")
# Every per-scope table a scope's deletion empties, in an order its foreign keys allow.
SCOPE_TABLES = ("traces", "trace_history", "trace_signals", "unit_mentions", "units", "dirty_sessions",
                "entity_vectors", "session_changes", "scope_snapshots", "scope_snapshot_parts")


class SQLStore(StoreBase):
    """The statements both SQL backends share (see the module docstring)."""

    lock_timeout_s: float
    read_only: str | None = None  # why writes are refused (SQLite opened read-only), else None
    dialect: Dialect
    # One value per (scope, session) of the traces table, for counting sessions.
    _SESSION_OF_SCOPE = "(scope_key, session)"
    # What ``save_snapshot`` appends to its read of the scope's version row (PostgreSQL locks it).
    _LOCK_ROW = ""

    # -- hooks ------------------------------------------------------------------------------
    @abstractmethod
    def _query(self, sql: str, params: Sequence[Any] = ()) -> builtins.list[tuple[Any, ...]]:
        """The rows of one read statement (``?`` placeholders)."""

    @abstractmethod
    def _reading(self, fn: Callable[[Run], T]) -> T:
        """``fn(run)`` for reads that need no transaction (each statement is one version)."""

    @abstractmethod
    def _transact(self, fn: Callable[[Run], T]) -> T:
        """``fn(run)`` in one write transaction: all of it or nothing."""

    @abstractmethod
    def _consistent(self, fn: Callable[[Run], T]) -> T:
        """``fn(run)`` in one read transaction: every statement sees the same version."""

    @abstractmethod
    def _insert(self, run: Run, drafts: Sequence[CleanDraft], key: str, user: str, agent: str,
                stamp: str) -> builtins.list[str]:
        """Insert checked drafts into one scope, with their 'add' events and dirty marks
        (inside the caller's write, after ``lock_scope``); their ids."""

    @abstractmethod
    def _insert_parts(self, run: Run, key: str, parts: dict[str, bytes]) -> None:
        """Write a persisted index's arrays (``scope_snapshot_parts``, emptied just before)."""

    @abstractmethod
    def _receipt(self, kind: str, trace_ids: Sequence[str], counts: Counter[str], *,
                 erased: bool, scope: Scope) -> DeleteReceipt:
        """The receipt of a committed delete: what the backend's files may still hold."""

    def _after_erasing_update(self) -> None:
        """What an ``update(keep_history=False)`` does after its commit (SQLite: the files)."""

    @abstractmethod
    def _time_condition(self, op: str) -> str:
        """``list``'s ``since``/``until`` condition: the trace's time ``op`` the bound parameter."""

    def _time_param(self, cleaned: str) -> Any:
        """A checked ``since``/``until`` as the parameter ``_time_condition`` compares with."""
        return cleaned

    @abstractmethod
    def _metadata_condition(self, name: str, value: Any) -> tuple[str, builtins.list[Any]]:
        """``list``'s metadata filter ``name == value`` (SQLite's ``json_extract`` semantics)."""

    def _check_storable(self, value: str | None, field: str) -> None:
        """InvalidInput if the backend cannot store ``value`` (PostgreSQL: a NUL character)."""

    def _scope(self, scope: Scope) -> str:
        """The scope's ``scope_key``, after the interface's checks and the backend's own."""
        user, agent = scope_key(scope)
        self._check_storable(user, "user")
        self._check_storable(agent, "agent")
        return scope_json(user, agent)

    def _scoped(self, scope: Scope, alias: str = "") -> tuple[str, tuple[str, ...]]:
        """(condition, values) that pin a statement to ``scope`` (columns of ``alias``)."""
        return f"{alias + '.' if alias else ''}scope_key = ?", (self._scope(scope),)

    # -- plumbing shared by both ------------------------------------------------------------
    _closed: bool
    path: str

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
        rows = self._query(f"{self.dialect.all_scopes}SELECT DISTINCT user_key, agent_key FROM traces ORDER BY 1, 2")
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

        def body(run: Run) -> tuple[Any, ...] | None:
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
        where, mark = "", self.dialect.all_scopes
        params: tuple[str, ...] = ()
        if scope is not None:
            where, params = self._scoped(scope)
            where, mark = f"WHERE {where}", ""

        def body(run: Run) -> dict[str, Any]:
            def rows(sql: str) -> builtins.list[tuple[Any, ...]]:
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
        self._scope(scope)  # the backend's own checks of the scope
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

        def body(run: Run) -> tuple[Any, ...] | None:
            run("UPDATE api_keys SET revoked_at = ? WHERE key_id = ? AND revoked_at IS NULL", (now(), key_id))
            row: tuple[Any, ...] | None = run(f"SELECT {KEY_COLUMNS} FROM api_keys WHERE key_id = ?",
                                              (key_id,)).fetchone()
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

    # -- reads ---------------------------------------------------------------------------------
    def get_rowids(self, rowids: Sequence[int]) -> dict[int, Trace]:
        ids = [int(r) for r in rowids if validate.MIN_INT <= int(r) <= validate.MAX_INT]
        if not ids:
            return {}
        d = self.dialect
        rows = self._query(f"{d.all_scopes}SELECT {COLUMNS} FROM traces WHERE {d.any_of('rowid_')}", (d.array(ids),))
        return {int(row[0]): to_trace(row, self.ids) for row in rows}

    def list(self, scope: Scope, *, session: str | None = None, since: Any = None,
             until: Any = None, metadata: dict[str, Any] | None = None,
             limit: int | None = None, offset: int = 0) -> builtins.list[Trace]:
        """Traces of one scope in conversation order, optionally filtered."""
        where, scoped = self._scoped(scope)
        conditions = [where]
        params: builtins.list[Any] = [*scoped]
        if session is not None:
            name = validate.clean_optional_str(session, "session") or ""
            self._check_storable(name, "session")
            conditions.append("session = ?")
            params.append(name)
        # Instants, not text: stored times keep their offsets (a time without one counts as
        # UTC, as dates.utc_key takes it).
        for bound, op, field in ((since, ">=", "since"), (until, "<=", "until")):
            cleaned = validate.clean_time(bound, field)
            if cleaned is not None:
                conditions.append(self._time_condition(op))
                params.append(self._time_param(cleaned))
        for name, value in clean_list_filters(metadata, limit, offset).items():
            condition, args = self._metadata_condition(name, value)
            conditions.append(condition)
            params += args
        sql = (f"SELECT {COLUMNS} FROM traces WHERE {' AND '.join(conditions)}"
               " ORDER BY session_time IS NULL, session_time, session, seq, rowid_")
        if limit is not None or offset:
            # SQLite takes OFFSET only after a LIMIT.
            sql += f" LIMIT {self.dialect.no_limit if limit is None else int(limit)} OFFSET {int(offset)}"
        return [to_trace(row, self.ids) for row in self._query(sql, params)]

    # -- writes --------------------------------------------------------------------------------
    def add_batches(self, batches: Sequence[tuple[Sequence[TraceDraft], Scope]]) -> builtins.list[builtins.list[str]]:
        """Check every draft of every batch first, then store all of them in one transaction."""
        cleaned = self.clean_batches(batches)
        keyed = []
        for number, (drafts, (user, agent)) in enumerate(cleaned):
            try:
                key = self._scope(Scope(user or None, agent or None))
            except InvalidInput as exc:
                prefix = f"batch #{number}, " if len(cleaned) > 1 else ""
                raise InvalidInput(f"{prefix}{exc}") from None
            keyed.append((drafts, key, user, agent))
        if not any(drafts for drafts, *_ in keyed):
            return [[] for _ in keyed]
        stamp = now()
        d = self.dialect

        def body(run: Run) -> builtins.list[builtins.list[str]]:
            # Every touched scope first, in one order: no two batches deadlock.
            for key in sorted({key for drafts, key, *_ in keyed if drafts}):
                d.lock_scope(run, key)
            return [self._insert(run, drafts, key, user, agent, stamp) if drafts else []
                    for drafts, key, user, agent in keyed]

        return self._transact(body)

    def update(self, tid: str, scope: Scope, *, text: Any = None, metadata: Any = None,
               keep_history: bool = True) -> Trace:
        """Replace text and/or metadata. The previous version stays in the history (auditable),
        unless ``keep_history=False``: then every earlier version is erased (see the base)."""
        new_text, new_meta, keep = self._clean_update(text, metadata, keep_history)
        rowid = self.ids.parse(tid)
        key = self._scope(scope)
        d = self.dialect

        def body(run: Run) -> None:
            version = d.lock_scope(run, key, reset=not keep)
            old_text, old_meta, session = _owned_row(run, key, rowid, tid, scope)
            text_out = new_text if new_text is not None else old_text
            meta_out = dump_metadata(new_meta) if new_meta is not None else old_meta
            run("UPDATE traces SET text = ?, metadata = ?, version = version + 1 WHERE scope_key = ? AND rowid_ = ?",
                (text_out, meta_out, key, rowid))
            if not keep:
                _purge_history(run, d, key, [rowid])
                derived.drop_snapshot(run, key)
                old_text = old_meta = None
            run("INSERT INTO trace_history (scope_key, trace_rowid, event, at, old_text, new_text, old_metadata,"
                " new_metadata) VALUES (?, ?, 'update', ?, ?, ?, ?, ?)",
                (key, rowid, now(), old_text, text_out, old_meta, meta_out))
            derived.mark_dirty(run, key, [session])
            derived.purge_units_of_trace(run, d, key, session, rowid, version)

        self._transact(body)
        if not keep:
            self._after_erasing_update()
        return self.get(tid, scope)

    def delete(self, tid: str, scope: Scope, *, keep_history: bool = False) -> DeleteReceipt:
        """Remove a trace and erase its text from every table (see the base and the backend's
        docstring on what its files keep); ``keep_history=True`` keeps it in the history."""
        rowid = self.ids.parse(tid)
        keep = check_flag(keep_history, "keep_history")
        key = self._scope(scope)
        d = self.dialect

        def body(run: Run) -> Counter[str]:
            version = d.lock_scope(run, key, reset=not keep)
            session = _owned_row(run, key, rowid, tid, scope)[2]
            counts = _remove_traces(run, d, key, [rowid], keep_history=keep)
            counts += derived.purge_units_of_trace(run, d, key, session, rowid, version)
            if not keep and run("SELECT 1 FROM traces WHERE scope_key = ? AND session = ? LIMIT 1",
                                (key, session)).fetchone() is None:
                # Its last trace: the name goes too (the wipe rebuilds other processes' indexes,
                # so they need no change-log row to drop the session).
                counts += derived.forget_session(run, key, session)
            else:
                derived.mark_dirty(run, key, [session])
            if not keep:
                counts += derived.drop_snapshot(run, key)
            return counts

        return self._receipt("trace", [tid], self._transact(body), erased=not keep, scope=scope)

    def delete_session(self, session: str, scope: Scope, *, keep_history: bool = False) -> DeleteReceipt:
        """Remove every trace of one session as ``delete`` removes one (see the base)."""
        name = session_name(session)
        self._check_storable(name, "session")
        keep = check_flag(keep_history, "keep_history")
        key = self._scope(scope)
        d = self.dialect

        def body(run: Run) -> tuple[builtins.list[int], Counter[str]]:
            version = d.lock_scope(run, key, reset=not keep)
            rowids = [int(r[0]) for r in run(
                "SELECT rowid_ FROM traces WHERE scope_key = ? AND session = ? AND has_session ORDER BY rowid_",
                (key, name))]
            if not rowids:
                raise NotFound(no_session_message(name, scope))
            counts = _remove_traces(run, d, key, rowids, keep_history=keep)
            counts += derived.purge_units_of_session(run, d, key, name)
            if keep:
                derived.note_session_change(run, key, name, version)
            else:
                counts += derived.forget_session(run, key, name) + derived.drop_snapshot(run, key)
            return rowids, counts

        rowids, counts = self._transact(body)
        return self._receipt("session", [self.ids.format(r) for r in rowids], counts, erased=not keep, scope=scope)

    def delete_scope(self, scope: Scope) -> DeleteReceipt:
        """Remove every trace, history event, derived row and per-scope fact (the embedder
        fingerprint) of one scope (see the base)."""
        key = self._scope(scope)
        d = self.dialect

        def body(run: Run) -> tuple[builtins.list[int], Counter[str]]:
            d.lock_scope(run, key, reset=True)
            rowids = [int(r[0]) for r in run("SELECT rowid_ FROM traces WHERE scope_key = ? ORDER BY rowid_", (key,))]
            counts: Counter[str] = Counter()
            if d.vec_join:  # vectors in their own table (SQLite): they go with their units
                counts["unit_vectors"] = int(run(
                    "SELECT COUNT(*) FROM unit_vectors WHERE unit_id IN (SELECT id FROM units WHERE scope_key = ?)",
                    (key,)).fetchone()[0])
            for table in SCOPE_TABLES:
                counts[table] = run(f"DELETE FROM {table} WHERE scope_key = ?", (key,)).rowcount
            counts["store_meta"] = run(
                f"DELETE FROM store_meta WHERE {d.strpos}(key, ':') > 0"
                f" AND substr(key, {d.strpos}(key, ':') + 1) = ?", (key,)).rowcount
            d.forget_scope(run, key)
            return rowids, counts

        rowids, counts = self._transact(body)
        return self._receipt("scope", [self.ids.format(r) for r in rowids], counts, erased=True, scope=scope)

    # -- derived rows (the SQL is in derived.py) ------------------------------------------------
    def dirty_sessions(self, scope: Scope) -> builtins.list[str]:
        key = self._scope(scope)
        return self._reading(lambda run: derived.dirty_sessions(run, key))

    def reset_derived(self, scope: Scope) -> None:
        key = self._scope(scope)
        self._transact(lambda run: derived.reset_derived(run, self.dialect, key))

    def stored_encodings(self, scope: Scope, text_hashes: Sequence[str], sessions: Sequence[str] = ()
                         ) -> tuple[dict[str, bytes], dict[str, builtins.list[tuple[Any, ...]]]]:
        key = self._scope(scope)
        return self._consistent(lambda run: derived.stored_encodings(run, self.dialect, key, text_hashes, sessions))

    def entities_with_vectors(self, scope: Scope, names: Sequence[str]) -> set[str]:
        key = self._scope(scope)
        return self._reading(lambda run: derived.entities_with_vectors(run, self.dialect, key, names))

    def commit_session(self, scope: Scope, session: str, expected: Sequence[tuple[int, int]],
                       units: Sequence[DerivedUnit], entity_vectors: dict[str, bytes],
                       replacing: Replacing | None = None) -> int | None:
        key = self._scope(scope)
        if self.read_only is not None:
            raise StoreError(f"this store is read-only: {self.path} ({self.read_only}), and session "
                             f"{validate.printable(session)!r} is not derived yet; run `zeromem index` "
                             "once with write access, then it can be searched read-only")
        try:
            return self._transact(lambda run: derived.commit_session(
                run, self.dialect, key, session, expected, units, entity_vectors, replacing))
        except derived.Stale:
            return None

    def turn_vectors(self, scope: Scope, session: str) -> dict[int, bytes]:
        key = self._scope(scope)
        return self._reading(lambda run: derived.turn_vectors(run, self.dialect, key, session))

    def trace_entities(self, scope: Scope, rowid: int, limit: int = 20
                       ) -> tuple[builtins.list[tuple[str, str, str, int, int]],
                                  builtins.list[tuple[int, builtins.list[str]]]]:
        key = self._scope(scope)
        return self._consistent(lambda run: derived.trace_entities(run, self.dialect, key, rowid, limit))

    def add_encoder_timings(self, seconds: dict[str, float], items: dict[str, int]) -> None:
        self._transact(lambda run: derived.add_encoder_timings(run, seconds, items))

    def trace_signals(self, scope: Scope, *, missing_only: bool = False,
                      rowids: Sequence[int] | None = None) -> dict[int, str | None]:
        key = self._scope(scope)
        return self._reading(lambda run: derived.trace_signals(
            run, self.dialect, key, missing_only=missing_only, rowids=rowids))

    def expiring(self, scope: Scope) -> dict[int, Any]:
        key = self._scope(scope)
        return self._reading(lambda run: self.dialect.expiring(run, key))

    def put_signals(self, scope: Scope, rows: Sequence[tuple[int, int, str]]) -> None:
        key = self._scope(scope)
        self._transact(lambda run: derived.put_signals(run, self.dialect, key, rows))

    def read_changes(self, scope: Scope, since: int, known_entities: set[str],
                     held: HeldRows | None = None) -> dict[str, Any]:
        """The derived rows an in-memory index at version ``since`` lacks, read in one read
        transaction: a consistent version of the scope, whatever other writers do meanwhile.
        See ``derived.read_changes``."""
        key = self._scope(scope)
        out = self._consistent(lambda run: derived.read_changes(
            run, self.dialect, key, since, known_entities, COLUMNS, held))
        ids = self.ids
        out["traces"] = [(row[0], to_trace(row, ids)) for row in out["traces"]]
        return out

    def save_snapshot(self, scope: Scope, version: int, facts: str, parts: dict[str, bytes],
                      format: int = 1) -> None:
        """Replace the scope's persisted index (derived, disposable) in one transaction; nothing
        is written for an index older than the scope's last wipe, or on a read-only store."""
        key = self._scope(scope)
        if self.read_only is not None:
            return  # a cache: a read-only store simply does without

        def body(run: Run) -> None:
            # Two processes saving the same scope at once take turns on its version row.
            if derived.snapshot_predates_wipe(run, key, version, lock=self._LOCK_ROW):
                return
            run("DELETE FROM scope_snapshot_parts WHERE scope_key = ?", (key,))
            self._insert_parts(run, key, parts)
            run("INSERT INTO scope_snapshots (scope_key, version, format, blob) VALUES (?, ?, ?, ?)"
                " ON CONFLICT (scope_key) DO UPDATE SET version = excluded.version,"
                " format = excluded.format, blob = excluded.blob", (key, version, format, facts.encode("utf-8")))

        self._transact(body)


def _owned_row(run: Run, key: str, rowid: int, tid: str, scope: Scope) -> tuple[Any, ...]:
    """(text, metadata, session) of a trace in the scope, or NotFound: writes never cross scopes."""
    row = run("SELECT text, metadata, session FROM traces WHERE scope_key = ? AND rowid_ = ?", (key, rowid)).fetchone()
    if row is None:
        raise NotFound(not_found_message(tid, scope))
    return tuple(row)


def _remove_traces(run: Run, d: Dialect, key: str, rowids: Sequence[int], *, keep_history: bool) -> Counter[str]:
    """Delete traces of one scope with a 'delete' event each: holding the old text and metadata
    when ``keep_history``, else a tombstone, every earlier event emptied too. Rows per table."""
    ids = d.array(rowids)
    counts: Counter[str] = Counter()
    if not keep_history:
        counts["trace_history"] = _purge_history(run, d, key, rowids)
    kept = "text, NULL, metadata, NULL" if keep_history else "NULL, NULL, NULL, NULL"
    # The scope's column kept off its index: rows by primary key (see derived.trace_signals).
    in_scope = f"{d.unindexed('scope_key')} = ? AND {d.any_of('rowid_')}"
    run("INSERT INTO trace_history (scope_key, trace_rowid, event, at, old_text, new_text, old_metadata,"
        f" new_metadata) SELECT scope_key, rowid_, 'delete', ?, {kept} FROM traces WHERE {in_scope} ORDER BY rowid_",
        (now(), key, ids))
    counts["traces"] = run(f"DELETE FROM traces WHERE {in_scope}", (key, ids)).rowcount
    counts["trace_signals"] = run(f"DELETE FROM trace_signals WHERE scope_key = ? AND {d.any_of('trace_rowid')}",
                                  (key, ids)).rowcount
    return counts


def _purge_history(run: Run, d: Dialect, key: str, rowids: Sequence[int]) -> int:
    """Empty the text and metadata of every history event of these traces (tombstones: the
    event, its time and the trace id stay); how many events held any."""
    return int(run(
        "UPDATE trace_history SET old_text = NULL, new_text = NULL, old_metadata = NULL, new_metadata = NULL"
        f" WHERE scope_key = ? AND {d.any_of('trace_rowid')} AND (old_text IS NOT NULL"
        " OR new_text IS NOT NULL OR old_metadata IS NOT NULL OR new_metadata IS NOT NULL)",
        (key, d.array(rowids))).rowcount)
