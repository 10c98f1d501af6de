"""Closure over real chat, where one person sends several messages in a row (closure.py, ``speaker``)."""

import numpy as np
import pytest

from closure_helpers import entity_turns, session_neighbours
from zeromem.retrieval import closure as C
from zeromem.retrieval.closure import closure_candidates


def _run(primary, scores, session, speaker, question_like=None):
    n = len(scores)
    unit_entities = [[] for _ in range(n)]
    next_turn, prev_turn = session_neighbours(session)
    return closure_candidates(
        primary, np.asarray(scores, dtype=float), session=np.asarray(session),
        question_like=np.asarray(question_like or [False] * n), unit_entities=unit_entities,
        entity_df=np.zeros(1), turns_of_entities=entity_turns(unit_entities), next_turn=next_turn,
        prev_turn=prev_turn, neighbours=1, bridges=0, speaker=speaker)


def test_the_reply_is_the_other_speakers_turn_after_the_burst():
    # A: 0 1 2 (a burst), B: 3
    out = _run([0], [1.0, 0, 0, 0], [0, 0, 0, 0], ["A", "A", "A", "B"], question_like=[True, False, False, False])
    assert out[3] == (pytest.approx(C.NEXT_AFTER_QUESTION_DECAY), "reply to 0")
    assert out[1] == (pytest.approx(C.CONTINUATION_DECAY), "continues 0")
    assert 2 not in out


def test_strict_alternation_gives_what_it_gave_without_speakers():
    scores, session, speaker = [0, 1.0, 0, 0], [0, 0, 0, 0], ["A", "B", "A", "B"]
    out = _run([1], scores, session, speaker)
    assert out[2] == (pytest.approx(C.NEXT_DECAY), "reply to 1")
    assert out[0] == (pytest.approx(C.PREV_DECAY), "context of 1")


def test_no_reply_past_the_session_or_the_reach():
    out = _run([0], [1.0, 0, 0], [0, 0, 1], ["A", "A", "B"])
    assert set(out) == {1}  # only the continuation: B's turn is in another session
    n = C.REPLY_REACH + 2
    out = _run([0], [1.0] + [0] * (n - 1), [0] * n, ["A"] * (n - 1) + ["B"])
    assert n - 1 not in out


def test_the_answer_to_the_question_asked_about_a_statement():
    # A states (0); B asks in a burst (1 ends with "?"); A answers (3) after B's second message (2)
    out = _run([0], [1.0, 0, 0, 0], [0] * 4, ["A", "B", "B", "A"], question_like=[False, True, False, False])
    assert out[1][1] == "reply to 0"
    assert out[3] == (pytest.approx(C.ANSWER_AFTER_QUESTION_DECAY), "answer to the question after 0")
