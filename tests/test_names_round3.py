"""One name, one scope; refused at start; no bool for a number (issue "Hardening, round 3").

Before: user/agent names accepted U+200D, U+200C, U+00AD, U+2063, tag characters and U+3164,
so `keys add --user 'alice<ZWJ>'` minted a second key for what displays as "alice"; a text
made only of U+3164, U+2800 or U+115F was stored; `serve --no-auth --user ''` and `mcp --user
''` started and then failed every call; the REST API read JSON `true` as 1 (an event_time of
1970-01-01T00:00:01, a seq or k of 1). Each test below failed on that code.
"""

from __future__ import annotations

import itertools
import json
import socket
import sqlite3
import subprocess
import sys
import unicodedata

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from internals import store_of
from zeromem import Memory
from zeromem.errors import InvalidInput
from zeromem.interfaces.server import ServerSettings, create_app
from zeromem.main import app
from zeromem.store import validate
from zeromem.store.names import check_names, reads_as
from zeromem.types import Scope

# The characters the issue names, and more of each kind (bidi, tags, fillers, blanks).
HIDDEN = ["\u200d", "\u200c", "\u00ad", "\u2063", "\U000e0041", "\U000e0001", "\u3164", "\u115f",
          "\u1160", "\uffa0", "\u2800", "\u034f", "\u180e", "\ufe0f", "\U000e0100", "\u061c", "\u202e",
          "\u2066", "\u200b", "\ufeff", "\U0001d173", "\u2061"]


@pytest.fixture(scope="module")
def memory(tmp_path_factory):
    with Memory(tmp_path_factory.mktemp("names") / "memory.db", user="alice") as mem:
        mem.add("Alice moved to Denver.", session="s1")
        yield mem


@pytest.mark.parametrize("char", HIDDEN, ids=lambda c: f"U+{ord(c):04X}")
@pytest.mark.parametrize("part", ["user", "agent"])
def test_a_name_holding_a_character_that_shows_nothing_is_refused_everywhere(memory, part, char):
    name = "alice" + char if part == "user" else "plan" + char + "ner"
    before = memory.stats(all_scopes=True).traces
    with pytest.raises(InvalidInput, match="invisible or direction-changing") as refused:
        memory.add("Alice moved to Denver.", **{part: name})
    assert f"U+{ord(char):04X}" in str(refused.value) and "pass '" in str(refused.value)
    with pytest.raises(InvalidInput):
        Memory(":memory:", **{part: name})  # the default scope, refused at construction
    with pytest.raises(InvalidInput):
        store_of(memory).create_api_key(Scope(**{part: name}), None)  # the server's keys
    assert memory.stats(all_scopes=True).traces == before


def test_keys_add_refuses_a_name_that_displays_as_another(tmp_path):
    db = str(tmp_path / "keys.db")
    runner = CliRunner()
    assert runner.invoke(app, ["keys", "add", "--db", db, "--user", "alice"]).exit_code == 0
    result = runner.invoke(app, ["keys", "add", "--db", db, "--user", "alice\u200d"])
    assert result.exit_code == 2 and result.output.startswith("error: ") and "pass 'alice'" in result.output
    with Memory(db) as mem:
        assert [key.scope.user for key in store_of(mem).api_keys()] == ["alice"]


@pytest.mark.parametrize(("name", "normal"), [("ａｌｉｃｅ", "alice"), ("o\u0308tto", "\u00f6tto"),
                                              ("\ufb01le", "file"), ("agent\u2460", "agent1")])
def test_a_name_not_in_nfkc_form_is_refused_with_the_name_to_pass(memory, name, normal):
    assert unicodedata.normalize("NFKC", name) == normal
    with pytest.raises(InvalidInput, match="NFKC") as refused:
        memory.add("hello there", user=name)
    assert repr(normal) in str(refused.value)


@pytest.mark.parametrize("name", ["alice", "Zo\u00eb", "李雷", "priya.k@example.com", "a b"])
def test_plain_names_of_every_script_still_pass(name):
    assert validate.clean_scope_part(name, "user") == name


