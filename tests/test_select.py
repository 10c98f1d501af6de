import numpy as np
import pytest

from zeromem.retrieval.select import query_term_weights, select_evidence


def test_without_diversity_it_is_a_plain_ranking_with_index_ties():
    cands = {3: (0.5, "a"), 1: (0.9, "b"), 2: (0.5, "c"), 7: (0.1, "d")}
    out = select_evidence(cands, np.zeros(8, dtype=int), 3)
    assert [n for n, _ in out] == [1, 2, 3]


def test_diversity_discounts_turns_from_an_already_used_session():
    cands = {0: (1.0, ""), 1: (0.9, ""), 2: (0.8, "")}
    session = np.array([0, 0, 1])
    assert [n for n, _ in select_evidence(cands, session, 2, diversity=0.5)] == [0, 2]
    assert [n for n, _ in select_evidence(cands, session, 2, diversity=1.0)] == [0, 1]
    with pytest.raises(ValueError):
        select_evidence(cands, session, 2, diversity=0.0)


def test_coverage_prefers_the_turn_that_covers_what_is_still_missing():
    # Query terms a (idf 2) and b (idf 1). Turn 0 covers a; turn 1 repeats a; turn 2 covers b.
    cands = {0: (1.0, ""), 1: (0.9, ""), 2: (0.8, "")}
    terms = [frozenset({"a"}), frozenset({"a", "x"}), frozenset({"b"})]
    weights = {"a": 2.0, "b": 1.0}
    session = np.arange(3)
    plain = select_evidence(cands, session, 2)
    assert [n for n, _ in plain] == [0, 1]
    # e(1) = 0.9 + 0 (a already covered); e(2) = 0.8 + 0.3 * 1/3 = 0.9 → tie, lower index wins
    tied = select_evidence(cands, session, 2, coverage_gain=0.3, query_weights=weights, turn_terms=terms)
    assert [n for n, _ in tied] == [0, 1]
    out = select_evidence(cands, session, 3, coverage_gain=0.6, query_weights=weights, turn_terms=terms)
    # first pick: e(0) = 1 + .6·2/3 = 1.4 beats e(1) = 1.3 and e(2) = 1.0; then 0.8 + 0.2 > 0.9
    assert [n for n, _ in out] == [0, 2, 1]
    # the evidence keeps its own score; coverage only orders the selection
    assert dict(out)[2] == (0.8, "")
    with pytest.raises(ValueError):
        select_evidence(cands, session, 2, coverage_gain=-1.0)


def test_query_term_weights_are_bm25_idf_of_known_terms_once_each():
    w = query_term_weights(["a", "b", "a", "zzz"], {"a": 1, "b": 3}, n_docs=4)
    assert list(w) == ["a", "b"]
    assert w["a"] == pytest.approx(np.log(1 + 3.5 / 1.5))
    assert w["b"] == pytest.approx(np.log(1 + 1.5 / 3.5))
