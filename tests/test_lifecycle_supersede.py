"""Updates and corrections (lifecycle/supersede.py): keys, bare corrections, chains, as_of."""

from __future__ import annotations

import pytest

from zeromem import Memory
from zeromem.lifecycle.supersede import (
    CORRECTION_REACH,
    state_assertions,
    supersession,
)


def _a(text, speaker="Ana", session="s", seq=0):
    return state_assertions(text, speaker, session, seq)


@pytest.mark.parametrize("text, attribute, value", [
    ("I now live in Denver.", "residence", "denver"),
    ("I moved to New York City last year.", "residence", "new york city"),
    ("I work at Globex these days.", "employer", "globex"),
    ("My favorite color is teal.", "favorite color", "teal"),
    ("My phone number has changed to 555-0199.", "phone number", "555-0199"),
    ("I switched my diet to keto.", "diet", "keto"),
    ("My meeting was moved to Friday.", "meeting", "friday"),
    ("我现在住在上海。", "residence", "上海"),
    ("我在腾讯工作。", "employer", "腾讯"),
    ("我最喜欢的水果是芒果", "favorite 水果", "芒果"),
])
def test_state_assertions(text, attribute, value):
    (found,) = _a(text)
    assert (found.attribute, found.value) == (attribute, value)


@pytest.mark.parametrize("text, value", [
    ("Actually, make that Thursday.", "thursday"),
    ("Sorry, I meant Lisbon, not Porto.", "lisbon"),
    ("不对，应该是周四。", "周四"),
])
def test_bare_corrections_carry_a_value_and_no_attribute(text, value):
    (found,) = _a(text)
    assert (found.attribute, found.value) == ("", value)


def test_third_person_and_questions_assert_nothing():
    assert _a("Ben lives in Paris.") == [] and _a("Where do you live?") == []
    assert state_assertions("I live in Oslo.", None) == []  # no speaker, no key


def test_a_chain_propagates_to_its_newest_link():
    found = {0: _a("My favorite color is blue.", seq=0), 1: _a("Actually, it's green.", seq=2),
             2: _a("Sorry, I meant red.", seq=4), 3: _a("I live in Oslo.", "Bo", seq=5)}
    assert supersession(found, {n: (n,) for n in found}) == {0: 2, 1: 2}


def test_a_bare_correction_binds_only_within_reach_and_session():
    far = {0: _a("My favorite color is blue.", seq=0), 1: _a("Actually, it's green.", seq=CORRECTION_REACH + 1)}
    assert supersession(far, {0: (0,), 1: (1,)}) == {}
    other = {0: _a("My favorite color is blue.", session="a"), 1: _a("Actually, it's green.", session="b", seq=1)}
    assert supersession(other, {0: (0,), 1: (1,)}) == {}
    assert supersession({1: _a("Actually, it's green.")}, {1: (1,)}) == {}  # nothing to correct


def test_repeating_a_value_supersedes_nothing():
    same = {0: _a("I live in Oslo."), 1: _a("I now live in Oslo.", seq=3)}
    assert supersession(same, {0: (0,), 1: (1,)}) == {}


@pytest.mark.slow
def test_search_ranks_the_current_state_first_and_as_of_returns_the_state_then(tmp_path):
    with Memory(tmp_path / "s.db") as mem:
        ids = mem.add_many([
            {"text": "I live in Boston.", "speaker": "Ana", "session": "s1", "session_time": "2023-01-01"},
            {"text": "Weather is nice.", "speaker": "Bo", "session": "s1", "session_time": "2023-01-01"},
            {"text": "I now live in Denver.", "speaker": "Ana", "session": "s2", "session_time": "2023-06-01"},
            {"text": "I now live in Austin.", "speaker": "Ana", "session": "s3", "session_time": "2024-01-01"},
        ])
        now = [ev for ev in mem.search("Where does Ana live?", k=4) if ev.trace_id in (ids[0], ids[2], ids[3])]
        assert now[0].trace_id == ids[3]
        assert {ev.trace_id: ev.superseded_by for ev in now}[ids[0]] == ids[3]
        # as of mid-2023, Boston was superseded by Denver (Austin did not exist yet)
        then = mem.search("Where does Ana live?", k=4, as_of="2023-07-01")
        assert {ev.trace_id: ev.superseded_by for ev in then}[ids[0]] == ids[2]
        active = mem.active(200)
        assert active.archived[ids[0]] == f"superseded by {ids[3]}"
        assert active.archived[ids[2]] == f"superseded by {ids[3]}"
        assert mem.active(200, as_of="2023-07-01").archived[ids[0]] == f"superseded by {ids[2]}"
