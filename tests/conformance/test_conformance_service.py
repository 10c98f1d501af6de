"""What the memory service needs from a backend: sessions, API keys, a trace's entity
neighbourhood. Every backend, same results."""

from __future__ import annotations

import pytest

from internals import store_of
from zeromem import InvalidInput, NotFound
from zeromem.store.keys import hash_api_key, new_api_key
from zeromem.types import Scope


def test_sessions_in_conversation_order_with_counts_and_times(memory):
    memory.add_many([
        {"text": "later one", "session": "b", "session_time": "2023-02-01T10:00:00"},
        {"text": "later two", "session": "b", "session_time": "2023-02-01T10:00:00"},
        {"text": "earlier", "session": "a", "session_time": "2023-01-01T09:00:00",
         "event_time": "2023-01-01T09:30:00"},
    ])
    memory.add("elsewhere", session="z", user="someone-else")
    sessions = memory.sessions()
    assert [(s.session, s.traces) for s in sessions] == [("a", 1), ("b", 2)]
    assert sessions[0].first_time == sessions[0].last_time == "2023-01-01T09:30:00"
    assert sessions[1].first_time == "2023-02-01T10:00:00"
    assert memory.sessions(user="nobody") == []


def test_a_trace_without_session_is_listed_under_none(memory):
    memory.add("loose note")
    assert [(s.session, s.traces) for s in memory.sessions()] == [(None, 1)]


def test_api_keys_round_trip_revoke_and_never_collide(store):
    key_id, key, key_hash = new_api_key()
    added = store.add_api_key(key_id, key_hash, Scope("ana", "bot"), "laptop")
    assert (added.key_id, added.scope, added.label, added.active) == (key_id, Scope("ana", "bot"), "laptop", True)
    found = store.api_key_by_hash(hash_api_key(key))
    assert found is not None and found.scope == Scope("ana", "bot") and found.active
    assert store.api_key_by_hash(hash_api_key(new_api_key()[1])) is None
    with pytest.raises(InvalidInput):
        store.add_api_key(key_id, new_api_key()[2], Scope("ben", None), None)  # same id
    revoked = store.revoke_api_key(key_id)
    assert revoked.revoked_at is not None and not revoked.active
    assert store.api_key_by_hash(key_hash).revoked_at is not None
    assert [k.key_id for k in store.api_keys()] == [key_id]
    with pytest.raises(NotFound):
        store.revoke_api_key("0badc0de")
    with pytest.raises(InvalidInput):
        store.revoke_api_key("not an id")


def test_a_new_key_whose_id_is_taken_gets_another_id(store, monkeypatch):
    from zeromem.store import keys

    first, key = store.create_api_key(Scope("ana", None), "one")
    assert store.api_key_by_hash(hash_api_key(key)).key_id == first.key_id
    draws = iter([first.key_id, first.key_id, "0a0b0c0d"])  # taken twice, then free
    monkeypatch.setattr(keys.secrets, "token_hex", lambda n: next(draws))
    second, key = store.create_api_key(Scope("ben", None), "two")
    assert second.key_id == "0a0b0c0d" and key.startswith("zm_0a0b0c0d_")
    assert store.api_key_by_hash(hash_api_key(key)).scope == Scope("ben", None)
    monkeypatch.setattr(keys.secrets, "token_hex", lambda n: first.key_id)  # never free: a clear error
    with pytest.raises(keys.KeyIdTaken, match="already exists"):
        store.create_api_key(Scope("cy", None), None)


@pytest.mark.slow
def test_neighbourhood_lists_entities_and_traces_sharing_them(memory):
    first = memory.add("Priya moved to Denver with her cat Biscuit.", session="s1", speaker="Priya")
    second = memory.add("Denver has great sunsets.", session="s1", speaker="Marcus")
    other = memory.add("Denver is far away.", session="s9", user="someone-else")
    memory.index()
    hood = memory.neighbourhood(first)
    names = {e.entity for e in hood.entities}
    assert "denver" in names
    denver = next(e for e in hood.entities if e.entity == "denver")
    assert denver.turns == 2  # this scope's two turns, not the other scope's
    assert [n.trace.id for n in hood.neighbours] == [second]
    assert "denver" in hood.neighbours[0].shared
    with pytest.raises(NotFound):
        memory.neighbourhood(other)


def test_size_bytes_grows_with_what_is_stored(memory):
    before = store_of(memory).size_bytes()
    assert before > 0
    memory.add_many([{"text": "x" * 2000, "session": f"s{i % 3}"} for i in range(300)])
    assert store_of(memory).size_bytes() > before
