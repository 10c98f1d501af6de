"""PostgreSQL SQL for derived rows: units (with their pgvector ``vec``), mentions, entity
vectors, the session-change log and scope versions (``PostgresStore`` exposes them as the
``DerivedStoreBase`` methods). The PostgreSQL twin of ``derived.py``: same rows, same order.

Every statement filters by ``scope_key`` and every join is on it (the scope-sharded layout,
docs/postgres.md). Functions take a psycopg connection inside the caller's transaction.

Versions: a write starts with ``lock_scope`` — the scope's version row bumped and locked until
commit — so the writes of one scope are serialized, trace and unit ids are allocated in commit
order within a scope, and every ``session_changes`` row of the write is stamped with the
version the write ends at (what a reader at an older version must read again).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np
from pgvector import Vector
from pgvector.psycopg.vector import register_vector_info
from psycopg.types import TypeInfo

from .base import VERSION_FLOOR_KEY
from .roles import HeldRows, Replacing
from .rows import merge_unit_rows, parse_rowids, split_by_ids, split_units, unit_key


def register_vector(conn: Any, info: TypeInfo) -> None:
    """Teach ``conn`` the ``vector`` type (``info``: its oids in this database, read once at
    open, so a new pooled connection sends no catalog query) with pgvector's own adapter."""
    register_vector_info(conn, info)


def vec(data: bytes | None) -> Vector | None:
    """The interface's float32 little-endian bytes on their way into a ``vector`` column."""
    return None if data is None else Vector(np.frombuffer(data, dtype="<f4"))


def from_vec(value: Vector) -> bytes:
    """A loaded ``vector`` as the interface's float32 little-endian bytes."""
    return value.to_numpy().astype("<f4", copy=False).tobytes()


# -- scope versions and the change log --------------------------------------------------
def ensure_version_floor(conn: Any) -> None:
    """Create the floor row once, so that ``lock_scope`` always has a row to wait on."""
    conn.execute("INSERT INTO store_meta (key, value) VALUES (%s, '0') ON CONFLICT DO NOTHING",
                 (VERSION_FLOOR_KEY,))


def lock_scope(conn: Any, scope_key: str, *, reset: bool = False) -> int:
    """Count one more write to the scope and hold its version row until commit; returns the
    version the write ends at. ``reset`` also marks a wipe (``reset_version``)."""
    row = conn.execute(
        "INSERT INTO scope_versions AS v (scope_key, version, reset_version)"
        " VALUES (%s, 1, CASE WHEN %s THEN 1 ELSE 0 END)"
        " ON CONFLICT (scope_key) DO UPDATE SET version = v.version + 1,"
        " reset_version = CASE WHEN %s THEN v.version + 1 ELSE v.reset_version END"
        " RETURNING version, xmax = 0", (scope_key, reset, reset)).fetchone()
    if not row[1]:
        return int(row[0])
    # A new row: it starts above the floor. FOR SHARE waits for a delete_scope that is raising
    # the floor right now and reads the value it commits, which the insert's snapshot missed.
    floor = conn.execute("SELECT value FROM store_meta WHERE key = %s FOR SHARE",
                         (VERSION_FLOOR_KEY,)).fetchone()
    if floor is None or int(floor[0]) <= 0:
        return int(row[0])
    return int(conn.execute(
        "UPDATE scope_versions SET version = %s, reset_version = %s WHERE scope_key = %s RETURNING version",
        (int(floor[0]) + 1, int(floor[0]) + 1, scope_key)).fetchone()[0])


def forget_scope(conn: Any, scope_key: str) -> None:
    """Remove a deleted scope's version row (its name), raising the floor to its version."""
    conn.execute(
        "UPDATE store_meta SET value = GREATEST(value::bigint, v.version)::text FROM scope_versions v"
        " WHERE store_meta.key = %s AND v.scope_key = %s", (VERSION_FLOOR_KEY, scope_key))
    conn.execute("DELETE FROM scope_versions WHERE scope_key = %s", (scope_key,))


def note_session_change(conn: Any, scope_key: str, session: str, version: int) -> None:
    """Record, inside a write ending at ``version``, that ``session``'s derived rows change."""
    conn.execute(
        "INSERT INTO session_changes (scope_key, session, version) VALUES (%s, %s, %s)"
        " ON CONFLICT (scope_key, session) DO UPDATE SET version = excluded.version",
        (scope_key, session, version))


