"""Mem0 exports: what Mem0's ``get_all`` returns, saved as JSON.

Accepted shapes: ``{"results": [memory, ...]}`` (``mem0.Memory.get_all``; the hosted
``MemoryClient.get_all`` adds ``count`` / ``next`` / ``previous``, and graph memory a
``relations`` list, which are not memories and are left out) or a plain list of memories (what
Mem0 before 1.0 returned). A memory is a dict with at least ``id`` and ``memory`` (its text).

Mapping, one trace per memory, text verbatim:

- ``memory`` → text; ``id`` → ``source_id`` (so importing the file again stores nothing new);
- ``user_id`` → the conversation: every memory of one user is one conversation named after
  that user (``zeromem ingest --user-per-conversation`` stores it under user=<user_id>);
  memories without a user_id form one conversation named after the file;
- ``run_id`` → session; ``role`` → role; ``actor_id`` → speaker; ``created_at`` → event_time;
- ``metadata`` → metadata, as it is; every other field that is not derived (``agent_id``,
  ``updated_at``, ``categories``, ``expiration_date``, ``app_id``...) is kept in the trace's
  metadata under ``"mem0"``, so nothing the export says is lost. ``hash`` and ``score`` are
  derived (an MD5 of the text, one search's rank) and are not kept, nor are the
  ``provenance`` and ``score_details`` that zeromem's own Mem0 API adds.

A memory with empty text carries nothing to remember and is skipped. Within a conversation,
memories are stored in ``created_at`` order (Mem0's listing order is the vector store's), those
without a time last, in file order.
"""

from __future__ import annotations

from typing import Any

from ..store.dates import utc_key
from ..types import ROLES
from .base import ImportedConversation, bad, parse_time

FORMAT = "mem0"
KEY = "mem0"  # the metadata key that keeps the export's other fields
_MAPPED = frozenset({"id", "memory", "user_id", "run_id", "role", "actor_id", "metadata", "created_at"})
# Derived from the memory (or, provenance and score_details, added by zeromem's Mem0 API):
# the import recomputes them.
_DERIVED = frozenset({"hash", "score", "score_details", "provenance"})
_ENVELOPE = frozenset({"results", "count", "next", "previous", "relations"})


def _records(data: Any) -> Any:
    if isinstance(data, dict) and "results" in data:
        return data["results"]
    return data


def _is_memory(item: Any) -> bool:
    return isinstance(item, dict) and "id" in item and "memory" in item


def looks_like(data: Any) -> bool:
    """True for ``{"results": [...]}`` or a list whose items all have ``id`` and ``memory``
    (no other importer's shape has a ``memory`` field, so detection is unambiguous)."""
    records = _records(data)
    if isinstance(data, dict) and set(data) - _ENVELOPE:
        return False
    return isinstance(records, list) and bool(records) and all(_is_memory(r) for r in records)


def parse(data: Any, *, source: str, stem: str) -> list[ImportedConversation]:
    """Read every memory of ``data`` (see the module docstring), one conversation per user."""
    records = _records(data)
    prefix = "results" if isinstance(data, dict) else ""
    if isinstance(data, dict) and "results" not in data:
        raise bad(source, "top level", "a Mem0 export is {\"results\": [...]} or a list of memories")
    if not isinstance(records, list):
        raise bad(source, prefix or "top level", "must be a list of Mem0 memories ({id, memory, ...})")
    groups: dict[str | None, list[tuple[int, dict[str, Any], str]]] = {}
    for index, record in enumerate(records):
        where = f"{prefix}[{index}]"
        draft = _draft(record, source, where)
        if draft is None:
            continue
        user = record.get("user_id")
        if user is not None and (not isinstance(user, (str, int)) or isinstance(user, bool)):
            raise bad(source, f"{where}.user_id", f"must be a string, got {type(user).__name__}")
        name = None if user is None else str(user)
        groups.setdefault(name, []).append((index, draft, f"{where} (id {record['id']})"))
    conversations = []
    for name, items in groups.items():
        # Stable: memories without a time keep their file order, after the timed ones.
        items.sort(key=lambda item: (0, utc_key(item[1]["event_time"])) if item[1].get("event_time")
                   else (1, ""))
        drafts = [draft for _, draft, _ in items]
        speakers: list[str] = []
        for draft in drafts:
            if draft.get("speaker") and draft["speaker"] not in speakers:
                speakers.append(draft["speaker"])
        conversations.append(ImportedConversation(
            name=name if name is not None else stem, source=source, format=FORMAT, drafts=drafts,
            locations=[where for _, _, where in items], qa=None, speakers=tuple(speakers)))
    return conversations


def _draft(record: Any, source: str, where: str) -> dict[str, Any] | None:
    if not _is_memory(record):
        raise bad(source, where, "a Mem0 memory must be a dict with 'id' and 'memory'")
    text, mem_id = record["memory"], record["id"]
    if not isinstance(text, str):
        raise bad(source, f"{where}.memory", f"must be a string, got {type(text).__name__}")
    if not isinstance(mem_id, (str, int)) or isinstance(mem_id, bool) or not str(mem_id).strip():
        raise bad(source, f"{where}.id", f"must be a non-empty string, got {mem_id!r}")
    if not text.strip():
        return None
    draft: dict[str, Any] = {"text": text, "source_id": str(mem_id)}
    for field, target in (("run_id", "session"), ("actor_id", "speaker")):
        value = record.get(field)
        if value is None:
            continue
        if not isinstance(value, (str, int)) or isinstance(value, bool):
            raise bad(source, f"{where}.{field}", f"must be a string, got {type(value).__name__}")
        draft[target] = str(value)
    role = record.get("role")
    if role is not None:
        if role not in ROLES:
            raise bad(source, f"{where}.role", f"role must be one of {', '.join(ROLES)}, got {role!r}")
        draft["role"] = role
    if record.get("created_at") is not None:
        draft["event_time"] = parse_time(record["created_at"], source, f"{where}.created_at")
    metadata = record.get("metadata")
    if metadata is not None and not isinstance(metadata, dict):
        raise bad(source, f"{where}.metadata", f"must be an object, got {type(metadata).__name__}")
    metadata = dict(metadata or {})
    extra = {k: v for k, v in record.items() if k not in _MAPPED | _DERIVED and v is not None}
    if extra:
        if KEY in metadata:
            raise bad(source, f"{where}.metadata",
                      f"has a {KEY!r} key, where the import keeps the memory's other fields "
                      f"({', '.join(sorted(extra))}): rename that metadata key")
        metadata[KEY] = extra
    if metadata:
        draft["metadata"] = metadata
    return draft
