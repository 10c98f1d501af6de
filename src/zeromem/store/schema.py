"""Versioned schema with forward-only migrations.

Each entry of MIGRATIONS moves a database from version i to i+1 and runs inside one
transaction, so a file is always at exactly one version. A file written by a newer zeromem
(a version above len(MIGRATIONS)) is refused instead of being silently misread.
"""

from __future__ import annotations

import sqlite3

from ..errors import StoreError
from .checks import scope_json

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
    # older store gets its key here, so its ids change once (docs/decisions/0021-opaque-trace-ids.md).
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
    # v10: scopes keyed as the PostgreSQL store keys them (postgres_schema.py), so that both
    # backends run the same statements (sqlstore.py): every per-scope table leads its key and
    # its indexes with ``scope_key``, the scope as JSON (``["ana",""]``, checks.scope_json,
    # computed here by the same Python function); ``traces`` keeps ``user_key`` and
    # ``agent_key`` beside it (listing scopes, exports), as in PostgreSQL. ``units.trace_rowids``
    # becomes ``rowids``; ``unit_mentions`` gains ``scope_key``. Tables are rebuilt (create,
    # copy, drop, rename, with foreign keys off: ``migrate``), row ids and the AUTOINCREMENT
    # counters kept, so no id is ever handed out twice.
    """
    ALTER TABLE traces ADD COLUMN scope_key TEXT NOT NULL DEFAULT '';
    UPDATE traces SET scope_key = zeromem_scope_key(user_key, agent_key);
    DROP INDEX traces_scope_session;
    DROP INDEX traces_scope_time;
    DROP INDEX traces_expiring;
    CREATE INDEX traces_scope_session ON traces(scope_key, session, seq);
    CREATE INDEX traces_scope_time ON traces(scope_key, event_time);
    CREATE INDEX traces_expiring ON traces(scope_key) WHERE metadata LIKE '%"expires_at"%';

    CREATE TABLE trace_history_new (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        scope_key TEXT NOT NULL,
        trace_rowid INTEGER NOT NULL,
        event TEXT NOT NULL,
        at TEXT NOT NULL,
        old_text TEXT,
        new_text TEXT,
        old_metadata TEXT,
        new_metadata TEXT
    );
    INSERT INTO sqlite_sequence (name, seq) SELECT 'trace_history_new', seq FROM sqlite_sequence
        WHERE name = 'trace_history';
    INSERT INTO trace_history_new SELECT id, zeromem_scope_key(user_key, agent_key), trace_rowid, event,
        at, old_text, new_text, old_metadata, new_metadata FROM trace_history ORDER BY id;
    DROP TABLE trace_history;
    ALTER TABLE trace_history_new RENAME TO trace_history;
    CREATE INDEX trace_history_trace ON trace_history(trace_rowid);

    CREATE TABLE scope_versions_new (
        scope_key TEXT NOT NULL PRIMARY KEY,
        version INTEGER NOT NULL,
        reset_version INTEGER NOT NULL DEFAULT 0
    );
    INSERT INTO scope_versions_new SELECT zeromem_scope_key(user_key, agent_key), version, reset_version
        FROM scope_versions;
    DROP TABLE scope_versions;
    ALTER TABLE scope_versions_new RENAME TO scope_versions;

    CREATE TABLE dirty_sessions_new (
        scope_key TEXT NOT NULL,
        session TEXT NOT NULL,
        PRIMARY KEY (scope_key, session)
    );
    INSERT INTO dirty_sessions_new SELECT zeromem_scope_key(user_key, agent_key), session FROM dirty_sessions;
    DROP TABLE dirty_sessions;
    ALTER TABLE dirty_sessions_new RENAME TO dirty_sessions;

    CREATE TABLE units_new (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        scope_key TEXT NOT NULL,
        session TEXT NOT NULL,
        level TEXT NOT NULL,
        position INTEGER NOT NULL,
        text TEXT NOT NULL,
        text_hash TEXT NOT NULL,
        rowids TEXT NOT NULL,
        first_seq INTEGER NOT NULL,
        last_seq INTEGER NOT NULL,
        speaker TEXT,
        time TEXT
    );
    INSERT INTO sqlite_sequence (name, seq) SELECT 'units_new', seq FROM sqlite_sequence WHERE name = 'units';
    INSERT INTO units_new SELECT id, zeromem_scope_key(user_key, agent_key), session, level, position, text,
        text_hash, trace_rowids, first_seq, last_seq, speaker, time FROM units ORDER BY id;

    CREATE TABLE unit_mentions_new (
        scope_key TEXT NOT NULL,
        unit_id INTEGER NOT NULL REFERENCES units(id) ON DELETE CASCADE,
        entity TEXT NOT NULL,
        label TEXT NOT NULL,
        surface TEXT NOT NULL,
        count INTEGER NOT NULL,
        PRIMARY KEY (unit_id, entity)
    );
    INSERT INTO unit_mentions_new SELECT u.scope_key, m.unit_id, m.entity, m.label, m.surface, m.count
        FROM unit_mentions m JOIN units_new u ON u.id = m.unit_id;
    DROP TABLE unit_mentions;
    DROP TABLE units;
    ALTER TABLE units_new RENAME TO units;
    ALTER TABLE unit_mentions_new RENAME TO unit_mentions;
    CREATE INDEX units_scope ON units(scope_key, session, level, position);
    CREATE INDEX units_text ON units(scope_key, text_hash);
    CREATE INDEX unit_mentions_entity ON unit_mentions(scope_key, entity);

    CREATE TABLE entity_vectors_new (
        scope_key TEXT NOT NULL,
        entity TEXT NOT NULL,
        model TEXT NOT NULL,
        vec BLOB NOT NULL,
        PRIMARY KEY (scope_key, entity)
    );
    INSERT INTO entity_vectors_new SELECT zeromem_scope_key(user_key, agent_key), entity, model, vec
        FROM entity_vectors;
    DROP TABLE entity_vectors;
    ALTER TABLE entity_vectors_new RENAME TO entity_vectors;

    CREATE TABLE session_changes_new (
        scope_key TEXT NOT NULL,
        session TEXT NOT NULL,
        version INTEGER NOT NULL,
        PRIMARY KEY (scope_key, session)
    );
    INSERT INTO session_changes_new SELECT zeromem_scope_key(user_key, agent_key), session, version
        FROM session_changes;
    DROP TABLE session_changes;
    ALTER TABLE session_changes_new RENAME TO session_changes;
    CREATE INDEX session_changes_version ON session_changes(scope_key, version);

    CREATE TABLE scope_snapshots_new (
        scope_key TEXT NOT NULL PRIMARY KEY,
        version INTEGER NOT NULL,
        format INTEGER NOT NULL,
        blob BLOB NOT NULL
    );
    INSERT INTO scope_snapshots_new SELECT zeromem_scope_key(user_key, agent_key), version, format, blob
        FROM scope_snapshots;
    DROP TABLE scope_snapshots;
    ALTER TABLE scope_snapshots_new RENAME TO scope_snapshots;

    CREATE TABLE scope_snapshot_parts_new (
        scope_key TEXT NOT NULL,
        name TEXT NOT NULL,
        blob BLOB NOT NULL,
        PRIMARY KEY (scope_key, name)
    );
    INSERT INTO scope_snapshot_parts_new SELECT zeromem_scope_key(user_key, agent_key), name, blob
        FROM scope_snapshot_parts;
    DROP TABLE scope_snapshot_parts;
    ALTER TABLE scope_snapshot_parts_new RENAME TO scope_snapshot_parts;

    CREATE TABLE trace_signals_new (
        scope_key TEXT NOT NULL,
        trace_rowid INTEGER NOT NULL,
        version INTEGER NOT NULL,
        signals TEXT NOT NULL,
        PRIMARY KEY (scope_key, trace_rowid)
    );
    INSERT INTO trace_signals_new SELECT zeromem_scope_key(user_key, agent_key), trace_rowid, version, signals
        FROM trace_signals;
    DROP TABLE trace_signals;
    ALTER TABLE trace_signals_new RENAME TO trace_signals
    """,
]

