"""``zeromem migrate``: a SQLite store copied into PostgreSQL keeps every trace, id, history
event and key; the counts are verified; a non-empty destination is refused."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from internals import store_of
from pg_statements import Recorder
from zeromem import InvalidInput, Memory
from zeromem.store import TraceDraft, open_store
from zeromem.store.transfer import copy_store
from zeromem.types import Scope


@pytest.fixture
def pg_url(postgres_server):
    url = postgres_server.fresh_database()
    yield url
    postgres_server.drop(url)


def _fill(path) -> list[str]:
    with Memory(path, user="ana") as mem:
        ids = mem.add_many([{"text": "I live in Chicago.", "session": "s1", "metadata": {"k": [1]}},
                            {"text": "Bye!", "session": "s1", "attachments": ["a photo"]},
                            {"text": "Hi Ben", "session": "s2", "session_time": "2023-05-02"}])
        mem.update(ids[0], text="I live in Denver.")
        mem.delete(ids[1])
        ids.append(mem.add("other scope", user="ben", agent="bot"))
        store_of(mem).add_api_key("0123abcd", "a" * 64, Scope("ana"), "laptop")
        store_of(mem).set_meta("global", "kept")
    return ids


def _seen(store, scopes):
    stats = store.stats()
    stats.pop("path")
    stats.pop("units")
    return (stats, [store.list(s) for s in scopes], [store.sessions(s) for s in scopes],
            store.api_keys(), store.get_meta("global"), store.scopes())


def test_migrate_copies_traces_ids_history_and_keys(tmp_path, pg_url):
    db = tmp_path / "memory.db"
    ids = _fill(db)
    scopes = [Scope("ana"), Scope("ben", "bot")]
    recorder = Recorder()
    with open_store(db) as src, open_store(pg_url) as dest:
        with recorder.recording():
            report = copy_store(src, dest)
        assert recorder.statements and recorder.violations() == []
        assert (report["traces"], report["history_events"], report["api_keys"]) == (3, 6, 1)
        assert _seen(dest, scopes) == _seen(src, scopes)
        for tid in ids[:3]:
            assert dest.history(tid, Scope("ana")) == src.history(tid, Scope("ana"))
        assert dest.dirty_sessions(Scope("ana")) == ["s1", "s2"]
        new = dest.add_many([TraceDraft("new")], Scope("ana"))[0]
        # ids are never reused; the source's id key came along, so every id is the same
        assert dest.ids.parse(new) > max(src.ids.parse(i) for i in ids)
        assert [dest.ids.format(src.ids.parse(i)) for i in ids] == ids
        with pytest.raises(InvalidInput, match="empty database"):
            copy_store(src, dest)


def test_the_migrate_command_copies_and_reports(tmp_path, pg_url):
    from zeromem.interfaces import cli_migrate  # noqa: F401 - registers the command
    from zeromem.interfaces.cli import app

    db = tmp_path / "memory.db"
    _fill(db)
    result = CliRunner().invoke(app, ["migrate", "--from", str(db), "--to", pg_url, "--no-reindex"])
    assert result.exit_code == 0, result.output
    assert "copied 3 traces, 6 history events and 1 API keys in 2 scope(s)" in result.output
    again = CliRunner().invoke(app, ["migrate", "--from", str(db), "--to", pg_url, "--no-reindex"])
    assert again.exit_code == 2 and "empty database" in again.output


@pytest.mark.slow
def test_a_migrated_and_reindexed_store_gives_the_same_evidence(tmp_path, pg_url):
    from zeromem.interfaces import cli_migrate  # noqa: F401 - registers the command
    from zeromem.interfaces.cli import app

    db = tmp_path / "memory.db"
    _fill(db)
    result = CliRunner().invoke(app, ["migrate", "--from", str(db), "--to", pg_url])
    assert result.exit_code == 0, result.output
    queries = ("Where does Ana live?", "Who did Ana greet?")
    answers = []
    for target in (db, pg_url):
        with Memory(target, user="ana") as mem:
            answers.append([[(e.trace_id, e.text, e.score) for e in mem.search(q, k=3)] for q in queries])
    assert answers[0] == answers[1] and all(answers[0])
