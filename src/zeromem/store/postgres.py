"""PostgreSQL + pgvector store: the same source of record as SQLiteStore, for a shared server.

``PostgresStore("postgresql://user@host:5432/db")`` (or ``open_store`` / ``Memory`` with that
URL) connects through a ``psycopg_pool.ConnectionPool``, brings the schema up to date
(postgres_schema.py, under an advisory lock) and then behaves as ``StoreBase`` says — the
conformance suite (tests/conformance) runs unchanged on both backends:

* every write is one transaction that first bumps and locks its scope's version row
  (postgres_derived.lock_scope): writes to one scope are serialized across processes, ids
  grow in commit order, a batch lands whole or not at all; writes to different scopes run
  side by side;
* every multi-statement read (``read_changes``, ``load_snapshot``, ``trace_entities``,
  ``stats``) is one REPEATABLE READ transaction: one consistent version of the scope;
* every statement on a per-scope table filters by ``scope_key`` (the scope as JSON, e.g.
  ``["ana",""]``) and every join is on it, so the tables can be distributed by scope with
  Citus (docs/postgres.md). Three reads are across scopes by contract (``scopes()``,
  ``stats()`` of the whole store, ``get_rowids``); they carry the comment ``/* all-scopes */``.

PostgreSQL cannot store the NUL character (``\\x00``) in text: such input is refused with
InvalidInput before anything is written (SQLite would store it).

Erasure (``delete``, ``delete_session``, ``delete_scope``, ``update(keep_history=False)``)
removes the rows and empties the history events exactly as SQLiteStore does: no table holds
the text or the erased identifiers afterwards. PostgreSQL itself keeps the old row versions
(dead tuples) in the table and index files — a plain VACUUM only marks their space reusable —
and the text in its write-ahead log until the segments are recycled and overwritten; base
backups, WAL archives and replicas keep their own copies. Every receipt says so
(``DeleteReceipt.retained``). ``compact`` (``zeromem compact``, ``zeromem delete ... --compact``)
runs VACUUM FULL + ANALYZE on zeromem's tables, VACUUM FULL pg_statistic and CHECKPOINT: the
table files then hold none of it (tests/test_erasure_identifiers.py greps them); the WAL
copies stay until PostgreSQL reuses the segments, which no SQL command forces.

Lock waits: every connection sets ``lock_timeout``, so a write blocked by another
transaction's lock fails after ``lock_timeout_s`` with a StoreError that says so.
"""

from __future__ import annotations

import builtins
import itertools
import json
import operator
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, cast

import psycopg
from psycopg import errors as pg_errors
from psycopg.types import TypeInfo
from psycopg_pool import ConnectionPool, PoolTimeout

from ..errors import InvalidInput, StoreError
from ..types import Scope
from . import derived, validate
from . import postgres_derived as pgd
from . import postgres_portable as pgp
from .checks import DEFAULT_LOCK_TIMEOUT_S, check_flag, check_lock_timeout, id_codec
from .dates import utc_key
from .dialect import Dialect, Run
from .ids import ID_KEY
from .postgres_derived import PgRun, PostgresDialect
from .postgres_schema import SNAPSHOT_CHUNK, migrate
from .receipts import DeleteReceipt, make_receipt, retained_identifiers
from .roles import CleanDraft, ExportRows, Restored, TraceDraft
from .roles.portable import RestoredEvent, RestoredTombstone, RestoredTrace
from .rows import dump_attachments, dump_metadata, number_drafts
from .sqlstore import SQLStore, T
from .urls import redact_url

__all__ = ["PostgresStore", "redact_url"]

_RETRIES = 5  # deadlocks and serialization failures are retried, then reported
_RETRYABLE = (pg_errors.DeadlockDetected, pg_errors.SerializationFailure)
_TIME = "COALESCE(event_time, session_time, recorded_at)"
# That time as a UTC instant (timestamp without zone): stored times keep their offset, which
# text comparison ignores; a time without one counts as UTC (store/dates.py, utc_key).
_TIME_UTC = (f"(CASE WHEN {_TIME} ~ '[+-][0-9][0-9]:[0-9][0-9](:[0-9][0-9]){{0,1}}$'"
             f" THEN ({_TIME})::timestamptz AT TIME ZONE 'UTC' ELSE ({_TIME})::timestamp END)")
