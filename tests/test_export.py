"""Export, import and backup: a store's traces out as JSON lines and back in with the same ids
(same bytes again, same search results), refusals that store nothing, a backup taken while a
writer runs, the CLI commands and the REST export (the caller's scope only)."""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from internals import store_of
from zeromem import Config, InvalidInput, Memory, NotFound
from zeromem.interfaces.cli import app
from zeromem.interfaces.server import ServerSettings, create_app
from zeromem.reader import usage
from zeromem.store import open_store, sqlite_portable
from zeromem.store.ids import ID_KEY
from zeromem.store.keys import new_api_key
from zeromem.store.portable import FORMAT, VERSION, dump_line
from zeromem.types import Scope

LAZY = Config(index_on_write=False)  # these tests look at traces, not at derived units
LOCAL = "http://127.0.0.1"
runner = CliRunner()


def fill(mem: Memory) -> dict[str, str]:
    """Two scopes with updates, a pin, an archive, deleted traces (one keeping its history)."""
    ids = {}
    ids["denver"] = mem.add("I live in Chicago.", session="s1", speaker="Ana", session_time="2023-05-08T10:00:00",
                            metadata={"topic": "home", "n": 1.5}, source_id="D1:1", user="ana")
    ids["cat"] = mem.add("I adopted a cat named Miso 🐱.", session="s1", speaker="Ana", seq=7,
                         attachments=["a photo of a grey cat"], event_time="2023-05-07", user="ana")
    ids["gone"] = mem.add("my old password is hunter2", session="s2", user="ana")
    ids["kept"] = mem.add("delete me but keep my history", session="s2", user="ana")
    ids["bot"] = mem.add("Hi from the bot scope\nline two\u2028 and more", role="assistant", user="ana", agent="bot")
    ids["plain"] = mem.add("no session, no user")
    mem.update(ids["denver"], text="I live in Denver.", user="ana")
    mem.pin(ids["cat"], user="ana")
    mem.archive(ids["bot"], user="ana", agent="bot")
    mem.delete(ids["gone"], user="ana")
    mem.delete(ids["kept"], keep_history=True, user="ana")
    return ids


@pytest.fixture
def filled(tmp_path) -> tuple[Path, dict[str, str]]:
    db = tmp_path / "source.db"
    with Memory(db, config=LAZY) as mem:
        return db, fill(mem)


def exported(mem: Memory, **kwargs) -> str:
    return "".join(mem.export(**kwargs))


def records(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines()]  # U+2028 in a text is escaped


# -- the format --------------------------------------------------------------------------------
def test_an_export_holds_header_traces_and_end_in_row_order(filled):
    db, ids = filled
    with Memory(db, config=LAZY) as mem:
        text = exported(mem, all_scopes=True)
        key = store_of(mem).get_meta(ID_KEY)
        parse = store_of(mem).ids.parse
    lines = records(text)
    header, end = lines[0], lines[-1]
    assert header == {"kind": "header", "format": FORMAT, "version": VERSION, "zeromem": "1.0.0",
                      "all_scopes": True, "scope": None, "history": False, "id_key": key,
                      "last_row": parse(ids["plain"])}
    traces = lines[1:-1]
    assert [t["id"] for t in traces] == sorted((ids[k] for k in ("denver", "cat", "bot", "plain")), key=parse)
    assert end == {"kind": "end", "traces": 4, "deleted": 0, "events": 0}
    denver = next(t for t in traces if t["id"] == ids["denver"])
    assert denver == {**denver, "text": "I live in Denver.", "user": "ana", "agent": None, "session": "s1",
                      "speaker": "Ana", "session_time": "2023-05-08T10:00:00", "source_id": "D1:1",
                      "metadata": {"topic": "home", "n": 1.5}, "version": 2, "role": "user", "seq": 0}
    cat = next(t for t in traces if t["id"] == ids["cat"])
    assert (cat["metadata"], cat["attachments"], cat["seq"]) == ({"pinned": True}, ["a photo of a grey cat"], 7)
    bot = next(t for t in traces if t["id"] == ids["bot"])
    assert (bot["agent"], bot["metadata"], bot["role"]) == ("bot", {"archived": True}, "assistant")
    # one JSON object per line, keys sorted, no spaces: line breaks inside texts are escaped
    assert text.splitlines(keepends=True) == [dump_line(record) for record in lines]
    assert "\\u2028" in text and "\u2028" not in text


