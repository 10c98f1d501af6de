"""Inputs the second attack found accepted though they should not be:
an empty scope part or session that silently meant "none", a seq that wedged its session,
invisible text, direction-changing scope names, offsets with seconds, dropped fractions."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

import pg_fixture
from internals import store_of
from zeromem import Config, InvalidInput, Memory
from zeromem.interfaces.cli import app
from zeromem.store import validate

runner = CliRunner()


@pytest.fixture
def pg_url(request):
    yield from pg_fixture.fresh_database(request)


@pytest.fixture(params=["sqlite", "postgres"])
def memory(request, tmp_path):
    target = tmp_path / "m.db" if request.param == "sqlite" else request.getfixturevalue("pg_url")
    with Memory(target, config=Config(index_on_write=False)) as mem:
        yield mem


# -- item 5: '' is not "none" -----------------------------------------------------------------
@pytest.mark.parametrize("scope", [{"user": ""}, {"agent": ""}, {"user": "", "agent": "a"}])
def test_an_empty_scope_part_is_refused_not_read_as_none(memory, scope):
    memory.add("stored with no scope at all", session="s")
    with pytest.raises(InvalidInput, match="empty string: pass None"):
        memory.add("x", session="s", **scope)
    with pytest.raises(InvalidInput, match="empty string"):
        memory.list(**scope)
    assert [t.text for t in memory.list()] == ["stored with no scope at all"]


@pytest.mark.parametrize("session", ["", "   ", "\t"])
def test_an_empty_session_is_refused_not_read_as_none(memory, session):
    with pytest.raises(InvalidInput, match=r"session .* is empty: pass None"):
        memory.add("x", session=session)
    with pytest.raises(InvalidInput, match="is empty"):
        memory.add_many([{"text": "ok", "session": "s"}, {"text": "x", "session": session}])
    assert memory.list() == []


def test_keys_add_with_an_empty_user_mints_nothing(tmp_path):
    db = tmp_path / "m.db"
    for args in (["--user", ""], ["--agent", ""], ["--user", "", "--agent", ""]):
        result = runner.invoke(app, ["keys", "add", "--db", str(db), *args])
        assert result.exit_code != 0
        assert "empty string" in result.output
    assert not db.exists()


# -- item 9: one seq at the top does not wedge its session -------------------------------------
def test_a_seq_at_the_top_is_refused_and_cannot_wedge_a_session(memory):
    for seq in (2**63 - 1, 2**53):
        with pytest.raises(InvalidInput, match="at most 2\\*\\*53-1"):
            memory.add("x", session="s", seq=seq)
    memory.add("the highest seq a caller may give", session="s", seq=validate.MAX_SEQ)
    after = [memory.add(f"later {i}", session="s") for i in range(3)]
    seqs = [memory.get(t).seq for t in after]
    assert seqs == [validate.MAX_SEQ + 1, validate.MAX_SEQ + 2, validate.MAX_SEQ + 3]


def test_a_rest_seq_at_the_top_is_a_400_and_the_session_takes_more(tmp_path):
    from fastapi.testclient import TestClient

    from zeromem.interfaces.server import ServerSettings, create_app

    with Memory(tmp_path / "m.db", config=Config(index_on_write=False)) as mem:
        client = TestClient(create_app(mem, ServerSettings(warm_up=False, require_auth=False, user="u")),
                            base_url="http://127.0.0.1")
        refused = client.post("/v1/traces", json={"text": "x", "session": "s", "seq": 2**63 - 1})
        assert refused.status_code == 400
        assert client.post("/v1/traces", json={"text": "y", "session": "s"}).status_code == 201


# -- item 10: invisible text, hidden direction changes, offsets and fractions -----------------
@pytest.mark.parametrize("text", ["\u200b", "\u200b\u200c\u200d\ufeff", "\x00", "\x00\x00 \x00",
                                  "\u2060\u00ad", " \u202e "])
def test_text_that_shows_nothing_is_refused(memory, text):
    with pytest.raises(InvalidInput, match="empty, or only whitespace, control or zero-width"):
        memory.add(text, session="s")
    with pytest.raises(InvalidInput, match="empty"):
        memory.search(text)
    assert memory.list() == []


def test_text_with_some_visible_characters_is_kept_verbatim(tmp_path):
    with Memory(tmp_path / "m.db", config=Config(index_on_write=False)) as mem:
        tid = mem.add("a\u200bb \U0001f469\u200d\U0001f4bb", session="s")
        assert mem.get(tid).text == "a\u200bb \U0001f469\u200d\U0001f4bb"


@pytest.mark.parametrize("name", ["alice\u202eknil", "\u2066bob\u2069", "eve\u200b", "mallory\u200f",
                                  "\ufefftrent"])
def test_scope_names_with_invisible_or_bidi_characters_are_refused(memory, name):
    for scope in ({"user": name}, {"agent": name}):
        with pytest.raises(InvalidInput, match="invisible or direction-changing"):
            memory.add("x", session="s", **scope)
    assert store_of(memory).scopes() == []


def test_scope_names_in_any_script_still_work(memory):
    # (ZWJ and ZWNJ are refused since round 3: "a" + ZWJ + "b" displays as "ab", a second scope)
    for name in ("Zoë", "محمد", "李雷", "नमस्ते", "Ωmega"):
        memory.add("hello", session="s", user=name)
    assert len(store_of(memory).scopes()) == 5


@pytest.mark.parametrize("value", ["2024-05-01T10:00:00+05:30:15", "2024-05-01T10:00:00-00:00:01",
                                   "2024-05-01 10:00:00+01:00:30.5"])
def test_an_offset_with_seconds_is_refused(memory, value):
    with pytest.raises(InvalidInput, match="offset has seconds"):
        memory.add("x", session="s", event_time=value)


@pytest.mark.parametrize(("given", "stored"), [
    ("2024-05-01T10:00:00.5", "2024-05-01T10:00:00.500000"),
    ("2024-05-01T10:00:00.123456+02:00", "2024-05-01T10:00:00.123456+02:00"),
    ("2024-05-01T10:00:00.000", "2024-05-01T10:00:00"),
    ("2024-05-01T10:00:00+05:30", "2024-05-01T10:00:00+05:30")])
def test_a_fractional_second_is_kept_not_dropped(memory, given, stored):
    tid = memory.add("x", session="s", event_time=given)
    assert memory.get(tid).event_time == stored


def test_fractional_times_order_and_filter_by_instant(memory):
    early = memory.add("early", session="s", event_time="2024-05-01T10:00:00.250+00:00")
    late = memory.add("late", session="s", event_time="2024-05-01T10:00:00.750+00:00")
    assert [t.id for t in memory.list(since="2024-05-01T10:00:00.5")] == [late]
    assert [t.id for t in memory.list(until="2024-05-01T10:00:00.5")] == [early]


def test_an_import_into_a_scope_that_is_not_a_string_is_invalid_input(tmp_path):
    # found by `bench fuzz --cases 10000` (api surface): a TypeError from the duplicate check
    path = tmp_path / "t.jsonl"
    path.write_text('{"text": "hello", "session": "s"}\n')
    with Memory(tmp_path / "m.db", config=Config(index_on_write=False)) as mem:
        for scope in ({"agent": ["alice"]}, {"user": {"a": 1}}, {"user": ""}):
            with pytest.raises(InvalidInput):
                mem.import_file(path, **scope)
        assert mem.list() == []
