"""Bugs `zeromem bench fuzz` found, each pinned by a plain example.

Every call here used to raise something other than zeromem's own errors (TypeError,
ValueError, OverflowError), break a documented bound, print raw terminal escapes, or leave a
store file behind after a refused command.
"""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from internals import store_of
from zeromem import InvalidInput, Memory
from zeromem.ingest import load_file, summarize
from zeromem.ingest.base import ImportedConversation
from zeromem.interfaces.cli import app
from zeromem.retrieval.render import render
from zeromem.types import Evidence, Provenance

LOCAL = "http://127.0.0.1"  # the server answers to loopback Hosts only (guard.py)

runner = CliRunner()
ESC = "\x1b"
HUGE = 10**5000  # more digits than Python will turn into text (4300)


@pytest.fixture
def filled(db_path):
    with Memory(db_path, user="u") as mem:
        mem.add_many([{"text": "I moved to Denver last week with my sister Ana.", "session": "s1"},
                      {"text": "Ana loves hiking in the Rockies.", "session": "s2",
                       "attachments": ["a photo of a trail"]}])
        yield mem


# -- render: the budget is a bound ------------------------------------------------------------------
def _evidence(index: int) -> Evidence:
    tid = f"t{index:08d}"
    return Evidence(tid, f"message number {index} about the trip", 1.0 - index / 100,
                    Provenance(tid, f"session-{index}", "Ana", f"2023-05-0{index % 9 + 1}T10:00:00", None, 0))


def test_render_never_goes_over_its_budget_with_captions_and_headers():
    evidence = [_evidence(i) for i in range(8)]
    captions = {ev.trace_id: ("a long caption of a photo of a mountain trail at dawn " * 3,)
                for ev in evidence}
    for budget in range(1, 400, 3):
        rendered = render(evidence, budget_tokens=budget, captions=captions)
        assert rendered.tokens <= budget, (budget, rendered.tokens)
    # Without captions the block is what it was: admitted best first, until the estimate is spent.
    assert len(render(evidence, budget_tokens=400).evidence) == 8


# -- Memory: wrong types reach zeromem's checks, not Python's ----------------------------------------
@pytest.mark.parametrize("call", [
    lambda m: m.list(filters=["a"]),
    lambda m: m.list(offset=HUGE),
    lambda m: m.list(limit=-HUGE),
    lambda m: m.search("Denver", filters=5),
    lambda m: m.search_detailed("Denver", filters=["topic"]),
    lambda m: m.render_context("Denver", filters=[("topic", "x")]),
    lambda m: m.search("Denver", k=-HUGE),
    lambda m: m.search("Denver", session=bytearray(b"s1")),
    lambda m: m.search("Denver", session=["s1"]),
    lambda m: m.add_many(object()),
    lambda m: m.add_many(5),
    lambda m: m.render_context("Denver", include_active=True, active_share="half"),
    lambda m: m.render_context("Denver", include_active=True, active_share=None),
    lambda m: m.active(-HUGE),
    lambda m: m.neighbourhood(m.list()[0].id, limit=object()),
    lambda m: m.neighbourhood(m.list()[0].id, limit=1.5),
    lambda m: m.import_file(["conversation.json"]),
    lambda m: m.import_file(None),
    lambda m: m.import_file(b"conversation.json"),
    lambda m: m.render([5]),
    lambda m: m.render([None]),
    lambda m: m.render([], agent=["alice"]),
    lambda m: m.render(m.search("Ana")[0]),
    lambda m: Memory(m.path, config="fast"),  # type: ignore[arg-type]
    lambda m: Memory(m.path + "\x00.db"),
    lambda m: Memory("sqlite:///tmp/a%00b.db"),
], ids=[
        "list metadata list", "list huge offset", "list huge negative limit", "search filters int",
        "search_detailed filters list", "render_context filters list", "search huge negative k",
        "search session bytearray", "search session list", "add_many object", "add_many int",
        "active_share text", "active_share None", "active huge negative budget",
        "neighbourhood limit object", "neighbourhood limit float", "import_file list",
        "import_file None", "import_file bytes", "render int in list", "render None in list",
        "render bad agent", "render one evidence",
        "Memory config str", "Memory path NUL", "Memory URL %00"])
def test_malformed_arguments_are_invalid_input(filled, snapshot, call):
    before = snapshot(filled)
    with pytest.raises(InvalidInput) as caught:
        call(filled)
    assert str(caught.value).strip()
    assert snapshot(filled) == before


@pytest.mark.parametrize("metadata", [{"importance": "high"}, {"importance": 5}, {"pinned": "yes"},
                                      {"archived": 1}, {"expires_at": "someday"}, {"expires_at": [1]}])
def test_update_refuses_the_lifecycle_metadata_add_refuses(filled, snapshot, metadata):
    with pytest.raises(InvalidInput):
        filled.add("a new trace", metadata=metadata)
    tid = filled.list()[0].id
    before = snapshot(filled)
    with pytest.raises(InvalidInput, match=next(iter(metadata))):
        filled.update(tid, metadata=metadata)
    assert snapshot(filled) == before