def test_history_adds_events_and_deleted_traces_tombstones(filled):
    db, ids = filled
    with Memory(db, config=LAZY) as mem:
        lines = records(exported(mem, history=True, user="ana"))
    assert lines[0]["scope"] == {"user": "ana", "agent": None} and lines[0]["history"] is True
    kinds = [(r["kind"], r.get("id"), r.get("event")) for r in lines[1:-1]]
    assert kinds == [("trace", ids["denver"], None), ("event", ids["denver"], "add"),
                     ("event", ids["denver"], "update"),
                     ("trace", ids["cat"], None), ("event", ids["cat"], "add"), ("event", ids["cat"], "update"),
                     ("deleted", ids["gone"], None), ("event", ids["gone"], "add"), ("event", ids["gone"], "delete"),
                     ("deleted", ids["kept"], None), ("event", ids["kept"], "add"), ("event", ids["kept"], "delete")]
    gone = [r for r in lines if r.get("id") == ids["gone"]]
    assert all(r.get("new_text") is None and r.get("old_text") is None for r in gone)  # erased: tombstones only
    kept = [r for r in lines if r.get("id") == ids["kept"] and r.get("event") == "delete"]
    assert kept[0]["old_text"] == "delete me but keep my history"
    assert lines[-1] == {"kind": "end", "traces": 2, "deleted": 2, "events": 8}


def test_the_same_store_gives_the_same_bytes_and_pages_do_not_show(tmp_path, monkeypatch):
    with Memory(tmp_path / "m.db", config=LAZY) as mem:
        for i in range(30):  # two scopes interleaved, so every page of one skips rows of the other
            mem.add_many([{"text": f"ana {i} {j}", "session": f"s{i % 3}"} for j in range(2)], user="ana")
            mem.add(f"ben {i}", user="ben")
            if i % 4 == 0:
                mem.update(mem.list(user="ana")[-1].id, text=f"ana {i} changed", user="ana")
            if i % 5 == 0:
                mem.delete(mem.list(user="ben")[0].id, user="ben")
        whole = [exported(mem, user=u, history=h) for u in ("ana", "ben") for h in (False, True)]
        whole.append(exported(mem, all_scopes=True, history=True))
        monkeypatch.setattr(sqlite_portable, "EXPORT_PAGE", 3)
        paged = [exported(mem, user=u, history=h) for u in ("ana", "ben") for h in (False, True)]
        paged.append(exported(mem, all_scopes=True, history=True))
    assert paged == whole
    assert records(whole[0])[-1]["traces"] == 60


def test_an_export_reads_one_version_while_the_store_is_written(tmp_path):
    with Memory(tmp_path / "m.db", config=LAZY) as mem:
        mem.add_many([{"text": f"t{i}"} for i in range(1200)], user="ana")
        lines = mem.export(user="ana")
        first = [next(lines), next(lines)]
        mem.add("written during the export", user="ana")  # this store's own connection writes on
        rest = list(lines)
    assert len(first + rest) == 1202 and records(rest[-1])[0]["traces"] == 1200


# -- export -> import ----------------------------------------------------------------------------
WORDS = st.sampled_from(["Ana", "moved", "to", "Denver", "猫", "café", "emoji 🐱", "line\nbreak", "tab\t",
                         "\u2028", "quote\"", "back\\slash"])
