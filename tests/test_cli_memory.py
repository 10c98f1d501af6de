"""The command line offers what the facade offers: every public ``Memory`` method has its
command, and the commands added for that (add, update, pin / unpin / archive / unarchive,
sessions, neighbourhood, context, answer, index, health) work end to end."""

from __future__ import annotations

import inspect
import json

import pytest
from typer.main import get_command
from typer.testing import CliRunner

from loopback_server import LoopbackJSONServer
from zeromem import Memory
from zeromem.interfaces.cli import app

runner = CliRunner()

# Memory method -> the command that runs it. Store-wide plumbing a command line has no use
# for is listed with None and why.
COMMAND_OF = {
    "add": "add", "add_many": "ingest", "import_file": "ingest", "update": "update", "delete": "delete",
    "delete_session": "delete", "delete_scope": "delete", "compact": "compact", "export": "export",
    "import_export": "import", "backup": "backup", "get": "get", "list": "list", "history": "history",
    "stats": "stats", "index": "index", "reindex": "reindex", "health": "health", "search": "search",
    "search_detailed": "search", "render_context": "context", "render": "search",  # search --context
    "answer": "answer", "sessions": "sessions", "neighbourhood": "neighbourhood", "active": "active",
    "cards": "cards", "pin": "pin", "unpin": "unpin", "archive": "archive", "unarchive": "unarchive",
    "close": None,  # every command closes the memory it opened
    "scoped": None,  # every command takes --user / --agent
}


def test_every_memory_method_has_a_command():
    methods = {name for name, value in vars(Memory).items()
               if not name.startswith("_") and inspect.isfunction(value)}
    assert methods == set(COMMAND_OF)
    commands = set(get_command(app).commands)  # type: ignore[attr-defined]
    assert {name for name in COMMAND_OF.values() if name} <= commands


def run(*args: object, code: int = 0):
    result = runner.invoke(app, [str(a) for a in args])
    assert result.exit_code == code, result.output
    return result


def test_add_update_and_the_lifecycle_flags(tmp_path):
    db = tmp_path / "m.db"
    tid = run("add", "I moved to Denver last week.", "--db", db, "--user", "ana", "--session", "s1",
              "--speaker", "Ana", "--metadata", "importance=0.9", "--metadata", "topic=home").stdout.strip()
    with Memory(db, user="ana") as mem:
        trace = mem.get(tid)
    assert (trace.text, trace.session, trace.speaker, trace.metadata) == (
        "I moved to Denver last week.", "s1", "Ana", {"importance": 0.9, "topic": "home"})
    updated = json.loads(run("update", tid, "--text", "I moved to Boulder.", "--db", db, "--user", "ana",
                             "--json").stdout)
    assert (updated["text"], updated["version"]) == ("I moved to Boulder.", 2)
    assert "flags: pinned" in run("pin", tid, "--db", db, "--user", "ana").stdout
    assert "flags: archived" in run("archive", tid, "--db", db, "--user", "ana").stdout
    assert "flags: -" in run("unarchive", tid, "--db", db, "--user", "ana").stdout
    run("pin", tid, "--db", db, "--user", "ana")
    assert json.loads(run("unpin", tid, "--db", db, "--user", "ana", "--json").stdout)["metadata"] == {
        "importance": 0.9, "topic": "home"}
    run("update", tid, "--db", db, "--user", "ana", code=2)  # nothing to change
    run("pin", tid, "--db", db, "--user", "bob", code=2)  # another scope does not hold it
    erased = run("update", tid, "--text", "Boulder, CO.", "--erase-history", "--db", db, "--user", "ana")
    assert "version" in erased.stdout
    with Memory(db, user="ana") as mem:
        assert all(event.old_text is None for event in mem.history(tid))


def test_sessions_neighbourhood_context_index_and_health(tmp_path):
    db = tmp_path / "m.db"
    with Memory(db, user="u") as mem:
        first = mem.add("Caroline adopted a dog named Rex in Portland.", speaker="Caroline", session="s1")
        mem.add("Rex loves the beach near Portland.", speaker="Melanie", session="s2")
    listed = json.loads(run("sessions", "--db", db, "--user", "u", "--json").stdout)
    assert [(s["session"], s["traces"]) for s in listed] == [("s1", 1), ("s2", 1)]
    near = json.loads(run("neighbourhood", first, "--db", db, "--user", "u", "--json").stdout)
    assert near["trace"]["id"] == first and near["neighbours"]
    block = run("context", "Where does Rex live?", "--db", db, "--user", "u", "--budget", "200").stdout
    assert "Rex" in block
    as_json = json.loads(run("context", "Where does Rex live?", "--db", db, "--user", "u", "--json").stdout)
    assert as_json["tokens"] <= 2000 and as_json["evidence"]
    assert "indexed 0 session(s)" in run("index", "--db", db, "--user", "u").stdout  # derived on write
    ready = json.loads(run("health", "--db", db, "--json").stdout)
    assert ready["ready"] is True and ready["store"] == "ok"
    run("health", "--db", tmp_path / "missing.db", code=2)


def test_answer_asks_the_reader_once_on_the_rendered_evidence(tmp_path):
    pytest.importorskip("httpx")
    db = tmp_path / "m.db"
    with Memory(db, user="u") as mem:
        tid = mem.add("Caroline adopted a dog named Rex.", speaker="Caroline", session="s1")
    server = LoopbackJSONServer(lambda request: (200, {
        "id": "x", "object": "chat.completion", "model": "m",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "Rex"}}],
        "usage": {"prompt_tokens": 50, "completion_tokens": 1}}))
    try:
        out = run("answer", "What is the name of Caroline's dog?", "--reader-url", server.url,
                  "--reader-model", "m", "--db", db, "--user", "u", "--json")
    finally:
        server.close()
    found = json.loads(out.stdout)
    assert found["text"] == "Rex" and found["grounded"] is True and found["supporting"] == [tid]
    assert len(server.requests) == 1 and "Caroline adopted a dog named Rex." in json.dumps(server.requests[0]["body"])
