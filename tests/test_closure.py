"""Closure C(q) on hand-made turn sequences: replies, bridges, title links (retrieval/closure.py)."""

import numpy as np
import pytest

from closure_helpers import entity_turns, session_neighbours
from zeromem.retrieval import closure as C
from zeromem.retrieval.closure import closure_candidates


def _run(primary, scores, session, *, question_like=None, unit_entities=None, titled=None, relevance=None,
         bridges=2, neighbours=1):
    n = len(scores)
    unit_entities = unit_entities or [[] for _ in range(n)]
    n_entities = 1 + max((e for es in unit_entities for e in es), default=0)
    df = np.bincount([e for es in unit_entities for e in es], minlength=n_entities).astype(float)
    next_turn, prev_turn = session_neighbours(session)
    return closure_candidates(
        primary, np.asarray(scores, dtype=float), session=np.asarray(session),
        question_like=np.asarray(question_like or [False] * n), unit_entities=unit_entities,
        entity_df=df, turns_of_entities=entity_turns(unit_entities), next_turn=next_turn,
        prev_turn=prev_turn, neighbours=neighbours, bridges=bridges,
        titled_turns=titled, relevance=None if relevance is None else np.asarray(relevance, dtype=float))


def test_reply_and_context_inherit_a_decayed_share_within_the_session():
    out = _run([1], [0.0, 1.0, 0.0, 0.0], [0, 0, 0, 1], neighbours=1)
    assert out[2] == (pytest.approx(C.NEXT_DECAY), "reply to 1")
    assert out[0] == (pytest.approx(C.PREV_DECAY), "context of 1")
    # the next turn belongs to another session: no reply is borrowed across the boundary
    assert 3 not in _run([2], [0.0, 0.0, 1.0, 0.0], [0, 0, 0, 1])


def test_the_answer_to_a_question_inherits_more():
    out = _run([0], [1.0, 0.0], [0, 0], question_like=[True, False])
    assert out[1][0] == pytest.approx(C.NEXT_AFTER_QUESTION_DECAY)


def test_bridge_turn_shares_entities_with_two_primaries():
    # turns 0 and 1 are primary; turn 3 mentions an entity of each, turn 2 only one
    ents = [[0], [1], [0], [0, 1], [5], [6], [7], [8]]
    scores = [1.0, 0.5, 0, 0, 0, 0, 0, 0]
    out = _run([0, 1], scores, list(range(8)), unit_entities=ents, neighbours=0)
    assert set(out) == {3}
    assert out[3][0] == pytest.approx(C.BRIDGE_DECAY * 0.75)
    assert out[3][1] == "bridge between 0, 1"


def test_title_link_brings_in_the_named_episode_scaled_by_its_own_relevance():
    # turn 0 names entity 3, which has an episode of its own (turn 2, session 2)
    ents = [[3], [], [], []]
    out = _run([0], [1.0, 0, 0, 0], [0, 1, 2, 3], unit_entities=ents, titled={3: [2]},
               relevance=[1.0, 0, 0.5, 0], neighbours=0)
    assert out[2] == (pytest.approx(C.TITLE_LINK_DECAY * 0.75), "named in 0")


def test_a_weak_primary_that_a_strong_one_names_is_lifted_but_never_lowered():
    ents = [[3], [], [], []]
    # turn 2 is itself a (weak) primary: the link is worth more than its own score → offered
    out = _run([0, 2], [1.0, 0, 0.1, 0], [0, 1, 2, 3], unit_entities=ents, titled={3: [2]},
               relevance=[1.0, 0, 0.0, 0], neighbours=0, bridges=1)
    assert out[2][0] == pytest.approx(C.TITLE_LINK_DECAY * 0.5)
    # a strong primary is not offered again at a lower score
    out = _run([0, 2], [1.0, 0, 0.9, 0], [0, 1, 2, 3], unit_entities=ents, titled={3: [2]},
               relevance=[1.0, 0, 0.0, 0], neighbours=0, bridges=1)
    assert 2 not in out


def test_title_hops_do_not_depend_on_graph_bridges():
    # Bridges are off by default (RetrievalConfig.closure_graph_bridges = 0); the second hop to
    # a page titled after a named entity is not a bridge and still happens.
    ents = [[3], [], [], []]
    out = _run([0], [1.0, 0, 0, 0], [0, 1, 2, 3], unit_entities=ents, titled={3: [2]},
               relevance=[1.0, 0, 0.5, 0], neighbours=0, bridges=0)
    assert out[2][1] == "named in 0"


def test_hops_follow_only_the_entities_linking_allows():
    ents = [[3, 4], [], [], []]
    titled = {3: [2], 4: [1]}
    n = 4
    df = np.bincount([3, 4], minlength=5).astype(float)
    next_turn, prev_turn = session_neighbours([0, 1, 2, 3])
    out = closure_candidates(
        [0], np.asarray([1.0, 0, 0, 0]), session=np.arange(n), question_like=np.zeros(n, dtype=bool),
        unit_entities=ents, entity_df=df, turns_of_entities=entity_turns(ents), next_turn=next_turn,
        prev_turn=prev_turn, neighbours=0, bridges=0, titled_turns=titled,
        relevance=np.asarray([1.0, 0.5, 0.5, 0]), linking=lambda node: [3])  # 4 was a date, say
    assert set(out) == {2}


def test_graph_bridges_are_off_by_default():
    from zeromem.config import RetrievalConfig

    assert RetrievalConfig().closure_graph_bridges == 0


