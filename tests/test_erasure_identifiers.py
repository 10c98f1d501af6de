"""Erasure leaves no identifier: a property test on both backends.

Hypothesis draws a unique marker for every identifier field of a trace — user, agent, session,
speaker, source id, title and a metadata key — and for its text, and plants them in one trace (with a second
trace of the same session, so that derived units, mentions and the persisted index name them
too). After each erasure path the files are grepped for every marker:

* ``delete(id)`` of the session's last traces, ``delete_session``: the session, speaker,
  source id, title and metadata key are gone; the user and agent stay, and the receipt says
  where (the history's tombstones and the scope's version row) and until when;
* ``delete_scope``: every marker is gone, the user and agent too, and the receipt lists
  nothing;
* ``update(keep_history=False)`` with new text and metadata: the old text, title and metadata
  key are gone.

SQLite: the db, -wal and -shm files, right after the receipt. PostgreSQL: the database's own
files after ``compact()`` (VACUUM FULL, ANALYZE, CHECKPOINT); its write-ahead log may keep
copies, which the receipt says and this test prints. A bystander scope is untouched every time.
"""

from __future__ import annotations

import string
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pg_fixture
from internals import store_of
from zeromem import Memory
from zeromem.config import Config, RetrievalConfig
from zeromem.types import TITLE_KEY

FIELDS = ("user", "agent", "session", "speaker", "source", "title", "metakey", "text")
SCOPE_FIELDS = ("user", "agent")
PATHS = ("trace", "session", "scope", "update")
TOKENS = st.text(alphabet=string.ascii_lowercase, min_size=10, max_size=14)


def config() -> Config:
    return Config(retrieval=RetrievalConfig(snapshot_min_turns=1))


def markers(token: str) -> dict[str, str]:
    """One marker per field; all share the drawn token, each has its own prefix."""
    return {field: f"q{field}x{token}" for field in FIELDS}


def plant(mem: Memory, marks: dict[str, str]) -> list[str]:
    """Two traces of the marked session in the marked scope, an unmarked session beside them,
    and a bystander scope; everything derived, searched and persisted."""
    scope = {"user": marks["user"], "agent": marks["agent"]}
    mem.add_many([{"text": f"On day {n} we walked the dog and talked about dinner.", "session": "plain",
                   "speaker": "Ana"} for n in range(6)], **scope)
    ids = mem.add_many([
        {"text": f"Did you hear that Priya moved to Denver? Her code is {marks['text']}.",
         "session": marks["session"],
         "speaker": marks["speaker"], "source_id": marks["source"],
         "metadata": {TITLE_KEY: f"Title {marks['title']}", marks["metakey"]: 1}},
        {"text": "Yes, Priya loves the mountains there.", "session": marks["session"],
         "speaker": marks["speaker"], "source_id": marks["source"], "metadata": {marks["metakey"]: 2}},
    ], **scope)
    mem.add("Carla plants tomatoes every spring.", user="bystander", session="b")
    assert mem.search("Where does Priya live?", k=5, **scope)
    mem.index(**scope)
    return ids


def erase(mem: Memory, path: str, marks: dict[str, str], ids: list[str]):
    scope = {"user": marks["user"], "agent": marks["agent"]}
    if path == "trace":
        mem.delete(ids[0], **scope)
        return mem.delete(ids[1], **scope)
    if path == "session":
        return mem.delete_session(marks["session"], **scope)
    if path == "scope":
        return mem.delete_scope(**scope)
    mem.update(ids[0], text="Did you hear that Priya moved to Denver?", metadata={"kind": "note"},
               keep_history=False, **scope)
    mem.update(ids[1], metadata={"kind": "note"}, keep_history=False, **scope)
    return None


def expected_gone(path: str) -> tuple[str, ...]:
    if path == "scope":
        return FIELDS
    if path == "update":
        return ("title", "metakey", "text")
    return tuple(f for f in FIELDS if f not in SCOPE_FIELDS)


def found_in(files: list[Path], marks: dict[str, str]) -> dict[str, list[str]]:
    """For each marker, the files whose bytes (lower-cased) hold it."""
    blobs = {file: file.read_bytes().lower() for file in files if file.is_file()}
    return {field: sorted(str(f.name) for f, blob in blobs.items() if mark.encode() in blob)
            for field, mark in marks.items()}


def check(receipt, path: str, where: dict[str, list[str]]) -> None:
    gone = expected_gone(path)
    assert {f: where[f] for f in gone if where[f]} == {}, where
    if path == "update":
        return
    if path == "scope":
        assert not any("tombstone" in line for line in receipt.retained)
    else:  # the scope's own names stay, and the receipt says where and until when
        assert where["user"] and where["agent"]
        assert any("tombstone" in line and "delete_scope" in line for line in receipt.retained)


def check_bystander(mem: Memory) -> None:
    # (hypothesis's examples share one PostgreSQL database: one bystander trace per example)
    texts = [t.text for t in mem.list(user="bystander")]
    assert texts and set(texts) == {"Carla plants tomatoes every spring."}


