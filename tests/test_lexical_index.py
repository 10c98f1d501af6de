"""BM25 over pre-tokenized units: the Lucene formula, full score vectors, deterministic top-k."""

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from zeromem.indexes.lexical import LexicalIndex

DOCS = [["pottery", "class"], ["pottery", "kiln", "kiln"], [], ["support", "group"]]


def lucene_bm25(tf, doc_len, df, n_docs, avgdl, k1=1.2, b=0.75):
    idf = math.log(1 + (n_docs - df + 0.5) / (df + 0.5))
    return idf * tf / (tf + k1 * (1 - b + b * doc_len / avgdl))


def test_scores_match_a_hand_computed_lucene_bm25():
    index = LexicalIndex(DOCS)
    n, avgdl = 3, 7 / 3  # Lucene counts only documents that have tokens
    expected = [lucene_bm25(1, 2, 2, n, avgdl),
                lucene_bm25(1, 3, 2, n, avgdl) + lucene_bm25(2, 3, 1, n, avgdl), 0, 0]
    np.testing.assert_allclose(index.scores(["pottery", "kiln"]), expected, rtol=1e-5)


def test_an_empty_document_does_not_change_the_scores_of_the_others():
    with_empty = LexicalIndex(DOCS).scores(["pottery"])
    without = LexicalIndex([d for d in DOCS if d]).scores(["pottery"])
    np.testing.assert_array_equal(np.delete(with_empty, 2), without)


def test_scores_cover_every_document_and_are_float32():
    scores = LexicalIndex(DOCS).scores(["support"])
    assert scores.shape == (4,) and scores.dtype == np.float32
    assert scores[3] > 0 and not scores[:3].any()


def test_unknown_and_empty_queries_score_zero():
    index = LexicalIndex(DOCS)
    assert not index.scores(["unseen"]).any()
    assert not index.scores([]).any()
    assert index.search(["unseen"], 3)[0].size == 0


def test_search_is_best_first_with_ties_in_index_order_and_only_matches():
    index = LexicalIndex([["a"], ["b"], ["a"], ["a"]])
    idx, scores = index.search(["a"], 10)
    assert idx.tolist() == [0, 2, 3]
    assert np.all(scores == scores[0]) and scores.dtype == np.float32
    assert index.search(["a"], 2)[0].tolist() == [0, 2]


def test_an_empty_index_answers_with_empty_results():
    for index in (LexicalIndex([]), LexicalIndex([[], []])):
        assert index.scores(["a"]).shape == (len(index),)
        assert index.search(["a"], 5)[0].size == 0


words = st.sampled_from(["a", "b", "c", "d", "e"])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(words, max_size=6), max_size=12), st.lists(words, max_size=4),
       st.integers(1, 15))
def test_search_agrees_with_sorting_the_full_score_vector(docs, query, k):
    index = LexicalIndex(docs)
    scores = index.scores(query)
    idx, top = index.search(query, k)
    expected = [i for i in sorted(range(len(docs)), key=lambda i: (-scores[i], i)) if scores[i] > 0][:k]
    assert idx.tolist() == expected
    np.testing.assert_array_equal(top, scores[idx])


edits = st.lists(st.tuples(st.integers(0, 7), st.lists(words, max_size=5)), max_size=40)


@settings(max_examples=60, deadline=None)
@given(edits=edits, query=st.lists(words, min_size=1, max_size=3), merge_min=st.sampled_from([1, 3, 4096]))
def test_postings_merged_or_not_score_like_an_index_built_from_the_final_documents(edits, query, merge_min):
    """Writes, rewrites and removals, with the base/delta merge forced early or never: the scores
    equal those of an index built at once from the documents that are left, and a snapshot
    (``state`` / ``from_state``) scores the same too."""
    import zeromem.indexes.lexical as lexical

    saved = lexical.MERGE_MIN
    lexical.MERGE_MIN = merge_min
    try:
        index = LexicalIndex()
        final: dict[int, list[str]] = {}
        for slot, tokens in edits:
            if tokens:
                index.set_document(slot, index.vocabulary.encode(tokens))
                final[slot] = tokens
            else:
                index.remove_document(slot)
                final.pop(slot, None)
        size = max([slot + 1 for slot, _ in edits], default=0)
        fresh = LexicalIndex([final.get(slot, []) for slot in range(size)])
        got = index.scores(query)
        padded = np.zeros(max(size, len(got)), dtype=np.float32)
        padded[:len(got)] = got
        expected = np.zeros_like(padded)
        expected[:size] = fresh.scores(query)
        np.testing.assert_allclose(padded, expected, rtol=1e-6)
        restored = LexicalIndex.from_state(index.state(), index.vocabulary)
        np.testing.assert_array_equal(restored.scores(query), got)
        for token in "abcdef":  # "f" is in no document
            holders = sorted(slot for slot, tokens in final.items() if token in tokens)
            assert sorted(index.documents(token).tolist()) == holders
            assert sorted(restored.documents(token).tolist()) == holders
    finally:
        lexical.MERGE_MIN = saved