TEXTS = st.lists(WORDS, min_size=1, max_size=5).map(lambda words: "note " + " ".join(words))
OPS = st.lists(st.tuples(st.sampled_from(["add", "update", "delete", "erase", "pin", "meta"]),
                         st.sampled_from([("ana", None), ("ana", "bot"), (None, None)]),
                         TEXTS, st.integers(0, 50), st.sampled_from([None, "s1", "s2"])),
               min_size=1, max_size=14)


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=OPS)
def test_export_import_export_gives_the_same_bytes(ops):
    with Memory(":memory:", config=LAZY) as source:
        for op, (user, agent), text, pick, session in ops:
            alive = source.list(user=user, agent=agent)
            target = alive[pick % len(alive)].id if alive else None
            if op == "add" or target is None:
                source.add(text, session=session, speaker=text[:5], metadata={"n": pick, "tag": text},
                           session_time="2023-05-08T10:00:00+02:00" if pick % 2 else None, user=user, agent=agent)
            elif op == "update":
                source.update(target, text=text, user=user, agent=agent)
            elif op in ("delete", "erase"):
                source.delete(target, keep_history=op == "delete", user=user, agent=agent)
            elif op == "pin":
                source.pin(target, user=user, agent=agent)
            else:
                source.update(target, metadata={"importance": 0.5}, keep_history=False, user=user, agent=agent)
        for history in (False, True):
            text = exported(source, all_scopes=True, history=history)
            with Memory(":memory:", config=LAZY) as copy:
                report = copy.import_export(text.splitlines(keepends=True))
                assert exported(copy, all_scopes=True, history=history) == text
                assert report.traces == records(text)[-1]["traces"] and report.ids_kept
                for scope in store_of(source).scopes():
                    assert copy.list(user=scope.user, agent=scope.agent) == \
                        source.list(user=scope.user, agent=scope.agent)


@pytest.mark.slow
def test_an_imported_store_has_the_same_ids_and_search_results(tmp_path, example_path):
    before = usage()
    queries = ("Where does Priya work?", "What does Marcus sell at the bakery?")
    with Memory(tmp_path / "a.db", user="demo") as source:
        source.import_file(example_path)
        source.pin(source.list()[3].id)
        with open(tmp_path / "x.jsonl", "w", encoding="utf-8") as out:
            out.writelines(source.export(history=True))
        assert not source.search_detailed(queries[0]).degraded  # every model took part
        expected = [[(e.trace_id, e.text) for e in source.search(q, k=5)] for q in queries]
        traces = source.list()
    with Memory(tmp_path / "b.db", user="demo") as copy:
        report = copy.import_export(tmp_path / "x.jsonl")
        assert (report.traces, report.scopes, report.ids_kept) == (40, (Scope("demo"),), True)
        assert copy.list() == traces
        assert [[(e.trace_id, e.text) for e in copy.search(q, k=5)] for q in queries] == expected
        assert all(expected)
    spent = usage() - before
    assert (spent.calls, spent.tokens) == (0, 0)


def test_ids_come_back_and_later_adds_never_reuse_a_row(filled, tmp_path):
    db, ids = filled
    with Memory(db, config=LAZY) as mem:
        text = exported(mem, all_scopes=True, history=True)
        history = mem.history(ids["denver"], user="ana")
        gone = mem.history(ids["gone"], user="ana")
    with Memory(tmp_path / "copy.db", config=LAZY) as copy:
        report = copy.import_export(text.splitlines())
        assert (report.traces, report.deleted) == (4, 2)
        assert copy.get(ids["cat"], user="ana").metadata == {"pinned": True}
        assert copy.get(ids["bot"], user="ana", agent="bot").metadata == {"archived": True}
        assert copy.history(ids["denver"], user="ana") == history
        assert copy.history(ids["gone"], user="ana") == gone
        with pytest.raises(NotFound):
            copy.get(ids["gone"], user="ana")
        new = copy.add("after the import", user="ana")
        parse = store_of(copy).ids.parse
        assert parse(new) == parse(ids["plain"]) + 1  # above every row the source handed out
        assert store_of(copy).get_meta(ID_KEY) == records(text)[0]["id_key"]


def test_without_history_each_trace_starts_its_history_at_the_exported_state(filled, tmp_path):
    db, ids = filled
    with Memory(db, config=LAZY) as mem:
        text = exported(mem, user="ana")
    with Memory(tmp_path / "copy.db", config=LAZY) as copy:
        copy.import_export(text.splitlines())
        events = copy.history(ids["denver"], user="ana")
        trace = copy.get(ids["denver"], user="ana")
    assert [(e.event, e.at, e.new_text) for e in events] == [("add", trace.recorded_at, "I live in Denver.")]
    assert trace.version == 2


