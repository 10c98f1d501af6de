"""OpenAI-style chat import: message lists, {"messages"} dicts, content parts, roles."""

from __future__ import annotations

import json

import pytest

from zeromem import InvalidInput
from zeromem.ingest import load_file

CHAT = [
    {"role": "system", "content": "You are a helpful travel assistant."},
    {"role": "user", "name": "priya", "content": "I just moved to Denver. Any hikes nearby?"},
    {"role": "assistant", "content": [{"type": "text", "text": "Mount Falcon is a gentle start."},
                                      {"type": "text", "text": "Bring water: the air is dry."}]},
    {"role": "user", "content": [{"type": "text", "text": "Here is my view."},
                                 {"type": "image_url", "image_url": {"url": "https://x.org/v.jpg"}}]},
]


def _write(tmp_path, name, data) -> str:
    path = tmp_path / name
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    return str(path)


def test_a_message_list_becomes_one_session_in_order(tmp_path):
    [conv] = load_file(_write(tmp_path, "trip.json", CHAT))
    assert conv.format == "openai" and conv.name == "trip"
    assert [d["role"] for d in conv.drafts] == ["system", "user", "assistant", "user"]
    assert [d["speaker"] for d in conv.drafts] == ["system", "priya", "assistant", "user"]
    assert [d["seq"] for d in conv.drafts] == [0, 1, 2, 3]
    assert {d["session"] for d in conv.drafts} == {"trip"}


def test_text_parts_are_joined_and_images_become_attachments(tmp_path):
    [conv] = load_file(_write(tmp_path, "trip.json", CHAT))
    assert conv.drafts[2]["text"] == "Mount Falcon is a gentle start.\nBring water: the air is dry."
    assert conv.drafts[3]["text"] == "Here is my view."
    assert conv.drafts[3]["attachments"] == ["image: https://x.org/v.jpg"]


def test_messages_wrapper_uses_its_id_as_the_session(tmp_path):
    [conv] = load_file(_write(tmp_path, "w.json", {"id": "chat-42", "messages": CHAT}))
    assert conv.name == "chat-42" and {d["session"] for d in conv.drafts} == {"chat-42"}


def test_a_list_of_chats_gives_one_conversation_each(tmp_path):
    convs = load_file(_write(tmp_path, "many.json", [{"messages": CHAT[:2]}, {"messages": CHAT[2:]}]))
    assert [c.name for c in convs] == ["many#0", "many#1"]
    assert [len(c.drafts) for c in convs] == [2, 2]


def test_tool_calls_and_role_aliases(tmp_path):
    chat = [
        {"role": "developer", "content": "Be brief."},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function",
             "function": {"name": "weather", "arguments": "{\"city\": \"Denver\"}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "Sunny, 27°C"},
        {"role": "assistant", "content": ""},
    ]
    [conv] = load_file(_write(tmp_path, "tools.json", chat))
    assert [d["role"] for d in conv.drafts] == ["system", "assistant", "tool"]
    assert conv.drafts[1]["text"] == 'weather({"city": "Denver"})'
    assert conv.drafts[1]["metadata"]["tool_calls"][0]["id"] == "c1"
    assert conv.drafts[2]["metadata"] == {"tool_call_id": "c1"}


def test_message_timestamps_become_event_times(tmp_path):
    chat = [{"role": "user", "content": "hi", "timestamp": "2024-02-01T10:00:00"}]
    [conv] = load_file(_write(tmp_path, "t.json", chat))
    assert conv.drafts[0]["event_time"] == "2024-02-01T10:00:00"


def test_import_stores_chinese_chat_verbatim(mem, tmp_path):
    chat = [{"role": "user", "content": "我下个月搬到成都。"},
            {"role": "assistant", "content": "成都的火锅很有名！"}]
    ids = mem.import_file(_write(tmp_path, "zh.json", chat))["zh"]
    assert [mem.get(i).text for i in ids] == ["我下个月搬到成都。", "成都的火锅很有名！"]


@pytest.mark.parametrize("chat, where", [
    ([{"role": "robot", "content": "beep"}], r"\[0\]\.role"),
    ([{"role": "user", "content": [{"type": "audio", "data": "..."}]}], r"\[0\]\.content\[0\]"),
    ([{"role": "user", "content": 5}], r"\[0\]\.content"),
    ({"messages": "hello"}, "messages"),
])
def test_malformed_chats_name_the_message(tmp_path, chat, where):
    with pytest.raises(InvalidInput, match=r"bad\.json: " + where):
        load_file(_write(tmp_path, "bad.json", chat), format="openai")
