"""The memory lifecycle behaves the same on every backend (real models, a few traces)."""

from __future__ import annotations

import pytest

from internals import store_of

pytestmark = pytest.mark.slow

TURNS = [
    {"text": "Hi! How are you?", "session": "s1", "speaker": "Ana"},
    {"text": "I'm allergic to peanuts, never put them in my food.", "session": "s1", "speaker": "Ana"},
    {"text": "ok", "session": "s1", "speaker": "Bo"},
    {"text": "I live in Boston with my two cats.", "session": "s1", "speaker": "Ana"},
    {"text": "cool", "session": "s1", "speaker": "Bo"},
    {"text": "Actually I moved to Denver last month.", "session": "s2", "speaker": "Ana"},
    {"text": "The door code is 4455.", "session": "s2", "speaker": "Bo",
     "metadata": {"expires_at": "2001-01-01T00:00:00+00:00"}},
]


def _state(memory, budget):
    active = memory.active(budget)
    return [(e.trace_id, e.reason, e.omega, e.omega_eff) for e in active.entries], active.archived


def test_active_memory_signals_and_expiry_agree_across_backends(memory):
    ids = memory.add_many(TURNS)
    entries, archived = _state(memory, 40)
    held = [tid for tid, *_ in entries]
    assert ids[1] in held  # the constraint stays
    assert archived[ids[3]] == f"superseded by {ids[5]}"  # Boston gave way to Denver
    assert archived[ids[6]] == "expired"
    assert ids[6] not in {ev.trace_id for ev in memory.search("door code", k=5)}
    assert memory.get(ids[6]).text == "The door code is 4455."  # expired, still stored
    assert sum(e.tokens for e in memory.active(40).entries) <= 40
    stored = store_of(memory).trace_signals(memory.scope)
    assert set(stored) == {store_of(memory).ids.parse(t) for t in ids} and all(stored.values())
    memory.delete(ids[0])  # a delete takes the trace's signals with it
    memory.add("one more", session="s2", speaker="Bo")
    assert store_of(memory).ids.parse(ids[0]) not in store_of(memory).trace_signals(memory.scope)


def test_signals_read_by_trace_and_a_late_put_for_a_deleted_trace_agree_across_backends(memory):
    """What a write's refresh reads (``rowids``) and what a put keeps are the same everywhere."""
    ids = memory.add_many(TURNS[:3])
    store = store_of(memory)
    first, second, third = (store.ids.parse(t) for t in ids)
    rows = store.trace_signals(memory.scope, rowids=[third, first])
    assert list(rows) == [first, third] and all(rows.values())
    assert store.trace_signals(memory.scope, missing_only=True, rowids=[second]) == {}
    assert store.trace_signals(memory.scope, rowids=[]) == {}
    memory.delete(ids[2])
    # signals computed before the delete, put after it: only the live trace's row is kept
    store.put_signals(memory.scope, [(third, 1, rows[third]), (first, 1, rows[first])])
    receipt = memory.delete_scope()
    assert dict(receipt.rows)["trace_signals"] == 2