def test_a_deleted_scope_is_restored_into_its_own_store(filled):
    db, ids = filled
    with Memory(db, config=LAZY) as mem:
        text = exported(mem, user="ana", history=True)
        mem.delete_scope(user="ana")
        with pytest.raises(NotFound):
            mem.get(ids["denver"], user="ana")
        report = mem.import_export(text.splitlines())
        assert report.ids_kept and mem.get(ids["denver"], user="ana").text == "I live in Denver."
        assert exported(mem, user="ana", history=True) == text
        with pytest.raises(InvalidInput, match="already"):  # a second time: the rows are taken
            mem.import_export(text.splitlines())
        copy = mem.import_export(text.splitlines(), new_ids=True)
        assert not copy.ids_kept and mem.stats(user="ana").traces == 4


def test_a_store_with_its_own_key_takes_the_export_only_with_new_ids(filled, tmp_path, snapshot):
    db, ids = filled
    with Memory(db, config=LAZY) as mem:
        text = exported(mem, user="ana", history=True)
    with Memory(tmp_path / "other.db", config=LAZY) as other:
        mine = other.add("mine", user="ana")
        before = snapshot(other)
        with pytest.raises(InvalidInput, match=r"own trace id key.*--new-ids"):
            other.import_export(text.splitlines())
        assert snapshot(other) == before
        report = other.import_export(text.splitlines(), new_ids=True)
        assert (report.traces, report.deleted, report.ids_kept) == (2, 2, False)
        texts = [t.text for t in other.list(user="ana")]
        assert sorted(texts) == sorted(["mine", "I live in Denver.", "I adopted a cat named Miso 🐱."])
        assert other.get(mine, user="ana").text == "mine"
        assert all(t.id not in ids.values() for t in other.list(user="ana") if t.text != "mine")


def test_an_export_without_the_key_imports_with_new_ids_only(filled, tmp_path):
    db, _ = filled
    with Memory(db, config=LAZY) as mem:
        text = exported(mem, user="ana", include_id_key=False)
    assert records(text)[0]["id_key"] is None and records(text)[0]["last_row"] is None
    with Memory(tmp_path / "copy.db", config=LAZY) as copy:
        with pytest.raises(InvalidInput, match=r"no trace id key.*--new-ids"):
            copy.import_export(text.splitlines())
        assert copy.import_export(text.splitlines(), new_ids=True).traces == 2


# -- bad input: a clear error, nothing stored ------------------------------------------------------
def _damaged(text: str) -> dict[str, tuple[list[str], str]]:
    lines = text.splitlines(keepends=True)
    header = json.loads(lines[0])
    trace = json.loads(lines[1])
    return {
        "cut at a line break": (lines[:-1], "without its end line"),
        "cut mid-line": ([*lines[:-2], lines[-2][:20]], "not a JSON object"),
        "garbled": ([*lines[:2], lines[2].replace('"', "'", 3), *lines[3:]], "line 3 is not a JSON object"),
        "not an export": (['{"text": "hello", "speaker": "Ana"}\n'], "not a zeromem export"),
        "newer version": ([json.dumps({**header, "version": 2}) + "\n", *lines[1:]], "upgrade zeromem"),
        "unknown version": ([json.dumps({**header, "version": 0}) + "\n", *lines[1:]], "reads version 1"),
        "wrong counts": ([*lines[:-1], '{"deleted":0,"events":0,"kind":"end","traces":9}\n'], "end line counts"),
        "extra field": ([lines[0], json.dumps({**trace, "x": 1}) + "\n", *lines[2:]], "unknown \\['x'\\]"),
        "bad time": ([lines[0], json.dumps({**trace, "recorded_at": "yesterday"}) + "\n", *lines[2:]],
                     "recorded_at"),
        "bad metadata": ([lines[0], json.dumps({**trace, "metadata": {"pinned": "yes"}}) + "\n", *lines[2:]],
                         "pinned"),
        "out of order": ([lines[0], *lines[1:-1][::-1], lines[-1]], "out of row order"),
        "after the end": ([*lines, '{"kind":"trace"}\n'], "after the end line"),
        "not utf-8": ([lines[0].encode(), b'{"kind": "\xff"}\n'], "not UTF-8"),
        "empty": ([], "is empty"),
    }


DAMAGES = ["cut at a line break", "cut mid-line", "garbled", "not an export", "newer version", "unknown version",
           "wrong counts", "extra field", "bad time", "bad metadata", "out of order", "after the end", "not utf-8",
           "empty"]