def test_the_hop_that_matches_what_the_source_left_open_wins():
    # Turn 0 names entities 3 and 4, each with a page (turns 1 and 2). Page 1 matches the query
    # better on its own (it repeats what turn 0 already matched); page 2 matches the rest.
    ents = [[3, 4], [], [], []]
    titled = {3: [1], 4: [2]}
    left_open = {(0, 1): 0.0, (0, 2): 1.0}
    n = 4
    df = np.bincount([3, 4], minlength=5).astype(float)
    next_turn, prev_turn = session_neighbours([0, 1, 2, 3])
    common = dict(session=np.arange(n), question_like=np.zeros(n, dtype=bool), unit_entities=ents,
                  entity_df=df, turns_of_entities=entity_turns(ents), next_turn=next_turn,
                  prev_turn=prev_turn, neighbours=0, bridges=0, titled_turns=titled,
                  relevance=np.asarray([1.0, 0.6, 0.3, 0]))
    plain = closure_candidates([0], np.asarray([1.0, 0, 0, 0]), **common)
    assert plain[1][0] > plain[2][0]
    out = closure_candidates([0], np.asarray([1.0, 0, 0, 0]), residual=lambda s, t: left_open[(s, t)], **common)
    assert out[2][0] > out[1][0]
    share = C.RESIDUAL_SHARE
    assert out[2][0] == pytest.approx(C.TITLE_LINK_DECAY * (0.5 + 0.5 * ((1 - share) * 0.3 + share * 1.0)))


def test_a_statement_asked_about_brings_in_the_answer():
    # 0 states, 1 asks about it, 2 answers: the answer inherits ANSWER_AFTER_QUESTION_DECAY
    out = _run([0], [1.0, 0.0, 0.0, 0.0], [0, 0, 0, 0], question_like=[False, True, False, False])
    assert out[2] == (pytest.approx(C.ANSWER_AFTER_QUESTION_DECAY), "answer to the question after 0")
    assert out[1][1] == "reply to 0"  # the question itself is still the plain reply
    assert 3 not in out


def test_no_answer_is_taken_when_the_next_turn_does_not_ask():
    out = _run([0], [1.0, 0.0, 0.0], [0, 0, 0], question_like=[False, False, False])
    assert 2 not in out


def test_a_question_primary_takes_its_reply_not_the_turn_after_it():
    # 0 asks, 1 answers (a question too), 2 follows: only the reply is the answer to 0
    out = _run([0], [1.0, 0.0, 0.0], [0, 0, 0], question_like=[True, True, False])
    assert out[1][0] == pytest.approx(C.NEXT_AFTER_QUESTION_DECAY)
    assert 2 not in out


def test_the_answer_stays_in_the_session_and_needs_neighbours():
    # the question is the last turn of its session: the next session's first turn answers nothing
    assert 2 not in _run([0], [1.0, 0.0, 0.0], [0, 0, 1], question_like=[False, True, False])
    assert _run([0], [1.0, 0.0, 0.0], [0, 0, 0], question_like=[False, True, False], neighbours=0) == {}


def test_an_answer_reached_twice_keeps_the_better_offer():
    # 2 answers the question after 0 (0.75 × 1.0) and is the reply to primary 3's context (0.35 × 0.5)
    out = _run([0, 3], [1.0, 0.0, 0.0, 0.5], [0, 0, 0, 0], question_like=[False, True, False, False])
    assert out[2][0] == pytest.approx(C.ANSWER_AFTER_QUESTION_DECAY)


def _hop(primary, scores, link, residual, targets):
    n = len(scores)
    next_turn, prev_turn = session_neighbours(list(range(n)))  # one turn per session: no neighbours
    return closure_candidates(
        primary, np.asarray(scores, dtype=float), session=np.arange(n),
        question_like=np.zeros(n, dtype=bool), unit_entities=[[] for _ in range(n)],
        entity_df=np.zeros(1), turns_of_entities=entity_turns([[] for _ in range(n)]),
        next_turn=next_turn, prev_turn=prev_turn, neighbours=0, bridges=0,
        residual=lambda s, t: residual[s][t], link=lambda s, t: link[s][t], hop_targets=targets)


def test_a_subject_hop_needs_both_the_shared_subject_and_the_open_part_of_the_query():
    # 0 is the first hop; 1 shares its subject and holds what it leaves open; 2 holds the open
    # part about another subject; 3 repeats the subject and adds nothing the query asks
    link = {0: {1: 0.8, 2: 0.0, 3: 0.9}}
    residual = {0: {1: 1.0, 2: 1.0, 3: 0.0}}
    out = _hop([0], [0.5, 0.1, 0.2, 0.0], link, residual, [1, 2, 3, 0])
    assert set(out) == {1}
    assert out[1] == (pytest.approx(C.SUBJECT_HOP_DECAY * 0.5 * 0.8), "shares a subject with 0")


def test_no_subject_hop_without_a_link():
    out = closure_candidates(
        [0], np.array([1.0, 0.5]), session=np.arange(2), question_like=np.zeros(2, dtype=bool),
        unit_entities=[[], []], entity_df=np.zeros(1), turns_of_entities=entity_turns([[], []]),
        next_turn=np.full(2, -1), prev_turn=np.full(2, -1), neighbours=0, bridges=0,
        residual=lambda s, t: 1.0, hop_targets=[1])
    assert out == {}
