"""The PostgreSQL store's versioned schema, with forward-only migrations.

Layout (docs/postgres.md): every per-scope table leads its primary key and every index with
``scope_key`` (the scope as JSON, ``["user","agent"]``), so each one can be distributed by it
with Citus and colocated; the per-database tables (``store_meta``, ``api_keys``,
``encoder_timings``, ``zeromem_schema``) are the only ones without it. Text columns use the
``"C"`` collation so that every ``ORDER BY`` sorts by code point, as SQLite does. Vectors are
pgvector ``vector`` columns (no fixed dimension: the embedder is a per-scope choice).

``migrate`` runs the missing steps in one transaction under an advisory lock, so two processes
opening a fresh database at once are safe: the second waits, then finds the work done. A
database written by a newer zeromem (a version above ``len(MIGRATIONS)``) is refused.
"""

from __future__ import annotations

from typing import Any

from ..errors import StoreError

# pg_advisory_lock key of schema migrations ("zeromem" in ASCII, as one bigint).
MIGRATION_LOCK = 0x7A65726F6D656D
SNAPSHOT_CHUNK = 1 << 20  # bytes per scope_snapshot_parts row (v4)

MIGRATIONS: list[str] = [
    # v1: the source of record, derived rows, and the per-database tables.
    """
    CREATE SEQUENCE zeromem_trace_ids;
    CREATE SEQUENCE zeromem_history_ids;
    CREATE SEQUENCE zeromem_unit_ids;
    CREATE TABLE traces (
        scope_key text COLLATE "C" NOT NULL,
        rowid_ bigint NOT NULL,
        user_key text COLLATE "C" NOT NULL,
        agent_key text COLLATE "C" NOT NULL,
        session text COLLATE "C" NOT NULL,
        seq bigint NOT NULL,
        text text COLLATE "C" NOT NULL,
        speaker text COLLATE "C",
        role text COLLATE "C" NOT NULL,
        session_time text COLLATE "C",
        event_time text COLLATE "C",
        recorded_at text COLLATE "C" NOT NULL,
        source_id text COLLATE "C",
        metadata text COLLATE "C" NOT NULL DEFAULT '{}',
        attachments text COLLATE "C" NOT NULL DEFAULT '[]',
        version bigint NOT NULL DEFAULT 1,
        has_session boolean NOT NULL DEFAULT true,
        PRIMARY KEY (scope_key, rowid_)
    );
    CREATE INDEX traces_scope_session ON traces (scope_key, session, seq);
    CREATE INDEX traces_scope_time ON traces (scope_key, event_time);
    CREATE TABLE trace_history (
        scope_key text COLLATE "C" NOT NULL,
        id bigint NOT NULL DEFAULT nextval('zeromem_history_ids'),
        trace_rowid bigint NOT NULL,
        event text COLLATE "C" NOT NULL,
        at text COLLATE "C" NOT NULL,
        old_text text COLLATE "C",
        new_text text COLLATE "C",
        old_metadata text COLLATE "C",
        new_metadata text COLLATE "C",
        PRIMARY KEY (scope_key, id)
    );
    CREATE INDEX trace_history_trace ON trace_history (scope_key, trace_rowid, id);
    CREATE TABLE scope_versions (
        scope_key text COLLATE "C" NOT NULL PRIMARY KEY,
        version bigint NOT NULL,
        reset_version bigint NOT NULL DEFAULT 0
    );
    CREATE TABLE dirty_sessions (
        scope_key text COLLATE "C" NOT NULL,
        session text COLLATE "C" NOT NULL,
        PRIMARY KEY (scope_key, session)
    );
    CREATE TABLE units (
        scope_key text COLLATE "C" NOT NULL,
        id bigint NOT NULL,
        session text COLLATE "C" NOT NULL,
        level text COLLATE "C" NOT NULL,
        position integer NOT NULL,
        text text COLLATE "C" NOT NULL,
        text_hash text COLLATE "C" NOT NULL,
        rowids bigint[] NOT NULL,
        first_seq bigint NOT NULL,
        last_seq bigint NOT NULL,
        speaker text COLLATE "C",
        time text COLLATE "C",
        vec vector,
        PRIMARY KEY (scope_key, id)
    );
    CREATE INDEX units_scope ON units (scope_key, session, level, position);
    CREATE INDEX units_text ON units (scope_key, text_hash, id);
    CREATE TABLE unit_mentions (
        scope_key text COLLATE "C" NOT NULL,
        unit_id bigint NOT NULL,
        entity text COLLATE "C" NOT NULL,
        label text COLLATE "C" NOT NULL,
        surface text COLLATE "C" NOT NULL,
        count integer NOT NULL,
        PRIMARY KEY (scope_key, unit_id, entity),
        FOREIGN KEY (scope_key, unit_id) REFERENCES units (scope_key, id) ON DELETE CASCADE
    );
    CREATE INDEX unit_mentions_entity ON unit_mentions (scope_key, entity);
    CREATE TABLE entity_vectors (
        scope_key text COLLATE "C" NOT NULL,
        entity text COLLATE "C" NOT NULL,
        model text COLLATE "C" NOT NULL,
        vec vector NOT NULL,
        PRIMARY KEY (scope_key, entity)
    );
    CREATE TABLE session_changes (
        scope_key text COLLATE "C" NOT NULL,
        session text COLLATE "C" NOT NULL,
        version bigint NOT NULL,
        PRIMARY KEY (scope_key, session)
    );
    CREATE INDEX session_changes_version ON session_changes (scope_key, version);
    CREATE TABLE scope_snapshots (
        scope_key text COLLATE "C" NOT NULL PRIMARY KEY,
        version bigint NOT NULL,
        format integer NOT NULL,
        blob bytea NOT NULL
    );
    CREATE TABLE scope_snapshot_parts (
        scope_key text COLLATE "C" NOT NULL,
        name text COLLATE "C" NOT NULL,
        blob bytea NOT NULL,
        PRIMARY KEY (scope_key, name)
    );
    CREATE TABLE store_meta (
        key text COLLATE "C" NOT NULL PRIMARY KEY,
        value text COLLATE "C" NOT NULL
    );
    CREATE TABLE encoder_timings (
        encoder text COLLATE "C" NOT NULL PRIMARY KEY,
        seconds double precision NOT NULL,
        items bigint NOT NULL
    );
    CREATE TABLE api_keys (
        key_id text COLLATE "C" NOT NULL PRIMARY KEY,
        key_hash text COLLATE "C" NOT NULL UNIQUE,
        user_key text COLLATE "C" NOT NULL,
        agent_key text COLLATE "C" NOT NULL,
        label text COLLATE "C",
        created_at text COLLATE "C" NOT NULL,
        revoked_at text COLLATE "C"
    )
    """,
    # v2: the memory lifecycle's per-trace signals (lifecycle/signals.py); derived, no text.
    """
    CREATE TABLE trace_signals (
        scope_key text COLLATE "C" NOT NULL,
        trace_rowid bigint NOT NULL,
        version integer NOT NULL,
        signals text COLLATE "C" NOT NULL,
        PRIMARY KEY (scope_key, trace_rowid)
    )
    """,
    # v3: opaque trace ids (store/ids.py): the store's secret key of the permutation that turns
    # a trace's row number into its public id (two random UUIDs: 244 bits from the server's
    # strong random source). `zeromem migrate` replaces it with the SQLite store's key.
    """
    INSERT INTO store_meta (key, value)
        VALUES ('trace_id_key', replace(gen_random_uuid()::text || gen_random_uuid()::text, '-', ''))
        ON CONFLICT (key) DO NOTHING
    """,
    # v4: a persisted index's arrays in chunks of at most SNAPSHOT_CHUNK bytes (chunk 0, 1, ...):
    # libpq keeps each connection's message buffer as large as the largest row it ever sent or
    # received, so one 80 MB array row left 80-160 MB resident in every pooled connection that
    # touched it. Rows stored whole by v1-v3 are cut up here (each statement can run again).
    f"""
    ALTER TABLE scope_snapshot_parts ADD COLUMN IF NOT EXISTS chunk integer NOT NULL DEFAULT 0;
    ALTER TABLE scope_snapshot_parts DROP CONSTRAINT IF EXISTS scope_snapshot_parts_pkey;
    ALTER TABLE scope_snapshot_parts ADD PRIMARY KEY (scope_key, name, chunk);
    INSERT INTO scope_snapshot_parts (scope_key, name, chunk, blob)
        SELECT scope_key, name, piece, substring(blob FROM piece * {SNAPSHOT_CHUNK} + 1 FOR {SNAPSHOT_CHUNK})
        FROM scope_snapshot_parts, generate_series(1, (length(blob) - 1) / {SNAPSHOT_CHUNK}) AS piece
        WHERE length(blob) > {SNAPSHOT_CHUNK};
    UPDATE scope_snapshot_parts SET blob = substring(blob FROM 1 FOR {SNAPSHOT_CHUNK})
        WHERE length(blob) > {SNAPSHOT_CHUNK}
    """,
    # v5: the traces that carry an expiry, through a partial index (see the SQLite store's v9;
    # the WHERE is the one `postgres_derived.expiring` queries with).
    """
    CREATE INDEX IF NOT EXISTS traces_expiring ON traces (scope_key)
        WHERE metadata LIKE '%"expires_at"%'
    """,
]

