"""JSONL import: one trace per line with Memory.add fields."""

from __future__ import annotations

import json

import pytest

from zeromem import InvalidInput
from zeromem.ingest import load_file

LINES = [
    {"text": "I live in Chicago.", "speaker": "Priya", "session": "s1", "session_time": "2023-03-14"},
    {"text": "Moving to Denver!", "speaker": "Priya", "session": "s2", "role": "user",
     "metadata": {"topic": "move"}, "source_id": "m-2", "attachments": ["a photo of boxes"]},
]


def _write(tmp_path, name, text) -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_each_line_is_one_trace_and_blank_lines_are_skipped(mem, tmp_path):
    text = json.dumps(LINES[0]) + "\n\n" + json.dumps(LINES[1]) + "\n"
    [conv] = load_file(_write(tmp_path, "notes.jsonl", text))
    assert conv.format == "jsonl" and conv.name == "notes"
    assert conv.drafts == LINES and conv.locations == ["line 1", "line 3"]
    ids = mem.import_file(_write(tmp_path, "notes.jsonl", text))["notes"]
    stored = [mem.get(i) for i in ids]
    assert [t.text for t in stored] == [line["text"] for line in LINES]
    assert stored[1].attachments == ("a photo of boxes",) and stored[1].source_id == "m-2"


def test_jsonl_is_detected_without_the_extension(tmp_path):
    text = "\n".join(json.dumps(line) for line in LINES)
    [conv] = load_file(_write(tmp_path, "notes.json", text))
    assert conv.format == "jsonl" and len(conv.drafts) == 2


def test_a_json_array_of_traces_is_accepted(tmp_path):
    [conv] = load_file(_write(tmp_path, "arr.json", json.dumps(LINES)))
    assert conv.drafts == LINES and conv.locations == ["item 0", "item 1"]


@pytest.mark.parametrize("text, message", [
    ('{"text": "ok"}\n{"text": "ok", "colour": "red"}\n', r"line 2: unknown fields \['colour'\]"),
    ('{"text": "ok"}\n{"speaker": "x"}\n', "line 2: no 'text'"),
    ('{"text": "ok"}\n["a list"]\n', "line 2: expected a JSON object"),
    ('{"text": "ok"}\n{"text": "ok"\n', "line 2: not valid JSON"),
    ("\n\n  \n", "empty"),
])
def test_malformed_lines_name_the_line(tmp_path, text, message):
    with pytest.raises(InvalidInput, match=r"bad\.jsonl: .*" + message):
        load_file(_write(tmp_path, "bad.jsonl", text))
