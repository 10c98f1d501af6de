"""Numeric dates in questions: both readings, and the one the memory's dates allow."""

import datetime as dt

from zeromem.encoders.timexpr import numeric_dates
from zeromem.retrieval.query_profile import time_cues
from zeromem.retrieval.query_reading import one_reading


def _days(spans):
    return [s.first for s in spans]


def test_a_date_that_reads_two_ways_gives_both():
    assert _days(numeric_dates("on 10.01.2024 with")) == [dt.date(2024, 1, 10), dt.date(2024, 10, 1)]
    assert _days(numeric_dates("on 19.01.2024?")) == [dt.date(2024, 1, 19)]
    assert _days(numeric_dates("on 1/19/2024")) == [dt.date(2024, 1, 19)]
    assert _days(numeric_dates("on 05-05-2024")) == [dt.date(2024, 5, 5)]


def test_not_dates():
    assert numeric_dates('the book "11/22/63"') == []  # no four-digit year
    assert numeric_dates("version v1.2.2024 and 1.2.3.2024") == []


def test_the_memorys_dates_decide():
    cues = time_cues("What did Paola do on 10.01.2024?", None)
    january = (dt.date(2024, 1, 6), dt.date(2024, 2, 20))
    assert _days(one_reading(cues, january)) == [dt.date(2024, 1, 10)]
    assert _days(one_reading(cues, (dt.date(2024, 9, 1), dt.date(2024, 10, 30)))) == [dt.date(2024, 10, 1)]
    both = (dt.date(2024, 1, 1), dt.date(2024, 12, 31))
    assert len(one_reading(cues, both)) == 2
    assert len(one_reading(cues, None)) == 2


def test_an_iso_or_worded_date_is_not_read_again():
    assert _days(time_cues("on 2024-01-10", None)) == [dt.date(2024, 1, 10)]
