"""Unknown or malformed import files: a clear InvalidInput naming the file, and nothing stored."""

from __future__ import annotations

import json

import pytest

from zeromem import InvalidInput

GOOD_TURN = {"speaker": "Priya", "dia_id": "D1:1", "text": "hello"}


def _locomo(**sessions) -> dict:
    return {"speaker_a": "Priya", "speaker_b": "Marcus",
            "session_1_date_time": "7:12 pm on 14 March, 2023", **sessions}


CASES = {
    "empty file": (b"", "empty"),
    "whitespace file": (b"  \n\t\n", "empty"),
    "bad UTF-8": (b'{"text": "caf\xe9"}', "not valid UTF-8"),
    "not JSON": (b"hello, world", "line 1 column 1: not valid JSON"),
    "truncated JSON": (b'{"speaker_a": "Priya", "session_1": [', "not valid JSON"),
    "unknown shape": (json.dumps({"foo": 1}).encode(), "unknown format"),
    "number": (b"42", "unknown format"),
    "empty list": (b"[]", "unknown format"),
    "locomo session not a list": (json.dumps(_locomo(session_1="hi")).encode(),
                                  "session_1: must be a list"),
    "locomo turn without text": (json.dumps(_locomo(session_1=[GOOD_TURN, {"speaker": "x"}])).encode(),
                                 r"session_1\[1\]: 'text' must be a string"),
    "locomo turn with empty text": (
        json.dumps(_locomo(session_1=[GOOD_TURN, dict(GOOD_TURN, text=" ")])).encode(),
        r"session_1\[1\] \(D1:1\): .*empty"),
    "locomo bad date": (json.dumps(dict(_locomo(session_1=[GOOD_TURN]),
                                        session_1_date_time="someday")).encode(),
                        "session_1_date_time"),
    "locomo turn text too long": (
        json.dumps(_locomo(session_1=[dict(GOOD_TURN, text="x" * 100_001)])).encode(), "over the limit"),
    "locomo lone surrogate": (b'{"speaker_a": "A", "session_1": [{"text": "a\\ud800b"}]}',
                              "surrogate"),
    "sample without conversation": (json.dumps([{"sample_id": "x", "conversation": {}},
                                                {"sample_id": "y"}]).encode(), "unknown format"),
    "chat with a bad role": (json.dumps([{"role": "robot", "content": "hi"}]).encode(), "role"),
    "all conversations empty": (json.dumps(_locomo(session_1=[])).encode(), "no messages"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_malformed_file_is_refused_by_name_and_stores_nothing(mem, snapshot, tmp_path, case):
    content, message = CASES[case]
    mem.add("already here")
    path = tmp_path / "input.json"
    path.write_bytes(content)
    before = snapshot(mem)
    with pytest.raises(InvalidInput, match=r"input\.json.*" + message):
        mem.import_file(path)
    assert snapshot(mem) == before


def test_a_bad_conversation_late_in_a_file_stores_none_of_the_earlier_ones(mem, snapshot, tmp_path):
    good = {"sample_id": "good", "conversation": _locomo(session_1=[GOOD_TURN] * 5)}
    bad = {"sample_id": "bad", "conversation": _locomo(session_1=[dict(GOOD_TURN, text="")])}
    path = tmp_path / "samples.json"
    path.write_text(json.dumps([good, bad]))
    before = snapshot(mem)
    with pytest.raises(InvalidInput, match=r"samples\.json: \[1\]\.conversation\.session_1\[0\]"):
        mem.import_file(path)
    assert snapshot(mem) == before


def test_missing_file_and_folder_and_unknown_format_name(mem, tmp_path):
    with pytest.raises(InvalidInput, match=r"nope\.json: no such file"):
        mem.import_file(tmp_path / "nope.json")
    with pytest.raises(InvalidInput, match="not a file"):
        mem.import_file(tmp_path)
    (tmp_path / "x.json").write_text("[]")
    with pytest.raises(InvalidInput, match="unknown import format 'csv'"):
        mem.import_file(tmp_path / "x.json", format="csv")
