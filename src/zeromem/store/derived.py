"""SQLite's SQL for derived rows: units, vectors, mentions, entity vectors, the session-change
log and persisted indexes (``SQLiteStore`` exposes them as the ``DerivedStoreBase`` methods).

Purging inside the write that makes them stale: an update or delete removes, in its own
transaction, every unit that covers the trace (its turn and spans, and the windows and episode
around it) with their vectors and mentions, and the vectors of entities nobody mentions any
more; the session is re-derived at the next refresh, and the untouched turns of the session
keep their stored encodings.

That alone does not erase: the trace's text also sits in its history events, and a persisted
index holds the words its vocabulary learned. An erasing delete (``SQLiteStore.delete`` and
friends) therefore also empties the history events, drops the scope's persisted index
(``drop_snapshot``) and marks a wipe, and ``save_snapshot`` refuses an index older than the
wipe; with ``secure_delete`` on and the write-ahead log checkpointed, the bytes then leave
the file too (tests/test_erasure.py greps for them).
"""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
from collections.abc import Sequence
from typing import Any

from .base import VERSION_FLOOR_KEY
from .roles import HeldRows, Replacing
from .rows import merge_unit_rows, parse_rowids, split_by_ids, split_units, unit_key

# A list of ids bound as ONE JSON parameter: no limit on how many (SQLite caps the number of
# bound variables per statement, at 999 in older builds).
_IN_JSON = "IN (SELECT value FROM json_each(?))"


def purge_units_of_trace(conn: sqlite3.Connection, user: str, agent: str, session: str,
                         rowid: int) -> Counter[str]:
    """Remove every unit covering the trace (see the module docstring); rows removed per table."""
    units = [r[0] for r in conn.execute(
        "SELECT u.id FROM units u WHERE u.user_key=? AND u.agent_key=? AND u.session=?"
        " AND EXISTS (SELECT 1 FROM json_each(u.trace_rowids) WHERE value = ?)",
        (user, agent, session, rowid))]
    if not units:
        return Counter()
    note_session_change(conn, user, agent, session)
    return drop_units(conn, user, agent, units)


def purge_units_of_session(conn: sqlite3.Connection, user: str, agent: str,
                           session: str) -> Counter[str]:
    """Remove every unit of a session (all its traces are going); rows removed per table."""
    units = [r[0] for r in conn.execute(
        "SELECT id FROM units WHERE user_key=? AND agent_key=? AND session=?", (user, agent, session))]
    return drop_units(conn, user, agent, units) if units else Counter()


def drop_units(conn: sqlite3.Connection, user: str, agent: str, unit_ids: Sequence[int]) -> Counter[str]:
    """Delete units (cascading to their vectors and mentions) and the vectors of entities the
    scope no longer mentions; rows removed per table."""
    ids = json.dumps(list(unit_ids))
    counts: Counter[str] = Counter()
    for table in ("unit_vectors", "unit_mentions"):
        counts[table] = conn.execute(f"SELECT COUNT(*) FROM {table} WHERE unit_id {_IN_JSON}", (ids,)).fetchone()[0]
    entities = json.dumps([r[0] for r in conn.execute(
        f"SELECT DISTINCT entity FROM unit_mentions WHERE unit_id {_IN_JSON}", (ids,))])
    counts["units"] = conn.execute(f"DELETE FROM units WHERE id {_IN_JSON}", (ids,)).rowcount
    counts["entity_vectors"] = conn.execute(
        f"DELETE FROM entity_vectors WHERE user_key=? AND agent_key=? AND entity {_IN_JSON}"
        " AND NOT EXISTS (SELECT 1 FROM unit_mentions m JOIN units u ON u.id = m.unit_id"
        " WHERE m.entity = entity_vectors.entity AND u.user_key = entity_vectors.user_key"
        " AND u.agent_key = entity_vectors.agent_key)", (user, agent, entities)).rowcount
    return counts


