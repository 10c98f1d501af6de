"""OpenAI-style chat transcripts.

Accepted shapes: a list of messages ``[{"role", "content", ["name"]}, ...]``, a dict
``{"messages": [...], ["id" | "session" | "title"]}``, or a list of such dicts (several chats).
``content`` is a string or a list of parts: text parts (``text``, ``input_text``,
``output_text``, ``refusal``) are joined with newlines into the trace text; image parts become
attachments ("image: URL") kept apart from the text. An assistant message that only calls
tools is stored as its calls, verbatim (``name(arguments)``), with the raw calls in metadata.
Roles map to zeromem's four (``developer`` → system, ``function`` → tool); the speaker is the
message's ``name`` or else its role. Each chat is one session; seq is the message position.
"""

from __future__ import annotations

from typing import Any

from ..types import ROLES
from .base import ImportedConversation, bad, parse_time

FORMAT = "openai"
_TEXT_PARTS = {"text", "input_text", "output_text", "refusal"}
_IMAGE_PARTS = {"image_url", "input_image"}
_ROLE_ALIASES = {"developer": "system", "function": "tool"}
_TIME_KEYS = ("timestamp", "created_at", "time")


def _is_message(item: Any) -> bool:
    return isinstance(item, dict) and "role" in item and "content" in item


def looks_like(data: Any) -> bool:
    """True for a message list, a {"messages": [...]} dict, or a list of those dicts."""
    if isinstance(data, dict):
        return isinstance(data.get("messages"), list)
    if isinstance(data, list) and data:
        return all(_is_message(m) for m in data) or all(
            isinstance(c, dict) and isinstance(c.get("messages"), list) for c in data)
    return False


def parse(data: Any, *, source: str, stem: str) -> list[ImportedConversation]:
    """Read every chat in ``data`` (see the module docstring)."""
    if isinstance(data, dict):
        return [_parse_chat(data.get("messages"), _chat_name(data, stem), source, "messages")]
    if isinstance(data, list) and data and all(isinstance(c, dict) and "messages" in c for c in data):
        return [_parse_chat(chat["messages"], _chat_name(chat, f"{stem}#{i}"), source,
                            f"[{i}].messages") for i, chat in enumerate(data)]
    return [_parse_chat(data, stem, source, "")]


def _chat_name(chat: dict[str, Any], fallback: str) -> str:
    for key in ("id", "session", "title"):
        value = chat.get(key)
        if isinstance(value, (str, int)) and not isinstance(value, bool) and str(value).strip():
            return str(value).strip()
    return fallback


def _parse_chat(messages: Any, name: str, source: str, prefix: str) -> ImportedConversation:
    if not isinstance(messages, list):
        raise bad(source, prefix or "top level", "'messages' must be a list of {role, content}")
    drafts: list[dict[str, Any]] = []
    locations: list[str] = []
    speakers: list[str] = []
    for index, message in enumerate(messages):
        where = f"{prefix}[{index}]"
        draft = _message_draft(message, source, where)
        if draft is None:  # an empty message carries nothing to remember
            continue
        draft.update(session=name, seq=index)
        drafts.append(draft)
        locations.append(where)
        if draft["speaker"] not in speakers:
            speakers.append(draft["speaker"])
    return ImportedConversation(name=name, source=source, format=FORMAT, drafts=drafts,
                                locations=locations, qa=None, speakers=tuple(speakers))


def _message_draft(message: Any, source: str, where: str) -> dict[str, Any] | None:
    if not _is_message(message):
        raise bad(source, where, "a chat message must be a dict with 'role' and 'content'")
    role = message["role"]
    if not isinstance(role, str) or _ROLE_ALIASES.get(role, role) not in ROLES:
        raise bad(source, f"{where}.role",
                  f"role must be one of {', '.join(ROLES)} (or developer/function), got {role!r}")
    role = _ROLE_ALIASES.get(role, role)
    texts, attachments = _content(message["content"], source, f"{where}.content")
    metadata: dict[str, Any] = {}
    calls = message.get("tool_calls")
    if calls is not None and not isinstance(calls, list):
        raise bad(source, f"{where}.tool_calls",
                  f"must be a list of tool calls, got {type(calls).__name__}")
    if calls:
        metadata["tool_calls"] = calls
        if not texts:
            texts = [_render_call(call, source, f"{where}.tool_calls") for call in calls]
    if message.get("tool_call_id"):
        metadata["tool_call_id"] = message["tool_call_id"]
    text = "\n".join(texts)
    if not text.strip() and not attachments:
        return None
    if not text.strip():
        text = "\n".join(attachments)  # an image-only message: its description is the message
    name = message.get("name")
    if name is not None and not isinstance(name, str):
        raise bad(source, f"{where}.name", f"must be a string, got {type(name).__name__}")
    event_time = None
    for key in _TIME_KEYS:
        if message.get(key) is not None:
            event_time = parse_time(message[key], source, f"{where}.{key}")
            break
    draft: dict[str, Any] = {"text": text, "role": role, "speaker": name or role,
                             "event_time": event_time}
    if attachments:
        draft["attachments"] = attachments
    if metadata:
        draft["metadata"] = metadata
    return draft


def _content(content: Any, source: str, where: str) -> tuple[list[str], list[str]]:
    if content is None:
        return [], []
    if isinstance(content, str):
        return [content], []
    if not isinstance(content, list):
        raise bad(source, where, "content must be a string or a list of parts")
    texts: list[str] = []
    attachments: list[str] = []
    for index, part in enumerate(content):
        here = f"{where}[{index}]"
        kind = part.get("type") if isinstance(part, dict) else None
        if kind in _TEXT_PARTS:
            field = "refusal" if kind == "refusal" else "text"
            if not isinstance(part.get(field), str):
                raise bad(source, here, f"a {kind!r} part needs a string {field!r}")
            texts.append(part[field])
        elif kind in _IMAGE_PARTS:
            url = part.get("image_url")
            url = url.get("url") if isinstance(url, dict) else url
            attachments.append(f"image: {url}" if isinstance(url, str) else "image")
        else:
            raise bad(source, here, f"unknown content part {kind!r}: expected a dict with type "
                      f"in {sorted(_TEXT_PARTS | _IMAGE_PARTS)}")
    return texts, attachments


def _render_call(call: Any, source: str, where: str) -> str:
    function = call.get("function") if isinstance(call, dict) else None
    if not isinstance(function, dict) or not isinstance(function.get("name"), str):
        raise bad(source, where, "a tool call must be {'function': {'name', 'arguments'}}")
    return f"{function['name']}({function.get('arguments') or ''})"
