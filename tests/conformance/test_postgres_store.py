"""What only the PostgreSQL backend has to show: URLs and errors, migrations under concurrency,
exact vectors through pgvector, several writers (threads and processes) on one scope, a
killed writer, and another process seeing a write at its next read."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import psycopg
import pytest

from zeromem import InvalidInput, StoreError
from zeromem.store import DerivedUnit, TraceDraft, open_store
from zeromem.store.postgres import PostgresStore, redact_url
from zeromem.store.postgres_schema import SCHEMA_VERSION
from zeromem.types import Scope

ANA = Scope("ana")


@pytest.fixture
def pg_url(postgres_server):
    url = postgres_server.fresh_database()
    yield url
    postgres_server.drop(url)


def test_the_url_opens_a_postgres_store_whose_path_hides_the_password(pg_url):
    with_password = pg_url.replace("postgres@", "postgres:s3cret@")
    with open_store(with_password) as store:  # trust auth: the password is not checked
        assert isinstance(store, PostgresStore)
        assert "s3cret" not in store.path and store.path.startswith("postgresql://postgres:***@")
    assert redact_url("postgres://u@h/db?password=x&sslmode=require") == \
        "postgres://u@h/db?password=***&sslmode=require"


def test_an_unreachable_server_is_a_store_error_without_the_password():
    start = time.monotonic()
    with pytest.raises(StoreError, match="cannot connect") as info:
        open_store("postgresql://zm:secret@127.0.0.1:1/zeromem")
    assert "secret" not in str(info.value) and time.monotonic() - start < 10


def test_a_newer_schema_is_refused(pg_url):
    open_store(pg_url).close()
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("UPDATE zeromem_schema SET version = %s", (SCHEMA_VERSION + 1,))
    with pytest.raises(StoreError, match="newer than this zeromem"):
        open_store(pg_url)


def test_a_store_from_before_opaque_ids_gets_a_key_once_and_keeps_its_ids(pg_url):
    """Schema v2 → v3: the trace id key is made on the first open; ids stay stable after."""
    with open_store(pg_url) as store:
        store.add_many([TraceDraft("from an older zeromem")], ANA)
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("DELETE FROM store_meta WHERE key = 'trace_id_key'")
        conn.execute("UPDATE zeromem_schema SET version = 2")
    with open_store(pg_url) as store:
        [trace] = store.list(ANA)
        assert store.ids.parse(trace.id) == 1 and len(trace.id) == 9
        key = store.get_meta("trace_id_key")
    with open_store(pg_url) as store:
        assert [t.id for t in store.list(ANA)] == [trace.id] and store.get_meta("trace_id_key") == key
        assert len(bytes.fromhex(key)) == 32


def test_a_persisted_index_stored_whole_is_cut_into_chunks_by_the_migration(pg_url):
    """Schema v3 → v4: arrays stored as one row each come back in rows of at most a chunk,
    and read back byte for byte."""
    with open_store(pg_url) as store:
        store.add_many([TraceDraft("indexed before the upgrade")], ANA)
        version = store.scope_version(ANA)
    rng = np.random.default_rng(3)
    parts = {"big": rng.bytes((5 << 19) + 3), "small": b"s", "empty": b""}
    with psycopg.connect(pg_url, autocommit=True) as conn:  # the table as v3 made it
        conn.execute("ALTER TABLE scope_snapshot_parts DROP CONSTRAINT scope_snapshot_parts_pkey")
        conn.execute("ALTER TABLE scope_snapshot_parts DROP COLUMN chunk")
        conn.execute("ALTER TABLE scope_snapshot_parts ADD PRIMARY KEY (scope_key, name)")
        key = '["ana",""]'
        for name, blob in parts.items():
            conn.execute("INSERT INTO scope_snapshot_parts (scope_key, name, blob) VALUES (%s, %s, %s)",
                         (key, name, blob))
        conn.execute("INSERT INTO scope_snapshots (scope_key, version, format, blob) VALUES (%s, %s, 1, %s)",
                     (key, version, b"{}"))
        conn.execute("UPDATE zeromem_schema SET version = 3")
    with open_store(pg_url) as store:
        assert store.load_snapshot(ANA)[2] == parts
    with psycopg.connect(pg_url, autocommit=True) as conn:
        rows = conn.execute("SELECT name, chunk, length(blob) FROM scope_snapshot_parts"
                            " ORDER BY name, chunk").fetchall()
    assert rows == [("big", 0, 1 << 20), ("big", 1, 1 << 20), ("big", 2, (1 << 19) + 3),
                    ("empty", 0, 0), ("small", 0, 1)]


def test_processes_opening_a_fresh_database_at_once_migrate_it_once(pg_url):
    barrier, errors, stores = threading.Barrier(4), [], []

    def opener():
        barrier.wait()
        try:
            stores.append(open_store(pg_url))
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=opener) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for store in stores:
        store.close()
    assert errors == [] and len(stores) == 4
    with psycopg.connect(pg_url) as conn:
        assert conn.execute("SELECT version FROM zeromem_schema").fetchall() == [(SCHEMA_VERSION,)]


def test_nul_characters_are_invalid_input_and_change_nothing(pg_url):
    with open_store(pg_url) as store:
        store.add_many([TraceDraft("fine")], ANA)
        for call in (lambda: store.add_many([TraceDraft("ok"), TraceDraft("a\x00b")], ANA),
                     lambda: store.add_many([TraceDraft("ok", speaker="x\x00")], ANA),
                     lambda: store.add_many([TraceDraft("ok")], Scope("u\x00")),
                     lambda: store.set_meta("k", "v\x00")):
            with pytest.raises(InvalidInput, match="NUL"):
                call()
        assert [t.text for t in store.list(ANA)] == ["fine"] and store.scope_version(ANA) == 1


def test_vectors_round_trip_bit_for_bit_through_pgvector(pg_url):
    rng = np.random.default_rng(7)
    vectors = [rng.standard_normal(384).astype("<f4") * scale for scale in (1e-30, 1.0, 1e30)]
    with open_store(pg_url) as store:
        ids = store.add_many([TraceDraft(f"t{i}", session="s") for i in range(3)], ANA)
        rowids = [store.ids.parse(i) for i in ids]
        units = [DerivedUnit("turn", i, f"t{i}", f"h{i}", (r,), i, i, None, None, v.tobytes(),
                             (("e", "X", "e", 1),) if i == 0 else ())
                 for i, (r, v) in enumerate(zip(rowids, vectors))]
        entity = vectors[1][::-1].copy().tobytes()
        assert store.commit_session(ANA, "s", [(r, 1) for r in rowids], units, {"e": entity})
        delta = store.read_changes(ANA, 0, set())
        assert [row[7] for row in delta["units"]] == [v.tobytes() for v in vectors]
        assert [row[6] for row in delta["units"]] == [f"[{r}]" for r in rowids]
        assert delta["entities"] == {"e": entity}
        found, mentions = store.stored_encodings(ANA, ["h2", "h0", "missing"])
        assert found == {"h2": vectors[2].tobytes(), "h0": vectors[0].tobytes()}
        assert mentions == {"h2": [], "h0": [("e", "X", "e", 1)]}


def test_a_write_is_seen_by_another_store_at_its_next_read(pg_url):
    with open_store(pg_url) as writer, open_store(pg_url) as reader:
        tid = writer.add_many([TraceDraft("one", session="s1")], ANA)[0]
        seen = reader.read_changes(ANA, 0, set())
        writer.add_many([TraceDraft("two", session="s2")], ANA)
        writer.update(tid, ANA, text="one, edited")
        later = reader.read_changes(ANA, seen["version"], set())
        assert later["version"] == reader.scope_version(ANA) == seen["version"] + 2
        assert reader.get(tid, ANA).text == "one, edited"


@pytest.mark.slow
def test_a_write_through_one_memory_is_found_by_a_search_through_another(pg_url):
    from zeromem import Memory

    with Memory(pg_url, user="ana") as first, Memory(pg_url, user="ana") as second:
        first.add_many([{"text": "We repainted the kitchen.", "session": "s1"},
                        {"text": "Ben bought a road bike.", "session": "s2"}])
        assert second.search("What did Ben buy?", k=2)  # warm: its index is at this version
        tid = first.add("Ana planted three lemon trees.", session="s3")
        assert tid in {ev.trace_id for ev in second.search("How many lemon trees?", k=3)}


def test_concurrent_writers_on_one_scope_lose_and_duplicate_nothing(pg_url):
    per_thread, threads = 25, 4
    errors: list[Exception] = []

    def writer(n):
        try:
            with open_store(pg_url) as store:
                for i in range(per_thread):
                    store.add_many([TraceDraft(f"w{n}-{i}", session="s")], ANA)
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    workers = [threading.Thread(target=writer, args=(n,)) for n in range(threads)]
    for t in workers:
        t.start()
    for t in workers:
        t.join()
    assert errors == []
    with open_store(pg_url) as store:
        traces = store.list(ANA)
        assert sorted(t.text for t in traces) == sorted(f"w{n}-{i}" for n in range(threads)
                                                        for i in range(per_thread))
        assert [t.seq for t in traces] == list(range(per_thread * threads))
        rowids = [store.ids.parse(t.id) for t in traces]
        assert rowids == sorted(rowids)
        assert store.scope_version(ANA) == per_thread * threads


_CHILD = textwrap.dedent("""
    import sys
    from zeromem.store import TraceDraft, open_store
    from zeromem.types import Scope
    url, name, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    with open_store(url) as store:
        if name == "big":
            drafts = [TraceDraft(f"big {i}", session="b") for i in range(n)]
            print("writing", flush=True)
            store.add_many(drafts, Scope("ana"))
            print("done", flush=True)
        else:
            for i in range(n):
                store.add_many([TraceDraft(f"{name} {i}", session="s")], Scope("ana"))