def drop_snapshot(conn: sqlite3.Connection, user: str, agent: str) -> Counter[str]:
    """Remove the scope's persisted index: it may hold words of a trace being erased (its
    vocabulary never forgets a word); rows removed per table."""
    return Counter({table: conn.execute(f"DELETE FROM {table} WHERE user_key=? AND agent_key=?",
                                        (user, agent)).rowcount
                    for table in ("scope_snapshots", "scope_snapshot_parts")})


def forget_session(conn: sqlite3.Connection, user: str, agent: str, session: str) -> Counter[str]:
    """Remove a deleted session's dirty mark and change-log row (its name). Only after a wipe:
    a reader at an older version then rebuilds whole instead of reading the change log."""
    return Counter({table: conn.execute(f"DELETE FROM {table} WHERE user_key=? AND agent_key=? AND session=?",
                                        (user, agent, session)).rowcount
                    for table in ("dirty_sessions", "session_changes")})


def snapshot_predates_wipe(conn: sqlite3.Connection, user: str, agent: str, version: int) -> bool:
    """Whether an index at ``version`` is older than the scope's last wipe (see save_snapshot);
    a scope without a version row was deleted (``forget_scope``), so any index of it is."""
    row = conn.execute("SELECT reset_version FROM scope_versions WHERE user_key=? AND agent_key=?",
                       (user, agent)).fetchone()
    return version > 0 if row is None else int(row[0]) > version


def forget_scope(conn: sqlite3.Connection, user: str, agent: str) -> None:
    """Remove a deleted scope's version row, raising the version floor to its version first."""
    conn.execute(
        "INSERT INTO store_meta (key, value) SELECT ?, CAST(version AS TEXT) FROM scope_versions"
        " WHERE user_key=? AND agent_key=? ON CONFLICT(key) DO UPDATE SET"
        " value = CAST(MAX(CAST(value AS INTEGER), CAST(excluded.value AS INTEGER)) AS TEXT)",
        (VERSION_FLOOR_KEY, user, agent))
    conn.execute("DELETE FROM scope_versions WHERE user_key=? AND agent_key=?", (user, agent))


def note_session_change(conn: sqlite3.Connection, user: str, agent: str, session: str) -> None:
    """Record, inside a write, that ``session``'s derived rows change in it.

    The change is stamped with the version the write ends at (the caller bumps the scope
    version once, after this, in the same transaction), so a process whose in-memory index is
    at an older version reads this session again (``read_changes``).
    """
    conn.execute(
        "INSERT INTO session_changes (user_key, agent_key, session, version) VALUES (?,?,?,"
        " COALESCE((SELECT version FROM scope_versions WHERE user_key=? AND agent_key=?), 0) + 1)"
        " ON CONFLICT(user_key, agent_key, session) DO UPDATE SET version = excluded.version",
        (user, agent, session, user, agent))


_LEVEL_ORDER = ("CASE u.level WHEN 'turn' THEN 0 WHEN 'span' THEN 1 WHEN 'window' THEN 2"
                " ELSE 3 END")


def read_changes(conn: sqlite3.Connection, user: str, agent: str, since: int,
                 known_entities: set[str], trace_columns: str, held: HeldRows | None = None) -> dict:
    """Everything an in-memory index at version ``since`` needs to reach the current version,
    read by the caller inside ONE read transaction (so it is one consistent version).

    Returns ``version``, ``full`` (the scope was wiped or never read: rebuild from scratch),
    ``sessions`` (the changed sessions' names), ``traces`` / ``units`` / ``mentions`` rows of
    those sessions, and ``entities`` (vectors of mentioned entities not in ``known_entities``).
    """
    row = conn.execute("SELECT version, reset_version FROM scope_versions WHERE user_key=? AND agent_key=?",
                       (user, agent)).fetchone()
    version, reset = (row[0], row[1]) if row else (0, 0)
    full = since <= 0 or reset > since or row is None  # no row: the scope was deleted
    if full:
        sessions = [r[0] for r in conn.execute(
            "SELECT DISTINCT session FROM traces WHERE user_key=? AND agent_key=? ORDER BY session",
            (user, agent))]
    else:
        sessions = [r[0] for r in conn.execute(
            "SELECT session FROM session_changes WHERE user_key=? AND agent_key=? AND version > ?"
            " ORDER BY session", (user, agent, since))]
    out: dict = {"version": version, "full": full, "sessions": sessions, "traces": [], "units": [],
                 "mentions": [], "entities": {}}
    if not sessions:
        return out
    if held is not None and not full:
        _read_unheld(conn, user, agent, sessions, trace_columns, held, out)
    else:
        _read_all(conn, user, agent, None if full else sessions, trace_columns, out)
    wanted = sorted({r[1] for r in out["mentions"]} - known_entities)
    for start in range(0, len(wanted), 500):
        chunk = wanted[start:start + 500]
        marks = ",".join("?" * len(chunk))
        for entity, vec in conn.execute(
                f"SELECT entity, vec FROM entity_vectors WHERE user_key=? AND agent_key=? AND entity IN ({marks})",
                (user, agent, *chunk)):
            out["entities"][entity] = vec
    return out


