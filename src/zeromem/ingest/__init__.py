"""Importers: real conversation files → trace dicts for ``Memory.add_many``.

``load_file(path)`` detects the format (LoCoMo JSON, OpenAI-style chat JSON, JSONL of traces,
a Mem0 export) and returns one ``ImportedConversation`` per conversation. Importers only
reshape: every text stays verbatim, and nothing is written until ``check_conversations`` has
passed for all of them.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path
from typing import Any

from ..errors import InvalidInput
from ..store import validate
from ..store.dates import utc_key
from . import jsonl, locomo, mem0_export, openai_chat
from .base import TOO_DEEP, ImportedConversation, bad, check_conversations, unique_names
from .dedupe import ImportResult, skip_stored

FORMATS = ("locomo", "openai", "jsonl", "mem0")
_EXPECTED = ("expected a LoCoMo conversation (speaker_a, session_N, session_N_date_time) or a "
             "list of LoCoMo samples, an OpenAI chat (a list of {role, content} or "
             "{\"messages\": [...]}), JSONL with one {\"text\": ...} trace per line, or a Mem0 "
             "export ({\"results\": [{\"id\", \"memory\", ...}]})")

__all__ = ["FORMATS", "ImportResult", "ImportedConversation", "check_conversations", "load_file",
           "skip_stored", "summarize"]


def load_file(path: str | Path, *, format: str | None = None) -> list[ImportedConversation]:
    """Read ``path`` and return its conversations; ``format`` forces one of FORMATS.

    Raises InvalidInput naming the file (and the line or key) when it is missing, not UTF-8,
    not JSON/JSONL, of an unknown shape, or malformed inside.
    """
    if format not in (None, "auto", *FORMATS):
        raise InvalidInput(f"unknown import format {format!r}: use one of {', '.join(FORMATS)}")
    if not isinstance(path, (str, os.PathLike)) or isinstance(os.fspath(path), bytes):
        raise InvalidInput(f"a file to import is named by a path (str or pathlib.Path), got "
                           f"{type(path).__name__}")
    text = _read_text(Path(path), str(path))
    source, stem, suffix = str(path), Path(path).stem, Path(path).suffix.lower()
    if format == "jsonl" or (format in (None, "auto") and suffix in (".jsonl", ".ndjson")):
        return jsonl.parse_text(text, source=source, stem=stem)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        # "Extra data" after a first complete value is what a JSONL file looks like to json.
        if format in (None, "auto") and exc.msg == "Extra data":
            return jsonl.parse_text(text, source=source, stem=stem)
        raise bad(source, f"line {exc.lineno} column {exc.colno}",
                  f"not valid JSON ({exc.msg}); {_EXPECTED}") from None
    except ValueError as exc:  # e.g. a number of more than 4300 digits
        raise bad(source, "", f"cannot be read as JSON: {exc}") from None
    except RecursionError:
        raise bad(source, "", TOO_DEEP) from None
    conversations = _dispatch(data, format, source, stem)
    if not any(conv.drafts for conv in conversations):
        raise bad(source, "", "no messages to import: every conversation in it is empty")
    return unique_names(conversations)


def _read_text(path: Path, source: str) -> str:
    if not path.exists():
        raise InvalidInput(f"{source}: no such file: check the path")
    if not path.is_file():
        raise InvalidInput(f"{source}: not a file: pass a .json or .jsonl file")
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise InvalidInput(f"{source}: cannot read it ({exc.strerror})") from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InvalidInput(f"{source}: not valid UTF-8 (byte {exc.start}): save it as UTF-8") from None
    if not text.strip():
        raise InvalidInput(f"{source}: the file is empty; {_EXPECTED}")
    return text


def _dispatch(data: Any, format: str | None, source: str, stem: str) -> list[ImportedConversation]:
    if format == "locomo" or (format in (None, "auto") and locomo.looks_like(data)):
        return locomo.parse(data, source=source, stem=stem)
    if format == "openai" or (format in (None, "auto") and openai_chat.looks_like(data)):
        return openai_chat.parse(data, source=source, stem=stem)
    if format == "mem0" or (format in (None, "auto") and mem0_export.looks_like(data)):
        return mem0_export.parse(data, source=source, stem=stem)
    if isinstance(data, dict) and "text" in data:
        data = [data]
    if jsonl.looks_like_records(data):
        items = list(enumerate(data))
        return [jsonl.parse_records(items, source=source, stem=stem, label="item")]
    raise bad(source, "top level", f"unknown format: {_EXPECTED}")


def summarize(conv: ImportedConversation) -> dict[str, Any]:
    """What a conversation holds: traces, sessions, speakers (with counts), time span."""
    times = []
    for draft in conv.drafts:
        value = draft.get("event_time") or draft.get("session_time")
        try:
            normalized = validate.clean_time(value, "time")
        except InvalidInput:
            normalized = None  # check_conversations reports bad times; a summary never fails
        if normalized:
            times.append(normalized)
    speakers = Counter(_label(d.get("speaker")) for d in conv.drafts)
    sessions = {_label(d.get("session")) for d in conv.drafts}
    return {
        "name": conv.name,
        "source": conv.source,
        "format": conv.format,
        "traces": len(conv.drafts),
        "sessions": len(sessions),
        "speakers": dict(sorted(speakers.items())),
        "first_time": min(times, key=utc_key) if times else None,  # by instant, shown as given
        "last_time": max(times, key=utc_key) if times else None,
        "questions": len(conv.qa) if conv.qa is not None else 0,
    }


def _label(value: Any) -> str:
    """A speaker or session as a summary key: any value (a file may hold a list there, which
    ``check_conversations`` refuses later; a summary never fails) as text."""
    return value if isinstance(value, str) else "" if value is None else repr(value)
