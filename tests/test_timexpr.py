import datetime as dt

import pytest
from hypothesis import given
from hypothesis import strategies as st

from zeromem.encoders.timexpr import parse_absolute, resolve_relative

ANCHOR = dt.date(2023, 5, 8)  # a Monday


@pytest.mark.parametrize("text, label", [
    ("I went to a support group yesterday", "7 May 2023"),
    ("last Saturday we hiked", "6 May 2023"),
    ("two weeks ago I moved", "week of 24 April 2023"),
    ("see you next month", "June 2023"),
    ("a few days ago", "5 May 2023"),
    ("last week was busy", "week of 1 May 2023"),
    ("I painted it last year", "2022"),
    ("this Friday is the party", "12 May 2023"),
    ("next Monday", "15 May 2023"),
    ("3 months ago", "February 2023"),
    ("tomorrow", "9 May 2023"),
])
def test_relative_expressions_resolve_against_the_anchor(text, label):
    spans = resolve_relative(text, ANCHOR)
    assert [s.label() for s in spans] == [label]


def test_relative_without_anchor_or_bare_weekday_is_not_annotated():
    assert resolve_relative("yesterday", None) == []
    assert resolve_relative("on Friday I rest", ANCHOR) == []


@pytest.mark.parametrize("text, first, last", [
    ("What did she do in May 2023?", dt.date(2023, 5, 1), dt.date(2023, 5, 31)),
    ("in 2022", dt.date(2022, 1, 1), dt.date(2022, 12, 31)),
    ("on 8 May, 2023", dt.date(2023, 5, 8), dt.date(2023, 5, 8)),
    ("May 8, 2023", dt.date(2023, 5, 8), dt.date(2023, 5, 8)),
    ("2023-05-08", dt.date(2023, 5, 8), dt.date(2023, 5, 8)),
])
def test_absolute_expressions_become_ranges(text, first, last):
    spans = parse_absolute(text)
    assert len(spans) == 1
    assert (spans[0].first, spans[0].last) == (first, last)


def test_absolute_ignores_bare_numbers():
    assert parse_absolute("I have 2022 stamps") == []


# -- times no calendar date can hold -------------------------------------------------------------

@pytest.mark.parametrize("text", [
    "Jericho was settled 11000 years ago.",
    "The pyramids are 4500 years old, built 4500 years ago.",
    "The sun swells in 7977 years.",
    "That was 99999999999 days ago.",
    "See you in 99999999 weeks.",
    "一万年前",
    "100000天前的事",
])
def test_relative_times_past_the_calendar_are_skipped_not_raised(text):
    assert resolve_relative(text, dt.date(2023, 5, 30)) == []


def test_one_unrepresentable_time_does_not_hide_the_others():
    spans = resolve_relative("Two days ago I read that Jericho was settled 11000 years ago.", dt.date(2023, 5, 30))
    assert [(s.surface, s.first) for s in spans] == [("Two days ago", dt.date(2023, 5, 28))]


@pytest.mark.parametrize("anchor, text", [
    (dt.date(1, 1, 1), "yesterday, last week, last month and last year"),
    (dt.date(9999, 12, 31), "tomorrow, next week, next month and next year"),
])
def test_relative_times_at_the_ends_of_the_calendar(anchor, text):
    assert all(dt.date.min <= s.first <= s.last <= dt.date.max for s in resolve_relative(text, anchor))


@given(st.integers(min_value=0, max_value=10**15), st.sampled_from(["day", "week", "month", "year", "weekend"]),
       st.sampled_from(["{n} {u}s ago", "in {n} {u}s"]), st.dates())
def test_relative_resolution_never_raises(n, unit, form, anchor):
    for span in resolve_relative(form.format(n=n, u=unit), anchor):
        assert span.first <= span.last