def _read_all(conn: sqlite3.Connection, user: str, agent: str, sessions: list[str] | None, trace_columns: str,
              out: dict) -> None:
    """Every trace, unit and mention of ``sessions`` (None: of the whole scope)."""
    only = "" if sessions is None else f" AND session {_IN_JSON}"
    args: tuple = (user, agent) if sessions is None else (user, agent, json.dumps(sessions))
    out["traces"] = conn.execute(
        f"SELECT {trace_columns} FROM traces WHERE user_key=? AND agent_key=?{only}"
        " ORDER BY session, seq, rowid_", args).fetchall()
    uonly = only.replace("session", "u.session")
    out["units"] = conn.execute(
        "SELECT u.id, u.session, u.level, u.position, u.text, u.text_hash, u.trace_rowids, v.vec"
        " FROM units u LEFT JOIN unit_vectors v ON v.unit_id = u.id"
        f" WHERE u.user_key=? AND u.agent_key=?{uonly}"
        f" ORDER BY u.session, {_LEVEL_ORDER}, u.position", args).fetchall()
    out["mentions"] = conn.execute(
        "SELECT m.unit_id, m.entity, m.label, m.surface, m.count FROM unit_mentions m"
        f" JOIN units u ON u.id = m.unit_id WHERE u.user_key=? AND u.agent_key=?{uonly}"
        " ORDER BY m.unit_id, m.entity", args).fetchall()


def _read_unheld(conn: sqlite3.Connection, user: str, agent: str, sessions: list[str], trace_columns: str,
                 held: HeldRows, out: dict) -> None:
    """``read_changes`` for an index that holds most of the changed sessions: the traces it
    lacks, then, for a session whose unit ids it knows, the rows of the ids it does not hold;
    for the others the keys of every unit first and the contents it lacks (a write changes a
    few units of its session)."""
    names = json.dumps(sessions)
    in_sessions = f"session {_IN_JSON}"
    stale = [rowid for rowid, version in conn.execute(
        f"SELECT rowid_, version FROM traces WHERE user_key=? AND agent_key=? AND {in_sessions}",
        (user, agent, names)) if not held.has_trace(rowid, version)]
    if stale:
        out["traces"] = conn.execute(
            f"SELECT {trace_columns} FROM traces WHERE rowid_ {_IN_JSON}"
            " ORDER BY session, seq, rowid_", (json.dumps(stale),)).fetchall()
    current: dict[str, list[int]] = {name: [] for name in sessions}
    for uid, session in conn.execute(
            f"SELECT id, session FROM units WHERE user_key=? AND agent_key=? AND {in_sessions}", (user, agent, names)):
        current[session].append(uid)
    by_keys, wanted = split_by_ids(sessions, current, held, out)
    if by_keys:
        keys = conn.execute(
            "SELECT u.id, u.session, u.level, u.position, u.text_hash, u.trace_rowids FROM units u"
            f" WHERE u.user_key=? AND u.agent_key=? AND u.{in_sessions}"
            f" ORDER BY u.session, {_LEVEL_ORDER}, u.position", (user, agent, json.dumps(by_keys))).fetchall()
        keys = [(uid, session, level, position, text_hash, parse_rowids(rowids))
                for uid, session, level, position, text_hash, rowids in keys]
        wanted += [row[0] for row in keys if not held.has_unit(*row[1:])]
    else:
        keys = []
    ids = json.dumps(wanted)
    content = {row[0]: tuple(row[1:]) for row in conn.execute(
        "SELECT u.id, u.session, u.level, u.position, u.text, u.text_hash, u.trace_rowids, v.vec FROM units u"
        f" LEFT JOIN unit_vectors v ON v.unit_id = u.id WHERE u.id {_IN_JSON}"
        f" ORDER BY u.session, {_LEVEL_ORDER}, u.position", (ids,))} if wanted else {}
    out["units"] = merge_unit_rows(keys, content)
    out["mentions"] = conn.execute(
        f"SELECT unit_id, entity, label, surface, count FROM unit_mentions WHERE unit_id {_IN_JSON}"
        " ORDER BY unit_id, entity", (ids,)).fetchall() if wanted else []


