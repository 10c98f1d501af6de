"""PostgreSQL's own SQL: what derived.py and sqlstore.py leave to a backend (``PostgresDialect``:
lists as arrays, vectors in pgvector columns, scope versions locked row by row, ids from
sequences), the ``run`` over a psycopg connection, and the helpers of ``compact``.

Versions: a write starts with ``lock_scope`` — the scope's version row bumped and locked until
commit — so the writes of one scope are serialized across processes, and trace and unit ids are
allocated in commit order within a scope.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import numpy as np
import psycopg
from pgvector import Vector
from pgvector.psycopg.vector import register_vector_info
from psycopg.types import TypeInfo

from .base import VERSION_FLOOR_KEY
from .dialect import Dialect, Run
from .roles import DerivedUnit


def register_vector(conn: Any, info: TypeInfo) -> None:
    """Teach ``conn`` the ``vector`` type (``info``: its oids in this database, read once at
    open, so a new pooled connection sends no catalog query) with pgvector's own adapter."""
    register_vector_info(conn, info)


def vec(data: bytes | None) -> Vector | None:
    """The interface's float32 little-endian bytes on their way into a ``vector`` column."""
    return None if data is None else Vector(np.frombuffer(data, dtype="<f4"))


def from_vec(value: Vector) -> bytes:
    """A loaded ``vector`` as the interface's float32 little-endian bytes."""
    return bytes(value.to_numpy().astype("<f4", copy=False).tobytes())


