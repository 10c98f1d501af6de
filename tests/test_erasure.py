"""Erasure you can prove: after a delete, the database files hold no byte of the text.

Every test stores a unique secret in a trace (text and metadata; a capitalized name, so that
NER makes an entity of it and the vocabulary learns it), derives everything from it (units,
vectors, mentions, entity vectors, a persisted prepared index) and checks that the secret IS
in the files (db, -wal, -shm) first; then it deletes — one trace, a session, a scope, or an
update that keeps no history — and greps the files again while the store is still open,
after close, and after a reopen that searches and persists its index again: zero bytes.

The needle is a lower-cased prefix of the secret, searched in the lower-cased bytes, so that
stems and entity keys count too. ``keep_history=True`` is the control: the text stays.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import pg_fixture
from internals import retriever_of, store_of
from zeromem import Memory
from zeromem.config import Config, RetrievalConfig
from zeromem.retrieval import persist
from zeromem.store.base import ERASABLE_TABLES, DeleteReceipt

LOCAL = "http://127.0.0.1"  # the server answers to loopback Hosts only (guard.py)

SECRET = "Zqxvorpalkint"
NEEDLE = SECRET.lower()[:10].encode()  # "zqxvorpalk"
SESSION = "secret-session"


def config() -> Config:
    """Persist the prepared index even for these small scopes, so it is there to erase."""
    return Config(retrieval=RetrievalConfig(snapshot_min_turns=1))


def occurrences(db: Path) -> dict[str, int]:
    """How often the needle appears in each file of the store (the db, -wal, -shm)."""
    found = {}
    for file in sorted(db.parent.glob(db.name + "*")):
        found[file.name] = file.read_bytes().lower().count(NEEDLE)
    return found


def fill(mem: Memory) -> dict[str, str]:
    """Two sessions of ordinary talk, the secret in one trace of SESSION, and another scope
    that must survive; derived and persisted. Returns the ids by role."""
    ids: dict[str, str] = {}
    ordinary = [f"On day {n} we walked the dog along the river and talked about dinner."
                for n in range(12)]
    mem.add_many([{"text": t, "session": "s-other", "speaker": "Ana"} for t in ordinary])
    session_ids = mem.add_many([
        {"text": "Did you meet the new neighbour?", "session": SESSION, "speaker": "Ana"},
        {"text": f"Yes, {SECRET} moved in next door; {SECRET} keeps bees.", "session": SESSION,
         "speaker": "Ben", "metadata": {"note": f"about {SECRET}"}},
        {"text": "Bees are great for the garden.", "session": SESSION, "speaker": "Ana"},
    ])
    ids["secret"] = session_ids[1]
    ids["session_other"] = session_ids[0]
    ids["bystander"] = mem.add("Carla plants tomatoes every spring.", user="bystander", session="b")
    assert mem.search(f"Who is {SECRET}?", k=5)  # builds the in-memory index (it learns the word)
    mem.index()  # persists it (snapshot_min_turns=1)
    return ids


def assert_erased(db: Path, what: str) -> None:
    found = occurrences(db)
    print(f"{what}: {found}")
    assert sum(found.values()) == 0, f"{what}: the secret is still in {found}"


def check_receipt(receipt: DeleteReceipt, kind: str, traces: int) -> dict[str, int]:
    rows = dict(receipt.rows)
    assert receipt.kind == kind and receipt.traces == traces
    assert list(rows) == list(ERASABLE_TABLES)
    assert receipt.history_text_purged and receipt.secure_delete and receipt.checkpointed
    # what stays names only the scope (tombstones, its version row), until the scope goes too
    if kind == "scope":
        assert receipt.retained == ()
    else:
        assert len(receipt.retained) == 1 and "tombstone" in receipt.retained[0]
    assert rows["traces"] == traces and rows["units"] > 0 and rows["scope_snapshots"] == 1
    return rows


def reopen_and_search(db: Path, **scope) -> None:
    """A later process: it searches (rebuilding from the store), persists, closes."""
    with Memory(db, config=config(), **scope) as again:
        evidence = again.search(f"Who is {SECRET}?", k=10)
        assert all(SECRET not in ev.text for ev in evidence)
        again.index()


@pytest.fixture
def db(tmp_path) -> Path:
    return tmp_path / "memory.db"


def test_deleting_one_trace_leaves_no_byte_of_it_in_the_files(db):
    mem = Memory(db, config=config())
    ids = fill(mem)
    before = occurrences(db)
    print(f"before delete: {before}")
    assert sum(before.values()) > 0  # the grep can see it: text, history, units, index
    receipt = mem.delete(ids["secret"])
    rows = check_receipt(receipt, "trace", 1)
    assert rows["trace_history"] == 1 and rows["unit_mentions"] > 0 and rows["entity_vectors"] > 0
    assert_erased(db, "after delete (store open)")
    mem.close()  # its in-memory index saw the word: it must not be persisted again
    assert_erased(db, "after close")
    reopen_and_search(db)
    assert_erased(db, "after reopen, search, index")
    with Memory(db) as mem:
        assert [e.event for e in mem.history(ids["secret"])] == ["add", "delete"]
        assert all(e.old_text is None and e.new_text is None for e in mem.history(ids["secret"]))
        assert mem.get(ids["session_other"]).session == SESSION
        assert mem.get(ids["bystander"], user="bystander").text.startswith("Carla")


def test_deleting_a_session_leaves_no_byte_of_it_in_the_files(db):
    mem = Memory(db, config=config())
    ids = fill(mem)
    assert sum(occurrences(db).values()) > 0
    receipt = mem.delete_session(SESSION)
    check_receipt(receipt, "session", 3)
    assert ids["secret"] in receipt.trace_ids and ids["session_other"] in receipt.trace_ids
    assert_erased(db, "after delete_session (store open)")
    assert SESSION not in {s.session for s in mem.sessions()}
    assert mem.search("neighbour bees", k=5)  # the rest of the scope still answers
    mem.close()
    assert_erased(db, "after close")
    reopen_and_search(db)
    assert_erased(db, "after reopen, search, index")


def test_deleting_a_scope_leaves_no_byte_of_it_in_the_files(db):
    mem = Memory(db, config=config(), user="ana")
    ids = fill(mem)
    assert sum(occurrences(db).values()) > 0
    receipt = mem.delete_scope()
    rows = check_receipt(receipt, "scope", 15)
    assert rows["trace_history"] == 15 and rows["store_meta"] >= 1  # its embedder fingerprint
    assert_erased(db, "after delete_scope (store open)")
    mem.close()
    assert_erased(db, "after close")
    reopen_and_search(db, user="ana")
    assert_erased(db, "after reopen, search, index")
    with Memory(db, user="bystander") as mem:
        assert [t.id for t in mem.list()] == [ids["bystander"]]


def test_an_update_that_keeps_no_history_erases_the_old_text(db):
    mem = Memory(db, config=config())
    ids = fill(mem)
    mem.update(ids["secret"], text="Yes, a beekeeper moved in next door.", metadata={})
    assert sum(occurrences(db).values()) > 0  # by design: the history keeps the old version
    mem.update(ids["secret"], text="Yes, a beekeeper moved in next door.", keep_history=False)
    assert_erased(db, "after update(keep_history=False) (store open)")
    mem.close()
    assert_erased(db, "after close")
    reopen_and_search(db)
    assert_erased(db, "after reopen, search, index")
    with Memory(db) as mem:
        assert mem.get(ids["secret"]).text == "Yes, a beekeeper moved in next door."
        assert [e.event for e in mem.history(ids["secret"])] == ["add", "update", "update"]


def test_a_delete_that_keeps_history_keeps_the_text_and_says_so(db):
    with Memory(db, config=config()) as mem:
        ids = fill(mem)
        receipt = mem.delete(ids["secret"], keep_history=True)
        assert not receipt.history_text_purged and not receipt.checkpointed
        assert receipt.retained and "keep_history" in receipt.retained[0]
        assert dict(receipt.rows)["units"] > 0  # derived rows go either way
        assert mem.history(ids["secret"])[-1].old_text.startswith("Yes, " + SECRET)
    assert sum(occurrences(db).values()) > 0


def test_secure_delete_is_on_whatever_the_build_default(db):
    with Memory(db) as mem:
        assert store_of(mem).read("PRAGMA secure_delete") == [(1,)]


def test_bad_input_to_a_delete_changes_nothing(db, snapshot):
    from zeromem import InvalidInput, NotFound

    with Memory(db) as mem:
        tid = mem.add("keep me", session="s1")
        before = snapshot(mem)
        for call, error in ((lambda: mem.delete(tid, keep_history="no"), InvalidInput),
                            (lambda: mem.delete_session(None), InvalidInput),
                            (lambda: mem.delete_session(""), InvalidInput),
                            (lambda: mem.delete_session("nope"), NotFound),
                            (lambda: mem.update(tid, text="x", keep_history=None), InvalidInput)):
            with pytest.raises(error):
                call()
        assert snapshot(mem) == before


def test_a_stale_index_is_never_persisted_over_an_erasure(db):
    """The guard itself: an index at a version before the wipe is refused by the store."""
    with Memory(db, config=config()) as mem:
        ids = fill(mem)
        stale = store_of(mem).snapshot_version(mem.scope, persist.FORMAT)
        assert stale is not None
        mem.delete(ids["secret"])
        store_of(mem).save_snapshot(mem.scope, stale, '{"terms": ["zqxvorpalkint"]}', {"x": b"zqxvorpalkint"},
                                persist.FORMAT)
        assert store_of(mem).snapshot_version(mem.scope, persist.FORMAT) is None
    assert sum(occurrences(db).values()) == 0


# -- PostgreSQL: no table holds the text afterwards (dead tuples stay until VACUUM) ----------
@pytest.fixture
def pg_url(request):
    yield from pg_fixture.fresh_database(request)


def pg_rows_with_secret(mem: Memory) -> dict[str, int]:
    """Rows of every zeromem table whose text (bytea as hex) holds the needle."""
    from zeromem.store.postgres_schema import GLOBAL_TABLES, SCOPED_TABLES

    found = {}
    with store_of(mem)._connection("read") as conn:  # the test looks at every table, every scope
        for table in (*SCOPED_TABLES, *GLOBAL_TABLES):
            found[table] = conn.execute(
                f"SELECT COUNT(*) FROM {table} t WHERE lower(t::text) LIKE %s OR t::text LIKE %s",
                (f"%{NEEDLE.decode()}%", f"%{NEEDLE.hex()}%")).fetchone()[0]
    return {table: n for table, n in found.items() if n}


@pytest.mark.parametrize("kind", ["trace", "session", "scope", "update"])
def test_postgres_erasure_leaves_no_row_with_the_text(pg_url, kind):
    with Memory(pg_url, config=config(), user="ana") as mem:
        ids = fill(mem)
        assert pg_rows_with_secret(mem)
        if kind == "trace":
            receipt = mem.delete(ids["secret"])
        elif kind == "session":
            receipt = mem.delete_session(SESSION)
        elif kind == "scope":
            receipt = mem.delete_scope()
        else:
            mem.update(ids["secret"], text="Yes, a beekeeper moved in next door.", metadata={},
                       keep_history=False)
        assert pg_rows_with_secret(mem) == {}
        if kind != "update":
            assert receipt.history_text_purged and not receipt.secure_delete and not receipt.checkpointed
            assert receipt.retained and "VACUUM" in receipt.retained[0]
            assert dict(receipt.rows)["traces"] == receipt.traces > 0
    with Memory(pg_url, config=config(), user="ana") as again:
        assert all(SECRET not in ev.text for ev in again.search(f"Who is {SECRET}?", k=10))
        again.index()
        assert pg_rows_with_secret(again) == {}


# -- the receipt through the CLI and the HTTP API ---------------------------------------------
def test_the_cli_prints_the_receipt(tmp_path):
    import json

    from typer.testing import CliRunner

    from zeromem.interfaces.cli import app

    db = tmp_path / "cli.db"
    with Memory(db, config=Config(index_on_write=False)) as mem:
        tid, second = mem.add_many([{"text": f"{SECRET} keeps bees.", "session": "s1"},
                                    {"text": "Bees like lavender.", "session": "s1"}])
        mem.add("Another day.", session="s2")
    run = CliRunner().invoke
    text = run(app, ["delete", tid, "--db", str(db)])
    assert text.exit_code == 0, text.output
    assert text.stdout.startswith(f"deleted {tid}\n")
    assert "  removed: traces=1, trace_history=1" in text.stdout
    assert "  history: tombstones (event and time), no text or metadata" in text.stdout
    assert "  files: secure_delete on; write-ahead log checkpointed" in text.stdout
    refused = run(app, ["delete", "--session", "s1", "--db", str(db)])
    assert refused.exit_code == 2 and "--yes" in refused.stderr
    refused = run(app, ["delete", "--scope", "--yes", "--keep-history", "--db", str(db)])
    assert refused.exit_code == 2 and "--keep-history applies to a trace or a session" in refused.stderr
    done = run(app, ["delete", "--session", "s1", "--yes", "--json", "--db", str(db)])
    assert done.exit_code == 0, done.output
    out = json.loads(done.stdout)
    assert (out["deleted"], out["session"], out["receipt"]["kind"], out["receipt"]["trace_ids"]) == (
        1, "s1", "session", [second])
    assert out["receipt"]["rows"]["traces"] == 1 and out["receipt"]["checkpointed"] is True
    scope = run(app, ["delete", "--scope", "--yes", "--db", str(db)])
    assert "deleted 1 trace(s) from scope" in scope.stdout and "history: removed" in scope.stdout
    assert sum(occurrences(db).values()) == 0


def test_the_api_returns_the_receipt(tmp_path):
    from fastapi.testclient import TestClient

    from zeromem.interfaces.server import ServerSettings, create_app
    from zeromem.store.keys import new_api_key
    from zeromem.types import Scope

    mem = Memory(tmp_path / "api.db", config=Config(index_on_write=False))
    key_id, key, key_hash = new_api_key()
    store_of(mem).add_api_key(key_id, key_hash, Scope("ana"), None)
    auth = {"Authorization": f"Bearer {key}"}
    app = create_app(mem, ServerSettings(warm_up=False, reader=None))
    with TestClient(app, base_url=LOCAL) as client:
        ids = client.post("/v1/traces", headers=auth, json={"traces": [
            {"text": f"{SECRET} keeps bees.", "session": "a/b"},
            {"text": "Bees like lavender.", "session": "a/b"},
            {"text": "Another day.", "session": "c"}]}).json()["ids"]
        gone = client.delete(f"/v1/traces/{ids[0]}", headers=auth)
        assert gone.status_code == 200, gone.text
        receipt = gone.json()
        assert (receipt["kind"], receipt["trace_ids"], receipt["history_text_purged"]) == ("trace", [ids[0]], True)
        assert receipt["rows"]["traces"] == 1 and receipt["checkpointed"]
        assert [r for r in receipt["retained"] if "tombstone" not in r] == []
        kept = client.delete(f"/v1/traces/{ids[1]}", headers=auth, params={"keep_history": "true"}).json()
        assert kept["history_text_purged"] is False and kept["retained"]
        assert client.delete("/v1/sessions/nope", headers=auth).status_code == 404
        client.post("/v1/traces", headers=auth, json={"text": "More.", "session": "a/b"})
        session = client.delete("/v1/sessions/a/b", headers=auth).json()
        assert (session["kind"], session["traces"]) == ("session", 1)
        scope = client.delete("/v1/scope", headers=auth).json()
        assert scope["deleted"] == 1 and scope["receipt"]["trace_ids"] == [ids[2]]
    mem.close()


def test_a_process_whose_index_predates_an_erasure_does_not_persist_it_again(tmp_path):
    """Process A holds the scope's index (it knows the secret word); process B deletes the trace.
    A closing — or its index cache dropping the scope — must not write that index back."""
    db = tmp_path / "stale.db"
    with Memory(db, config=config()) as holder:
        secret = holder.add(f"My neighbour {SECRET} fixed the fence.", session=SESSION, speaker="Ana")
        holder.add("The bakery sells rye bread on Sundays.", session="other", speaker="Ana")
        assert holder.search(f"Who is {SECRET}?", k=3)  # A's index learns the word
        with Memory(db, config=config()) as eraser:
            eraser.delete(secret)
        retriever_of(holder).save(holder.scope, force=True)  # what close() and an eviction do
        kept = store_of(holder).snapshot_version(holder.scope, persist.FORMAT)
        assert kept in (None, store_of(holder).scope_version(holder.scope))
    assert_erased(db, "after the stale holder closed")