def bump_version(conn: sqlite3.Connection, user: str, agent: str, *, reset: bool = False) -> None:
    """One more write to the scope; ``reset`` also marks it a wipe (``reset_version``), after
    which an in-memory index of the scope must be rebuilt whole."""
    # A new row starts above the floor, and as a wipe when there is one (see VERSION_FLOOR_KEY).
    conn.execute(
        "INSERT INTO scope_versions (user_key, agent_key, version, reset_version)"
        " SELECT ?, ?, floor + 1, CASE WHEN floor > 0 THEN floor + 1 ELSE 0 END FROM"
        " (SELECT COALESCE((SELECT CAST(value AS INTEGER) FROM store_meta WHERE key = ?), 0) AS floor)"
        " WHERE true ON CONFLICT(user_key, agent_key) DO UPDATE SET version = version + 1",
        (user, agent, VERSION_FLOOR_KEY))
    if reset:
        conn.execute("UPDATE scope_versions SET reset_version = version"
                     " WHERE user_key=? AND agent_key=?", (user, agent))


def dirty_sessions(conn: sqlite3.Connection, user: str, agent: str) -> list[str]:
    return [r[0] for r in conn.execute(
        "SELECT session FROM dirty_sessions WHERE user_key=? AND agent_key=? ORDER BY session", (user, agent))]


def reset_derived(conn: sqlite3.Connection, user: str, agent: str) -> None:
    """Drop every derived row of a scope and mark all its sessions dirty (a full rebuild)."""
    for table in ("units", "entity_vectors", "session_changes", "scope_snapshots", "scope_snapshot_parts"):
        conn.execute(f"DELETE FROM {table} WHERE user_key=? AND agent_key=?", (user, agent))
    conn.execute("INSERT OR IGNORE INTO dirty_sessions SELECT DISTINCT user_key, agent_key, session"
                 " FROM traces WHERE user_key=? AND agent_key=?", (user, agent))
    bump_version(conn, user, agent, reset=True)


