"""Dates are read exactly or refused: no guessed years, no impossible days, zones kept,
and time filters compare instants whatever offsets the traces carry."""

from __future__ import annotations

import datetime as dt
import json

import pytest

from zeromem import InvalidInput, Memory
from zeromem.store import validate
from zeromem.store.dates import utc_key


@pytest.mark.parametrize("text, stored", [
    ("1:56 pm on 8 May, 2023", "2023-05-08T13:56:00"),  # LoCoMo's form
    ("10:05 am on 2 May, 2023", "2023-05-02T10:05:00"),
    ("8 May 2023", "2023-05-08T00:00:00"),
    ("May 8, 2023 at 1:56 pm", "2023-05-08T13:56:00"),
    ("Monday, 8 May 2023 13:56", "2023-05-08T13:56:00"),
    ("14 March 2023 19:00", "2023-03-14T19:00:00"),
    ("May 2023", "2023-05-01T00:00:00"),
    ("2023", "2023-01-01T00:00:00"),
    ("2023-05", "2023-05-01T00:00:00"),
    ("2023-05-08", "2023-05-08T00:00:00"),
    ("2023-05-08T13:56:00", "2023-05-08T13:56:00"),
    ("2023-05-08T13:56:00Z", "2023-05-08T13:56:00+00:00"),
    ("2023-05-08T13:56:00-07:00", "2023-05-08T13:56:00-07:00"),
    ("1:56 pm PDT on 8 May, 2023", "2023-05-08T13:56:00-07:00"),
    ("8 May 2023 13:56 CEST", "2023-05-08T13:56:00+02:00"),
    ("8 May 2023 13:56 UTC", "2023-05-08T13:56:00+00:00"),
    ("8 May 2023 13:56 IST", "2023-05-08T13:56:00+05:30"),
    ("2023-05-08 13:56 JST", "2023-05-08T13:56:00+09:00"),
    ("2023-05-08 13:56 America/Chicago", "2023-05-08T13:56:00-05:00"),  # DST in May
    ("2023-01-08 13:56 America/Chicago", "2023-01-08T13:56:00-06:00"),
    ("8 May 2023 13:56 +0530", "2023-05-08T13:56:00+05:30"),
    ("8 May 2023 13:56 UTC+2", "2023-05-08T13:56:00+02:00"),
])
def test_readable_forms_are_stored_exactly_with_their_zone(text, stored):
    assert validate.clean_time(text, "session_time") == stored


@pytest.mark.parametrize("text, why", [
    ("May 32", "no year"),  # dateutil read this as 1 May 2032
    ("May 32, 2023", "no such date"),
    ("2023-02-30", "day is out of range"),
    ("Feb 30, 2023", "no such date"),
    ("5", "bare number"),  # dateutil read this as the 5th of January of the current year
    ("12", "bare number"),
    ("8 May", "no year"),  # dateutil took the year of the day it ran
    ("May 8", "no year"),
    ("05/08/2023", "not a form"),  # US or European order? refused rather than guessed
    ("Tuesday, 8 May 2023", "is a Monday"),
    ("13 pm on 1 Jan 2023", "am/pm"),
    ("8 May 2023 5", "not a time"),
    ("8 May 2023 Mars/Olympus", "unknown time zone"),
    ("2023-05-08T13:56:00 PDT +02:00", "more than one time zone"),
    ("2023-05-08T13:56:00+02:00 PDT", "two time zones"),
    ("someday", "not a date"),
])
def test_impossible_or_ambiguous_dates_are_refused_saying_what_is_accepted(text, why):
    with pytest.raises(InvalidInput) as info:
        validate.clean_time(text, "session_time")
    message = str(info.value)
    assert why in message and "ISO 8601" in message and "8 May 2023" in message, message


@pytest.mark.parametrize("text", ["2023-05-08T13:56:00+25:00", "2023-05-08T13:56:00-24:00",
                                  "8 May 2023 13:56 +2500", "8 May 2023 13:56 UTC+24",
                                  "0001-01-01T00:00:00+05:00"])
def test_offsets_of_24_hours_or_more_are_invalid_input_not_value_error(text):
    with pytest.raises(InvalidInput) as info:
        validate.clean_time(text, "since")
    assert type(info.value) is InvalidInput and "since" in str(info.value)


def test_a_date_without_a_year_never_takes_the_year_of_the_parse(mem):
    with pytest.raises(InvalidInput, match="no year"):
        mem.add("hi", session_time="8 May")
    assert mem.list() == []