def mark_dirty(conn: Any, scope_key: str, sessions: Sequence[str]) -> None:
    conn.cursor().executemany(
        "INSERT INTO dirty_sessions (scope_key, session) VALUES (%s, %s) ON CONFLICT DO NOTHING",
        [(scope_key, session) for session in sessions])


def purge_units_of_trace(conn: Any, scope_key: str, session: str, rowid: int, version: int) -> Counter[str]:
    """Remove every unit covering the trace (cascading to mentions), and the vectors of
    entities nobody in the scope mentions any more (see derived.py); rows removed per table."""
    units = [r[0] for r in conn.execute(
        "SELECT id FROM units WHERE scope_key = %s AND session = %s AND %s::bigint = ANY(rowids)",
        (scope_key, session, rowid))]
    if not units:
        return Counter()
    note_session_change(conn, scope_key, session, version)
    return drop_units(conn, scope_key, units)


def purge_units_of_session(conn: Any, scope_key: str, session: str) -> Counter[str]:
    """Remove every unit of a session (all its traces are going); rows removed per table."""
    units = [r[0] for r in conn.execute(
        "SELECT id FROM units WHERE scope_key = %s AND session = %s", (scope_key, session))]
    return drop_units(conn, scope_key, units) if units else Counter()


def drop_units(conn: Any, scope_key: str, unit_ids: Sequence[int]) -> Counter[str]:
    """Delete units (their vectors are a column; mentions cascade) and the vectors of entities
    the scope no longer mentions; rows removed per table."""
    ids = list(unit_ids)
    counts: Counter[str] = Counter()
    counts["unit_mentions"] = int(conn.execute(
        "SELECT COUNT(*) FROM unit_mentions WHERE scope_key = %s AND unit_id = ANY(%s)",
        (scope_key, ids)).fetchone()[0])
    entities = [r[0] for r in conn.execute(
        "SELECT DISTINCT entity FROM unit_mentions WHERE scope_key = %s AND unit_id = ANY(%s)",
        (scope_key, ids))]
    counts["units"] = conn.execute("DELETE FROM units WHERE scope_key = %s AND id = ANY(%s)",
                                   (scope_key, ids)).rowcount
    if entities:
        counts["entity_vectors"] = conn.execute(
            "DELETE FROM entity_vectors e WHERE e.scope_key = %s AND e.entity = ANY(%s)"
            " AND NOT EXISTS (SELECT 1 FROM unit_mentions m WHERE m.scope_key = e.scope_key"
            " AND m.scope_key = %s AND m.entity = e.entity)", (scope_key, entities, scope_key)).rowcount
    return counts


def drop_snapshot(conn: Any, scope_key: str) -> Counter[str]:
    """Remove the scope's persisted index (see derived.drop_snapshot); rows per table."""
    return Counter({table: conn.execute(f"DELETE FROM {table} WHERE scope_key = %s", (scope_key,)).rowcount
                    for table in ("scope_snapshots", "scope_snapshot_parts")})


def forget_session(conn: Any, scope_key: str, session: str) -> Counter[str]:
    """Remove a deleted session's dirty mark and change-log row, after a wipe (see
    derived.forget_session); rows per table."""
    return Counter({table: conn.execute(f"DELETE FROM {table} WHERE scope_key = %s AND session = %s",
                                        (scope_key, session)).rowcount
                    for table in ("dirty_sessions", "session_changes")})


# -- reads ------------------------------------------------------------------------------
_LEVEL_ORDER = ("CASE u.level WHEN 'turn' THEN 0 WHEN 'span' THEN 1 WHEN 'window' THEN 2"
                " ELSE 3 END")


def read_changes(conn: Any, scope_key: str, since: int, known_entities: set[str],
                 trace_columns: str, held: HeldRows | None = None) -> dict:
    """What an in-memory index at version ``since`` lacks (see ``derived.read_changes``); the
    caller runs it inside ONE repeatable-read transaction."""
    row = conn.execute("SELECT version, reset_version FROM scope_versions WHERE scope_key = %s",
                       (scope_key,)).fetchone()
    version, reset = (int(row[0]), int(row[1])) if row else (0, 0)
    full = since <= 0 or reset > since or row is None  # no row: the scope was deleted
    if full:
        sessions = [r[0] for r in conn.execute(
            "SELECT DISTINCT session FROM traces WHERE scope_key = %s ORDER BY session", (scope_key,))]
    else:
        sessions = [r[0] for r in conn.execute(
            "SELECT session FROM session_changes WHERE scope_key = %s AND version > %s ORDER BY session",
            (scope_key, since))]
    out: dict = {"version": version, "full": full, "sessions": sessions, "traces": [], "units": [],
                 "mentions": [], "entities": {}}
    if not sessions:
        return out
    if held is not None and not full:
        _read_unheld(conn, scope_key, sessions, trace_columns, held, out)
    else:
        _read_all(conn, scope_key, sessions if not full else None, trace_columns, out)
    wanted = sorted({r[1] for r in out["mentions"]} - known_entities)
    if wanted:
        out["entities"] = {entity: from_vec(value) for entity, value in conn.cursor(binary=True).execute(
            "SELECT entity, vec FROM entity_vectors WHERE scope_key = %s AND entity = ANY(%s)",
            (scope_key, wanted))}
    return out