# -- SQLite --------------------------------------------------------------------------------
@pytest.mark.parametrize("path", PATHS)
@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(token=TOKENS)
def test_sqlite_erasure_leaves_no_identifier_in_the_files(tmp_path_factory, path, token):
    marks = markers(token)
    db = tmp_path_factory.mktemp("ids") / "memory.db"
    with Memory(db, config=config()) as mem:
        ids = plant(mem, marks)
        files = sorted(db.parent.glob(db.name + "*"))
        before = found_in(files, marks)
        assert all(before[f] for f in FIELDS), before  # planted: every marker is in the files
        receipt = erase(mem, path, marks, ids)
        check(receipt, path, found_in(sorted(db.parent.glob(db.name + "*")), marks))
        check_bystander(mem)
    check(receipt, path, found_in(sorted(db.parent.glob(db.name + "*")), marks))
    with Memory(db, config=config()) as again:  # a later process searches and persists again
        again.search("Where does Priya live?", k=5, user=marks["user"], agent=marks["agent"])
        again.index(user=marks["user"], agent=marks["agent"])
        check_bystander(again)
    check(receipt, path, found_in(sorted(db.parent.glob(db.name + "*")), marks))


def test_sqlite_a_scope_with_an_api_key_says_the_key_keeps_its_name(tmp_path):
    from zeromem.store.keys import new_api_key
    from zeromem.types import Scope

    with Memory(tmp_path / "m.db", user="qkeyedxuser") as mem:
        mem.add("hello", session="s")
        key_id, _key, key_hash = new_api_key()
        store_of(mem).add_api_key(key_id, key_hash, Scope("qkeyedxuser", None), None)
        receipt = mem.delete_scope()
        assert receipt.retained and "api_keys: 1 API key(s)" in receipt.retained[0]


def test_sqlite_a_scope_written_again_after_its_deletion_is_seen_whole(tmp_path):
    """The deleted scope's version row is gone; versions of a new scope of the same name start
    above the old ones, so another process's index of the deleted scope is rebuilt."""
    db = tmp_path / "m.db"
    with Memory(db, user="ana") as writer, Memory(db, user="ana") as reader:
        for n in range(3):
            writer.add(f"old fact number {n} about Lisbon", session="s")
        assert reader.search("Lisbon", k=5)
        writer.delete_scope()
        assert store_of(writer).scope_version(writer.scope) == 0
        assert store_of(writer).read("SELECT COUNT(*) FROM scope_versions WHERE scope_key='[\"ana\",\"\"]'") == [(0,)]
        fresh = writer.add("a new fact about Porto", session="s")
        assert store_of(writer).scope_version(writer.scope) > 3
        found = reader.search("Lisbon Porto fact", k=5)
        assert [e.trace_id for e in found] == [fresh]


# -- PostgreSQL ----------------------------------------------------------------------------
@pytest.fixture
def pg_url(request):
    yield from pg_fixture.fresh_database(request)


def pg_files(mem: Memory) -> tuple[list[Path], list[Path]]:
    """(the database's own files, the cluster's write-ahead log segments)."""
    with store_of(mem)._connection("read") as conn:  # the test looks at the server's files
        data = Path(conn.execute("SHOW data_directory").fetchone()[0])
        oid = conn.execute("SELECT oid FROM pg_database WHERE datname = current_database()").fetchone()[0]
    return sorted((data / "base" / str(oid)).iterdir()), sorted((data / "pg_wal").glob("0*"))


@pytest.mark.parametrize("path", PATHS)
@settings(max_examples=2, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(token=TOKENS)
def test_postgres_erasure_and_compact_leave_no_identifier_in_the_table_files(pg_url, path, token):
    marks = markers(token)
    with Memory(pg_url, config=config()) as mem:
        ids = plant(mem, marks)
        receipt = erase(mem, path, marks, ids)
        with store_of(mem)._connection("checkpoint") as conn:
            conn.execute("CHECKPOINT")  # the dead row versions reach the table files
        tables, _wal = pg_files(mem)
        print(f"{path}: after the delete, before compact: {found_in(tables, marks)}")
        if receipt is not None:
            assert any("VACUUM FULL" in line and "zeromem compact" in line for line in receipt.retained)
            assert any("pg_wal" in line for line in receipt.retained)
        done = mem.compact()
        assert "CHECKPOINT" in (done.done or ()) and any("pg_wal" in line for line in done.retained)
        tables, wal = pg_files(mem)
        check(receipt, path, found_in(tables, marks))
        print(f"{path}: after compact, pg_wal still holds {found_in(wal, marks)}")
        check_bystander(mem)


def test_the_cli_deletes_and_compacts(tmp_path):
    import json

    from typer.testing import CliRunner

    from zeromem.interfaces.cli import app

    db = tmp_path / "m.db"
    with Memory(db, config=Config(index_on_write=False)) as mem:
        tid = mem.add("short lived", session="qclixsession", user="u")
        mem.add("stays", session="other", user="u")
    runner = CliRunner()
    result = runner.invoke(app, ["delete", tid, "--db", str(db), "--user", "u", "--compact", "--json"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    assert out["compact"]["bytes_after"] <= out["compact"]["bytes_before"]
    assert any("tombstone" in line for line in out["receipt"]["retained"])
    assert b"qclixsession" not in db.read_bytes()
    again = runner.invoke(app, ["compact", "--db", str(db)])
    assert again.exit_code == 0 and "compacted" in again.output