@pytest.mark.parametrize("case", DAMAGES)
def test_a_damaged_export_stores_nothing(filled, tmp_path, snapshot, case):
    db, _ = filled
    with Memory(db, config=LAZY) as mem:
        text = exported(mem, all_scopes=True)
    lines, message = _damaged(text)[case]
    with Memory(tmp_path / "copy.db", config=LAZY) as copy:
        key = store_of(copy).get_meta(ID_KEY)
        before = snapshot(copy)
        with pytest.raises(InvalidInput, match=message):
            copy.import_export(lines)
        assert snapshot(copy) == before and store_of(copy).get_meta(ID_KEY) == key


def test_bad_arguments_are_refused(filled, tmp_path):
    db, _ = filled
    with Memory(db, config=LAZY) as mem:
        with pytest.raises(InvalidInput, match="leave user and agent out"):
            mem.export(all_scopes=True, user="ana")
        with pytest.raises(InvalidInput, match="history"):
            mem.export(history="yes")  # type: ignore[arg-type]
        with pytest.raises(InvalidInput, match="cannot read the export"):
            mem.import_export(tmp_path / "missing.jsonl")
        with pytest.raises(InvalidInput, match="file path or the export's lines"):
            mem.import_export(b"{}")  # type: ignore[arg-type]


# -- backup ------------------------------------------------------------------------------------------
def test_a_backup_taken_while_a_writer_runs_is_a_consistent_prefix(tmp_path):
    db = tmp_path / "live.db"
    with Memory(db, config=LAZY) as mem:
        mem.add_many([{"text": "padding " * 200, "session": f"p{i}"} for i in range(2000)], user="pad")
        stop, written = threading.Event(), []

        def writer() -> None:
            with open_store(db) as store:  # another connection, as another process would have
                from zeromem.store import TraceDraft
                while not stop.is_set():
                    written.append(store.add_many([TraceDraft(f"w{len(written)}")], Scope("w"))[0])

        thread = threading.Thread(target=writer)
        thread.start()
        deadline = time.monotonic() + 30
        while len(written) < 20 and thread.is_alive() and time.monotonic() < deadline:
            time.sleep(0.005)
        report = mem.backup(tmp_path / "copy.db")
        during = len(written)
        time.sleep(0.05)
        stop.set()
        thread.join()
    assert len(written) > during
    with Memory(report.backup, config=LAZY) as copy:
        texts = [t.text for t in copy.list(user="w")]
        assert texts == [f"w{i}" for i in range(len(texts))] and 20 <= len(texts) <= during
        assert [t.id for t in copy.list(user="w")] == written[:len(texts)]
        assert copy.stats(user="w").history_events == {"add": len(texts)}
        assert report.traces == 2000 + len(texts) and copy.stats(all_scopes=True).traces == report.traces
    assert (Path(report.backup).stat().st_mode & 0o777) == 0o600
    with sqlite3.connect(report.backup) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def test_a_backup_never_replaces_a_file_and_works_from_memory(tmp_path, filled):
    db, _ = filled
    with Memory(db, config=LAZY) as mem:
        with pytest.raises(InvalidInput, match="exists already"):
            mem.backup(db)
        with pytest.raises(InvalidInput, match="exists already"):
            mem.backup(tmp_path)
    assert not list(tmp_path.glob(".*partial*"))
    with Memory(":memory:", config=LAZY) as mem:
        tid = mem.add("in memory only")
        report = mem.backup(tmp_path / "from-memory.db")
    with Memory(report.backup, config=LAZY) as copy:
        assert copy.get(tid).text == "in memory only"


# -- the command line ----------------------------------------------------------------------------------
def run(*args: object):
    result = runner.invoke(app, [str(a) for a in args])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result