SCHEMA_VERSION = len(MIGRATIONS)

# Tables that hold one scope's rows (scope_key leads their keys) and the per-database ones.
SCOPED_TABLES = ("traces", "trace_history", "scope_versions", "dirty_sessions", "units",
                 "unit_mentions", "entity_vectors", "session_changes", "scope_snapshots",
                 "scope_snapshot_parts", "trace_signals")
GLOBAL_TABLES = ("store_meta", "api_keys", "encoder_timings", "zeromem_schema")

# Placement on Citus (docs/postgres.md, "Citus"). Every per-scope table is distributed by
# scope_key and colocated with ``traces`` (a scope's rows of every table on one shard; units
# before unit_mentions, whose foreign key includes the distribution column). Per-database
# tables that no statement writes while reading a per-scope table are reference tables (a
# copy on every node). Two stay plain tables on the coordinator: ``store_meta``, because
# delete_scope raises the version floor with ``UPDATE store_meta ... FROM scope_versions``, a
# write joined with a distributed read, which Citus refuses for a reference table
# (tests/pg_statements.py flags such a statement) and runs for a coordinator table; and
# ``zeromem_schema``, which has no primary key: a reference table without one stops the
# rebalancer (its logical replication needs a replica identity to copy it to a new node).
CITUS_DISTRIBUTED = SCOPED_TABLES
CITUS_REFERENCE = ("api_keys", "encoder_timings")
CITUS_LOCAL = ("store_meta", "zeromem_schema")