def _read_all(conn: Any, scope_key: str, sessions: list[str] | None, trace_columns: str, out: dict) -> None:
    """Every trace, unit and mention of ``sessions`` (None: of the whole scope)."""
    only = "" if sessions is None else " AND session = ANY(%s)"
    args: tuple = (scope_key,) if sessions is None else (scope_key, sessions)
    out["traces"] = conn.execute(
        f"SELECT {trace_columns} FROM traces WHERE scope_key = %s{only} ORDER BY session, seq, rowid_",
        args).fetchall()
    uonly = only.replace("session", "u.session")
    units = conn.cursor(binary=True).execute(
        "SELECT u.id, u.session, u.level, u.position, u.text, u.text_hash,"
        " array_to_json(u.rowids)::text, u.vec FROM units u"
        f" WHERE u.scope_key = %s{uonly} ORDER BY u.session, {_LEVEL_ORDER}, u.position", args)
    out["units"] = [(*row[:7], None if row[7] is None else from_vec(row[7])) for row in units]
    out["mentions"] = conn.execute(
        "SELECT m.unit_id, m.entity, m.label, m.surface, m.count FROM unit_mentions m"
        " JOIN units u ON u.scope_key = m.scope_key AND u.id = m.unit_id"
        f" WHERE m.scope_key = %s{uonly} ORDER BY m.unit_id, m.entity", args).fetchall()


def _read_unheld(conn: Any, scope_key: str, sessions: list[str], trace_columns: str, held: HeldRows,
                 out: dict) -> None:
    """``read_changes`` for an index that holds most of the changed sessions (see
    ``derived._read_unheld``): the traces it lacks, then the unit rows it lacks, by ids or keys."""
    stale = [rowid for rowid, version in conn.execute(
        "SELECT rowid_, version FROM traces WHERE scope_key = %s AND session = ANY(%s)", (scope_key, sessions))
        if not held.has_trace(rowid, version)]
    if stale:
        out["traces"] = conn.execute(
            f"SELECT {trace_columns} FROM traces WHERE scope_key = %s AND rowid_ = ANY(%s)"
            " ORDER BY session, seq, rowid_", (scope_key, stale)).fetchall()
    current: dict[str, list[int]] = {name: [] for name in sessions}
    for uid, session in conn.execute("SELECT id, session FROM units WHERE scope_key = %s AND session = ANY(%s)",
                                     (scope_key, sessions)):
        current[session].append(int(uid))
    by_keys, wanted = split_by_ids(sessions, current, held, out)
    keys: list[tuple] = []
    if by_keys:
        keys = [(int(uid), session, level, position, text_hash, parse_rowids(rowids))
                for uid, session, level, position, text_hash, rowids in conn.execute(
                    "SELECT u.id, u.session, u.level, u.position, u.text_hash, array_to_json(u.rowids)::text"
                    f" FROM units u WHERE u.scope_key = %s AND u.session = ANY(%s)"
                    f" ORDER BY u.session, {_LEVEL_ORDER}, u.position", (scope_key, by_keys))]
        wanted += [row[0] for row in keys if not held.has_unit(*row[1:])]
    content: dict[int, tuple] = {}
    if wanted:
        content = {int(uid): (session, level, position, text, text_hash, rowids,
                              None if vec is None else from_vec(vec))
                   for uid, session, level, position, text, text_hash, rowids, vec in conn.cursor(binary=True).execute(
                       "SELECT u.id, u.session, u.level, u.position, u.text, u.text_hash,"
                       " array_to_json(u.rowids)::text, u.vec FROM units u WHERE u.scope_key = %s AND u.id = ANY(%s)"
                       f" ORDER BY u.session, {_LEVEL_ORDER}, u.position", (scope_key, wanted))}
        out["mentions"] = conn.execute(
            "SELECT unit_id, entity, label, surface, count FROM unit_mentions"
            " WHERE scope_key = %s AND unit_id = ANY(%s) ORDER BY unit_id, entity", (scope_key, wanted)).fetchall()
    out["units"] = merge_unit_rows(keys, content)


