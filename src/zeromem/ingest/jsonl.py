"""JSONL of traces: one JSON object per line with ``Memory.add`` fields.

Fields: text (required), session, speaker, role, session_time, event_time, seq, source_id,
metadata, attachments. Blank lines are skipped; any other line must be an object with only
those fields. The whole file is one conversation named after the file.
"""

from __future__ import annotations

import json
from typing import Any

from .base import DRAFT_FIELDS, TOO_DEEP, ImportedConversation, bad

FORMAT = "jsonl"


def parse_text(text: str, *, source: str, stem: str) -> list[ImportedConversation]:
    """Parse JSONL text; errors name the line and what was expected there."""
    items: list[tuple[int, Any]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            items.append((number, json.loads(line)))
        except json.JSONDecodeError as exc:
            raise bad(source, f"line {number}",
                      f"not valid JSON ({exc.msg} at column {exc.colno}): each line must be "
                      "one JSON object like {\"text\": \"...\", \"speaker\": \"...\"}") from None
        except ValueError as exc:  # e.g. a number of more than 4300 digits
            raise bad(source, f"line {number}", f"cannot be read as JSON: {exc}") from None
        except RecursionError:
            raise bad(source, f"line {number}", TOO_DEEP) from None
    if not items:
        raise bad(source, "", "no traces: the JSONL file has no non-blank line")
    return [parse_records(items, source=source, stem=stem)]


def parse_records(items: list[tuple[int, Any]], *, source: str, stem: str,
                  label: str = "line") -> ImportedConversation:
    """Build one conversation from (position, object) pairs; also used for a JSON array."""
    drafts: list[dict[str, Any]] = []
    locations: list[str] = []
    speakers: list[str] = []
    for number, record in items:
        where = f"{label} {number}"
        if not isinstance(record, dict):
            raise bad(source, where, f"expected a JSON object with 'text', got {type(record).__name__}")
        unknown = set(record) - DRAFT_FIELDS
        if unknown:
            raise bad(source, where,
                      f"unknown fields {sorted(unknown)}; allowed: {sorted(DRAFT_FIELDS)}")
        if "text" not in record:
            raise bad(source, where, "no 'text' field: every trace needs text")
        drafts.append(dict(record))
        locations.append(where)
        speaker = record.get("speaker")
        if isinstance(speaker, str) and speaker not in speakers:
            speakers.append(speaker)
    return ImportedConversation(name=stem, source=source, format=FORMAT, drafts=drafts,
                                locations=locations, qa=None, speakers=tuple(speakers))


def looks_like_records(data: Any) -> bool:
    """True for a JSON array of trace objects (each with 'text' and no chat 'role'+'content')."""
    return (isinstance(data, list) and bool(data)
            and all(isinstance(r, dict) and "text" in r and "content" not in r for r in data))
