"""list filters by session, time range and metadata, in conversation order, with paging."""

from __future__ import annotations

import pytest

from sample_traces import TWO_SESSIONS


@pytest.fixture
def convo(mem):
    mem.add_many([dict(t) for t in TWO_SESSIONS])
    return mem


def test_list_orders_by_session_time_then_seq(convo):
    assert [t.text for t in convo.list()] == ["s1 first", "s1 second", "s2 first", "s2 second"]


def test_list_by_session(convo):
    assert [t.text for t in convo.list(session="s2")] == ["s2 first", "s2 second"]
    assert convo.list(session="nope") == []


def test_list_by_time_range_uses_event_time_then_session_time(convo):
    assert [t.text for t in convo.list(since="2023-05-01")] == ["s2 first", "s2 second"]
    assert [t.text for t in convo.list(until="2023-04-01")] == ["s1 first", "s1 second"]
    assert [t.text for t in convo.list(since="2023-05-02T12:00", until="2023-05-04")] == ["s2 second"]


def test_list_by_metadata_values(convo):
    assert [t.text for t in convo.list(filters={"topic": "city"})] == ["s1 second", "s2 second"]
    assert [t.text for t in convo.list(filters={"topic": "city", "n": 2})] == ["s1 second"]
    assert [t.text for t in convo.list(filters={"flag": True})] == ["s1 second"]


def test_list_limit_and_offset_page_through_in_order(convo):
    pages = [convo.list(limit=2, offset=o) for o in (0, 2, 4)]
    assert [[t.text for t in page] for page in pages] == [
        ["s1 first", "s1 second"], ["s2 first", "s2 second"], []]
    assert [t.text for t in convo.list(offset=3)] == ["s2 second"]  # offset without limit


def test_stats_count_traces_sessions_speakers_and_time_span(mem):
    mem.add_many([{"text": "a", "session": "s1", "speaker": "Priya", "session_time": "2023-03-14"},
                  {"text": "bb", "session": "s2", "speaker": "Marcus", "session_time": "2023-05-02"}])
    stats = mem.stats()
    assert (stats.traces, stats.sessions, stats.characters) == (2, 2, 3)
    assert stats.speakers == {"Marcus": 1, "Priya": 1}
    assert (stats.first_time, stats.last_time) == ("2023-03-14T00:00:00", "2023-05-02T00:00:00")
    assert stats.history_events == {"add": 2}