def dirty_sessions(conn: Any, scope_key: str) -> list[str]:
    return [r[0] for r in conn.execute(
        "SELECT session FROM dirty_sessions WHERE scope_key = %s ORDER BY session", (scope_key,))]


def stored_encodings(conn: Any, scope_key: str, text_hashes: Sequence[str], sessions: Sequence[str] = ()
                     ) -> tuple[dict[str, bytes], dict[str, list[tuple]]]:
    """Vectors (turn/span units) and mentions (turn units) already stored for these texts: from
    the ``sessions``' own units first, else the oldest unit of each text, as in
    ``derived.stored_encodings``."""
    wanted = set(text_hashes)
    if not wanted:
        return {}, {}
    vectors: dict[str, bytes] = {}
    first_turn: dict[str, int] = {}
    if sessions:
        for uid, level, text_hash, vec in conn.cursor(binary=True).execute(
                "SELECT id, level, text_hash, vec FROM units WHERE scope_key = %s AND session = ANY(%s)"
                " AND level IN ('turn', 'span') ORDER BY id", (scope_key, list(sessions))):
            if text_hash not in wanted:
                continue
            if vec is not None:
                vectors.setdefault(text_hash, from_vec(vec))
            if level == "turn":
                first_turn.setdefault(text_hash, uid)
    rest = sorted(h for h in wanted if h not in vectors and h not in first_turn)
    if rest:
        vectors.update({text_hash: from_vec(value) for text_hash, value in conn.cursor(binary=True).execute(
            "SELECT DISTINCT ON (text_hash) text_hash, vec FROM units"
            " WHERE scope_key = %s AND text_hash = ANY(%s) AND level IN ('turn', 'span') AND vec IS NOT NULL"
            " ORDER BY text_hash, id", (scope_key, rest))})
        first_turn.update(conn.execute(
            "SELECT DISTINCT ON (text_hash) text_hash, id FROM units"
            " WHERE scope_key = %s AND text_hash = ANY(%s) AND level = 'turn' ORDER BY text_hash, id",
            (scope_key, rest)).fetchall())
    by_unit: dict[int, list[tuple]] = {uid: [] for uid in first_turn.values()}
    if by_unit:
        for uid, entity, label, surface, count in conn.execute(
                "SELECT unit_id, entity, label, surface, count FROM unit_mentions"
                " WHERE scope_key = %s AND unit_id = ANY(%s) ORDER BY unit_id, entity",
                (scope_key, sorted(by_unit))):
            by_unit[uid].append((entity, label, surface, count))
    return vectors, {h: by_unit[uid] for h, uid in first_turn.items()}


def entities_with_vectors(conn: Any, scope_key: str, names: Sequence[str]) -> set[str]:
    if not names:
        return set()
    return {r[0] for r in conn.execute(
        "SELECT entity FROM entity_vectors WHERE scope_key = %s AND entity = ANY(%s)",
        (scope_key, list(names)))}


def trace_entities(conn: Any, scope_key: str, rowid: int, limit: int
                   ) -> tuple[list[tuple[str, str, str, int, int]], list[tuple[int, list[str]]]]:
    """See ``derived.trace_entities``; the caller runs it in one repeatable-read transaction."""
    mentions = conn.execute(
        "SELECT m.entity, m.label, m.surface, m.count FROM units u"
        " JOIN unit_mentions m ON m.scope_key = u.scope_key AND m.unit_id = u.id"
        " WHERE u.scope_key = %s AND u.level = 'turn' AND u.rowids = ARRAY[%s::bigint] ORDER BY m.entity",
        (scope_key, rowid)).fetchall()
    if not mentions:
        return [], []
    names = [m[0] for m in mentions]
    shared: dict[int, list[str]] = {}
    df: dict[str, int] = dict.fromkeys(names, 0)
    for other, entity in conn.execute(
            "SELECT u.rowids[1], m.entity FROM unit_mentions m"
            " JOIN units u ON u.scope_key = m.scope_key AND u.id = m.unit_id"
            " WHERE m.scope_key = %s AND u.level = 'turn' AND m.entity = ANY(%s)", (scope_key, names)):
        df[entity] += 1
        if other != rowid:
            shared.setdefault(int(other), []).append(entity)
    ranked = sorted(shared.items(), key=lambda item: (-len(item[1]), item[0]))[:max(0, limit)]
    return ([(e, label, surface, count, df[e]) for e, label, surface, count in mentions],
            [(other, sorted(entities)) for other, entities in ranked])