ALL_SCOPES = PostgresDialect.all_scopes
DEFAULT_POOL_SIZE = 8
# What a receipt says PostgreSQL may still hold after an erasure (see the module docstring).
# A plain VACUUM (or autovacuum) only marks the space of dead tuples reusable: the bytes stay
# until new rows overwrite them.
RETAINED = (("PostgreSQL keeps the deleted and replaced row versions (dead tuples) in the table "
             "and index files until VACUUM FULL rewrites them: run `zeromem compact` (or "
             "`zeromem delete ... --compact`)"),
            ("PostgreSQL's write-ahead log (pg_wal) keeps the text until its segments are recycled "
             "and overwritten, which SQL cannot force (on Citus, on every node that holds the "
             "scope's shards): about max_wal_size of newer WAL, which `zeromem compact` reports; "
             "base backups, WAL archives and replicas keep their own copies"))


def _no_nul(value: str | None, field: str) -> None:
    if value is not None and "\x00" in value:
        raise InvalidInput(f"{field} contains a NUL character (\\x00), which PostgreSQL cannot "
                           "store in text: remove it")


class PostgresStore(SQLStore):
    """Verbatim traces, history, scope versions and derived rows in PostgreSQL + pgvector."""

    def __init__(self, url: str, *, max_text_chars: int = validate.DEFAULT_MAX_TEXT_CHARS,
                 timeout_s: float = 30.0, pool_size: int = DEFAULT_POOL_SIZE,
                 lock_timeout_s: float = DEFAULT_LOCK_TIMEOUT_S) -> None:
        self.path = redact_url(url)
        self.max_text_chars = max_text_chars
        self.lock_timeout_s = check_lock_timeout(lock_timeout_s)
        self._closed = False
        try:
            first = psycopg.connect(url, autocommit=True, connect_timeout=max(2, int(timeout_s)))
        except psycopg.Error as exc:
            raise StoreError(f"cannot connect to {self.path}: {_first_line(exc)}") from None
        try:
            migrate(first)
            pgd.ensure_version_floor(PgRun(first))
            oid, array_oid = _one(first.execute("SELECT 'vector'::regtype::oid, 'vector[]'::regtype::oid"))
            self._vector = TypeInfo("vector", int(oid), int(array_oid))
            key = first.execute("SELECT value FROM store_meta WHERE key = %s", (ID_KEY,)).fetchone()
            self.ids = id_codec(key[0] if key else None, self.path)
        except StoreError:
            raise
        except pg_errors.InsufficientPrivilege as exc:
            raise StoreError(f"cannot set up the zeromem schema in {self.path}: {_first_line(exc)}; "
                             "an administrator must run CREATE EXTENSION vector there (pgvector), "
                             "or grant this user CREATE on the database") from None
        except psycopg.Error as exc:
            raise StoreError(f"cannot open {self.path} as a zeromem store: {_first_line(exc)}") from None
        finally:
            first.close()
        self._pool = ConnectionPool(url, min_size=1, max_size=max(1, pool_size), open=False,
                                    kwargs={"autocommit": True, "connect_timeout": max(2, int(timeout_s))},
                                    configure=self._configure,
                                    timeout=timeout_s, name="zeromem")
        try:
            self._pool.open(wait=True, timeout=timeout_s)
        except PoolTimeout:
            self._pool.close()
            raise StoreError(f"cannot open a connection pool to {self.path} within {timeout_s} s") from None

    # -- plumbing -----------------------------------------------------------------------
    def _configure(self, conn: psycopg.Connection) -> None:
        pgd.register_vector(conn, self._vector)
        # A session setting (the connections are autocommit): every statement of every
        # transaction on this connection waits at most this long for a lock.
        conn.execute(f"SET lock_timeout = {max(1, int(self.lock_timeout_s * 1000))}")

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._pool.close()

    @contextmanager
    def _connection(self, what: str) -> Iterator[psycopg.Connection]:
        """A pooled autocommit connection; driver errors become StoreError naming ``what``."""
        self._check_open()
        try:
            with self._pool.connection() as conn:
                yield conn
        except PoolTimeout:
            raise StoreError(f"no free connection to {self.path}: the pool stayed busy; try again") from None
        except psycopg.Error as exc:
            raise StoreError(f"{what} failed on {self.path}: {_first_line(exc)}") from None

    # -- SQLStore's hooks ---------------------------------------------------------------
    dialect: Dialect = PostgresDialect()
    _LOCK_ROW = " FOR UPDATE"  # two processes saving a scope's index at once take turns

    def _query(self, sql: str, params: Sequence[Any] = ()) -> builtins.list[tuple[Any, ...]]:
        return self._read(sql.replace("?", "%s"), params)

    def _reading(self, fn: Callable[[Run], T]) -> T:
        with self._connection("read") as conn:
            return fn(PgRun(conn))

    def _transact(self, fn: Callable[[Run], T]) -> T:
        return self._write(lambda conn: fn(PgRun(conn)))

    def _consistent(self, fn: Callable[[Run], T]) -> T:
        return self._snapshot(lambda conn: fn(PgRun(conn)))

    def _check_storable(self, value: str | None, field: str) -> None:
        _no_nul(value, field)

    def _read(self, sql: str, params: Sequence[Any] = ()) -> builtins.list[tuple[Any, ...]]:
        with self._connection("read") as conn:
            return conn.execute(sql, params).fetchall()

    def _snapshot(self, fn: Callable[[psycopg.Connection], T]) -> T:
        """``fn(conn)`` inside ONE repeatable-read, read-only transaction."""
        with self._connection("read") as conn:
            conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            try:
                return fn(conn)
            finally:
                conn.execute("ROLLBACK")

    def _write(self, fn: Callable[[psycopg.Connection], T]) -> T:
        """``fn(conn)`` in one transaction: all of it or nothing; deadlocks are retried."""
        for attempt in range(_RETRIES):
            try:
                with self._connection("write") as conn, conn.transaction():
                    return fn(conn)
            except StoreError as exc:
                if isinstance(exc.__context__, pg_errors.LockNotAvailable):
                    raise StoreError(self._locked_message()) from None
                if not isinstance(exc.__context__, _RETRYABLE) or attempt == _RETRIES - 1:
                    raise StoreError(f"{exc}; nothing was changed") from None
        raise StoreError(f"write failed on {self.path}")  # pragma: no cover - loop always returns


    def clean(self, draft: TraceDraft) -> CleanDraft:
        """The interface's checks, then PostgreSQL's own: no NUL character in any text."""
        out = super().clean(draft)
        for field in ("text", "session", "speaker", "source_id"):
            _no_nul(getattr(out, field), field)
        for item in out.attachments:
            _no_nul(item, "attachment")
        return out


    def _snapshot_parts(self, run: Run, where: str, params: Sequence[Any]) -> dict[str, bytes]:
        """The arrays' chunks streamed one row at a time, in binary (no hex text twice the size;
        see ``SNAPSHOT_CHUNK``), each array joined as soon as its last chunk arrived."""
        rows = cast(PgRun, run).stream(
            f"SELECT name, blob FROM scope_snapshot_parts WHERE {where} ORDER BY name, chunk", params)
        parts: dict[str, bytes] = {}
        for name, chunks in itertools.groupby(rows, key=operator.itemgetter(0)):
            blobs = [blob for _, blob in chunks]
            parts[name] = blobs[0] if len(blobs) == 1 else b"".join(blobs)
        return parts


    def _insert_parts(self, run: Run, key: str, parts: dict[str, bytes]) -> None:
        """One row per chunk, sent one at a time: no message larger than a chunk (schema v4)."""
        for name, blob in sorted(parts.items()):
            view = memoryview(blob)
            for chunk, start in enumerate(range(0, max(1, len(view)), SNAPSHOT_CHUNK)):
                run("INSERT INTO scope_snapshot_parts (scope_key, name, chunk, blob) VALUES (?, ?, ?, ?)",
                    (key, name, chunk, view[start:start + SNAPSHOT_CHUNK]))

    def _insert(self, run: Run, drafts: Sequence[CleanDraft], key: str, user: str, agent: str,
                stamp: str) -> builtins.list[str]:
        """With COPY: ids from the sequence first, then every row in one stream per table."""
        conn = cast(PgRun, run).conn
        implicit = sorted({d.session for d in drafts if d.seq is None})
        stored: dict[str, int] = {}
        if implicit:
            stored = {s: int(top) for s, top in run(
                "SELECT session, MAX(seq) FROM traces WHERE scope_key = ? AND session = ANY(?) GROUP BY session",
                (key, implicit))}
        ids = pgd.allocate(run, "zeromem_trace_ids", len(drafts))
        cur = conn.cursor()
        seqs = number_drafts(drafts, lambda session: stored.get(session, -1))
        metas = [dump_metadata(item.metadata) for item in drafts]
        with cur.copy("COPY traces (scope_key, rowid_, user_key, agent_key, session, seq, text, speaker,"
                      " role, session_time, event_time, recorded_at, source_id, metadata, attachments,"
                      " has_session) FROM STDIN") as copy:
            for rowid, item, seq, meta in zip(ids, drafts, seqs, metas):
                copy.write_row((key, rowid, user, agent, item.session, seq, item.text, item.speaker, item.role,
                                item.session_time, item.event_time, stamp, item.source_id, meta,
                                dump_attachments(item.attachments), item.has_session))
        with cur.copy("COPY trace_history (scope_key, trace_rowid, event, at, new_text, new_metadata)"
                      " FROM STDIN") as copy:
            for rowid, item, meta in zip(ids, drafts, metas):
                copy.write_row((key, rowid, "add", stamp, item.text, meta))
        derived.mark_dirty(run, key, sorted({d.session for d in drafts}))
        return [self.ids.format(rowid) for rowid in ids]

    def _receipt(self, kind: str, trace_ids: Sequence[str], counts: Counter[str], *,
                 erased: bool, scope: Scope) -> DeleteReceipt:
        """No secure_delete, no checkpoint; what the server keeps (RETAINED)."""
        retained = retained_identifiers(kind, erased, self._scope_keys(scope))
        if erased:
            retained = [*RETAINED, *retained]
        return make_receipt(kind, trace_ids, counts, history_text_purged=erased, secure_delete=False,
                            checkpointed=False, retained=retained)

    def _time_condition(self, op: str) -> str:
        return f"{_TIME_UTC} {op} CAST(? AS timestamp)"  # UTC instants, as SQLite's julianday()

    def _time_param(self, cleaned: str) -> Any:
        return utc_key(cleaned)

    def _metadata_condition(self, name: str, value: Any) -> tuple[str, builtins.list[Any]]:
        return _metadata_clause(name, value)

    def compact(self) -> dict[str, Any]:
        """Make PostgreSQL drop what erasures left in its files, as far as SQL can: VACUUM FULL
        rewrites every zeromem table and index without the dead row versions (it locks each
        table while it runs); the column statistics are cleared, then ANALYZE rebuilds them
        from the live rows (ANALYZE alone keeps a table's old statistics, sampled values
        included, once the table is empty); VACUUM FULL pg_statistic drops their old row
        versions and CHECKPOINT lets the old files and WAL segments go. On Citus each step
        runs on every node: on each shard of every worker, then each worker's catalog. What it
        cannot do is listed, with how long the WAL keeps the text (this server's settings)."""
        from .postgres_schema import GLOBAL_TABLES, SCOPED_TABLES, is_distributed

        before = self.size_bytes()
        done: builtins.list[str] = []
        retained: builtins.list[str] = []
        tables = (*SCOPED_TABLES, *GLOBAL_TABLES)
        with self._connection("compact") as conn:
            citus = is_distributed(conn)
            where = " on the coordinator and every shard of every worker" if citus else ""
            for table in tables:
                conn.execute(f"VACUUM FULL {table}")  # Citus runs it on each shard too
            done.append("VACUUM FULL on every zeromem table" + where)
            why = pgd.clear_statistics(conn, tables, citus)
            if why is None:
                done.append("cleared the column statistics of every zeromem table" + where)
            else:
                retained.append(f"the column statistics (pg_statistic) of a table left empty keep the "
                                f"values ANALYZE sampled before the erasure: {why}")
            for table in tables:
                conn.execute(f"ANALYZE {table}")
            done.append("ANALYZE on every zeromem table" + where)
            for step, sql in (("VACUUM FULL pg_statistic", "VACUUM FULL pg_statistic"),
                              ("CHECKPOINT", "CHECKPOINT")):
                try:
                    conn.execute(sql)
                    failed = pgd.on_workers(conn, sql) if citus else []
                    if failed:
                        retained.append(f"{step} failed on the worker(s) {', '.join(failed)}: run it there")
                    done.append(step + (" on every node" if citus else ""))
                except (pg_errors.InsufficientPrivilege, pg_errors.FeatureNotSupported) as exc:
                    retained.append(f"{step} was not allowed ({_first_line(exc)}): an administrator "
                                    "can run it" + (" on every node" if citus else ""))
            retained.append(pgd.wal_retention(conn, citus))
        return {"store": self.path, "bytes_before": before, "bytes_after": self.size_bytes(),
                "done": done, "retained": retained}

    # -- bulk load (zeromem migrate; store/transfer.py) ------------------------------------
    def bulk_load(self, traces: Sequence[tuple[Any, ...]], history: Sequence[tuple[Any, ...]],
                  api_keys: Sequence[tuple[Any, ...]], meta: Sequence[tuple[str, str]], last_id: int) -> None:
        """Load another store's records into this EMPTY store in one transaction, ids kept.

        ``traces``: (rowid, user, agent, session, seq, text, speaker, role, session_time,
        event_time, recorded_at, source_id, metadata JSON, attachments JSON, version,
        has_session); ``history``: (trace rowid, user, agent, event, at, old_text, new_text,
        old_metadata, new_metadata), oldest first; ``api_keys``: (key_id, key_hash, user,
        agent, label, created_at, revoked_at); ``meta``: (key, value), with the source's trace
        id key (``ids.ID_KEY``), which replaces this store's, so every id stays what it was. New
        row numbers continue after ``last_id``. Every session is marked dirty (derived at the
        next index or search). InvalidInput if this store holds traces, history or keys already,
        or a text holds NUL.
        """
        carried = dict(meta).get(ID_KEY)
        id_key = carried if carried is not None else self.get_meta(ID_KEY)
        codec = id_codec(id_key, self.path)
        for row in traces:
            for value in row[3:14]:
                if isinstance(value, str) and "\x00" in value:
                    raise InvalidInput(f"trace {codec.format(row[0])} contains a NUL character (\\x00), "
                                       "which PostgreSQL cannot store: fix it in the source first")

        def body(conn: psycopg.Connection[Any]) -> None:
            busy = _one(conn.execute(
                f"{ALL_SCOPES}SELECT EXISTS (SELECT 1 FROM traces) OR EXISTS (SELECT 1 FROM trace_history)"
                " OR EXISTS (SELECT 1 FROM api_keys)"))[0]
            if busy:
                raise InvalidInput(f"{self.path} already holds traces, history or API keys: "
                                   "migrate into an empty database")
            # The records as an import that keeps ids writes them (one code path: postgres_portable).
            pgp.restore(conn, _restored(traces, history), codec, id_key, last_id, self.path, self._scope, ALL_SCOPES)
            cur = conn.cursor()
            if api_keys:
                cur.executemany("INSERT INTO api_keys (key_id, key_hash, user_key, agent_key, label,"
                                " created_at, revoked_at) VALUES (%s, %s, %s, %s, %s, %s, %s)", list(api_keys))
            if meta:
                cur.executemany("INSERT INTO store_meta (key, value) VALUES (%s, %s)"
                                " ON CONFLICT (key) DO UPDATE SET value = excluded.value", list(meta))

        self._write(body)
        self.ids = codec

    # -- export, import, backup (the Portable role; the SQL is in postgres_portable.py) -----
    @contextmanager
    def export_rows(self, scope: Scope | None, *, history: bool) -> Iterator[ExportRows]:
        """The records of ``scope`` (every scope when None) in one REPEATABLE READ, READ ONLY
        transaction on one pooled connection, held until the ``with`` block ends."""
        key = None if scope is None else self._scope(scope)
        history = check_flag(history, "history")
        with self._connection("export") as conn:
            conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            try:
                with pgp.export_rows(conn, key, history, ALL_SCOPES) as rows:
                    yield rows
            finally:
                if not conn.closed:
                    conn.execute("ROLLBACK")

    def restore(self, items: Iterable[Restored], *, id_key: str | None, last_row: int) -> None:
        """Write checked records back in one transaction, ids kept or new (see the role)."""
        codec = None if id_key is None else id_codec(id_key, self.path)
        started: builtins.list[bool] = []

        def body(conn: psycopg.Connection) -> None:
            if started:  # ``_write`` retries a deadlock, but ``items`` is read once
                raise StoreError("the import met a deadlock with another writer and was rolled back: "
                                 "run it again")
            started.append(True)
            pgp.restore(conn, items, codec, id_key, last_row, self.path, self._scope, ALL_SCOPES)

        self._write(body)
        if codec is not None:
            self.ids = codec

    def backup(self, dest: Path) -> dict[str, Any]:
        """PostgreSQL is backed up by its own tools; this says which (nothing is written)."""
        raise InvalidInput(f"`zeromem backup` copies a SQLite store file; {self.path} is PostgreSQL. "
                           "Back it up with its own tools: `pg_dump --format=custom --file=zeromem.dump "
                           "'postgresql://USER@HOST:PORT/DB'` (restore with `pg_restore --dbname=URL "
                           "zeromem.dump` into an empty database), or continuous archiving for "
                           "point-in-time recovery; or write a portable copy of the traces with "
                           "`zeromem export --all --history -o FILE`")

    def size_bytes(self) -> int:
        return int(self._read("SELECT pg_database_size(current_database())")[0][0])

    def placement(self) -> dict[str, Any] | None:
        """How the data is placed on a Citus cluster (None on plain PostgreSQL, or where the
        tables are not distributed): the Citus version, each node with its shard groups (one
        shard of every per-scope table, colocated) and how many scopes they hold, and which
        tables are distributed, reference or coordinator-local. A node that does not answer
        is reported with ``scopes`` None and an ``error``."""
        from .postgres_schema import CITUS_LOCAL, citus_installed, placed

        with self._connection("placement") as conn:
            if not citus_installed(conn):
                return None
            tables = placed(conn)
            if tables.get("traces") != "distributed":
                return None
            version = _one(conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'citus'"))[0]
            nodes: dict[str, dict[str, Any]] = {
                f"{h}:{p}": {"node": f"{h}:{p}", "role": "coordinator" if g == 0 else "worker",
                             "active": bool(a), "shards": 0, "scopes": 0}
                     for h, p, g, a in conn.execute(
                         "SELECT nodename, nodeport, groupid, isactive FROM pg_dist_node"
                         " WHERE noderole = 'primary' ORDER BY groupid, nodeid")}
            where: dict[int, str] = {}
            for table, shard, host, port in conn.execute(
                    "SELECT s.logicalrelid::regclass::text, s.shardid, n.nodename, n.nodeport"
                    " FROM pg_dist_shard s JOIN pg_dist_placement p ON p.shardid = s.shardid"
                    " JOIN pg_dist_node n ON n.groupid = p.groupid AND n.noderole = 'primary'"
                    " WHERE s.logicalrelid IN ('traces'::regclass, 'scope_versions'::regclass)"):
                node = nodes.setdefault(f"{host}:{port}", {"node": f"{host}:{port}", "role": "worker",
                                                           "active": True, "shards": 0, "scopes": 0})
                if table == "traces":
                    node["shards"] += 1
                else:
                    where[int(shard)] = node["node"]
            # scope_versions holds one row per scope: its row count per shard is scopes per shard.
            for shard, success, result in conn.execute(
                    "SELECT shardid, success, result FROM run_command_on_shards("
                    "'scope_versions', $$SELECT count(*) FROM %s$$)"):
                node = nodes[where[int(shard)]]
                if success and node["scopes"] is not None:
                    node["scopes"] += int(result)
                else:
                    node["scopes"] = None
                    node["error"] = str(result)
        return {"citus": str(version),
                "nodes": [n for n in nodes.values() if n["shards"] or n["role"] == "worker"],
                "shard_groups": sum(n["shards"] for n in nodes.values()),
                "distributed": sorted(t for t, k in tables.items() if k == "distributed"),
                "reference": sorted(t for t, k in tables.items() if k == "reference"),
                "local": sorted(CITUS_LOCAL)}


def _restored(traces: Sequence[tuple[Any, ...]], history: Sequence[tuple[Any, ...]]) -> Iterator[Restored]:
    """``bulk_load``'s rows as the items of an import: each trace (or deleted trace, known by its
    history alone) in row order, followed by its events, oldest first."""
    events: dict[int, list[tuple[Any, ...]]] = {}
    for event in history:
        events.setdefault(int(event[0]), []).append(event)
    rows = {int(row[0]): row for row in traces}
    for rowid in sorted(rows.keys() | events.keys()):
        row = rows.get(rowid)
        if row is not None:
            yield RestoredTrace(rowid, row[1], row[2], row[3], bool(row[15]), int(row[4]), *row[5:15])
        else:
            yield RestoredTombstone(rowid, events[rowid][0][1], events[rowid][0][2])
        for event in events.get(rowid, ()):
            yield RestoredEvent(*event[3:9])


def _one(cursor: psycopg.Cursor) -> tuple[Any, ...]:
    """The one row a statement returns (StoreError if it returned none)."""
    row = cursor.fetchone()
    if row is None:
        raise StoreError("the database returned no row where one was expected")
    return tuple(row)


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


def _metadata_clause(name: str, value: Any) -> tuple[str, builtins.list[Any]]:
    """A ``list`` metadata filter with SQLite's ``json_extract`` semantics: strings equal
    strings; numbers equal numbers (and true/false, which SQLite reads as 1/0); None matches
    a missing key or JSON null. ``json`` (not ``jsonb``) keeps ``\\u0000`` readable."""
    field = "(metadata::json -> ?::text)"
    if value is None:
        return f"({field} IS NULL OR json_typeof({field}) = 'null')", [name, name]
    if isinstance(value, str):
        return (f"(json_typeof({field}) = 'string' AND {field}::text = ?)",
                [name, name, json.dumps(value, ensure_ascii=False)])
    number = str(int(value)) if isinstance(value, (bool, int)) else repr(float(value))
    clause = (f"(CASE json_typeof({field}) WHEN 'number' THEN ({field}::text)::numeric"
              f" WHEN 'boolean' THEN CASE WHEN {field}::text = 'true' THEN 1 ELSE 0 END END) = ?::numeric")
    return clause, [name, name, name, number]


