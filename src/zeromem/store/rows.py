"""Rows as both SQL backends read and write them: the columns they select and the Python
values they make of a row (``Trace``, ``ApiKey``, history JSON), the same for SQLite and
PostgreSQL because both tables hold the same columns in the same form."""

from __future__ import annotations

import datetime as dt
import json
import sys
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from ..errors import InvalidInput
from ..types import Scope, Trace
from . import validate
from .ids import TraceIdCodec
from .keys import ApiKey
from .roles import CleanDraft, HeldRows

# Trace columns in the order ``to_trace`` and ``to_fields`` read them.
COLUMNS = ("rowid_, text, user_key, agent_key, session, has_session, session_time, speaker, role,"
           " event_time, recorded_at, seq, source_id, metadata, attachments, version")
KEY_COLUMNS = "key_id, user_key, agent_key, label, created_at, revoked_at"


def now() -> str:
    """The recording time of a write: UTC, microseconds."""
    return dt.datetime.now(dt.UTC).isoformat(timespec="microseconds")


def to_key(row: Sequence[Any]) -> ApiKey:
    key_id, user, agent, label, created, revoked = row
    return ApiKey(key_id, Scope(user or None, agent or None), label, created, revoked)


def _intern(value: str | None) -> str | None:
    return None if value is None else sys.intern(value)


def to_fields(row: Sequence[Any]) -> tuple[Any, ...]:
    """What an index needs of every turn, without building a Trace (see TraceRows.fields_many)."""
    attachments = row[14]
    return (row[1], () if attachments == "[]" else tuple(json.loads(attachments)), row[7],
            row[4] if row[5] else None, row[9], row[6], row[10], row[8])


def to_trace(row: Sequence[Any], ids: TraceIdCodec) -> Trace:
    (rowid, text, user, agent, session, has_session, session_time, speaker, role, event_time,
     recorded_at, seq, source_id, metadata, attachments, version) = row
    # Scopes, sessions, speakers, roles and times repeat across rows: one string object each.
    intern = _intern
    return Trace(
        id=ids.format(rowid), text=text, user=intern(user) or None, agent=intern(agent) or None,
        session=intern(session) if has_session else None, session_time=intern(session_time),
        speaker=intern(speaker), role=sys.intern(role), event_time=intern(event_time),
        recorded_at=sys.intern(recorded_at), seq=seq, source_id=source_id,
        metadata={} if metadata == "{}" else json.loads(metadata),
        attachments=() if attachments == "[]" else tuple(json.loads(attachments)), version=version)


def load_json(value: str | None) -> Any:
    return None if value is None else json.loads(value)


def dump_metadata(metadata: dict[str, Any]) -> str:
    """Metadata as stored: JSON with sorted keys, so equal metadata is equal text."""
    return json.dumps(metadata, ensure_ascii=False, sort_keys=True)


def dump_attachments(attachments: Sequence[str]) -> str:
    return json.dumps(list(attachments), ensure_ascii=False)


def number_drafts(drafts: Sequence[CleanDraft], last_seq: Callable[[str], int]) -> list[int]:
    """Each draft's ``seq``: its own, else the next after the highest in its session so far
    (``last_seq(session)``: the highest stored, -1 for none; asked once per session)."""
    top: dict[str, int] = {}
    out: list[int] = []
    for item in drafts:
        if item.seq is None:
            if item.session not in top:
                top[item.session] = last_seq(item.session)
            seq = top[item.session] + 1
            if seq > validate.MAX_INT:
                raise InvalidInput(f"session {validate.printable(item.session)!r} already holds "
                                   f"seq {validate.MAX_INT}, the largest: pass seq explicitly")
            top[item.session] = seq
        else:
            seq = item.seq
            top[item.session] = max(top.get(item.session, -1), seq)
        out.append(seq)
    return out


