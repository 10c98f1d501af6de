"""Versioned schema with forward-only migrations.

Each entry of MIGRATIONS moves a database from version i to i+1 and runs inside one
transaction, so a file is always at exactly one version. A file written by a newer zeromem
(a version above len(MIGRATIONS)) is refused instead of being silently misread.
"""

from __future__ import annotations

import sqlite3

from ..errors import StoreError

MIGRATIONS: list[str] = [
    # v1: the source of record.
    """
    CREATE TABLE traces (
        rowid_ INTEGER PRIMARY KEY AUTOINCREMENT,
        user_key TEXT NOT NULL,
        agent_key TEXT NOT NULL,
        session TEXT NOT NULL,
        seq INTEGER NOT NULL,
        text TEXT NOT NULL,
        speaker TEXT,
        role TEXT NOT NULL,
        session_time TEXT,
        event_time TEXT,
        recorded_at TEXT NOT NULL,
        source_id TEXT,
        metadata TEXT NOT NULL DEFAULT '{}',
        attachments TEXT NOT NULL DEFAULT '[]',
        version INTEGER NOT NULL DEFAULT 1,
        has_session INTEGER NOT NULL DEFAULT 1
    );
    CREATE INDEX traces_scope_session ON traces(user_key, agent_key, session, seq);
    CREATE INDEX traces_scope_time ON traces(user_key, agent_key, event_time);
    CREATE TABLE trace_history (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        trace_rowid INTEGER NOT NULL,
        user_key TEXT NOT NULL,
        agent_key TEXT NOT NULL,
        event TEXT NOT NULL,
        at TEXT NOT NULL,
        old_text TEXT,
        new_text TEXT,
        old_metadata TEXT,
        new_metadata TEXT
    );
    CREATE INDEX trace_history_trace ON trace_history(trace_rowid);
    CREATE TABLE scope_versions (
        user_key TEXT NOT NULL,
        agent_key TEXT NOT NULL,
        version INTEGER NOT NULL,
        PRIMARY KEY (user_key, agent_key)
    );
    """,
    # v2: derived units (turn/span/window/episode) and their encodings. Rebuildable from v1.
    """
    CREATE TABLE dirty_sessions (
        user_key TEXT NOT NULL,
        agent_key TEXT NOT NULL,
        session TEXT NOT NULL,
        PRIMARY KEY (user_key, agent_key, session)
    );
    CREATE TABLE units (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        user_key TEXT NOT NULL,
        agent_key TEXT NOT NULL,
        session TEXT NOT NULL,
        level TEXT NOT NULL,
        position INTEGER NOT NULL,
        text TEXT NOT NULL,
        text_hash TEXT NOT NULL,
        trace_rowids TEXT NOT NULL,
        first_seq INTEGER NOT NULL,
        last_seq INTEGER NOT NULL,
        speaker TEXT,
        time TEXT
    );
    CREATE INDEX units_scope ON units(user_key, agent_key, session, level, position);
    CREATE INDEX units_text ON units(user_key, agent_key, text_hash);
    CREATE TABLE unit_vectors (
        unit_id INTEGER PRIMARY KEY REFERENCES units(id) ON DELETE CASCADE,
        model TEXT NOT NULL,
        vec BLOB NOT NULL
    );
    CREATE TABLE unit_mentions (
        unit_id INTEGER NOT NULL REFERENCES units(id) ON DELETE CASCADE,
        entity TEXT NOT NULL,
        label TEXT NOT NULL,
        surface TEXT NOT NULL,
        count INTEGER NOT NULL,
        PRIMARY KEY (unit_id, entity)
    );
    CREATE INDEX unit_mentions_entity ON unit_mentions(entity);
    CREATE TABLE entity_vectors (
        user_key TEXT NOT NULL,
        agent_key TEXT NOT NULL,
        entity TEXT NOT NULL,
        model TEXT NOT NULL,
        vec BLOB NOT NULL,
        PRIMARY KEY (user_key, agent_key, entity)
    );
    CREATE TABLE encoder_timings (
        encoder TEXT PRIMARY KEY,
        seconds REAL NOT NULL,
        items INTEGER NOT NULL
    );
    """,
    # v3: an attached image's description became a span of its own (indexes/units.py). Sessions
    # with attachments are derived again on the next index() or search; unchanged texts reuse
    # their stored encodings.
    """
    INSERT OR IGNORE INTO dirty_sessions
        SELECT DISTINCT user_key, agent_key, session FROM traces WHERE attachments != '[]'
    """,
    # v4: streaming. Every derivation of a session records the scope version it happened at
    # (session_changes), so a process holding an in-memory index reads only the sessions that
    # changed since its version; reset_version marks a wipe (delete_scope, reindex) after which
    # an in-memory index must be rebuilt whole. store_meta keeps per-file facts (the embedder
    # fingerprint); scope_snapshots holds persisted in-memory indexes (derived, disposable).
    """
    ALTER TABLE scope_versions ADD COLUMN reset_version INTEGER NOT NULL DEFAULT 0;
    CREATE TABLE session_changes (
        user_key TEXT NOT NULL,
        agent_key TEXT NOT NULL,
        session TEXT NOT NULL,
        version INTEGER NOT NULL,
        PRIMARY KEY (user_key, agent_key, session)
    );
    CREATE INDEX session_changes_version ON session_changes(user_key, agent_key, version);
    CREATE TABLE store_meta (
        key TEXT PRIMARY KEY,
        value TEXT NOT NULL
    );
    CREATE TABLE scope_snapshots (
        user_key TEXT NOT NULL,
        agent_key TEXT NOT NULL,
        version INTEGER NOT NULL,
        format INTEGER NOT NULL,
        blob BLOB NOT NULL,
        PRIMARY KEY (user_key, agent_key)
    );
    INSERT OR IGNORE INTO session_changes
        SELECT DISTINCT u.user_key, u.agent_key, u.session, COALESCE(v.version, 0)
        FROM units u LEFT JOIN scope_versions v ON v.user_key = u.user_key AND v.agent_key = u.agent_key
    """,
    # v5: a persisted in-memory index is one header row (scope_snapshots: version, JSON facts)
    # plus one row per array, so no single value nears SQLite's blob limit.
    """
    CREATE TABLE scope_snapshot_parts (
        user_key TEXT NOT NULL,
        agent_key TEXT NOT NULL,
        name TEXT NOT NULL,
        blob BLOB NOT NULL,
        PRIMARY KEY (user_key, agent_key, name)
    )
    """,
    # v6: API keys of the memory service (store/keys.py): only a hash of each key is kept,
    # with the one scope it may read and write. Revoked keys stay listed.
    """
    CREATE TABLE api_keys (
        key_id TEXT PRIMARY KEY,
        key_hash TEXT NOT NULL UNIQUE,
        user_key TEXT NOT NULL,
        agent_key TEXT NOT NULL,
        label TEXT,
        created_at TEXT NOT NULL,
        revoked_at TEXT
    )
    """,
    # v7: the memory lifecycle's per-trace signals (lifecycle/signals.py): numbers and signal
    # names by (trace, version), no text; derived, rebuildable from the traces.
    """
    CREATE TABLE trace_signals (
        user_key TEXT NOT NULL,
        agent_key TEXT NOT NULL,
        trace_rowid INTEGER NOT NULL,
        version INTEGER NOT NULL,
        signals TEXT NOT NULL,
        PRIMARY KEY (user_key, agent_key, trace_rowid)
    )
    """,
    # v8: opaque trace ids (store/ids.py): the store's secret key of the permutation that turns
    # a trace's row number into its public id (16 random bytes from SQLite's CSPRNG, hex). An
    # older store gets its key here, so its ids change once (docs/decisions.md#d-021).
    """
    INSERT OR IGNORE INTO store_meta (key, value) VALUES ('trace_id_key', lower(hex(randomblob(16))))
    """,
    # v9: the traces that carry an expiry (metadata "expires_at"), found through a partial
    # index: a search after a write reads them again, and a scan of the scope's metadata grew
    # with the scope. The WHERE is the one `derived.expiring` queries with, word for word.
    """
    CREATE INDEX IF NOT EXISTS traces_expiring ON traces(user_key, agent_key)
        WHERE metadata LIKE '%"expires_at"%'
    """,
]

SCHEMA_VERSION = len(MIGRATIONS)


def migrate(conn: sqlite3.Connection) -> int:
    """Bring ``conn``'s database to SCHEMA_VERSION; returns the version it started at."""
    start = conn.execute("PRAGMA user_version").fetchone()[0]
    if start > SCHEMA_VERSION:
        raise StoreError(
            f"this database has schema version {start}, newer than this zeromem understands "
            f"({SCHEMA_VERSION}): upgrade zeromem to open it"
        )
    for version in range(start, SCHEMA_VERSION):
        conn.execute("BEGIN IMMEDIATE")
        try:
            # Another process may have migrated while we waited for the write lock.
            if conn.execute("PRAGMA user_version").fetchone()[0] > version:
                conn.execute("ROLLBACK")
                continue
            for statement in MIGRATIONS[version].split(";"):
                if statement.strip():
                    conn.execute(statement)
            conn.execute(f"PRAGMA user_version = {version + 1}")
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
    return start