@pytest.mark.parametrize("name", ["", " ", "\t", "\u3000"])
def test_empty_and_blank_names_are_refused_with_the_fix(name):
    with pytest.raises(InvalidInput, match=r"empty string|only whitespace"):
        validate.clean_scope_part(name, "user")


@pytest.mark.parametrize("text", ["\u3164", "\u2800", "\u115f", "\u3164 \u2800\n\u115f", "\uffa0\u1160",
                                  "\U000e0041\U000e0042", "\ufe0f", "\u034f"])
def test_a_text_that_shows_nothing_is_refused_like_empty_text(memory, text):
    with pytest.raises(InvalidInput, match="is empty"):
        memory.add(text)


def test_a_text_with_such_characters_among_visible_ones_is_stored_verbatim(memory):
    text = "fam\u200dily \u2800 emoji \U0001f468\u200d\U0001f469"
    assert memory.get(memory.add(text)).text == text


def test_a_session_name_holding_an_invisible_character_is_refused_but_need_not_be_nfkc(memory):
    with pytest.raises(InvalidInput, match=r"session .* U\+200B"):
        memory.add("Alice moved to Denver.", session="s\u200b1")
    tid = memory.add("Alice moved to Denver.", session="\u2116 5")  # "№ 5": a title, kept as given
    assert memory.get(tid).session == "\u2116 5"


def test_the_default_ignorable_table_is_sorted_and_matches_unicodedata():
    """The table is DerivedCoreProperties.txt's (Unicode 14.0.0); Python's unicodedata cannot
    derive it, but every assigned code point in it must have a category the property allows."""
    ranges = validate.DEFAULT_IGNORABLE_RANGES
    assert all(low <= high for low, high in ranges)
    assert all(a[1] < b[0] for a, b in itertools.pairwise(ranges))
    for low, high in ranges:
        for code in range(low, high + 1):
            assert unicodedata.category(chr(code)) in ("Cf", "Mn", "Lo", "Cn"), hex(code)
    # Every format character (Cf) below U+10000 that is invisible by definition is in it.
    for code in (0x00AD, 0x200B, 0x200C, 0x200D, 0x2060, 0x2063, 0xFEFF, 0xE0001, 0xE007F):
        assert chr(code) in validate.INVISIBLE_IN_NAMES


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.parametrize("argv", [["serve", "--no-auth", "--user", ""], ["mcp", "--user", ""],
                                  ["serve", "--no-auth", "--user", " "], ["mcp", "--user", "alice\u200d"],
                                  ["mcp", "--agent", "\u3164"], ["serve", "--no-auth", "--agent", "bot\u2063"]])
