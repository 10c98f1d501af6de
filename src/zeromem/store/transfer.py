"""Copy a SQLite store into an empty PostgreSQL store (``zeromem migrate``), ids kept.

What moves: every trace with its id, version, times and metadata; every history event (those of
deleted traces too); API keys (hashes only, revoked ones too); per-file facts except the
per-scope embedder fingerprints (the destination records them when it derives its vectors) —
the trace id key among them (store/ids.py), so every trace keeps its public id.
Derived rows do not move: every session is marked dirty, so the destination derives them at
its first ``index()`` / search, or at once with ``Memory.reindex`` (what the command does unless
told not to). The copy is one transaction on the destination, and the counts are verified
scope by scope afterwards.
"""

from __future__ import annotations

from typing import Any

from ..errors import InvalidInput, StoreError
from .base import StoreBase
from .fingerprint import PREFIX as FINGERPRINT_PREFIX
from .sqlite import SQLiteStore

_TRACES = ("SELECT rowid_, user_key, agent_key, session, seq, text, speaker, role, session_time,"
           " event_time, recorded_at, source_id, metadata, attachments, version, has_session"
           " FROM traces ORDER BY rowid_")
_HISTORY = ("SELECT trace_rowid, json_extract(scope_key, '$[0]'), json_extract(scope_key, '$[1]'), event, at,"
            " old_text, new_text, old_metadata, new_metadata FROM trace_history ORDER BY id")
_KEYS = "SELECT key_id, key_hash, user_key, agent_key, label, created_at, revoked_at FROM api_keys"


def copy_store(source: StoreBase, dest: StoreBase) -> dict[str, Any]:
    """Copy ``source`` (SQLite) into ``dest`` (PostgreSQL, empty); returns what was copied:
    ``traces``, ``history_events``, ``api_keys``, ``scopes`` (each scope's trace count).

    InvalidInput for the wrong kinds of store or a destination that is not empty; StoreError
    when the counts do not match afterwards.
    """
    from .postgres import PostgresStore

    if not isinstance(source, SQLiteStore):
        raise InvalidInput(f"migrate copies from a SQLite store (a file path), not {source.path}")
    if not isinstance(dest, PostgresStore):
        raise InvalidInput(f"migrate copies into a PostgreSQL store (postgresql://...), not {dest.path}")
    traces = source.read(_TRACES)
    history = source.read(_HISTORY)
    keys = source.read(_KEYS)
    meta = [(k, v) for k, v in source.read("SELECT key, value FROM store_meta")
            if not k.startswith(FINGERPRINT_PREFIX + ":")]
    ids = source.read("SELECT COALESCE(MAX(seq), 0) FROM sqlite_sequence WHERE name = 'traces'")
    last_id = max([int(ids[0][0]) if ids else 0, *(int(r[0]) for r in traces), *(int(r[0]) for r in history)])
    dest.bulk_load(traces, history, keys, meta, last_id)
    copied = {scope: dest.count(scope) for scope in source.scopes()}
    expected = {scope: source.count(scope) for scope in source.scopes()}
    if copied != expected or dest.scopes() != source.scopes():
        raise StoreError(f"the copy in {dest.path} does not match {source.path}: trace counts "
                         f"{sorted(copied.items())} vs {sorted(expected.items())}")
    events = sum(dest.stats()["history_events"].values())
    if events != len(history) or len(dest.api_keys()) != len(keys):
        raise StoreError(f"the copy in {dest.path} has {events} history events and "
                         f"{len(dest.api_keys())} API keys; {source.path} has {len(history)} and {len(keys)}")
    return {"traces": len(traces), "history_events": len(history), "api_keys": len(keys),
            "scopes": {f"user={s.user!r}, agent={s.agent!r}": n for s, n in copied.items()}}