def session_name(session: Any) -> str:
    """The name of a session to delete: a non-empty string (traces stored without a session
    share no name to delete them by)."""
    name = None if session is None else validate.clean_optional_str(session, "session")
    if not name:
        raise InvalidInput("name the session to delete (a string such as 's1'); see `zeromem list`")
    return name


def no_session_message(session: str, scope: Scope) -> str:
    where = f"user={scope.user!r}, agent={scope.agent!r}"
    return (f"no session {validate.printable(session)!r} in scope ({where}): check the name with "
            "`zeromem list` and the --user/--agent you passed")


def parse_rowids(text: str) -> tuple[int, ...]:
    """A unit's trace row numbers from the JSON list they are stored as ("[3, 4]", or "[3,4]" from
    PostgreSQL's array_to_json): what ``json.loads`` gives, a few times faster — a read parses
    one list per unit of every changed session."""
    if not (text.startswith("[") and text.endswith("]")):
        return tuple(int(r) for r in json.loads(text))
    inner = text[1:-1]
    return tuple(map(int, inner.split(","))) if inner.strip() else ()


def split_by_ids(sessions: Sequence[str], current: dict[str, list[int]], held: HeldRows, out: dict[str, Any]
                 ) -> tuple[list[str], list[int]]:
    """For ``read_changes`` with a held index: the sessions whose unit ids the index knows get
    ``out["unit_ids"][session]`` (every unit id they have now) and their ids it does not hold go
    into the list of ids to read whole; returns (the other sessions, read by keys; those ids)."""
    by_keys: list[str] = []
    wanted: list[int] = []
    out["unit_ids"] = {}
    for session in sessions:
        mine = held.unit_ids(session)
        if mine is None:
            by_keys.append(session)
            continue
        ids = current.get(session, [])
        out["unit_ids"][session] = set(ids)
        wanted += [uid for uid in ids if uid not in mine]
    return by_keys, wanted


def merge_unit_rows(keys: Sequence[tuple[Any, ...]], content: dict[int, tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """``read_changes`` unit rows of a read with a held index: every key row (id, session, level,
    position, text hash, rowids) with its text and vector if it was read (else None), then the
    rows read by id alone (id → session, level, position, text, text hash, rowids, vector)."""
    rows = []
    for uid, session, level, position, text_hash, rowids in keys:
        found = content.pop(uid, None)
        rows.append((uid, session, level, position, None if found is None else found[3], text_hash, rowids,
                     None if found is None else found[6]))
    rows += [(uid, *row) for uid, row in content.items()]
    return rows


def unit_key(level: str, position: int, text_hash: str, rowids: Sequence[int], first_seq: int, last_seq: int,
             speaker: str | None, time: str | None, has_vector: bool) -> tuple[Any, ...]:
    """What identifies a derived unit row across re-derivations of its session. A unit's vector
    and mentions follow from its text (stored encodings are reused by text hash), so equal keys
    mean equal rows."""
    return (level, position, text_hash, tuple(map(int, rowids)), first_seq, last_seq, speaker, time, has_vector)


def split_units(stored: Iterable[tuple[int, tuple[Any, ...]]], units: Sequence[Any]) -> tuple[list[Any], list[int]]:
    """A session's newly derived ``units`` against its ``stored`` rows ((id, ``unit_key``), in id
    order): the units to insert and the ids of the rows to delete, ascending. A write changes a
    few units of its session (its turn, spans, window, episode); every other row stays."""
    kept: dict[tuple[Any, ...], list[int]] = {}
    for uid, key in stored:
        kept.setdefault(key, []).append(uid)
    fresh = []
    for unit in units:
        same = kept.get(unit_key(unit.level, unit.position, unit.text_hash, unit.rowids, unit.first_seq,
                                 unit.last_seq, unit.speaker, unit.time, unit.vector is not None))
        if same:
            same.pop(0)
        else:
            fresh.append(unit)
    return fresh, sorted(uid for ids in kept.values() for uid in ids)