def test_the_commands_export_import_and_back_up(filled, tmp_path):
    db, ids = filled
    out = tmp_path / "ana.jsonl"
    done = run("export", "--db", db, "--user", "ana", "--history", "-o", out)
    assert done.exit_code == 0, done.output
    assert "exported 2 trace(s), 2 deleted trace(s) and 8 history event(s) of scope user='ana'" in done.stdout
    assert (out.stat().st_mode & 0o777) == 0o600
    with Memory(db, config=LAZY) as mem:
        assert out.read_text(encoding="utf-8") == exported(mem, user="ana", history=True)
        whole = exported(mem, all_scopes=True)
    streamed = run("export", "--db", db, "--all")
    assert streamed.exit_code == 0 and streamed.stdout_bytes.decode("utf-8") == whole
    assert "exported 4 trace(s) of every scope to standard output" in streamed.stderr
    target = tmp_path / "restored.db"
    imported = run("import", out, "--db", target, "--no-reindex", "--json")
    assert imported.exit_code == 0, imported.output
    report = json.loads(imported.stdout)
    assert (report["traces"], report["deleted"], report["events"], report["ids_kept"]) == (2, 2, 8, True)
    assert report["scopes"] == [{"user": "ana", "agent": None}]
    with Memory(target, config=LAZY) as copy:
        assert copy.get(ids["denver"], user="ana").text == "I live in Denver."
    again = run("import", out, "--db", target, "--no-reindex")
    assert again.exit_code == 2 and "--new-ids" in again.stderr
    backed = run("backup", tmp_path / "b.db", "--db", db)
    assert backed.exit_code == 0 and "backed up" in backed.stdout and (tmp_path / "b.db").exists()
    refused = run("backup", tmp_path / "b.db", "--db", db)
    assert refused.exit_code == 2 and "exists already" in refused.stderr


def test_a_refused_import_leaves_no_store_behind(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"format": "zeromem-export", "kind": "header", "version": 1}\n', encoding="utf-8")
    target = tmp_path / "new.db"
    result = run("import", bad, "--db", target, "--no-reindex")
    assert result.exit_code == 2 and "wrong fields" in result.stderr
    assert not target.exists() and not list(tmp_path.glob("new.db*"))
    assert run("import", tmp_path / "nothing.jsonl", "--db", target).exit_code == 2
    assert "leave --user" in run("export", "--all", "--user", "ana", "--db", target).stderr


def test_import_reads_standard_input(filled, tmp_path):
    db, ids = filled
    with Memory(db, config=LAZY) as mem:
        text = exported(mem, user="ana")
    result = runner.invoke(app, ["import", "-", "--db", str(tmp_path / "s.db"), "--no-reindex"], input=text)
    assert result.exit_code == 0, result.output
    with Memory(tmp_path / "s.db", config=LAZY) as copy:
        assert copy.get(ids["cat"], user="ana").metadata == {"pinned": True}


# -- the service ---------------------------------------------------------------------------------------
def test_the_service_exports_the_callers_scope_only(filled, tmp_path):
    db, _ = filled
    with Memory(db, config=LAZY) as mem:
        keys = {}
        for user in ("ana", "ben"):
            key_id, key, key_hash = new_api_key()
            store_of(mem).add_api_key(key_id, key_hash, Scope(user), None)
            keys[user] = {"Authorization": f"Bearer {key}"}
        mem.add("ben's secret", user="ben")
        with TestClient(create_app(mem, ServerSettings(warm_up=False)), base_url=LOCAL) as http:
            got = http.get("/v1/export", headers=keys["ana"], params={"history": "true"})
            assert got.status_code == 200 and got.headers["content-type"].startswith("application/x-ndjson")
            lines = records(got.text)
            assert lines[0]["scope"] == {"user": "ana", "agent": None} and lines[0]["id_key"] is None
            assert {r["user"] for r in lines if "user" in r} == {"ana"}
            assert "ben" not in got.text and lines[-1] == {"kind": "end", "traces": 2, "deleted": 2, "events": 8}
            ben = records(http.get("/v1/export", headers=keys["ben"]).text)
            assert [r["text"] for r in ben if r["kind"] == "trace"] == ["ben's secret"]
            assert http.get("/v1/export").status_code == 401
            assert "/v1/export" in http.get("/openapi.json").json()["paths"]
    with Memory(tmp_path / "copy.db", config=LAZY) as copy:
        with pytest.raises(InvalidInput, match="--new-ids"):
            copy.import_export(got.text.splitlines())
        assert copy.import_export(got.text.splitlines(), new_ids=True).scopes == (Scope("ana"),)