SCHEMA_VERSION = len(MIGRATIONS)


def migrate(conn: sqlite3.Connection) -> int:
    """Bring ``conn``'s database to SCHEMA_VERSION; returns the version it started at.

    Foreign keys are off while it runs (a rebuilt table is dropped and renamed: with them on,
    dropping ``units`` would cascade to its vectors and mentions); each step checks them
    before it commits.
    """
    start = int(conn.execute("PRAGMA user_version").fetchone()[0])
    if start > SCHEMA_VERSION:
        raise StoreError(
            f"this database has schema version {start}, newer than this zeromem understands "
            f"({SCHEMA_VERSION}): upgrade zeromem to open it"
        )
    if start == SCHEMA_VERSION:
        return start
    conn.create_function("zeromem_scope_key", 2, scope_json, deterministic=True)
    keys_on = bool(conn.execute("PRAGMA foreign_keys").fetchone()[0])
    conn.execute("PRAGMA foreign_keys = OFF")  # a no-op inside a transaction: there is none here
    try:
        _run_steps(conn, start)
    finally:
        if keys_on:
            conn.execute("PRAGMA foreign_keys = ON")
    return start


def _run_steps(conn: sqlite3.Connection, start: int) -> None:
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
            broken = conn.execute("PRAGMA foreign_key_check").fetchall()
            if broken:
                raise StoreError(f"the schema migration to version {version + 1} left rows without "
                                 f"their parent ({broken[:3]}): nothing was changed")
            conn.execute(f"PRAGMA user_version = {version + 1}")
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
