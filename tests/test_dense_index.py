"""Cosine search: exact scores for every row, deterministic top-k, ANN agreeing with exact."""

import numpy as np
import pytest

from zeromem.errors import InvalidInput
from zeromem.indexes.dense import DenseIndex


def unit_rows(n, dim=32, seed=0):
    rng = np.random.default_rng(seed)
    v = rng.normal(size=(n, dim)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def test_scores_are_exact_cosines_for_every_row():
    vectors = unit_rows(50)
    q = unit_rows(1, seed=1)[0]
    index = DenseIndex(vectors)
    np.testing.assert_allclose(index.scores(q), vectors @ q, atol=1e-6)
    np.testing.assert_allclose(index.scores(q * 3), vectors @ q, atol=1e-6)  # query norm ignored


def test_rows_are_normalized_and_zero_rows_never_match():
    vectors = np.array([[3, 0], [0, 0], [0, 2]], dtype=np.float32)
    index = DenseIndex(vectors)
    np.testing.assert_allclose(index.scores(np.array([1, 1])), [0.7071068, 0, 0.7071068], rtol=1e-6)
    assert index.search(np.array([1, 1]), 3)[0].tolist() == [0, 2, 1]  # tie by index


def test_search_is_best_first_and_bounded_by_k():
    vectors = unit_rows(100)
    q = vectors[42]
    idx, scores = DenseIndex(vectors).search(q, 5)
    assert idx[0] == 42 and len(idx) == 5
    assert np.all(np.diff(scores) <= 0)


def test_a_query_of_the_wrong_dimension_is_invalid_input():
    with pytest.raises(InvalidInput, match="dimension"):
        DenseIndex(unit_rows(3, dim=8)).scores(np.ones(4))


def test_an_index_without_vectors_scores_zero():
    assert DenseIndex(np.zeros((3, 0), dtype=np.float32)).scores(np.ones(384)).tolist() == [0, 0, 0]
    assert DenseIndex(np.zeros((0, 8), dtype=np.float32)).search(np.ones(8), 3)[0].size == 0


def test_ann_search_above_the_threshold_agrees_with_exact_search():
    pytest.importorskip("usearch")
    vectors = unit_rows(3000, dim=48, seed=3)
    queries = unit_rows(40, dim=48, seed=4)
    ann = DenseIndex(vectors, ann_threshold=1000)
    exact = DenseIndex(vectors, ann_threshold=10**9)
    recall = []
    for q in queries:
        got, got_scores = ann.search(q, 10)
        want, _ = exact.search(q, 10)
        recall.append(len(set(got) & set(want)) / 10)
        np.testing.assert_allclose(got_scores, vectors[got] @ q, atol=1e-6)  # exact re-scores
        assert np.all(np.diff(got_scores) <= 0)
    assert ann.uses_ann and not exact.uses_ann
    assert np.mean(recall) >= 0.95


def test_ann_results_are_deterministic_across_builds():
    pytest.importorskip("usearch")
    vectors = unit_rows(2000, dim=16, seed=5)
    q = unit_rows(1, dim=16, seed=6)[0]
    first = DenseIndex(vectors, ann_threshold=100).search(q, 10)
    second = DenseIndex(vectors, ann_threshold=100).search(q, 10)
    np.testing.assert_array_equal(first[0], second[0])


def test_large_indexes_score_exactly_too():
    vectors = unit_rows(5000, dim=8, seed=7)
    q = unit_rows(1, dim=8, seed=8)[0]
    np.testing.assert_allclose(DenseIndex(vectors).scores(q), vectors @ q, atol=1e-6)