def test_huge_k_and_budget_are_no_limit(filled):
    assert len(filled.active(HUGE).entries) == 2
    assert len(filled.search("Ana", k=HUGE)) == 2


def test_search_reads_a_session_as_list_does(filled):
    """A number or padded name finds the session as ``add`` stored it (as ``list`` does)."""
    assert {e.session for e in filled.search("Ana", session=" s2 ")} == {"s2"}
    assert filled.search("Ana", session=7) == []


# -- importers ------------------------------------------------------------------------------------
def test_tool_calls_that_are_not_a_list_are_refused(tmp_path):
    path = tmp_path / "chat.json"
    path.write_text(json.dumps([{"role": "assistant", "content": None, "tool_calls": 1.5}]))
    with pytest.raises(InvalidInput, match=r"\[0\]\.tool_calls: must be a list"):
        load_file(path)


def test_a_locomo_session_number_too_long_for_an_int_is_refused(tmp_path):
    path = tmp_path / "conv.json"
    path.write_text(json.dumps({"speaker_a": "A", "session_" + "1" * 5000: [{"speaker": "A", "text": "hi"}]}))
    with pytest.raises(InvalidInput, match="a session number of 5000 digits"):
        load_file(path)


def test_summarize_never_fails_on_odd_speakers_and_sessions():
    conv = ImportedConversation("c", "f.jsonl", "jsonl", [
        {"text": "a", "session": ["s", 1], "speaker": 5}, {"text": "b", "session": "s", "speaker": "Ana"},
        {"text": "c", "speaker": {"x": 1}}], ["line 1", "line 2", "line 3"])
    report = summarize(conv)
    assert report["traces"] == 3 and report["sessions"] == 3
    assert report["speakers"] == {"5": 1, "Ana": 1, "{'x': 1}": 1}


# -- CLI --------------------------------------------------------------------------------------------
def _refused(args: list[str]) -> None:
    result = runner.invoke(app, args)
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1, result.stderr


def test_cards_and_active_show_stored_escapes_instead_of_obeying_them(db_path):
    with Memory(db_path) as mem:
        mem.add(f"I love {ESC}[31mred{ESC}[0m peppers \x9b31m and \u202etea.",
                session=f"s{ESC}[1m", speaker=f"Eve{ESC}[31m")
    for command in (["cards"], ["active"]):
        result = runner.invoke(app, [*command, "--db", str(db_path)])
        assert result.exit_code == 0, result.output
        for raw in (ESC, "\x9b", "\u202e"):
            assert raw not in result.stdout, (command, result.stdout)


@pytest.mark.parametrize("args", [
    ["keys", "add", "--user", "u" * 201],
    ["keys", "add", "--user", "u", "--label", "x" * 1001],
    ["migrate", "--from", "{db}", "--to", "{new}"],
    ["ingest", "{bad}"],
    ["ingest", "{good}", "--user", "u" * 201],
    ["ingest", "{good}", "--agent", " padded"],
], ids=["keys add bad user", "keys add long label", "migrate to a path", "ingest bad message",
        "ingest bad user", "ingest bad agent"])
def test_a_refused_command_creates_no_store(tmp_path, db_path, args):
    with Memory(db_path) as mem:
        mem.add("already here")
    (tmp_path / "bad.jsonl").write_text('{"text": "fine"}\n{"text": ""}\n')
    (tmp_path / "good.jsonl").write_text('{"text": "fine"}\n')
    new = tmp_path / "new.db"
    paths = {"{db}": str(db_path), "{new}": str(new), "{bad}": str(tmp_path / "bad.jsonl"),
             "{good}": str(tmp_path / "good.jsonl")}
    argv = [paths.get(arg, arg) for arg in args]
    _refused(argv if "migrate" in argv else [*argv, "--db", str(new)])
    assert not new.exists()


# -- REST -------------------------------------------------------------------------------------------
@pytest.mark.slow
def test_an_upload_with_a_name_too_long_for_the_file_system_is_a_400(db_path):
    from fastapi.testclient import TestClient

    from zeromem.interfaces.server import ServerSettings, create_app
    from zeromem.store.keys import new_api_key
    from zeromem.types import Scope

    with Memory(db_path) as mem:
        key_id, key, key_hash = new_api_key()
        store_of(mem).add_api_key(key_id, key_hash, Scope("u", None), None)
        client = TestClient(create_app(mem, ServerSettings(warm_up=False)), raise_server_exceptions=False,
                            base_url=LOCAL)
        headers = {"Authorization": f"Bearer {key}"}
        for name in ("x" * 300 + ".jsonl", "é" * 110 + ".jsonl"):
            response = client.post("/v1/import", headers=headers,
                                   files={"file": (name, b'{"text": "hello"}\n', "application/json")})
            assert response.status_code == 400, response.text
            assert "file name" in response.json()["error"]["message"]
        assert mem.stats(user="u").traces == 0
        ok = client.post("/v1/import", headers=headers,
                         files={"file": ("x" * 200 + ".jsonl", b'{"text": "hello"}\n', "application/json")})
        assert ok.status_code == 201, ok.text

