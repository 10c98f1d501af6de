"""Updates and corrections (lifecycle/supersede.py): keys, bare corrections, chains, as_of."""

from __future__ import annotations

import pytest

from zeromem import Memory
from zeromem.lifecycle.supersede import (
    CORRECTION_REACH,
    VALUE_UPDATE_COVERAGE,
    ValueCandidate,
    asks_earlier_state,
    asks_for_value,
    newest_value_first,
    state_assertions,
    states_value,
    supersession,
    wants_newest_value,
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


# -- value updates ---------------------------------------------------------------------------

@pytest.mark.parametrize("text", [
    "I've added 25 new postcards to my collection.", "Now I have three cats.",
    "That makes a total of twelve.", "I just finished my fifth issue.", "It's usually at 6:00 pm.",
    "My class moved to Fridays.", "我现在有两只猫。", "又买了三本书，一共十本。", "我读到第五章了。",
    "课改到周五了。",
])
def test_states_value_finds_quantities_ordinals_times_and_weekdays(text):
    assert states_value(text)


@pytest.mark.parametrize("text", ["I love my cats.", "The postcards look lovely.", "我很喜欢猫。"])
def test_states_value_ignores_turns_without_a_quantity(text):
    assert not states_value(text)


@pytest.mark.parametrize("query, earlier", [
    ("What was my previous personal best?", True), ("How many did I have at first?", True),
    ("How many fish did I catch before the second trip?", True), ("我以前住在哪里？", True),
    ("How many postcards do I have now?", False), ("What time do I usually go to the gym?", False),
    ("我现在有几只猫？", False),
])
def test_asks_earlier_state(query, earlier):
    assert asks_earlier_state(query) is earlier


@pytest.mark.parametrize("query", [
    "How many postcards do I have now?", "How long have I had my cat?", "How often do I do yoga?",
    "What time do I usually go to the gym?", "What day of the week is my class?",
    "What is my current record?", "Which book am I reading at the moment?", "我现在有几只猫？",
    "我一共读了多少本书？", "这门课我上了多久？",
])
def test_asks_for_value(query):
    assert asks_for_value(query)


@pytest.mark.parametrize("query", [
    "When did Nate win his first tournament?", "Which cities has John been to?",
    "What did Maria donate to the shelter?", "Where did Caroline move from?", "她几乎每天都去吗？",
    "我们上次在哪里吃饭？",
])
def test_event_questions_ask_for_no_value(query):
    assert not asks_for_value(query)


def test_wants_newest_value_only_when_a_value_and_no_earlier_one_is_asked():
    assert wants_newest_value("How many fish do I have now?")
    assert not wants_newest_value("How many fish did I have before the trip?")
    assert not wants_newest_value("When did I buy the fish tank?")


def _v(speaker, order, coverage=1.0, value=True):
    return ValueCandidate(speaker, (order,), coverage, value)


def test_newest_value_first_reorders_one_speakers_values_in_their_positions():
    # positions 0 and 2: Ana's older and newer count; 1: someone else; 3: Ana without a value
    found = [_v("Ana", 1), _v("Bo", 9), _v("Ana", 5), _v("Ana", 7, value=False)]
    assert newest_value_first(found) == [2, 1, 0, 3]


def test_newest_value_first_needs_coverage_two_turns_and_a_speaker():
    assert newest_value_first([_v("Ana", 1), _v("Ana", 5, coverage=VALUE_UPDATE_COVERAGE / 2)]) == [0, 1]
    assert newest_value_first([_v("Ana", 1), _v("Bo", 5)]) == [0, 1]
    assert newest_value_first([_v(None, 1), _v(None, 5)]) == [0, 1]
    assert newest_value_first([_v("Ana", 1), _v("Ana", 3), _v("Ana", 2)]) == [1, 2, 0]


@pytest.mark.slow
def test_search_puts_the_newest_count_first_unless_an_earlier_one_is_asked(tmp_path):
    with Memory(tmp_path / "v.db") as mem:
        ids = mem.add_many([
            {"text": "I've added 17 new postcards to my collection since I started collecting again.",
             "speaker": "user", "session": "s1", "session_time": "2023-01-01"},
            {"text": "I've added 25 new postcards to my collection since I started collecting again!",
             "speaker": "user", "session": "s3", "session_time": "2023-06-01"},
            # the weakest turns of a small memory score 0 and are never evidence: give it some
            *({"text": text, "speaker": "user", "session": "s2", "session_time": "2023-03-01"}
              for text in ("We talked about the weather.", "My sister called.", "Lunch was pasta.")),
        ])
        question = "How many new postcards have I added to my collection since I started collecting again?"
        evidence = mem.search(question, k=5)
        assert [ev.trace_id for ev in evidence if ev.trace_id in ids[:2]] == [ids[1], ids[0]]
        assert all(ev.superseded_by is None for ev in evidence)  # reordered, not marked
        earlier = "How many new postcards had I added at first, since I started collecting again?"
        assert next(ev.trace_id for ev in mem.search(earlier, k=5) if ev.trace_id in ids[:2]) == ids[0]