def test_serve_and_mcp_refuse_an_empty_or_invisible_user_at_start(tmp_path, argv):
    """In a child process with a deadline: before the fix these started (and served until
    killed), failing every call."""
    done = subprocess.run([sys.executable, "-m", "zeromem", *argv, "--db", str(tmp_path / "start.db"),
                           *(["--port", str(free_port())] if argv[0] == "serve" else [])],
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, (argv, done.stdout, done.stderr[-2000:])
    assert done.stderr.startswith("error: ") and "Traceback" not in done.stderr


@pytest.fixture(scope="module")
def client(memory):
    settings = ServerSettings(warm_up=False, require_auth=False, user="alice")
    return TestClient(create_app(memory, settings), base_url="http://127.0.0.1", raise_server_exceptions=False)


@pytest.mark.parametrize(("path", "body"), [
    ("/v1/traces", {"text": "hi", "event_time": True}),
    ("/v1/traces", {"text": "hi", "session_time": False}),
    ("/v1/traces", {"text": "hi", "seq": True}),
    ("/v1/traces", {"traces": [{"text": "hi", "seq": False}]}),
    ("/v1/search", {"query": "Denver", "k": True}),
    ("/v1/search", {"query": "Denver", "as_of": True}),
    ("/v1/search", {"query": "Denver", "now": False}),
    ("/v1/context", {"query": "Denver", "budget_tokens": True}),
    ("/v1/context", {"query": "Denver", "k": True}),
    ("/v1/answer", {"query": "Denver", "k": True}),
    ("/v1/answer", {"query": "Denver", "budget_tokens": True}),
])
def test_the_rest_api_refuses_a_bool_where_a_number_or_a_time_goes(memory, client, path, body):
    before = memory.stats(all_scopes=True).traces
    response = client.post(path, content=json.dumps(body), headers={"Content-Type": "application/json"})
    assert response.status_code == 422, response.text
    assert response.json()["error"]["type"] == "InvalidRequest"
    assert memory.stats(all_scopes=True).traces == before


def test_the_rest_api_still_takes_numbers_and_text_for_times(memory, client):
    body = {"text": "Alice flew home.", "event_time": 1_700_000_000, "session_time": "2024-05-01", "seq": 7,
            "session": "s9"}
    response = client.post("/v1/traces", content=json.dumps(body), headers={"Content-Type": "application/json"})
    assert response.status_code == 201, response.text
    trace = memory.get(response.json()["ids"][0])
    assert trace.event_time == "2023-11-14T22:13:20+00:00" and trace.seq == 7
    assert client.post("/v1/search", json={"query": "Denver", "k": 2, "as_of": 1.7e9}).status_code == 200


def test_check_names_lists_stored_scopes_the_rules_now_refuse(tmp_path):
    """A store written before the rules: a scope named "bob" + ZWJ, one named "ａｌｉｃｅ" beside
    "alice" (they read the same) and an API key for "carol" + U+00AD."""
    db = tmp_path / "old.db"
    with Memory(db) as mem:
        mem.add("hello there", user="alice")
        mem.add("hi", user="bob")
        store_of(mem).create_api_key(Scope("carol"), "old key")
    conn = sqlite3.connect(db)
    with conn:
        conn.execute("UPDATE traces SET user_key='bob\u200d', scope_key='[\"bob\u200d\",\"\"]'"
                     " WHERE user_key='bob'")
        conn.execute("UPDATE api_keys SET user_key='car\u00adol'")
        conn.execute("INSERT INTO traces (scope_key, user_key, agent_key, session, seq, text, role, recorded_at)"
                     " SELECT '[\"ａｌｉｃｅ\",\"\"]', 'ａｌｉｃｅ', agent_key, session, seq, text, role, recorded_at"
                     " FROM traces WHERE user_key='alice'")
    conn.close()
    result = CliRunner().invoke(app, ["check-names", "--db", str(db), "--json"])
    assert result.exit_code == 1, result.output
    report = json.loads(result.output)
    found = {(f["user"], f["where"].split()[0]) for f in report["findings"]}
    assert found == {("bob\u200d", "traces"), ("ａｌｉｃｅ", "traces"), ("car\u00adol", "api"),
                     ("alice", "names"), ("ａｌｉｃｅ", "names")}
    assert report["scopes"] == 3 and report["keys"] == 1
    clean = tmp_path / "clean.db"
    with Memory(clean) as mem:
        mem.add("hello there", user="alice")
    result = CliRunner().invoke(app, ["check-names", "--db", str(clean)])
    assert result.exit_code == 0 and "every name passes" in result.output


def test_reads_as_drops_what_shows_nothing_and_applies_nfkc():
    assert reads_as("ａｌｉ\u200dｃｅ") == "alice" and reads_as(None) == ""
    report = check_names([Scope("alice"), Scope("al\u00adice")], [])
    assert not report.clean and len(report.findings) == 3


def test_bench_fuzz_names_surface_refuses_every_spoiled_name(tmp_path):
    """`zeromem bench fuzz --surfaces names`: spoiled names and invisible-only texts through
    the library, the CLI, REST and MCP; every one refused, the store unchanged."""
    from zeromem_bench import fuzz

    surface = fuzz.make_surface("names")
    surface.open(tmp_path, 0)
    try:
        report = fuzz.run_surface(surface, 120, seed=3)
    finally:
        surface.close()
    assert report.failures == 0, report.examples
    assert report.cases == 120 and report.rejected > 100
    assert {label.split(":")[1] for label in report.outcomes if label.startswith("rejected:")} == {
        "library", "cli", "rest", "mcp"}
