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
