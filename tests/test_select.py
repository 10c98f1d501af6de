import numpy as np
import pytest

from zeromem.retrieval.select import select_diverse


def test_without_diversity_it_is_a_plain_ranking_with_index_ties():
    cands = {3: (0.5, "a"), 1: (0.9, "b"), 2: (0.5, "c"), 7: (0.1, "d")}
    out = select_diverse(cands, np.zeros(8, dtype=int), 3)
    assert [n for n, _ in out] == [1, 2, 3]


def test_diversity_discounts_turns_from_an_already_used_session():
    cands = {0: (1.0, ""), 1: (0.9, ""), 2: (0.8, "")}
    session = np.array([0, 0, 1])
    assert [n for n, _ in select_diverse(cands, session, 2, diversity=0.5)] == [0, 2]
    assert [n for n, _ in select_diverse(cands, session, 2, diversity=1.0)] == [0, 1]
    with pytest.raises(ValueError):
        select_diverse(cands, session, 2, diversity=0.0)