def test_the_same_text_means_the_same_time_whatever_day_it_is_parsed():
    # Nothing read from the clock: the result has no part that could come from "today".
    assert validate.clean_time("May 2023", "t") == "2023-05-01T00:00:00"
    assert str(dt.date.today().year) not in validate.clean_time("8 May 1999", "t")


def test_datetimes_dates_and_epochs_keep_working():
    chicago = dt.timezone(dt.timedelta(hours=-5))
    assert validate.clean_time(dt.datetime(2023, 5, 8, 13, 56, tzinfo=chicago), "t") == \
        "2023-05-08T13:56:00-05:00"
    assert validate.clean_time(dt.date(2023, 5, 8), "t") == "2023-05-08T00:00:00"
    assert validate.clean_time(0, "t") == "1970-01-01T00:00:00+00:00"
    with pytest.raises(InvalidInput):
        validate.clean_time(10**30, "t")


def test_utc_keys_sort_by_instant():
    times = ["2023-05-08T13:00:00-07:00", "2023-05-08T21:00:00+02:00", "2023-05-08T19:30:00"]
    assert [utc_key(t) for t in times] == ["2023-05-08T20:00:00", "2023-05-08T19:00:00",
                                           "2023-05-08T19:30:00"]
    assert utc_key("2023-05-08T19:00:00.250000+00:00") == "2023-05-08T19:00:00.250000"
    assert utc_key("2023-05-08T19:00:00.000000+00:00") == "2023-05-08T19:00:00"


@pytest.fixture
def offsets(mem):
    """Three traces whose text order is not their time order: 'pacific' (20:00 UTC) reads as
    13:00, later than 'berlin' (19:00 UTC) which reads as 21:00."""
    # (titled, so that a query naming all three finds each of them)
    ids = {name: mem.add(name, session=name, event_time=when, metadata={"title": name}) for name, when in [
        ("pacific", "2023-05-08T13:00:00-07:00"),
        ("berlin", "2023-05-08T21:00:00+02:00"),
        ("naive", "2023-05-08T19:30:00"),  # no zone: compared as UTC
    ]}
    return ids


def test_trace_shows_the_callers_original_offset(mem, offsets):
    assert mem.get(offsets["pacific"]).event_time == "2023-05-08T13:00:00-07:00"
    assert mem.get(offsets["berlin"]).event_time == "2023-05-08T21:00:00+02:00"


@pytest.mark.parametrize("since, until, expected", [
    ("2023-05-08T19:15:00Z", None, {"naive", "pacific"}),
    (None, "2023-05-08T19:15:00Z", {"berlin"}),
    ("2023-05-08T12:45:00 PDT", None, {"pacific"}),  # 19:45 UTC
    ("2023-05-08 14:45 America/Chicago", "2023-05-08 15:00 America/Chicago", {"pacific"}),
    ("2023-05-08T21:00:00+02:00", "2023-05-08T21:00:00+02:00", {"berlin"}),  # inclusive
])
def test_list_since_and_until_compare_instants_across_offsets(mem, offsets, since, until, expected):
    assert {t.text for t in mem.list(since=since, until=until)} == expected


def test_search_as_of_compares_instants_across_offsets(mem, offsets):
    found = {ev.text for ev in mem.search("pacific berlin naive", k=10,
                                          as_of="2023-05-08T19:15:00+00:00")}
    assert found == {"berlin"}
    found = {ev.text for ev in mem.search("pacific berlin naive", k=10, as_of="2023-05-08 13:00 PDT")}
    assert found == {"berlin", "naive", "pacific"}


def test_as_of_with_an_offset_of_25_hours_is_invalid_input(mem, offsets, snapshot):
    before = snapshot(mem)
    for call in (lambda: mem.search("x", as_of="2023-05-08T13:56:00+25:00"),
                 lambda: mem.list(since="2023-05-08T13:56:00+25:00"),
                 lambda: mem.list(until="2023-05-08T13:56:00+25:00")):
        with pytest.raises(InvalidInput, match="24 hours"):
            call()
    assert snapshot(mem) == before


def test_a_locomo_date_with_an_impossible_offset_stores_nothing(mem, tmp_path, example_data, snapshot):
    data = dict(example_data, session_2_date_time="10:05 am on 2 May, 2023 +25:00")
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    before = snapshot(mem)
    with pytest.raises(InvalidInput, match=r"session_2_date_time.*24 hours"):
        mem.import_file(path)
    assert snapshot(mem) == before


def test_a_locomo_date_without_a_year_is_refused(tmp_path, example_data):
    data = dict(example_data, session_2_date_time="10:05 am on 2 May")
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    with Memory(tmp_path / "m.db") as mem, pytest.raises(InvalidInput, match="no year"):
        mem.import_file(path)