# -- writes -----------------------------------------------------------------------------
def reset_derived(conn: Any, scope_key: str) -> None:
    """Drop every derived row of a scope and mark all its sessions dirty (a full rebuild)."""
    lock_scope(conn, scope_key, reset=True)
    for table in ("units", "entity_vectors", "session_changes", "scope_snapshots", "scope_snapshot_parts"):
        conn.execute(f"DELETE FROM {table} WHERE scope_key = %s", (scope_key,))
    conn.execute("INSERT INTO dirty_sessions (scope_key, session)"
                 " SELECT DISTINCT scope_key, session FROM traces WHERE scope_key = %s"
                 " ON CONFLICT DO NOTHING", (scope_key,))


class Stale(Exception):
    """commit_session found the session changed since it was planned: roll back."""


def commit_session(conn: Any, scope_key: str, session: str,
                   expected: Sequence[tuple[int, int]], units: Sequence,
                   entity_vectors: dict[str, bytes], replacing: Replacing | None = None) -> int:
    """Replace a session's derived rows if its traces are still ``expected`` (and, with
    ``replacing``, its change version still ``replacing.since``); returns the new change
    version. Raises Stale (the caller rolls back, nothing changed) when they are not."""
    version = lock_scope(conn, scope_key)
    current = conn.execute(
        "SELECT rowid_, version FROM traces WHERE scope_key = %s AND session = %s ORDER BY seq, rowid_",
        (scope_key, session)).fetchall()
    if [(int(a), int(b)) for a, b in current] != [(int(a), int(b)) for a, b in expected]:
        raise Stale
    if replacing is not None:
        row = conn.execute("SELECT version FROM session_changes WHERE scope_key = %s AND session = %s",
                           (scope_key, session)).fetchone()
        if row is None or int(row[0]) != replacing.since:
            raise Stale  # another writer derived the session since: the caller derives it whole
        conn.cursor().executemany(
            "DELETE FROM units WHERE scope_key = %s AND session = %s AND level = %s AND position = %s",
            [(scope_key, session, level, position) for level, position in replacing.units])
        fresh = list(units)
    else:
        fresh = _replace_changed(conn, scope_key, session, units)
    ids = allocate(conn, "zeromem_unit_ids", len(fresh))
    cur = conn.cursor()
    if fresh:
        cur.executemany(
            "INSERT INTO units (scope_key, id, session, level, position, text, text_hash, rowids,"
            " first_seq, last_seq, speaker, time, vec) VALUES (%s,%s,%s,%s,%s,%s,%s,%s::bigint[],%s,%s,%s,%s,%s)",
            [(scope_key, uid, session, u.level, u.position, u.text, u.text_hash, list(u.rowids),
              u.first_seq, u.last_seq, u.speaker, u.time, vec(u.vector)) for uid, u in zip(ids, fresh)])
    mention_rows = [(scope_key, uid, *m) for uid, u in zip(ids, fresh) for m in u.mentions]
    if mention_rows:
        cur.executemany("INSERT INTO unit_mentions (scope_key, unit_id, entity, label, surface, count)"
                        " VALUES (%s,%s,%s,%s,%s,%s)", mention_rows)
    # Vectors the indexer made (entities the scope had none for) go in for every unit's
    # mentions, kept or new, as when every row was replaced.
    mentioned = sorted({m[0] for u in units for m in u.mentions})
    vector_rows = [(scope_key, e, "dense", vec(entity_vectors[e])) for e in mentioned if e in entity_vectors]
    if vector_rows:
        cur.executemany("INSERT INTO entity_vectors (scope_key, entity, model, vec) VALUES (%s,%s,%s,%s)"
                        " ON CONFLICT DO NOTHING", vector_rows)
    conn.execute("DELETE FROM dirty_sessions WHERE scope_key = %s AND session = %s", (scope_key, session))
    note_session_change(conn, scope_key, session, version)
    return version


