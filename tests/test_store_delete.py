"""delete removes a trace from get, list and stats, and from nothing else."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from zeromem import NotFound


def test_deleted_trace_is_not_found_and_not_listed(mem):
    keep, drop = mem.add_many([{"text": "keep me"}, {"text": "drop me"}])
    mem.delete(drop)
    with pytest.raises(NotFound):
        mem.get(drop)
    assert [t.id for t in mem.list()] == [keep]
    assert mem.stats().traces == 1


def test_deleting_twice_is_not_found(mem):
    tid = mem.add("once")
    mem.delete(tid)
    with pytest.raises(NotFound):
        mem.delete(tid)


def test_a_deleted_trace_cannot_be_updated(mem):
    tid = mem.add("gone soon")
    mem.delete(tid)
    with pytest.raises(NotFound):
        mem.update(tid, text="back?")


def test_ids_are_never_reused_after_delete(mem):
    first = mem.add("a")
    mem.delete(first)
    assert mem.add("b") != first


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(n=st.integers(1, 12), data=st.data())
def test_delete_removes_exactly_the_chosen_traces(mem, n, data):
    mem.delete_scope()
    ids = mem.add_many([{"text": f"trace {i}"} for i in range(n)])
    chosen = data.draw(st.sets(st.sampled_from(ids)))
    for tid in sorted(chosen):
        mem.delete(tid)
    assert [t.id for t in mem.list()] == [i for i in ids if i not in chosen]