def stored_encodings(conn: sqlite3.Connection, user: str, agent: str, text_hashes: Sequence[str],
                     sessions: Sequence[str] = ()) -> tuple[dict[str, bytes], dict[str, list[tuple]]]:
    """Vectors (turn/span units) and mentions (turn units) already stored for these texts.

    A text the ``sessions``' own units have is answered from them, in one read of those
    sessions (a write re-derives its session: most of its texts are its own stored units); any
    other text from the oldest unit of the scope that has it — a text repeated a thousand
    times in the scope costs one vector read, not a thousand. (A text's vector and mentions
    are functions of the text — up to float rounding with an embedder that batches texts —
    so which unit answers does not matter.)
    """
    vectors: dict[str, bytes] = {}
    mentions: dict[str, list[tuple]] = {}
    turn_ids: dict[int, str] = {}
    wanted = set(text_hashes)
    if sessions and wanted:
        names = json.dumps(list(sessions))
        for uid, level, text_hash, vec in conn.execute(
                "SELECT u.id, u.level, u.text_hash, v.vec FROM units u LEFT JOIN unit_vectors v ON v.unit_id = u.id"
                f" WHERE u.user_key=? AND u.agent_key=? AND u.session {_IN_JSON}"
                " AND u.level IN ('turn', 'span') ORDER BY u.id", (user, agent, names)):
            if text_hash not in wanted:
                continue
            if vec is not None:
                vectors.setdefault(text_hash, vec)
            if level == "turn" and text_hash not in mentions:
                turn_ids[uid] = text_hash
                mentions[text_hash] = []
    # The units_text index is ordered (scope, text_hash, id): "the oldest unit of this text" is
    # one index probe, however often the text repeats; json_each runs every probe inside one
    # statement.
    rest = sorted(h for h in wanted if h not in vectors and h not in mentions)
    for text_hash, vec, turn_id in conn.execute(
            "SELECT j.value,"
            " (SELECT v.vec FROM units u JOIN unit_vectors v ON v.unit_id = u.id WHERE u.user_key = ?1"
            "  AND u.agent_key = ?2 AND u.text_hash = j.value AND u.level IN ('turn', 'span') ORDER BY u.id LIMIT 1),"
            " (SELECT id FROM units WHERE user_key = ?1 AND agent_key = ?2 AND text_hash = j.value"
            "  AND level = 'turn' ORDER BY id LIMIT 1)"
            " FROM json_each(?3) j", (user, agent, json.dumps(rest))) if rest else ():
        if vec is not None:
            vectors[text_hash] = vec
        if turn_id is not None:
            turn_ids[turn_id] = text_hash
            mentions[text_hash] = []
    ids = sorted(turn_ids)
    for start in range(0, len(ids), 500):
        chunk = ids[start:start + 500]
        marks = ",".join("?" * len(chunk))
        for uid, entity, label, surface, count in conn.execute(
                f"SELECT unit_id, entity, label, surface, count FROM unit_mentions"
                f" WHERE unit_id IN ({marks}) ORDER BY unit_id, entity", chunk):
            mentions[turn_ids[uid]].append((entity, label, surface, count))
    return vectors, mentions


def entities_with_vectors(conn: sqlite3.Connection, user: str, agent: str, names: Sequence[str]) -> set[str]:
    have: set[str] = set()
    for start in range(0, len(names), 500):
        chunk = list(names[start:start + 500])
        marks = ",".join("?" * len(chunk))
        have.update(r[0] for r in conn.execute(
            f"SELECT entity FROM entity_vectors WHERE user_key=? AND agent_key=? AND entity IN ({marks})",
            (user, agent, *chunk)))
    return have


def commit_session(conn: sqlite3.Connection, user: str, agent: str, session: str,
                   expected: Sequence[tuple[int, int]], units: Sequence, entity_vectors: dict[str, bytes],
                   replacing: Replacing | None = None) -> int | None:
    """Replace a session's derived rows — if its traces are still ``expected`` ((rowid,
    version) in order) and, with ``replacing``, its change version still ``replacing.since``;
    else change nothing and return None (it stays dirty). Returns the new change version."""
    current = conn.execute(
        "SELECT rowid_, version FROM traces WHERE user_key=? AND agent_key=? AND session=? ORDER BY seq, rowid_",
        (user, agent, session)).fetchall()
    if [tuple(r) for r in current] != [tuple(e) for e in expected]:
        return None
    if replacing is not None:
        if _change_version(conn, user, agent, session) != replacing.since:
            return None  # another writer derived the session since: the caller derives it whole
        conn.executemany(
            "DELETE FROM units WHERE user_key=? AND agent_key=? AND session=? AND level=? AND position=?",
            [(user, agent, session, level, position) for level, position in replacing.units])
        fresh = list(units)
    else:
        fresh = _replace_changed(conn, user, agent, session, units)
    for unit in fresh:
        cur = conn.execute(
            "INSERT INTO units (user_key, agent_key, session, level, position, text, text_hash, trace_rowids,"
            " first_seq, last_seq, speaker, time) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
            (user, agent, session, unit.level, unit.position, unit.text, unit.text_hash,
             json.dumps(list(unit.rowids)), unit.first_seq, unit.last_seq, unit.speaker, unit.time))
        uid = cur.lastrowid
        if unit.vector is not None:
            conn.execute("INSERT INTO unit_vectors VALUES (?,?,?)", (uid, "dense", unit.vector))
        if unit.mentions:
            conn.executemany("INSERT INTO unit_mentions VALUES (?,?,?,?,?)", [(uid, *m) for m in unit.mentions])
    # Vectors the indexer made (entities the scope had none for) go in for every unit's
    # mentions, kept or new.
    mentioned = {m[0] for unit in units for m in unit.mentions}
    # The session's entities get their vectors in the same transaction, so a reader never sees
    # a mention whose entity vector is still missing. (Vectors of entities nobody mentions any
    # more are removed by the update/delete that dropped them.)
    conn.executemany("INSERT OR IGNORE INTO entity_vectors VALUES (?,?,?,?,?)",
                     [(user, agent, e, "dense", entity_vectors[e]) for e in sorted(mentioned) if e in entity_vectors])
    conn.execute("DELETE FROM dirty_sessions WHERE user_key=? AND agent_key=? AND session=?", (user, agent, session))
    note_session_change(conn, user, agent, session)
    bump_version(conn, user, agent)
    return _change_version(conn, user, agent, session)


