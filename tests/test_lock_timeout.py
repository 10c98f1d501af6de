"""A write blocked by another connection's lock fails after ``lock_timeout_s`` with a
StoreError naming the cause, and changes nothing (it used to wait ~10 minutes in silence)."""

from __future__ import annotations

import math
import sqlite3
import time
from contextlib import contextmanager

import pytest
from typer.testing import CliRunner

import pg_fixture
from internals import store_of
from zeromem import InvalidInput, Memory, StoreError
from zeromem.config import Config
from zeromem.interfaces.cli import app
from zeromem.store import open_store
from zeromem.store.base import DEFAULT_LOCK_TIMEOUT_S

TIMEOUT_S = 1.0
MESSAGE = r"locked by another writer for more than 1 s; nothing was changed: raise lock_timeout_s"


@contextmanager
def held_write_lock(path):
    """Another connection in the middle of a write transaction, as another process would be."""
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    other.execute("INSERT INTO store_meta (key, value) VALUES ('held', 'by another writer')")
    try:
        yield
    finally:
        other.execute("ROLLBACK")
        other.close()


@pytest.fixture
def mem(db_path):
    memory = Memory(db_path, config=Config(lock_timeout_s=TIMEOUT_S, index_on_write=False))
    yield memory
    memory.close()


def test_the_default_is_a_few_seconds():
    assert Config().lock_timeout_s == DEFAULT_LOCK_TIMEOUT_S == 5.0
    with open_store(":memory:") as store:
        assert store.lock_timeout_s == 5.0


@pytest.mark.parametrize("write", ["add", "update", "delete", "delete_session", "delete_scope"])
def test_a_blocked_write_fails_within_the_timeout_and_changes_nothing(mem, db_path, snapshot, write):
    tid = mem.add("first", session="s1")
    before = snapshot(mem)
    calls = {"add": lambda: mem.add("second", session="s1"),
             "update": lambda: mem.update(tid, text="changed"),
             "delete": lambda: mem.delete(tid),
             "delete_session": lambda: mem.delete_session("s1"),
             "delete_scope": lambda: mem.delete_scope()}
    with held_write_lock(db_path):
        started = time.monotonic()
        with pytest.raises(StoreError, match=MESSAGE) as caught:
            calls[write]()
        waited = time.monotonic() - started
        assert str(db_path) in str(caught.value) and "find the other process" in str(caught.value)
        assert TIMEOUT_S * 0.9 <= waited < TIMEOUT_S + 2.0, waited
        assert snapshot(mem) == before  # reads still work while the other writer holds the lock
    assert snapshot(mem) == before
    mem.add("once the lock is gone, writes work again", session="s1")
    assert store_of(mem).count(mem.scope) == 2


@pytest.mark.parametrize("bad", [0, -1, math.nan, math.inf, "5", True, None, 86_401])
def test_a_bad_lock_timeout_is_refused(db_path, bad):
    with pytest.raises(InvalidInput, match="lock_timeout_s"):
        open_store(db_path, lock_timeout_s=bad)
    assert not db_path.exists()


def test_the_cli_takes_lock_timeout_and_reports_the_lock(db_path):
    with Memory(db_path, config=Config(index_on_write=False)) as mem:
        tid = mem.add("hold on")
    with held_write_lock(db_path):
        started = time.monotonic()
        result = CliRunner().invoke(app, ["delete", tid, "--db", str(db_path), "--lock-timeout", "0.5"])
        assert time.monotonic() - started < 3.0
    assert result.exit_code == 2
    assert "locked by another writer for more than 0.5 s" in result.stderr
    with Memory(db_path) as mem:
        assert mem.get(tid).text == "hold on"


# -- PostgreSQL: lock_timeout on every connection --------------------------------------------
@pytest.fixture
def pg_url(request):
    yield from pg_fixture.fresh_database(request)


def test_postgres_a_blocked_write_fails_within_the_timeout(pg_url):
    import psycopg

    config = Config(lock_timeout_s=TIMEOUT_S, index_on_write=False)
    with Memory(pg_url, user="ana", config=config) as mem:
        tid = mem.add("first")
        key = '["ana",""]'
        with psycopg.connect(pg_url) as other:  # a transaction holding the scope's version row
            other.execute("SELECT version FROM scope_versions WHERE scope_key = %s FOR UPDATE", (key,))
            started = time.monotonic()
            with pytest.raises(StoreError, match=MESSAGE):
                mem.update(tid, text="changed")
            assert time.monotonic() - started < TIMEOUT_S + 2.0
            other.rollback()
        assert mem.get(tid).text == "first" and mem.get(tid).version == 1
        assert mem.update(tid, text="changed").version == 2
