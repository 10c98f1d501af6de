"""The schema is versioned: newer files are refused, migrations run once and keep data."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

from internals import indexer_of, store_of
from zeromem import Memory, Scope, StoreError
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


FIXTURE = Path(__file__).parent / "fixtures" / "schema9_store.db"


def _rows(path: Path, sql: str) -> list[tuple]:
    conn = sqlite3.connect(path)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


def test_a_file_of_the_previous_release_migrates_to_scope_keys_keeping_every_row(tmp_path):
    """tests/fixtures/schema9_store.db was written by the release before scope keys (schema 9,
    tests/fixtures/make_schema9_store.py): its traces, history, keys, derived rows and id
    counters all come through, and search reads its derived rows without deriving again."""
    db = tmp_path / "old.db"
    shutil.copy(FIXTURE, db)
    before = {table: _rows(db, f"SELECT COUNT(*) FROM {table}")[0][0]
              for table in ("traces", "trace_history", "units", "unit_vectors", "unit_mentions", "entity_vectors",
                            "session_changes", "scope_versions", "trace_signals", "api_keys", "store_meta")}
    counters = dict(_rows(db, "SELECT name, seq FROM sqlite_sequence"))
    assert _user_version(db) == 9 and before["units"] and before["unit_mentions"] and before["trace_signals"]
    with Memory(db, user="ana") as mem:
        assert _user_version(db) == SCHEMA_VERSION
        assert [t.text for t in mem.list()] == [
            "ana moved to Lisbon in May 2023 with her dog Rex.", "ana started a pottery class on Tuesdays.",
            "The class meets near the old bridge.", "Temporary note"]
        assert [t.session for t in mem.list(user="bo", agent="helper")] == ["s1", "s2", "s2", "s3"]
        old = mem.list()[2]
        assert [e.event for e in mem.history(old.id)] == ["add", "update"]
        assert [k.scope for k in store_of(mem).api_keys()] == [Scope("ana")]
        assert indexer_of(mem).pending_sessions(mem.scope) == []  # derived rows kept, found by scope_key
        # What the previous release answers on this file (its code, on a copy of the fixture).
        assert [e.text for e in mem.search("where does the pottery class meet", k=3)] == [
            "ana started a pottery class on Tuesdays.", "The class meets near the old bridge."]
        assert _rows(db, "SELECT COUNT(*) FROM dirty_sessions") == [(0,)]
        after = {table: _rows(db, f"SELECT COUNT(*) FROM {table}")[0][0] for table in before}
        assert after == before
        assert dict(_rows(db, "SELECT name, seq FROM sqlite_sequence")) == counters  # no id handed out twice
        new = mem.add("a new trace", session="s4")
        assert store_of(mem).ids.parse(new) == counters["traces"] + 1
    assert _rows(db, "PRAGMA foreign_key_check") == [] and _rows(db, "PRAGMA integrity_check") == [("ok",)]
    keys = {k for (k,) in _rows(db, "SELECT scope_key FROM units UNION SELECT scope_key FROM scope_versions"
                                    " UNION SELECT scope_key FROM unit_mentions"
                                    " UNION SELECT scope_key FROM trace_history")}
    assert keys == {'["ana",""]', '["bo","helper"]'}


def test_a_migration_that_fails_changes_nothing(tmp_path):
    """Each step is one transaction: a file the v10 step cannot rewrite stays at version 9."""
    db = tmp_path / "old.db"
    shutil.copy(FIXTURE, db)
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE units_new (x)")  # the name the step needs is taken
    conn.commit()
    conn.close()
    with pytest.raises(StoreError):
        Memory(db)
    assert _user_version(db) == 9
    assert _rows(db, "SELECT COUNT(*) FROM units") == [(16,)]
