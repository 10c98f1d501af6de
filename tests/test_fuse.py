import numpy as np

from zeromem.indexes.topk import top_indices
from zeromem.retrieval.fuse import fuse, normalize


def test_normalize_sparse_scores_divides_by_max():
    assert np.allclose(normalize(np.array([0, 0, 0, 2.0, 4.0])), [0, 0, 0, 0.5, 1.0])


def test_normalize_dense_scores_is_relative_to_median():
    out = normalize(np.array([0.2, 0.3, 0.4, 0.6]))  # median 0.35
    assert np.allclose(out, [0, 0, 0.05 / 0.25, 1.0])


def test_normalize_flat_scores_contribute_nothing():
    assert not normalize(np.full(4, 0.7)).any()
    assert normalize(np.array([])).size == 0


def test_fuse_is_weighted_sum():
    views = {"graph": np.array([1.0, 0.0]), "hierarchy": np.array([0.0, 1.0])}
    assert np.allclose(fuse(views, {"graph": 0.6, "hierarchy": 0.4}), [0.6, 0.4])
    assert np.allclose(fuse(views, {"graph": 0.0, "hierarchy": 1.0}), [0.0, 1.0])


def test_top_indices_breaks_ties_by_index():
    assert list(top_indices(np.array([0.5, 0.9, 0.5, 0.9]), 3)) == [1, 3, 0]
    assert top_indices(np.array([1.0]), 0).size == 0


def test_partial_top_indices_equals_the_full_sort_prefix_even_with_ties():
    rng = np.random.default_rng(7)
    for _ in range(50):
        scores = rng.integers(0, 5, size=200).astype(float)  # many ties
        full = np.lexsort((np.arange(scores.size), -scores))
        for k in (1, 3, 10, 49):
            assert list(top_indices(scores, k)) == list(full[:k])


def test_fast_median_equals_numpy_median():
    from zeromem.retrieval.fuse import _median

    rng = np.random.default_rng(3)
    for size in (1, 2, 7, 8, 101):
        values = rng.normal(size=size)
        assert _median(values) == np.median(values)


def test_top_indices_of_mostly_zero_scores_equals_the_full_sort_prefix():
    rng = np.random.default_rng(11)
    for _ in range(50):
        scores = np.zeros(1000)
        hits = rng.choice(1000, size=rng.integers(1, 120), replace=False)
        scores[hits] = rng.integers(1, 4, size=hits.size)  # few positives, many ties
        full = np.lexsort((np.arange(scores.size), -scores))
        for k in (1, 5, 20, 200):
            assert list(top_indices(scores, k)) == list(full[:k])


def test_rescale_with_the_distributions_own_constants_is_normalize():
    from zeromem.retrieval.fuse import floor_of, rescale

    rng = np.random.default_rng(5)
    for scores in (rng.normal(size=101), np.maximum(rng.normal(size=100), 0) * (rng.random(100) < 0.2)):
        assert np.array_equal(rescale(scores, floor_of(scores), scores.max()), normalize(scores))
    assert not rescale(np.array([0.3, 0.5]), 0.6, 0.6).any()