""")


def _child(url: str, name: str, n: int) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", _CHILD, url, name, str(n)], stdout=subprocess.PIPE,
                            text=True, env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})


@pytest.mark.slow
def test_writer_processes_lose_and_duplicate_nothing(pg_url):
    children = [_child(pg_url, f"p{n}", 30) for n in range(2)]
    assert [c.wait(timeout=120) for c in children] == [0, 0]
    with open_store(pg_url) as store:
        traces = store.list(ANA)
        assert len(traces) == 60 and len({t.id for t in traces}) == 60
        assert [t.seq for t in traces] == list(range(60))


@pytest.mark.slow
def test_a_batch_killed_mid_write_lands_whole_or_not_at_all(pg_url):
    n = 50000
    child = _child(pg_url, "big", n)
    assert child.stdout is not None and child.stdout.readline().strip() == "writing"
    time.sleep(0.2)
    child.send_signal(signal.SIGKILL)
    child.wait(timeout=30)
    rest = child.stdout.read()
    with open_store(pg_url) as store:
        # Killed before the commit (the usual case: the write takes seconds), nothing
        # of the batch is there; had it finished first ("done"), all of it.
        assert store.count(ANA) == (n if "done" in rest else 0)
        assert store.scope_version(ANA) in (0, 1)
        store.add_many([TraceDraft("after the kill", session="b")], ANA)  # the scope is not stuck
