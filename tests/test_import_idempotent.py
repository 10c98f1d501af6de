"""Importing a file again stores nothing new, unless duplicates are asked for."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from internals import store_of
from zeromem import InvalidInput, Memory
from zeromem.interfaces.cli import app

runner = CliRunner()


def test_reimporting_a_file_stores_nothing_and_reports_what_it_skipped(mem, example_path):
    first = mem.import_file(example_path, user="demo")
    assert first.skipped == {"locomo_moving_city": 0} and len(first["locomo_moving_city"]) == 40
    version = store_of(mem).scope_version(mem._scope("demo", None))
    again = mem.import_file(example_path, user="demo")
    assert again == {"locomo_moving_city": []}
    assert again.skipped == {"locomo_moving_city": 40} and again.skipped_count == 40
    assert mem.stats(user="demo").traces == 40
    assert store_of(mem).scope_version(mem._scope("demo", None)) == version  # nothing written


def test_allow_duplicates_stores_the_file_again(mem, example_path):
    mem.import_file(example_path, user="demo")
    again = mem.import_file(example_path, user="demo", allow_duplicates=True)
    assert len(again["locomo_moving_city"]) == 40 and again.skipped_count == 0
    assert mem.stats(user="demo").traces == 80


def test_another_scope_is_not_a_duplicate(mem, example_path):
    mem.import_file(example_path, user="a")
    assert len(mem.import_file(example_path, user="b")["locomo_moving_city"]) == 40


def test_a_partly_stored_file_stores_only_the_rest(mem, tmp_path):
    path = tmp_path / "notes.jsonl"
    path.write_text('{"text": "one", "session": "s"}\n{"text": "two", "session": "s"}\n')
    mem.import_file(path)
    path.write_text('{"text": "one", "session": "s"}\n{"text": "two", "session": "s"}\n'
                    '{"text": "three", "session": "s"}\n')
    result = mem.import_file(path)
    assert result.skipped == {"notes": 2} and [mem.get(i).text for i in result["notes"]] == ["three"]
    assert [t.text for t in mem.list(session="s")] == ["one", "two", "three"]


def test_repeated_messages_in_a_file_are_kept_once_each(mem, tmp_path):
    path = tmp_path / "chat.json"
    path.write_text(json.dumps([{"role": "user", "content": "ok"}, {"role": "assistant", "content": "ok?"},
                                {"role": "user", "content": "ok"}]))
    assert len(mem.import_file(path)["chat"]) == 3  # the second "ok" is not a repeat of the first
    assert mem.import_file(path).skipped == {"chat": 3}
    assert mem.stats().traces == 3


def test_two_conversations_sharing_session_and_dia_ids_are_both_stored(mem, tmp_path, example_data):
    """LoCoMo conversations all have session_1 / D1:1: the source id alone is no identity."""
    other = json.loads(json.dumps(example_data))
    for turn in other["session_1"]:
        turn["text"] = "other: " + turn["text"]
    first, second = tmp_path / "first.json", tmp_path / "second.json"
    first.write_text(json.dumps(example_data))
    second.write_text(json.dumps(other))
    mem.import_file(first, user="one")
    result = mem.import_file(second, user="one")
    assert len(result["second"]) == 14 and result.skipped == {"second": 26}  # sessions 2-3 repeat
    assert mem.stats(user="one").traces == 54


def test_an_updated_trace_is_still_recognized_by_metadata_change(mem, tmp_path):
    path = tmp_path / "notes.jsonl"
    path.write_text('{"text": "one", "metadata": {"a": 1}}\n')
    [tid] = mem.import_file(path)["notes"]
    mem.update(tid, metadata={"a": 2, "pinned": True})
    assert mem.import_file(path).skipped == {"notes": 1}


def test_allow_duplicates_must_be_a_bool(mem, example_path):
    with pytest.raises(InvalidInput, match="allow_duplicates"):
        mem.import_file(example_path, allow_duplicates="yes")


def test_cli_ingest_twice_skips_and_says_so(tmp_path, example_path):
    db = str(tmp_path / "m.db")
    assert runner.invoke(app, ["ingest", str(example_path), "--db", db, "--user", "u"]).exit_code == 0
    again = runner.invoke(app, ["ingest", str(example_path), "--db", db, "--user", "u"])
    assert again.exit_code == 0, again.output
    assert "stored 0 traces, no new ids, skipped 40 already stored" in again.stdout
    assert "total: 0 traces from 1 conversation(s)" in again.stdout and "40 already stored" in again.stdout
    as_json = runner.invoke(app, ["ingest", str(example_path), "--db", db, "--user", "u", "--json"])
    report = json.loads(as_json.stdout)
    assert (report["traces"], report["skipped"], report["conversations"][0]["skipped"]) == (0, 40, 40)
    forced = runner.invoke(app, ["ingest", str(example_path), "--db", db, "--user", "u",
                                 "--allow-duplicates"])
    assert "stored 40 traces" in forced.stdout
    with Memory(db) as mem:
        assert mem.stats(user="u").traces == 80


def test_cli_ingest_of_two_files_run_twice_stores_them_once(tmp_path, example_path):
    """One import is one multiset: a file given twice is stored twice, as two conversations of
    one file with the same turns are; running the command again stores nothing."""
    copy = tmp_path / "copy.json"
    copy.write_bytes(example_path.read_bytes())
    db = str(tmp_path / "m.db")
    first = runner.invoke(app, ["ingest", str(example_path), str(copy), "--db", db])
    assert first.exit_code == 0 and "total: 80 traces" in first.stdout
    again = runner.invoke(app, ["ingest", str(example_path), str(copy), "--db", db])
    assert again.exit_code == 0 and "total: 0 traces" in again.stdout, again.stdout
    assert again.stdout.count("skipped 40 already stored") == 2
    with Memory(db) as mem:
        assert mem.stats().traces == 80


def test_two_conversations_with_the_same_turns_in_one_file(mem, tmp_path, example_data):
    conversation = {k: v for k, v in example_data.items() if k != "qa"}
    path = tmp_path / "two.json"
    path.write_text(json.dumps([{"sample_id": "a", "conversation": conversation},
                                {"sample_id": "b", "conversation": conversation}]))
    first = mem.import_file(path)
    assert {k: len(v) for k, v in first.items()} == {"a": 40, "b": 40}
    assert mem.import_file(path).skipped == {"a": 40, "b": 40}
    assert mem.stats().traces == 80
