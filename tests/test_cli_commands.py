"""The CLI end to end: ingest the example, then list, get, history, delete, stats."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from internals import store_of
from zeromem import Memory
from zeromem.interfaces.cli import app

runner = CliRunner()


def run(*args: str):
    result = runner.invoke(app, [str(a) for a in args])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result


def ids_of(db, user: str | None) -> list[str]:
    """The scope's trace ids in insertion order (ids are opaque: store/ids.py)."""
    with Memory(db, user=user) as mem:
        return sorted((t.id for t in mem.list()), key=store_of(mem).ids.parse)


@pytest.fixture
def ingested(db_path, example_path):
    result = run("ingest", example_path, "--db", db_path, "--user", "demo")
    assert result.exit_code == 0, result.output
    return db_path


def test_ingest_prints_traces_sessions_speakers_and_time_span(ingested, example_path):
    result = run("ingest", example_path, "--db", ingested, "--user", "again")
    assert result.exit_code == 0
    out = result.stdout
    again = ids_of(ingested, "again")
    assert f"stored 40 traces, first id {again[0]}, last id {again[-1]}" in out
    assert "sessions:  3" in out
    assert "speakers:  Marcus (20), Priya (20)" in out
    assert "time span: 2023-03-14T19:12:00 -> 2023-06-19T18:40:00" in out
    assert "total: 40 traces from 1 conversation(s)" in out


def test_ingest_json_output(db_path, example_path):
    result = run("ingest", example_path, "--db", db_path, "--json")
    report = json.loads(result.stdout)
    assert report["traces"] == 40
    [conv] = report["conversations"]
    ids = ids_of(db_path, None)
    assert (conv["name"], conv["first_id"], conv["last_id"], conv["sessions"]) == (
        "locomo_moving_city", ids[0], ids[-1], 3)


def test_ingest_user_per_conversation_gives_each_conversation_its_scope(tmp_path, example_data):
    conversation = {k: v for k, v in example_data.items() if k != "qa"}
    path = tmp_path / "two.json"
    path.write_text(json.dumps([{"sample_id": "a", "conversation": conversation},
                                {"sample_id": "b", "conversation": conversation}]))
    db = tmp_path / "m.db"
    assert run("ingest", path, "--db", db, "--user-per-conversation").exit_code == 0
    with Memory(db) as mem:
        assert mem.stats(user="a").traces == mem.stats(user="b").traces == 40
        assert mem.stats().traces == 0


def test_list_shows_one_line_per_trace_in_order(ingested):
    result = run("list", "--db", ingested, "--user", "demo", "--limit", "3")
    lines = result.stdout.splitlines()
    assert [line.split("\t")[0] for line in lines] == ids_of(ingested, "demo")[:3]
    assert lines[0].endswith("Priya: Hey Marcus! Long time no talk. How's the bakery treating you?")


def test_list_filters_and_json(ingested):
    result = run("list", "--db", ingested, "--user", "demo", "--session", "session_3", "--json")
    traces = json.loads(result.stdout)
    assert len(traces) == 13 and {t["session"] for t in traces} == {"session_3"}
    assert traces[1]["text"].startswith("Mostly! I live in Capitol Hill")
    since = run("list", "--db", ingested, "--user", "demo", "--since", "2023-05-01", "--json")
    assert len(json.loads(since.stdout)) == 26


def test_list_of_an_empty_scope_says_so_on_stderr(ingested):
    result = run("list", "--db", ingested, "--user", "nobody")
    assert result.exit_code == 0 and result.stdout == ""
    assert "no traces" in result.stderr


def test_get_shows_text_verbatim_and_the_caption_apart(ingested):
    tid = ids_of(ingested, "demo")[9]
    result = run("get", tid, "--db", ingested, "--user", "demo")
    text = "Exactly, it's a business expense. Oh, look what I made this morning."
    assert f"text:         {text}" in result.stdout
    assert "attachments:  a photo of a round loaf of bread" in result.stdout
    assert "source_id:    D1:10" in result.stdout
    as_json = json.loads(run("get", tid, "--db", ingested, "--user", "demo", "--json").stdout)
    assert as_json["attachments"] == ["a photo of a round loaf of bread with a leaf pattern scored on top"]


def test_delete_then_get_fails_and_history_keeps_the_event(ingested):
    tid = ids_of(ingested, "demo")[4]
    assert f"deleted {tid}" in run("delete", tid, "--db", ingested, "--user", "demo").stdout
    assert run("get", tid, "--db", ingested, "--user", "demo").exit_code == 2
    history = run("history", tid, "--db", ingested, "--user", "demo", "--json")
    assert [e["event"] for e in json.loads(history.stdout)] == ["add", "delete"]
    stats = json.loads(run("stats", "--db", ingested, "--user", "demo", "--json").stdout)
    assert stats["traces"] == 39


def test_delete_scope_needs_yes_and_removes_only_that_scope(ingested, example_path):
    run("ingest", example_path, "--db", ingested, "--user", "other")
    refused = run("delete", "--scope", "--db", ingested, "--user", "demo")
    assert refused.exit_code == 2 and "--yes" in refused.stderr
    done = run("delete", "--scope", "--yes", "--db", ingested, "--user", "demo")
    assert done.exit_code == 0 and "deleted 40 trace(s)" in done.stdout
    with Memory(ingested) as mem:
        assert mem.stats(user="demo").traces == 0
        assert mem.stats(user="other").traces == 40


def test_stats_text_and_all_scopes(ingested):
    text = run("stats", "--db", ingested, "--user", "demo").stdout
    assert "traces:         40" in text and "speakers:       Marcus=20, Priya=20" in text
    everything = json.loads(run("stats", "--db", ingested, "--all-scopes", "--json").stdout)
    assert everything["traces"] == 40 and everything["scopes"] == 1


def test_history_text_shows_updates(ingested):
    with Memory(ingested, user="demo") as mem:
        tid = ids_of(ingested, "demo")[1]
        mem.update(tid, text="Edited.")
    out = run("history", tid, "--db", ingested, "--user", "demo").stdout
    assert " add" in out and " update" in out and "  + Edited." in out


def test_db_defaults_to_the_zeromem_db_variable(example_path, tmp_path, monkeypatch):
    monkeypatch.setenv("ZEROMEM_DB", str(tmp_path / "env.db"))
    assert run("ingest", example_path).exit_code == 0
    assert (tmp_path / "env.db").exists()
    assert json.loads(run("stats", "--json").stdout)["traces"] == 40


def test_help_explains_every_command():
    top = run("--help").stdout
    for command in ("ingest", "list", "get", "delete", "stats", "history"):
        assert command in top
        sub = run(command, "--help")
        assert sub.exit_code == 0 and "--db" in sub.stdout and "--user" in sub.stdout
    assert "needs --yes" in " ".join(run("delete", "--help").stdout.split())
