"""Cosine search: exact scores for every row, deterministic top-k, ANN agreeing with exact."""

import numpy as np
import pytest

from zeromem.errors import InvalidInput
from zeromem.indexes import dense
from zeromem.indexes.cells import CellIndex
from zeromem.indexes.dense import DenseIndex


def _usearch() -> None:
    """Skip without usearch; load onnxruntime first, as dense.py does (usearch loaded first
    makes later ONNX Runtime sessions in the process segfault)."""
    pytest.importorskip("onnxruntime")
    pytest.importorskip("usearch")

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
    _usearch()
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
    _usearch()
    vectors = unit_rows(2000, dim=16, seed=5)
    q = unit_rows(1, dim=16, seed=6)[0]
    first = DenseIndex(vectors, ann_threshold=100).search(q, 10)
    second = DenseIndex(vectors, ann_threshold=100).search(q, 10)
    np.testing.assert_array_equal(first[0], second[0])


def test_large_indexes_score_exactly_too():
    vectors = unit_rows(5000, dim=8, seed=7)
    q = unit_rows(1, dim=8, seed=8)[0]
    np.testing.assert_allclose(DenseIndex(vectors).scores(q), vectors @ q, atol=1e-6)


def clustered_rows(n_clusters=40, per_cluster=50, dim=32, seed=0):
    """Unit rows scattered around random centres: the shape cells are made for."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(n_clusters, dim))
    v = (np.repeat(centres, per_cluster, axis=0)
         + 0.35 * rng.normal(size=(n_clusters * per_cluster, dim))).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def test_scores_of_and_sample_scores_are_exact_cosines_of_those_rows():
    vectors = unit_rows(5000)
    q = unit_rows(1, seed=1)[0]
    index = DenseIndex(vectors)
    rows = np.array([4999, 3, 3, 1200])
    np.testing.assert_allclose(index.scores_of(q, rows), (vectors @ q)[rows], atol=1e-6)
    sample = index.sample_scores(q)
    assert 0 < sample.size < 5000
    np.testing.assert_allclose(sample, (vectors @ q)[:: 5000 // dense.DISTRIBUTION_SAMPLE], atol=1e-6)
    small = DenseIndex(vectors[:100])
    np.testing.assert_allclose(small.sample_scores(q), vectors[:100] @ q, atol=1e-6)


def test_candidates_are_the_exact_top_k_when_the_cells_would_cover_everything():
    vectors = unit_rows(300)
    q = unit_rows(1, seed=2)[0]
    idx, scores = DenseIndex(vectors).candidates(q, 10)
    assert idx.tolist() == np.argsort(-(vectors @ q), kind="stable")[:10].tolist()
    np.testing.assert_allclose(scores, np.sort(vectors @ q)[::-1][:10], atol=1e-6)


def test_cell_candidates_find_most_true_neighbours_deterministically(monkeypatch):
    monkeypatch.setattr(dense, "ROWS_PER_CELL", 50)  # 2000 rows: 40 cells, probe 8 (20%)
    monkeypatch.setattr(dense, "PROBES", 8)
    vectors = clustered_rows()
    queries = clustered_rows(seed=9)[::97]
    index = DenseIndex(vectors)
    recall = []
    for q in queries:
        idx, scores = index.candidates(q, 10)
        exact = np.argsort(-(vectors @ q), kind="stable")[:10]
        recall.append(len(set(idx.tolist()) & set(exact.tolist())) / 10)
        np.testing.assert_allclose(scores, (vectors @ q)[idx], atol=1e-6)  # re-scored exactly
        assert (np.diff(scores) <= 0).all()
    assert np.mean(recall) >= 0.9
    again = DenseIndex(vectors)
    assert all(np.array_equal(index.candidates(q, 10)[0], again.candidates(q, 10)[0]) for q in queries)


def test_cells_partition_the_rows_and_probing_every_cell_returns_them_all():
    vectors = clustered_rows(n_clusters=10, per_cluster=30)
    cells = CellIndex(vectors)
    assert sorted(cells.rows.tolist()) == list(range(len(vectors)))
    assert cells.ptr[0] == 0 and cells.ptr[-1] == len(vectors)
    q = vectors[0]
    assert cells.probe(q, probes=len(cells.centroids)).tolist() == list(range(len(vectors)))
    nearest = cells.probe(q, probes=1)
    assert 0 in nearest.tolist() and (np.diff(nearest) > 0).all()
    same = CellIndex(vectors)
    assert np.array_equal(cells.centroids, same.centroids) and np.array_equal(cells.rows, same.rows)
