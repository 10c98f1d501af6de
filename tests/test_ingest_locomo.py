"""LoCoMo import: both layouts, every turn verbatim with its provenance."""

from __future__ import annotations

import json
import re

import pytest

from zeromem import Config, Memory
from zeromem.ingest import load_file, summarize


def _turns(conv: dict) -> list[tuple[str, int, dict]]:
    keys = sorted((int(m.group(1)), k) for k in conv if (m := re.fullmatch(r"session_(\d+)", k)))
    return [(key, seq, turn) for _, key in keys for seq, turn in enumerate(conv[key])]


def test_example_conversation_becomes_one_draft_per_turn(example_path, example_data):
    [conv] = load_file(example_path)
    assert conv.name == "locomo_moving_city" and conv.format == "locomo"
    assert conv.speakers == ("Priya", "Marcus")
    assert len(conv.drafts) == 40 and conv.qa == example_data["qa"]
    for draft, (session, seq, turn) in zip(conv.drafts, _turns(example_data), strict=True):
        assert draft["text"] == turn["text"]
        assert (draft["session"], draft["seq"], draft["source_id"]) == (session, seq, turn["dia_id"])
        assert draft["speaker"] == turn["speaker"] and draft["role"] == "user"


def test_session_date_becomes_iso_session_time(example_path):
    [conv] = load_file(example_path)
    assert conv.drafts[0]["session_time"] == "2023-03-14T19:12:00"
    assert conv.drafts[-1]["session_time"] == "2023-06-19T18:40:00"


def test_image_caption_is_an_attachment_kept_apart_from_the_text(example_path):
    [conv] = load_file(example_path)
    [with_image] = [d for d in conv.drafts if d.get("attachments")]
    assert with_image["source_id"] == "D1:10"
    assert with_image["attachments"] == [
        "a photo of a round loaf of bread with a leaf pattern scored on top"]
    assert "loaf" not in with_image["text"]
    assert with_image["metadata"] == {"img_url": ["https://example.org/images/rye-loaf.jpg"]}


def test_import_file_stores_every_turn_verbatim(mem, example_path, example_data):
    result = mem.import_file(example_path, user="demo")
    [ids] = result.values()
    stored = [mem.get(tid, user="demo") for tid in ids]
    assert [t.text for t in stored] == [turn["text"] for _, _, turn in _turns(example_data)]
    assert [t.source_id for t in stored][:2] == ["D1:1", "D1:2"]
    assert mem.stats(user="demo").sessions == 3


def test_date_keys_without_turns_and_empty_sessions_are_skipped(tmp_path, example_data):
    data = dict(example_data, session_4_date_time="1:00 pm on 1 July, 2023", session_5=[],
                session_5_date_time="2:00 pm on 2 July, 2023")
    path = tmp_path / "extra.json"
    path.write_text(json.dumps(data))
    [conv] = load_file(path)
    assert len(conv.drafts) == 40
    assert {d["session"] for d in conv.drafts} == {"session_1", "session_2", "session_3"}


def test_sessions_are_read_in_numeric_order(tmp_path, example_data):
    data = {k: v for k, v in example_data.items() if k != "session_2"}
    data["session_10"] = [{"speaker": "Priya", "dia_id": "D10:1", "text": "Ten."}]
    data["session_10_date_time"] = "9:00 am on 1 August, 2023"
    path = tmp_path / "ten.json"
    path.write_text(json.dumps(data))
    [conv] = load_file(path)
    order = list(dict.fromkeys(d["session"] for d in conv.drafts))
    assert order == ["session_1", "session_3", "session_10"]


def test_original_list_of_samples_layout(tmp_path, example_data):
    conversation = {k: v for k, v in example_data.items() if k != "qa"}
    samples = [{"sample_id": "conv-a", "conversation": conversation, "qa": example_data["qa"]},
               {"sample_id": "conv-b", "conversation": conversation, "qa": []}]
    path = tmp_path / "locomo10.json"
    path.write_text(json.dumps(samples))
    convs = load_file(path)
    assert [c.name for c in convs] == ["conv-a", "conv-b"]
    assert [len(c.drafts) for c in convs] == [40, 40]
    assert convs[0].qa == example_data["qa"] and convs[1].qa == []


def test_summary_counts_traces_sessions_speakers_and_span(example_path):
    [conv] = load_file(example_path)
    summary = summarize(conv)
    assert (summary["traces"], summary["sessions"], summary["questions"]) == (40, 3, 8)
    assert summary["speakers"] == {"Marcus": 20, "Priya": 20}
    assert (summary["first_time"], summary["last_time"]) == (
        "2023-03-14T19:12:00", "2023-06-19T18:40:00")


def test_shared_locomo_files_import_every_turn_verbatim(db_path, shared_locomo_files):
    # What is stored is under test, not retrieval: no indexing on write (~140 s on 2 cores).
    with Memory(db_path, config=Config(index_on_write=False)) as mem:
        _import_every_turn_verbatim(mem, shared_locomo_files)


def _import_every_turn_verbatim(mem: Memory, shared_locomo_files: list) -> None:
    for path in shared_locomo_files:
        data = json.loads(path.read_text(encoding="utf-8"))
        [conv] = load_file(path)
        turns = _turns(data)
        assert conv.name == path.stem and len(conv.drafts) == len(turns)
        assert conv.qa == data["qa"]
        captions = sum(1 for _, _, t in turns if t.get("blip_caption"))
        assert sum(1 for d in conv.drafts if d.get("attachments")) == captions
        ids = mem.import_file(path, user=path.stem)[path.stem]
        stored = mem.list(user=path.stem)
        assert [t.id for t in stored] == ids
        assert [t.text for t in stored] == [t["text"] for _, _, t in turns]
        assert [t.source_id for t in stored] == [t["dia_id"] for _, _, t in turns]


@pytest.mark.parametrize("bad_date", ["the day after tomorrow", 42.5e30])
def test_unreadable_session_date_names_the_file_and_key(tmp_path, example_data, bad_date):
    path = tmp_path / "bad_date.json"
    path.write_text(json.dumps(dict(example_data, session_2_date_time=bad_date)))
    from zeromem import InvalidInput
    with pytest.raises(InvalidInput, match=r"bad_date\.json: session_2_date_time"):
        load_file(path)