def schema_version(conn: Any) -> int | None:
    """The version recorded in ``zeromem_schema``, or None when the table does not exist."""
    exists = conn.execute("SELECT to_regclass('zeromem_schema') IS NOT NULL").fetchone()[0]
    if not exists:
        return None
    row = conn.execute("SELECT version FROM zeromem_schema").fetchone()
    return 0 if row is None else int(row[0])


def migrate(conn: Any) -> int:
    """Bring ``conn``'s database to SCHEMA_VERSION; returns the version it started at.

    ``conn`` is an autocommit psycopg connection. The common case (already current) takes
    one read and no lock.
    """
    current = schema_version(conn)
    if current == SCHEMA_VERSION:
        return current
    _refuse_newer(current)
    # A session lock taken outside the migration's transaction: the transaction then starts
    # after the wait, so it sees the catalog as the process that held the lock left it.
    conn.execute("SELECT pg_advisory_lock(%s)", (MIGRATION_LOCK,))
    try:
        with conn.transaction():
            start = schema_version(conn)  # another process may have migrated meanwhile
            _refuse_newer(start)
            if start is None:
                if conn.execute("SELECT 1 FROM pg_extension WHERE extname = 'vector'").fetchone() is None:
                    conn.execute("CREATE EXTENSION vector")
                conn.execute("CREATE TABLE zeromem_schema (version integer NOT NULL)")
                conn.execute("INSERT INTO zeromem_schema VALUES (0)")
                start = 0
                fresh = True
            else:
                fresh = start == 0
            citus = citus_installed(conn)
            # On Citus, a fresh database is distributed once made, and a distributed one keeps
            # being: each new table is distributed right after the migration that creates it.
            # (An existing store made without Citus is distributed by `zeromem migrate --citus`.)
            spread = citus and (fresh or is_distributed(conn))
            if spread:
                check_workers(conn)
                # DDL and distribution in one transaction: one connection per worker.
                conn.execute("SET LOCAL citus.multi_shard_modify_mode TO 'sequential'")
            for version in range(start, SCHEMA_VERSION):
                for statement in MIGRATIONS[version].split(";"):
                    if statement.strip():
                        conn.execute(statement)
                if spread and not fresh:
                    distribute(conn)  # what this step created, before the next step uses it
                conn.execute("UPDATE zeromem_schema SET version = %s", (version + 1,))
            if spread and fresh:
                distribute(conn)  # the whole schema at once, made as local tables just now
    finally:
        conn.execute("SELECT pg_advisory_unlock(%s)", (MIGRATION_LOCK,))
    return start


