"""The int8 scan (indexes/int8_rows.py) never misses a row of the exact top k above the floor."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from zeromem.indexes.int8_rows import MIN_ROWS, Int8Rows, top_cosines
from zeromem.indexes.topk import top_indices


def _unit_rows(n: int, dim: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    rows = rng.standard_normal((n, dim)).astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def _exact(matrix, q, k, floor, allowed):
    cos = np.where(allowed, matrix @ q, -np.inf)
    return [int(i) for i in top_indices(cos, k) if cos[i] >= floor]


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10_000), k=st.integers(1, 8), floor=st.sampled_from([-1.0, 0.0, 0.2, 0.55]),
       near=st.integers(0, 6), masked=st.floats(0.0, 0.9))
def test_candidates_hold_every_exact_winner(seed, k, floor, near, masked):
    matrix = _unit_rows(3000, 32, seed)
    rng = np.random.default_rng(seed + 1)
    q = matrix[int(rng.integers(0, 3000))].copy()
    # rows close to the query (and near-ties) make the bound do its work
    for i in rng.choice(3000, near, replace=False):
        matrix[i] = q + rng.normal(0, 0.05, 32).astype(np.float32)
        matrix[i] /= np.linalg.norm(matrix[i])
    allowed = rng.random(3000) >= masked
    found = Int8Rows().candidates(matrix, q, k, floor, allowed)
    assert set(_exact(matrix, q, k, floor, allowed)) <= set(found.tolist())
    assert allowed[found].all()


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), spike=st.floats(1.0, 400.0), k=st.integers(1, 6))
def test_a_query_with_components_at_many_scales_still_finds_every_winner(seed, spike, k):
    # One large component makes the first int8 column coarse for every other one: the second
    # column and the residual term of the bound must carry them.
    matrix = _unit_rows(2500, 48, seed)
    rng = np.random.default_rng(seed + 7)
    q = rng.standard_normal(48) * rng.choice([1e-4, 1e-2, 1.0], 48)
    q[int(rng.integers(0, 48))] = spike
    q = (q / np.linalg.norm(q)).astype(np.float32)
    allowed = np.ones(2500, dtype=bool)
    found = Int8Rows().candidates(matrix, q, k, -1.0, allowed)
    assert set(_exact(matrix, q, k, -1.0, allowed)) <= set(found.tolist())


def test_the_scan_keeps_few_candidates_and_grows_with_appended_rows():
    matrix = _unit_rows(20_000, 64, 0)
    q = matrix[7]
    int8 = Int8Rows()
    allowed = np.ones(20_000, dtype=bool)
    assert len(int8.candidates(matrix[:10_000], q, 5, 0.55, allowed[:10_000])) < 20
    assert int8.nbytes == 10_000 * 64 + 10_000 * 4  # int8 rows + float32 scales
    found = int8.candidates(matrix, q, 5, 0.55, allowed)  # 10 000 rows quantized on the way
    assert 7 in found.tolist() and int8.nbytes == 20_000 * 64 + 20_000 * 4
    # an older, shorter version of the matrix reads the prefix
    assert 7 in int8.candidates(matrix[:5000], q, 5, 0.55, allowed[:5000]).tolist()


def test_top_cosines_equal_the_float32_product_where_it_matters():
    matrix = _unit_rows(9000, 48, 4)  # above MIN_ROWS: the int8 scan runs
    q = matrix[11]
    allowed = np.ones(9000, dtype=bool)
    allowed[11] = False  # the query's own row is masked out
    found = top_cosines(matrix, Int8Rows(), q, 5, 0.0, allowed)
    exact = np.where(allowed, matrix @ q, -np.inf)
    assert list(top_indices(found, 5)) == list(top_indices(exact, 5))
    best = top_indices(exact, 5)
    assert np.allclose(found[best], exact[best], atol=1e-6)
    small = top_cosines(matrix[:100], Int8Rows(), q, 5, 0.0, allowed[:100])  # below: every row
    assert np.allclose(small, np.where(allowed[:100], matrix[:100] @ q, -np.inf))


def test_a_cosine_does_not_depend_on_which_other_rows_were_candidates():
    matrix = _unit_rows(9000, 384, 6)  # the width of real vectors: BLAS kernels differ there
    q = matrix[21] + 0.5 * matrix[22] + 0.1 * _unit_rows(1, 384, 7)[0]
    q /= np.linalg.norm(q)
    allowed = np.ones(9000, dtype=bool)
    narrow = top_cosines(matrix, Int8Rows(), q, 2, 0.0, allowed)
    wide = top_cosines(matrix, Int8Rows(), q, 40, 0.0, allowed)  # many more rows scored exactly
    both = np.flatnonzero(np.isfinite(narrow) & np.isfinite(wide))
    assert 21 in both.tolist() and np.array_equal(narrow[both], wide[both])


def test_sync_quantizes_only_a_matrix_large_enough_to_be_scanned():
    int8 = Int8Rows()
    int8.sync(_unit_rows(100, 16, 1))
    assert int8.nbytes == 0  # small: the float32 product is used, no copy is kept
    int8.sync(_unit_rows(MIN_ROWS, 16, 1))
    assert int8.nbytes == MIN_ROWS * 16 + MIN_ROWS * 4


def test_appended_rows_go_into_spare_room_and_quantize_as_a_fresh_copy_would():
    matrix = _unit_rows(MIN_ROWS + 300, 16, 2)
    int8 = Int8Rows()
    int8.sync(matrix[:MIN_ROWS])
    first = int8.nbytes
    assert first == MIN_ROWS * (16 + 4)  # the first fill is sized exactly
    int8.sync(matrix[:MIN_ROWS + 100])  # full: grows by a quarter
    grown = int8.nbytes
    assert grown == int(MIN_ROWS * 1.25) * (16 + 4) and int8.count == MIN_ROWS + 100
    int8.sync(matrix)  # fits in the room made: no new buffer
    assert int8.nbytes == grown and int8.count == len(matrix)
    fresh = Int8Rows()
    fresh.sync(matrix)
    ours, ours_scale = int8._synced(matrix)
    theirs, theirs_scale = fresh._synced(matrix)
    assert np.array_equal(ours, theirs) and np.array_equal(ours_scale, theirs_scale)
    q = matrix[MIN_ROWS + 250]
    allowed = np.ones(len(matrix), dtype=bool)
    assert MIN_ROWS + 250 in int8.candidates(matrix, q, 3, 0.5, allowed).tolist()
