"""update keeps the old version in the history; delete leaves a 'delete' event (a tombstone
without text unless the caller keeps the history)."""

from __future__ import annotations

import pytest

from zeromem import NotFound


def test_update_changes_text_and_keeps_the_old_version_in_history(mem):
    tid = mem.add("I live in Chicago.", speaker="Priya", metadata={"city": "Chicago"})
    updated = mem.update(tid, text="I live in Denver.")
    assert updated.text == "I live in Denver." and updated.version == 2
    assert updated.metadata == {"city": "Chicago"}  # untouched when not given
    events = mem.history(tid)
    assert [e.event for e in events] == ["add", "update"]
    assert events[1].old_text == "I live in Chicago." and events[1].new_text == "I live in Denver."


def test_update_of_metadata_only_keeps_the_text(mem):
    tid = mem.add("Biscuit is my cat.")
    trace = mem.update(tid, metadata={"pet": "cat"})
    assert trace.text == "Biscuit is my cat." and trace.metadata == {"pet": "cat"}
    last = mem.history(tid)[-1]
    assert (last.old_metadata, last.new_metadata) == ({}, {"pet": "cat"})


def test_history_is_ordered_oldest_first_across_many_updates(mem):
    tid = mem.add("v0")
    for n in range(1, 6):
        mem.update(tid, text=f"v{n}")
    events = mem.history(tid)
    assert [e.new_text for e in events] == [f"v{n}" for n in range(6)]
    assert [e.at for e in events] == sorted(e.at for e in events)
    assert mem.get(tid).version == 6


def test_delete_event_stays_in_history_after_the_trace_is_gone(mem):
    tid = mem.add("temporary note", metadata={"k": 1})
    mem.update(tid, text="temporary note, edited")
    receipt = mem.delete(tid)
    with pytest.raises(NotFound):
        mem.get(tid)
    events = mem.history(tid)
    assert [e.event for e in events] == ["add", "update", "delete"]
    # Tombstones: the events and their times stay, no text or metadata of any version.
    assert all((e.old_text, e.new_text, e.old_metadata, e.new_metadata) == (None,) * 4 for e in events)
    assert receipt.history_text_purged and receipt.trace_ids == (tid,)


def test_delete_keeping_history_keeps_the_old_text(mem):
    tid = mem.add("temporary note")
    receipt = mem.delete(tid, keep_history=True)
    events = mem.history(tid)
    assert [e.event for e in events] == ["add", "delete"]
    assert events[0].new_text == events[-1].old_text == "temporary note"
    assert not receipt.history_text_purged and receipt.retained


def test_update_without_history_erases_every_earlier_version(mem):
    tid = mem.add("v0", metadata={"v": 0})
    mem.update(tid, text="v1")
    trace = mem.update(tid, text="v2", metadata={"v": 2}, keep_history=False)
    assert (trace.text, trace.metadata, trace.version) == ("v2", {"v": 2}, 3)
    events = mem.history(tid)
    assert [e.event for e in events] == ["add", "update", "update"]
    assert [(e.old_text, e.new_text) for e in events] == [(None, None), (None, None), (None, "v2")]
    assert (events[-1].old_metadata, events[-1].new_metadata) == (None, {"v": 2})


def test_history_of_an_unknown_id_is_not_found(mem):
    with pytest.raises(NotFound):
        mem.history("tzzzzzzzz")