def _replace_changed(conn: Any, scope_key: str, session: str, units: Sequence) -> list:
    """Delete the session's unit rows that no unit of ``units`` equals (rows.split_units): rewriting
    every unit and vector per appended turn made writes O(session). Returns the units to insert."""
    fresh, stale = split_units(
        ((int(uid), unit_key(level, position, text_hash, rowids, first, last, speaker, time, has_vector))
         for uid, level, position, text_hash, rowids, first, last, speaker, time, has_vector in conn.execute(
            "SELECT id, level, position, text_hash, rowids, first_seq, last_seq, speaker, time,"
            " vec IS NOT NULL FROM units WHERE scope_key = %s AND session = %s ORDER BY id",
            (scope_key, session))),
        units)
    if stale:  # their mentions go with them (ON DELETE CASCADE)
        conn.execute("DELETE FROM units WHERE scope_key = %s AND id = ANY(%s)", (scope_key, stale))
    return fresh


def turn_vectors(conn: Any, scope_key: str, session: str) -> dict[int, bytes]:
    """The vector of each turn unit of the session, by its trace's row number."""
    return {int(rowids[0]): from_vec(value) for rowids, value in conn.cursor(binary=True).execute(
        "SELECT rowids, vec FROM units WHERE scope_key = %s AND session = %s AND level = 'turn'"
        " AND vec IS NOT NULL", (scope_key, session))}


def allocate(conn: Any, sequence: str, n: int) -> list[int]:
    """``n`` fresh ids of ``sequence``, ascending (ids are never reused)."""
    if n <= 0:
        return []
    return sorted(int(r[0]) for r in conn.execute(
        "SELECT nextval(%s) FROM generate_series(1, %s)", (sequence, n)))


def add_encoder_timings(conn: Any, seconds: dict[str, float], items: dict[str, int]) -> None:
    for encoder, spent in seconds.items():
        conn.execute(
            "INSERT INTO encoder_timings AS t (encoder, seconds, items) VALUES (%s, %s, %s)"
            " ON CONFLICT (encoder) DO UPDATE SET seconds = t.seconds + excluded.seconds,"
            " items = t.items + excluded.items", (encoder, float(spent), int(items.get(encoder, 0))))



def trace_signals(conn: Any, scope_key: str, *, missing_only: bool = False,
                  rowids: Sequence[int] | None = None) -> dict[int, str | None]:
    """Every trace of the scope (or of ``rowids`` among them) → its stored lifecycle signals
    for its current version, or None (see ``derived.trace_signals``)."""
    among = "" if rowids is None else " AND t.rowid_ = ANY(%s)"
    rows = conn.execute(
        "SELECT t.rowid_, s.signals FROM traces t LEFT JOIN trace_signals s"
        " ON s.scope_key = t.scope_key AND s.trace_rowid = t.rowid_ AND s.version = t.version"
        " WHERE t.scope_key = %s" + among + (" AND s.signals IS NULL" if missing_only else "")
        + " ORDER BY t.rowid_", (scope_key,) + (() if rowids is None else ([int(r) for r in rowids],))).fetchall()
    return {int(rowid): blob for rowid, blob in rows}


def put_signals(conn: Any, scope_key: str, rows: Sequence[tuple[int, int, str]]) -> None:
    """Store (trace rowid, version, signals JSON) rows, except those of traces deleted since
    they were computed (see ``derived.put_signals``: only these rows are checked)."""
    with conn.cursor() as cur:
        cur.executemany(
            "INSERT INTO trace_signals (scope_key, trace_rowid, version, signals) VALUES (%s, %s, %s, %s)"
            " ON CONFLICT (scope_key, trace_rowid) DO UPDATE SET version = EXCLUDED.version,"
            " signals = EXCLUDED.signals", [(scope_key, rowid, version, blob) for rowid, version, blob in rows])
    conn.execute("DELETE FROM trace_signals s WHERE s.scope_key = %s AND s.trace_rowid = ANY(%s) AND NOT EXISTS"
                 " (SELECT 1 FROM traces t WHERE t.scope_key = s.scope_key AND t.rowid_ = s.trace_rowid)",
                 (scope_key, sorted({int(rowid) for rowid, _, _ in rows})))


def expiring(conn: Any, scope_key: str) -> dict[int, Any]:
    """rowid → metadata ``expires_at`` of the scope's traces that carry one."""
    rows = conn.execute("SELECT rowid_, metadata::jsonb ->> 'expires_at' FROM traces"
                        " WHERE scope_key = %s AND metadata LIKE '%%\"expires_at\"%%'", (scope_key,)).fetchall()
    return {int(rowid): value for rowid, value in rows if value is not None}


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