class PgRun:
    """The shared layer's ``run`` on a psycopg connection: its ``?`` placeholders as ``%s``."""

    __slots__ = ("conn",)

    def __init__(self, conn: psycopg.Connection[Any]) -> None:
        self.conn = conn

    def __call__(self, sql: str, params: Sequence[Any] = (), /) -> psycopg.Cursor[Any]:
        return self.conn.execute(sql.replace("?", "%s"), params)

    def many(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        if rows:
            self.conn.cursor().executemany(sql.replace("?", "%s"), rows)

    def binary(self, sql: str, params: Sequence[Any] = ()) -> psycopg.Cursor[Any]:
        return self.conn.cursor(binary=True).execute(sql.replace("?", "%s"), params)

    def stream(self, sql: str, params: Sequence[Any] = ()) -> Iterator[tuple[Any, ...]]:
        """The rows one at a time, in binary (psycopg's single-row mode)."""
        return self.conn.cursor(binary=True).stream(sql.replace("?", "%s"), params)


class PostgresDialect(Dialect):
    """PostgreSQL's spelling (see dialect.py)."""

    all_scopes = "/* all-scopes */ "  # marks the statements that read across scopes on purpose
    rowids_text = "array_to_json(u.rowids)::text"

    def any_of(self, column: str) -> str:
        return f"{column} = ANY(?)"

    def array(self, values: Iterable[Any]) -> list[Any]:
        return list(values)

    def covers(self, alias: str) -> str:
        return f"CAST(? AS bigint) = ANY({alias}.rowids)"

    def rowids_equal(self, alias: str, rowids: Sequence[int]) -> tuple[str, Any]:
        return f"{alias}.rowids = CAST(? AS bigint[])", [int(r) for r in rowids]

    def load_vec(self, value: Any) -> bytes:
        return from_vec(value)

    def dump_vec(self, data: bytes) -> Any:
        return vec(data)

    def lock_scope(self, run: Run, key: str, *, reset: bool = False) -> int:
        return lock_scope(run, key, reset=reset)

    def forget_scope(self, run: Run, key: str) -> None:
        # A write joined with a read of a distributed table: store_meta stays on the coordinator
        # (postgres_schema.CITUS_LOCAL).
        run("UPDATE store_meta SET value = GREATEST(value::bigint, v.version)::text FROM scope_versions v"
            " WHERE store_meta.key = ? AND v.scope_key = ?", (VERSION_FLOOR_KEY, key))
        run("DELETE FROM scope_versions WHERE scope_key = ?", (key,))

    def insert_units(self, run: Run, key: str, session: str, units: Sequence[DerivedUnit]) -> list[int]:
        ids = allocate(run, "zeromem_unit_ids", len(units))
        run.many("INSERT INTO units (scope_key, id, session, level, position, text, text_hash, rowids,"
                 " first_seq, last_seq, speaker, time, vec) VALUES (?,?,?,?,?,?,?,CAST(? AS bigint[]),?,?,?,?,?)",
                 [(key, uid, session, u.level, u.position, u.text, u.text_hash, list(u.rowids),
                   u.first_seq, u.last_seq, u.speaker, u.time, vec(u.vector)) for uid, u in zip(ids, units)])
        return ids

    def first_units(self, run: Run, key: str, text_hashes: Sequence[str]
                    ) -> tuple[dict[str, bytes], dict[str, int]]:
        hashes = list(text_hashes)
        vectors = {text_hash: from_vec(value) for text_hash, value in run.binary(
            "SELECT DISTINCT ON (text_hash) text_hash, vec FROM units"
            " WHERE scope_key = ? AND text_hash = ANY(?) AND level IN ('turn', 'span') AND vec IS NOT NULL"
            " ORDER BY text_hash, id", (key, hashes))}
        turns = {text_hash: int(uid) for text_hash, uid in run(
            "SELECT DISTINCT ON (text_hash) text_hash, id FROM units"
            " WHERE scope_key = ? AND text_hash = ANY(?) AND level = 'turn' ORDER BY text_hash, id", (key, hashes))}
        return vectors, turns

    def expiring(self, run: Run, key: str) -> dict[int, Any]:
        # The WHERE is the partial index traces_expiring's (postgres_schema.py); %% is psycopg's %.
        rows = run("SELECT rowid_, metadata::jsonb ->> 'expires_at' FROM traces"
                   " WHERE scope_key = ? AND metadata LIKE '%%\"expires_at\"%%'", (key,)).fetchall()
        return {int(rowid): value for rowid, value in rows if value is not None}


# -- scope versions and ids ---------------------------------------------------------------
def ensure_version_floor(run: Run) -> None:
    """Create the floor row once, so that ``lock_scope`` always has a row to wait on."""
    run("INSERT INTO store_meta (key, value) VALUES (?, '0') ON CONFLICT DO NOTHING", (VERSION_FLOOR_KEY,))


def lock_scope(run: Run, key: str, *, reset: bool = False) -> int:
    """Count one more write to the scope and hold its version row until commit; returns the
    version the write ends at. ``reset`` also marks a wipe (``reset_version``)."""
    row = run(
        "INSERT INTO scope_versions AS v (scope_key, version, reset_version)"
        " VALUES (?, 1, CASE WHEN ? THEN 1 ELSE 0 END)"
        " ON CONFLICT (scope_key) DO UPDATE SET version = v.version + 1,"
        " reset_version = CASE WHEN ? THEN v.version + 1 ELSE v.reset_version END"
        " RETURNING version, xmax = 0", (key, reset, reset)).fetchone()
    if not row[1]:
        return int(row[0])
    # A new row: it starts above the floor. FOR SHARE waits for a delete_scope that is raising
    # the floor right now and reads the value it commits, which the insert's snapshot missed.
    floor = run("SELECT value FROM store_meta WHERE key = ? FOR SHARE", (VERSION_FLOOR_KEY,)).fetchone()
    if floor is None or int(floor[0]) <= 0:
        return int(row[0])
    return int(run("UPDATE scope_versions SET version = ?, reset_version = ? WHERE scope_key = ? RETURNING version",
                   (int(floor[0]) + 1, int(floor[0]) + 1, key)).fetchone()[0])


def allocate(run: Run, sequence: str, n: int) -> list[int]:
    """``n`` fresh ids of ``sequence``, ascending (ids are never reused)."""
    if n <= 0:
        return []
    return sorted(int(r[0]) for r in run("SELECT nextval(?) FROM generate_series(1, ?)", (sequence, n)))


# -- compact (PostgresStore.compact) ------------------------------------------------------
# Clears every column's statistics of one relation (PostgreSQL 18's pg_clear_attribute_stats,
# allowed to the table's owner); ``%s`` is the relation (Citus's run_command_on_placements
# fills in each shard's name).
_CLEAR_STATS = ("SELECT count(*) FROM (SELECT pg_clear_attribute_stats(n.nspname::text, c.relname::text,"
                " a.attname::text, false) FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid"
                " JOIN pg_namespace n ON n.oid = c.relnamespace WHERE a.attrelid = '%s'::regclass"
                " AND a.attnum > 0 AND NOT a.attisdropped) AS cleared")


def clear_statistics(conn: Any, tables: Sequence[str], citus: bool) -> str | None:
    """Clear the column statistics of ``tables`` (on Citus: of each shard placement too);
    None when done, else why not (a server before PostgreSQL 18, a failed placement)."""
    if conn.execute("SELECT to_regprocedure('pg_clear_attribute_stats(text,text,text,boolean)')"
                    " IS NULL").fetchone()[0]:
        return "this server (before PostgreSQL 18) has no pg_clear_attribute_stats; an administrator can " \
               "run DELETE FROM pg_statistic for the emptied tables"
    for table in tables:
        conn.execute(_CLEAR_STATS % table)
    if not citus:
        return None
    failed = []
    distributed = {str(r[0]) for r in conn.execute(
        "SELECT logicalrelid::regclass::text FROM pg_dist_partition").fetchall()}
    for table in tables:
        if table in distributed:
            failed += [f"{table} shard {shard} ({result})" for shard, success, result in conn.execute(
                "SELECT shardid, success, result FROM run_command_on_placements(%s, %s)",
                (table, _CLEAR_STATS)) if not success]
    return f"clearing them failed on {'; '.join(failed)}" if failed else None


def on_workers(conn: Any, sql: str) -> list[str]:
    """Run ``sql`` on every Citus worker; the workers where it failed (host:port: why)."""
    return [f"{host}:{port} ({result})" for host, port, success, result in conn.execute(
        "SELECT nodename, nodeport, success, result FROM run_command_on_workers(%s)", (sql,)) if not success]


def wal_retention(conn: Any, citus: bool) -> str:
    """What the write-ahead log keeps after an erasure, and for how long (this server's settings)."""
    settings = dict(conn.execute(
        "SELECT name, setting || COALESCE(unit, '') FROM pg_settings WHERE name IN"
        " ('max_wal_size', 'min_wal_size', 'wal_keep_size', 'archive_mode')").fetchall())
    slots = int(conn.execute("SELECT count(*) FROM pg_replication_slots").fetchone()[0])
    return ("PostgreSQL's write-ahead log (pg_wal) still holds the erased text" + (" on every node" if citus else "")
            + ": SQL cannot remove it; its segments are recycled and overwritten once newer WAL has been "
            f"written: up to max_wal_size={settings.get('max_wal_size', '?')} (min_wal_size="
            f"{settings.get('min_wal_size', '?')}, wal_keep_size={settings.get('wal_keep_size', '?')}, "
            f"{slots} replication slot(s), which hold it longer) after this checkpoint; with "
            f"archive_mode={settings.get('archive_mode', '?')}, WAL archives, base backups and replicas "
            "keep their own copies until they are deleted")
