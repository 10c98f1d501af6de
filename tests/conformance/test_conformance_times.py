"""Time filters compare instants on every backend: stored times keep the caller's
offset, and since / until / as_of must not compare them as text."""

from __future__ import annotations

import pytest

from zeromem import InvalidInput

TIMES = [("pacific", "2023-05-08T13:00:00-07:00"),  # 20:00 UTC, reads as the earliest
         ("berlin", "2023-05-08T21:00:00+02:00"),   # 19:00 UTC, reads as the latest
         ("naive", "2023-05-08T19:30:00")]          # no zone: compared as UTC


@pytest.fixture
def offsets(memory):
    return {name: memory.add(name, session=name, event_time=when) for name, when in TIMES}


def test_traces_keep_their_offsets(memory, offsets):
    assert [memory.get(offsets[name]).event_time for name, _ in TIMES] == [when for _, when in TIMES]


@pytest.mark.parametrize("since, until, expected", [
    ("2023-05-08T19:15:00Z", None, {"naive", "pacific"}),
    (None, "2023-05-08T19:15:00Z", {"berlin"}),
    ("2023-05-08T12:45:00 PDT", None, {"pacific"}),
    ("2023-05-08T21:00:00+02:00", "2023-05-08T21:00:00+02:00", {"berlin"}),
    ("2023-05-08T19:30:00", "2023-05-08T19:30:00", {"naive"}),
])
def test_since_and_until_compare_instants(memory, offsets, since, until, expected):
    assert {t.text for t in memory.list(since=since, until=until)} == expected


def test_as_of_compares_instants(memory, offsets):
    found = {ev.text for ev in memory.search("pacific berlin naive", k=10,
                                             as_of="2023-05-08T19:15:00+00:00")}
    assert found == {"berlin"}


def test_recording_time_counts_when_a_trace_has_no_other(memory):
    memory.add("undated")
    assert [t.text for t in memory.list(since="2000-01-01T00:00:00+14:00")] == ["undated"]
    assert memory.list(until="2000-01-01T00:00:00-12:00") == []


def test_a_bound_with_an_impossible_offset_is_invalid_input(memory, offsets):
    with pytest.raises(InvalidInput, match="24 hours"):
        memory.list(since="2023-05-08T19:15:00+24:00")