def _replace_changed(conn: sqlite3.Connection, user: str, agent: str, session: str, units: Sequence) -> list:
    """Delete the session's unit rows that no unit of ``units`` equals (rows.split_units);
    returns the units to insert."""
    fresh, stale = split_units(
        ((uid, unit_key(level, position, text_hash, parse_rowids(rowids), first, last, speaker, time, has_vector))
         for uid, level, position, text_hash, rowids, first, last, speaker, time, has_vector in conn.execute(
            "SELECT u.id, u.level, u.position, u.text_hash, u.trace_rowids, u.first_seq, u.last_seq,"
            " u.speaker, u.time, v.unit_id IS NOT NULL FROM units u LEFT JOIN unit_vectors v ON v.unit_id = u.id"
            " WHERE u.user_key=? AND u.agent_key=? AND u.session=? ORDER BY u.id", (user, agent, session))),
        units)
    if stale:
        conn.execute(f"DELETE FROM units WHERE id {_IN_JSON}", (json.dumps(stale),))
    return fresh


def _change_version(conn: sqlite3.Connection, user: str, agent: str, session: str) -> int | None:
    row = conn.execute("SELECT version FROM session_changes WHERE user_key=? AND agent_key=? AND session=?",
                       (user, agent, session)).fetchone()
    return None if row is None else int(row[0])


def turn_vectors(conn: sqlite3.Connection, user: str, agent: str, session: str) -> dict[int, bytes]:
    """The vector of each turn unit of the session, by its trace's row number."""
    return {parse_rowids(rowids)[0]: vec for rowids, vec in conn.execute(
        "SELECT u.trace_rowids, v.vec FROM units u JOIN unit_vectors v ON v.unit_id = u.id"
        " WHERE u.user_key=? AND u.agent_key=? AND u.session=? AND u.level='turn'", (user, agent, session))}


def add_encoder_timings(conn: sqlite3.Connection, seconds: dict[str, float], items: dict[str, int]) -> None:
    for encoder, spent in seconds.items():
        conn.execute("INSERT INTO encoder_timings VALUES (?,?,?) ON CONFLICT(encoder) DO UPDATE SET"
                     " seconds = seconds + excluded.seconds, items = items + excluded.items",
                     (encoder, spent, items.get(encoder, 0)))


