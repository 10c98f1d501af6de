"""Purging derived rows inside the write that makes them stale.

An update or delete removes, in its own transaction, every unit that covers the trace (its
turn and spans, and the windows and episode around it) with their vectors and mentions, and
the vectors of entities nobody mentions any more. The text of a deleted trace therefore
survives in no table the moment ``delete`` returns; the session is re-derived at the next
refresh, and the untouched turns of the session keep their stored encodings.
"""

from __future__ import annotations

import sqlite3


def purge_units_of_trace(conn: sqlite3.Connection, user: str, agent: str, session: str,
                         rowid: int) -> None:
    units = [r[0] for r in conn.execute(
        "SELECT u.id FROM units u WHERE u.user_key=? AND u.agent_key=? AND u.session=?"
        " AND EXISTS (SELECT 1 FROM json_each(u.trace_rowids) WHERE value = ?)",
        (user, agent, session, rowid))]
    if not units:
        return
    note_session_change(conn, user, agent, session)
    marks = ",".join("?" * len(units))
    entities = [r[0] for r in conn.execute(
        f"SELECT DISTINCT entity FROM unit_mentions WHERE unit_id IN ({marks})", units)]
    conn.execute(f"DELETE FROM units WHERE id IN ({marks})", units)  # cascades to vectors, mentions
    for entity in entities:
        still = conn.execute(
            "SELECT 1 FROM unit_mentions m JOIN units u ON u.id = m.unit_id"
            " WHERE m.entity=? AND u.user_key=? AND u.agent_key=? LIMIT 1",
            (entity, user, agent)).fetchone()
        if still is None:
            conn.execute("DELETE FROM entity_vectors WHERE user_key=? AND agent_key=? AND entity=?",
                         (user, agent, entity))


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
                 known_entities: set[str], trace_columns: str) -> dict:
    """Everything an in-memory index at version ``since`` needs to reach the current version,
    read by the caller inside ONE read transaction (so it is one consistent version).

    Returns ``version``, ``full`` (the scope was wiped or never read: rebuild from scratch),
    ``sessions`` (the changed sessions' names), ``traces`` / ``units`` / ``mentions`` rows of
    those sessions, and ``entities`` (vectors of mentioned entities not in ``known_entities``).
    """
    row = conn.execute("SELECT version, reset_version FROM scope_versions WHERE user_key=? AND agent_key=?",
                       (user, agent)).fetchone()
    version, reset = (row[0], row[1]) if row else (0, 0)
    full = since <= 0 or reset > since
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
    everything = full
    for start in range(0, len(sessions), 500):
        chunk = sessions[start:start + 500]
        marks = "" if everything else " AND session IN (%s)" % ",".join("?" * len(chunk))
        args = (user, agent) if everything else (user, agent, *chunk)
        out["traces"] += conn.execute(
            f"SELECT {trace_columns} FROM traces WHERE user_key=? AND agent_key=?{marks}"
            " ORDER BY session, seq, rowid_", args).fetchall()
        umarks = marks.replace("session", "u.session")
        out["units"] += conn.execute(
            "SELECT u.id, u.session, u.level, u.position, u.text, u.text_hash, u.trace_rowids, v.vec"
            " FROM units u LEFT JOIN unit_vectors v ON v.unit_id = u.id"
            f" WHERE u.user_key=? AND u.agent_key=?{umarks}"
            f" ORDER BY u.session, {_LEVEL_ORDER}, u.position", args).fetchall()
        out["mentions"] += conn.execute(
            "SELECT m.unit_id, m.entity, m.label, m.surface, m.count FROM unit_mentions m"
            f" JOIN units u ON u.id = m.unit_id WHERE u.user_key=? AND u.agent_key=?{umarks}"
            " ORDER BY m.unit_id, m.entity", args).fetchall()
        if everything:
            break
    wanted = sorted({r[1] for r in out["mentions"]} - known_entities)
    for start in range(0, len(wanted), 500):
        chunk = wanted[start:start + 500]
        marks = ",".join("?" * len(chunk))
        for entity, vec in conn.execute(
                f"SELECT entity, vec FROM entity_vectors WHERE user_key=? AND agent_key=? AND entity IN ({marks})",
                (user, agent, *chunk)):
            out["entities"][entity] = vec
    return out


def bump_version(conn: sqlite3.Connection, user: str, agent: str, *, reset: bool = False) -> None:
    """One more write to the scope; ``reset`` also marks it a wipe (``reset_version``), after
    which an in-memory index of the scope must be rebuilt whole."""
    conn.execute(
        "INSERT INTO scope_versions (user_key, agent_key, version) VALUES (?,?,1)"
        " ON CONFLICT(user_key, agent_key) DO UPDATE SET version = version + 1", (user, agent))
    if reset:
        conn.execute("UPDATE scope_versions SET reset_version = version"
                     " WHERE user_key=? AND agent_key=?", (user, agent))
