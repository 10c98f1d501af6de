"""The schema is versioned: newer files are refused, migrations run once and keep data."""

from __future__ import annotations

import sqlite3

import pytest

from internals import indexer_of, store_of
from zeromem import Memory, StoreError
from zeromem.store.schema import MIGRATIONS, SCHEMA_VERSION, migrate


def _user_version(path) -> int:
    conn = sqlite3.connect(path)
    try:
        return conn.execute("PRAGMA user_version").fetchone()[0]
    finally:
        conn.close()


def test_a_new_file_is_at_the_current_schema_version_in_wal_mode(db_path):
    Memory(db_path).close()
    assert _user_version(db_path) == SCHEMA_VERSION
    conn = sqlite3.connect(db_path)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    conn.close()


def test_a_file_with_a_newer_schema_is_refused_with_store_error(db_path):
    conn = sqlite3.connect(db_path)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.close()
    with pytest.raises(StoreError, match="upgrade zeromem"):
        Memory(db_path)
    assert _user_version(db_path) == SCHEMA_VERSION + 1  # refused, not rewritten


def test_reopening_runs_no_migration_and_keeps_every_trace(db_path):
    with Memory(db_path) as mem:
        ids = mem.add_many([{"text": f"t{i}"} for i in range(5)])
    for _ in range(3):
        with Memory(db_path) as mem:
            assert [t.id for t in mem.list()] == ids
    assert _user_version(db_path) == SCHEMA_VERSION


def test_migrate_twice_is_a_no_op(db_path):
    conn = sqlite3.connect(db_path, isolation_level=None)
    assert migrate(conn) == 0
    tables = conn.execute("SELECT name FROM sqlite_master ORDER BY name").fetchall()
    assert migrate(conn) == SCHEMA_VERSION
    assert conn.execute("SELECT name FROM sqlite_master ORDER BY name").fetchall() == tables
    conn.close()


def test_a_version_1_file_migrates_forward_and_keeps_its_traces(db_path):
    conn = sqlite3.connect(db_path, isolation_level=None)
    conn.executescript(MIGRATIONS[0] + "; PRAGMA user_version = 1;")
    conn.execute("INSERT INTO traces (user_key, agent_key, session, seq, text, role, recorded_at)"
                 " VALUES ('', '', 's1', 0, 'from an old file', 'user', '2023-01-01T00:00:00')")
    conn.close()
    with Memory(db_path) as mem:
        assert [t.text for t in mem.list()] == ["from an old file"]
        new = mem.add("new")
        rowids = {t.text: store_of(mem).ids.parse(t.id) for t in mem.list()}
        assert rowids == {"from an old file": 1, "new": 2} and mem.get(new).text == "new"
    assert _user_version(db_path) == SCHEMA_VERSION


def test_a_file_that_is_not_sqlite_is_a_store_error(tmp_path):
    bogus = tmp_path / "notes.db"
    bogus.write_text("this is not a database, " * 100)
    with pytest.raises(StoreError, match="cannot open"):
        Memory(bogus)


def test_a_version_2_file_re_derives_only_the_sessions_whose_segmentation_changed(db_path):
    conn = sqlite3.connect(db_path, isolation_level=None)
    conn.executescript(MIGRATIONS[0] + ";" + MIGRATIONS[1] + "; PRAGMA user_version = 2;")
    for session, attachments in (("plain", "[]"), ("pictures", '["a dog on a beach"]')):
        conn.execute("INSERT INTO traces (user_key, agent_key, session, seq, text, role, recorded_at, attachments)"
                     " VALUES ('', '', ?, 0, 'hello', 'user', '2023-01-01T00:00:00', ?)", (session, attachments))
    conn.close()
    with Memory(db_path) as mem:
        assert indexer_of(mem).pending_sessions(mem.scope) == ["pictures"]
    assert _user_version(db_path) == SCHEMA_VERSION