def trace_entities(conn: sqlite3.Connection, user: str, agent: str, rowid: int, limit: int
                   ) -> tuple[list[tuple[str, str, str, int, int]], list[tuple[int, list[str]]]]:
    mentions = conn.execute(
        "SELECT m.entity, m.label, m.surface, m.count FROM units u JOIN unit_mentions m ON m.unit_id = u.id"
        " WHERE u.user_key=? AND u.agent_key=? AND u.level='turn' AND u.trace_rowids=? ORDER BY m.entity",
        (user, agent, json.dumps([rowid]))).fetchall()
    if not mentions:
        return [], []
    names = [m[0] for m in mentions]
    marks = ",".join("?" * len(names))
    shared: dict[int, list[str]] = {}
    df: dict[str, int] = dict.fromkeys(names, 0)
    for rowids, entity in conn.execute(
            "SELECT u.trace_rowids, m.entity FROM unit_mentions m JOIN units u ON u.id = m.unit_id"
            f" WHERE u.user_key=? AND u.agent_key=? AND u.level='turn' AND m.entity IN ({marks})",
            (user, agent, *names)):
        df[entity] += 1
        other = json.loads(rowids)[0]
        if other != rowid:
            shared.setdefault(other, []).append(entity)
    ranked = sorted(shared.items(), key=lambda item: (-len(item[1]), item[0]))[:max(0, limit)]
    return ([(e, label, surface, count, df[e]) for e, label, surface, count in mentions],
            [(other, sorted(entities)) for other, entities in ranked])


def trace_signals(conn: sqlite3.Connection, user: str, agent: str, *, missing_only: bool = False,
                  rowids: Sequence[int] | None = None) -> dict[int, str | None]:
    """Every trace of the scope (or of ``rowids`` among them) → its stored lifecycle signals
    (JSON) for its current version, or None when they are missing or were computed for an
    older version; ``missing_only``: just the None ones (what a refresh after a write
    computes, for the traces it wrote: a cost that does not grow with the scope)."""
    # With ``rowids``, the scope's columns are unary-plus'd (`+t.user_key`) so that SQLite looks
    # the rows up by primary key instead of walking the scope's index (17 ms at 100k traces).
    scoped = ("t.user_key=? AND t.agent_key=?" if rowids is None
              else f"+t.user_key=? AND +t.agent_key=? AND t.rowid_ {_IN_JSON}")
    rows = conn.execute(
        "SELECT t.rowid_, s.signals FROM traces t LEFT JOIN trace_signals s"
        " ON s.user_key = t.user_key AND s.agent_key = t.agent_key AND s.trace_rowid = t.rowid_"
        " AND s.version = t.version WHERE " + scoped
        + (" AND s.signals IS NULL" if missing_only else "") + " ORDER BY t.rowid_",
        (user, agent) + (() if rowids is None else (json.dumps([int(r) for r in rowids]),))).fetchall()
    return {int(rowid): blob for rowid, blob in rows}


def put_signals(conn: sqlite3.Connection, user: str, agent: str,
                rows: Sequence[tuple[int, int, str]]) -> None:
    """Store (trace rowid, version, signals JSON) rows, except those of traces deleted since
    they were computed (a delete removes a trace's signals with it: only these rows can be
    left without a trace, so only they are checked, not the whole scope)."""
    conn.executemany(
        "INSERT INTO trace_signals (user_key, agent_key, trace_rowid, version, signals)"
        " VALUES (?, ?, ?, ?, ?) ON CONFLICT (user_key, agent_key, trace_rowid)"
        " DO UPDATE SET version = excluded.version, signals = excluded.signals",
        [(user, agent, rowid, version, blob) for rowid, version, blob in rows])
    put = json.dumps(sorted({int(rowid) for rowid, _, _ in rows}))
    conn.execute(f"DELETE FROM trace_signals WHERE user_key=? AND agent_key=? AND trace_rowid {_IN_JSON}"
                 " AND trace_rowid NOT IN (SELECT rowid_ FROM traces WHERE +user_key=? AND +agent_key=?"
                 f" AND rowid_ {_IN_JSON})", (user, agent, put, user, agent, put))


def expiring(conn: sqlite3.Connection, user: str, agent: str) -> dict[int, Any]:
    """rowid → metadata ``expires_at`` of the scope's traces that carry one."""
    rows = conn.execute("SELECT rowid_, json_extract(metadata, '$.expires_at') FROM traces"
                        " WHERE user_key=? AND agent_key=? AND metadata LIKE '%\"expires_at\"%'",
                        (user, agent)).fetchall()
    return {int(rowid): value for rowid, value in rows if value is not None}
