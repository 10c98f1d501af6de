import datetime as dt

import numpy as np

from zeromem.encoders.timexpr import TimeSpan, parse_absolute
from zeromem.lifecycle.supersede import state_assertions, supersession
from zeromem.retrieval.calibrate import SUBJECT_PENALTY, TIME_PENALTY, no_answer_score, subject_compat, time_compat


def test_state_assertions_and_newest_wins():
    a = {0: state_assertions("I live in Boston with my cat.", "Ana"),
         1: state_assertions("Guess what, I moved to Denver!", "Ana"),
         2: state_assertions("I live in Paris.", "Bo")}
    assert a[0][0].attribute == "residence" and a[0][0].value == "boston"
    order = {0: ("2023-01-01", 0), 1: ("2023-06-01", 0), 2: ("2023-02-01", 0)}
    assert supersession(a, order) == {0: 1}  # Bo's claim is another key


def test_repeating_the_same_value_supersedes_nothing():
    a = {0: state_assertions("I live in Boston.", "Ana"), 1: state_assertions("I live in Boston.", "Ana")}
    assert supersession(a, {0: ("1",), 1: ("2",)}) == {}


def test_subject_compat_penalizes_other_speakers_not_naming_subject():
    out = subject_compat(["Ana", "Bo", "Bo"], ["hi", "ana said so", "no"], "Ana")
    assert np.allclose(out, [1, 1, 1 - SUBJECT_PENALTY])
    assert subject_compat(["Bo"], ["x"], None).tolist() == [1.0]


def test_time_compat_keeps_turns_inside_the_cue():
    cues = parse_absolute("in May 2023")
    dates = [[(dt.date(2023, 5, 8),) * 2], [(dt.date(2023, 9, 1),) * 2], []]
    assert np.allclose(time_compat(dates, cues), [1, 1 - TIME_PENALTY, 1 - TIME_PENALTY])
    # limited to some turns (a large scope's candidates), the others stay 1
    assert np.allclose(time_compat(dates, cues, np.array([0, 2])), [1, 1, 1 - TIME_PENALTY])


def test_time_compat_at_the_ends_of_the_calendar():
    cues = [TimeSpan("the last day", 0, 1, dt.date.max, dt.date.max, "day"),
            TimeSpan("the first day", 0, 1, dt.date.min, dt.date.min, "day")]
    dates = [[(dt.date(9999, 12, 31),) * 2], [(dt.date(1, 1, 1),) * 2], [(dt.date(2023, 5, 8),) * 2]]
    assert np.allclose(time_compat(dates, cues), [1, 1, 1 - TIME_PENALTY])


def test_no_answer_score_is_low_when_evidence_covers_the_query():
    covered = no_answer_score(["pottery", "class"], ["I signed up for a pottery class"], 0.7)
    missing = no_answer_score(["pottery", "class"], ["we went hiking"], 0.2)
    assert covered < 0.2 < 0.9 < missing