def citus_installed(conn: Any) -> bool:
    """Whether the database has the ``citus`` extension."""
    return conn.execute("SELECT 1 FROM pg_extension WHERE extname = 'citus'").fetchone() is not None


def placed(conn: Any) -> dict[str, str]:
    """Citus's placement of zeromem's tables: table -> 'distributed' / 'reference'."""
    rows = conn.execute("SELECT logicalrelid::regclass::text, partmethod FROM pg_dist_partition").fetchall()
    kinds = {"h": "distributed", "n": "reference"}
    return {str(t): kinds.get(m, m) for t, m in rows if t in (*SCOPED_TABLES, *GLOBAL_TABLES)}


def is_distributed(conn: Any) -> bool:
    """Whether ``traces`` is a Citus distributed table (False without Citus)."""
    return citus_installed(conn) and placed(conn).get("traces") == "distributed"


def check_workers(conn: Any) -> list[tuple[str, int]]:
    """The active primary workers; StoreError, saying what to do, when there are none, one is
    unreachable, or one lacks the citus or vector extension."""
    nodes = [(str(h), int(p)) for h, p in conn.execute(
        "SELECT nodename, nodeport FROM pg_dist_node WHERE isactive AND noderole = 'primary'"
        " AND shouldhaveshards ORDER BY nodeid").fetchall()]
    if not nodes:
        raise StoreError("this database has the citus extension but no node to hold shards: add the "
                         "workers on the coordinator (SELECT citus_add_node('host', port)), then open it again")
    rows = conn.execute(
        "SELECT nodename, nodeport, success, result FROM run_command_on_workers("
        "$$SELECT string_agg(extname, ',' ORDER BY extname) FROM pg_extension"
        " WHERE extname IN ('citus', 'vector')$$)").fetchall()
    for host, port, success, result in rows:
        if not success:
            raise StoreError(f"the Citus worker {host}:{port} cannot be reached from the coordinator "
                             f"({result}): start it, or remove it (citus_remove_node), then open again")
        missing = {"citus", "vector"} - set(str(result or "").split(","))
        if missing:
            raise StoreError(f"the Citus worker {host}:{port} lacks the extension(s) {', '.join(sorted(missing))}: "
                             f"run CREATE EXTENSION {' and '.join(sorted(missing))} in this database there")
    return nodes


def distribute(conn: Any, *, move_local_rows: bool = False) -> list[str]:
    """Place every zeromem table that exists and is not yet placed as CITUS_* says; returns
    what it did; a table CITUS_LOCAL keeps on the coordinator that is placed (by the recipe of
    earlier docs) is moved back. ``move_local_rows``: the tables had rows before (``zeromem migrate --citus``
    on a store made without Citus): Citus copies them to the shards, then the coordinator's
    own copies are truncated (else their bytes stay in its table files)."""
    existing = {str(r[0]) for r in conn.execute(
        "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()").fetchall()}
    done = placed(conn)
    steps: list[str] = []
    for table in CITUS_DISTRIBUTED:
        if table in existing and table not in done:
            colocate = "default" if table == "traces" else "traces"
            conn.execute("SELECT create_distributed_table(%s, 'scope_key', colocate_with => %s)",
                         (table, colocate))
            steps.append(f"distributed {table} by scope_key")
    for table in CITUS_REFERENCE:
        if table in existing and table not in done:
            conn.execute("SELECT create_reference_table(%s)", (table,))
            steps.append(f"made {table} a reference table")
    for table in CITUS_LOCAL:
        if table in done:  # placed by the recipe of earlier docs: back onto the coordinator
            conn.execute("SELECT undistribute_table(%s)", (table,))
            steps.append(f"moved {table} back to the coordinator (was a {done[table]} table)")
    if move_local_rows:
        for table in (*CITUS_DISTRIBUTED, *CITUS_REFERENCE):
            if table in existing and table not in done:
                conn.execute("SELECT truncate_local_data_after_distributing_table(%s)", (table,))
    return steps


def _refuse_newer(version: int | None) -> None:
    if version is not None and version > SCHEMA_VERSION:
        raise StoreError(
            f"this database has zeromem schema version {version}, newer than this zeromem "
            f"understands ({SCHEMA_VERSION}): upgrade zeromem to open it")
