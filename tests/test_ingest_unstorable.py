"""Values that look fine but cannot be stored are refused before the first write of an import.

A lone surrogate (``"\\ud800"`` in JSON) anywhere in metadata, an int beyond 64 bits, a LoCoMo
``img_url`` or ``sample_id`` of an odd type: each is InvalidInput naming the file, the place and
the field, and the store is unchanged, including the conversations before the bad one.
"""

from __future__ import annotations

import json
import re
import sqlite3

import pytest

from zeromem import InvalidInput, StoreError
from zeromem.store import validate

TURN = {"speaker": "Priya", "dia_id": "D1:1", "text": "hello"}
CHAT = {"id": "chat-a", "messages": [{"role": "user", "content": "hi"},
                                     {"role": "assistant", "content": "hello"}]}


def _sample(sample_id, turns, **extra):
    conversation = {"speaker_a": "Priya", "speaker_b": "Marcus",
                    "session_1_date_time": "7:12 pm on 14 March, 2023", "session_1": turns}
    return {"sample_id": sample_id, "conversation": conversation, **extra}


def _tool_message(calls):
    return {"role": "assistant", "content": None, "tool_calls": calls}


# name → (file name, file text (raw, so JSON escapes like \ud800 stay escapes), error regex)
CASES = {
    "locomo img_url as a dict": (
        "s.json", json.dumps([_sample("a", [TURN] * 3), _sample("b", [dict(TURN, img_url={"u": 1})])]),
        r"\[1\]\.conversation\.session_1\[0\]\.img_url: must be a URL string or a list of URL strings"),
    "locomo img_url as a number": (
        "s.json", json.dumps([_sample("a", [TURN]), _sample("b", [dict(TURN, img_url=2**70)])]),
        r"\[1\]\.conversation\.session_1\[0\]\.img_url: .*got int"),
    "locomo img_url list with a number": (
        "s.json", json.dumps([_sample("a", [TURN]), _sample("b", [dict(TURN, img_url=["x", 3])])]),
        r"\.img_url: .*got a list of int/str"),
    "locomo img_url with a lone surrogate": (
        "s.json", json.dumps([_sample("a", [TURN]), _sample("b", [TURN, dict(TURN, img_url=["http://x/IMG"])])]
                             ).replace("IMG", "\\ud800"),
        r"\[1\]\.conversation\.session_1\[1\] \(D1:1\): metadata\['img_url'\]\[0\] contains a lone"),
    "locomo sample_id as a list": (
        "s.json", json.dumps([_sample("a", [TURN]), _sample(["b"], [TURN])]),
        r"\[1\]\.sample_id: must be a string or an integer, got a list of str"),
    "locomo sample_id as a float": (
        "s.json", json.dumps([_sample("a", [TURN]), _sample(1.5, [TURN])]),
        r"\[1\]\.sample_id: .*got float"),
    "locomo sample_id as a bool": (
        "s.json", json.dumps([_sample("a", [TURN]), _sample(True, [TURN])]), r"\[1\]\.sample_id"),
    "locomo sample_id with a lone surrogate": (
        "s.json", json.dumps([_sample("a", [TURN]), _sample("SID", [TURN])]).replace("SID", "b\\udc80"),
        r"\[1\]\.sample_id: sample_id contains a lone surrogate"),
    "locomo dia_id with a lone surrogate": (
        "s.json", json.dumps([_sample("a", [TURN]), _sample("b", [dict(TURN, dia_id="DIA")])]
                             ).replace("DIA", "D\\ud800"),
        r"session_1\[0\] \(D\\ud800\): source_id contains a lone surrogate"),
    "chat tool call with a surrogate in a nested key": (
        "c.json", json.dumps([CHAT, {"id": "chat-b", "messages": [_tool_message(
            [{"id": "c1", "function": {"name": "f", "arguments": "{}"}, "extra": {"KEY": 1}}])]}]
        ).replace("KEY", "\\udfff"),
        r"\[1\]\.messages\[0\]: the key '\\udfff' of metadata\['tool_calls'\]\[0\]\['extra'\] contains"),
    "chat tool_call_id beyond 64 bits": (
        "c.json", json.dumps([CHAT, {"id": "chat-b", "messages": [
            {"role": "tool", "content": "42", "tool_call_id": 2**64}]}]),
        r"\[1\]\.messages\[0\]: metadata\['tool_call_id'\] = 18446744073709551616 is outside the 64-bit"),
    "chat id with a lone surrogate": (
        "c.json", json.dumps([CHAT, {"id": "CID", "messages": CHAT["messages"]}]).replace("CID", "x\\ud800"),
        r"conversation 'x\\ud800': the conversation name contains a lone surrogate"),
    "jsonl seq of 2**63": (
        "t.jsonl", "\n".join(json.dumps(r) for r in [{"text": "a"}, {"text": "b", "seq": 2**63}]),
        r"line 2: seq 9223372036854775808 is too large"),
    "jsonl metadata key with a lone surrogate": (
        "t.jsonl", "\n".join(json.dumps(r) for r in [{"text": "a"}, {"text": "b", "metadata": {"KEY": 1}}]
                             ).replace("KEY", "k\\ud800"),
        r"line 2: the key 'k\\ud800' of metadata contains a lone surrogate"),
    "json number of 5000 digits": (
        "s.json", json.dumps([_sample("a", [TURN]), _sample("b", [dict(TURN, img_url="u")])]
                             ).replace('"u"', "9" * 5000),
        r"s\.json: cannot be read as JSON: Exceeds the limit"),
    "jsonl number of 5000 digits": (
        "t.jsonl", '{"text": "a"}\n{"text": "b", "seq": ' + "9" * 5000 + "}",
        r"line 2: cannot be read as JSON"),
    "jsonl nested metadata int beyond 64 bits": (
        "t.jsonl", json.dumps({"text": "a", "metadata": {"n": [1, {"m": -(2**63) - 1}]}}),
        r"line 1: metadata\['n'\]\[1\]\['m'\] = -9223372036854775809 is outside the 64-bit"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_an_unstorable_value_is_refused_by_place_and_nothing_is_stored(mem, snapshot, tmp_path, case):
    name, text, pattern = CASES[case]
    mem.add("already here")
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    before = snapshot(mem)
    with pytest.raises(InvalidInput) as info:
        mem.import_file(path)
    message = str(info.value)
    assert message.startswith(str(path)), message
    assert re.search(pattern, message), message
    message.encode("utf-8")  # printable: the CLI can show it
    assert snapshot(mem) == before


def test_the_largest_seq_is_stored_and_the_session_still_takes_more(mem, snapshot):
    # 2**63-1 used to be stored and then wedge its session: every later add without
    # a seq was refused. A caller's seq now stops at 2**53-1; the seqs after it still fit.
    before = snapshot(mem)
    with pytest.raises(InvalidInput, match="at most 2\\*\\*53-1"):
        mem.add_many([{"text": "fits", "session": "other"}, {"text": "last", "session": "s", "seq": 2**63 - 1}])
    assert snapshot(mem) == before
    top = validate.MAX_SEQ
    tid = mem.add("last", session="s", seq=top)
    assert mem.get(tid).seq == top
    ids = mem.add_many([{"text": "fits", "session": "other"}, {"text": "next", "session": "s"}])
    assert mem.get(ids[1]).seq == top + 1


def test_a_failure_inside_the_insert_of_a_later_conversation_stores_no_conversation(
        mem, snapshot, tmp_path, monkeypatch):
    from zeromem.store.sqlite import SQLiteStore

    path = tmp_path / "two.json"
    path.write_text(json.dumps([_sample("a", [TURN] * 3), _sample("b", [TURN] * 2)]))
    real_insert, calls = SQLiteStore._insert, []

    def failing_insert(self, run, drafts, *args, **kwargs):
        calls.append(len(drafts))
        if len(calls) == 2:
            raise sqlite3.OperationalError("disk I/O error")
        return real_insert(self, run, drafts, *args, **kwargs)

    monkeypatch.setattr(SQLiteStore, "_insert", failing_insert)
    before = snapshot(mem)
    with pytest.raises(StoreError, match="nothing was changed: disk I/O error"):
        mem.import_file(path)
    assert calls == [3, 2] and snapshot(mem) == before
    monkeypatch.setattr(SQLiteStore, "_insert", real_insert)
    ids = mem.import_file(path)
    assert {k: len(v) for k, v in ids.items()} == {"a": 3, "b": 2}


def test_a_value_the_driver_cannot_bind_is_a_rolled_back_store_error(mem, snapshot, monkeypatch):
    """The backstop behind validation: a bind failure is StoreError, not OverflowError."""
    from zeromem.store import base

    real_clean = base.TraceStoreBase.clean

    def unchecked(self, draft):
        cleaned = real_clean(self, draft)
        if draft.text == "overflow":
            cleaned.seq = 2**64  # as if validation had let it through
        return cleaned

    monkeypatch.setattr(base.TraceStoreBase, "clean", unchecked)
    before = snapshot(mem)
    with pytest.raises(StoreError, match="nothing was changed"):
        mem.add_many([{"text": "fine"}, {"text": "overflow"}])
    assert snapshot(mem) == before
