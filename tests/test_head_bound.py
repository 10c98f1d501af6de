"""The head bound (indexes/head_bound.py) is never below a row's product with the query, and
the int8 scan that uses it (int8_rows.py) still finds every winner."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from zeromem.indexes import head_bound, int8_rows
from zeromem.indexes.head_bound import HEAD_DIMS, HeadBound
from zeromem.indexes.int8_rows import HEAD_FROM_CALL, Int8Rows
from zeromem.indexes.topk import top_indices
from zeromem.retrieval.footprint import deep_nbytes

DIM = HEAD_DIMS + 64  # a rest beyond the head


def _rows(n: int, rank: int, noise: float, seed: int) -> np.ndarray:
    """Unit rows mostly in a few directions (as sentence embeddings are), plus noise."""
    rng = np.random.default_rng(seed)
    basis = rng.standard_normal((rank, DIM))
    rows = rng.standard_normal((n, rank)) @ basis + noise * rng.standard_normal((n, DIM))
    rows = rows.astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def _exact(matrix, q, k, floor, allowed):
    cos = np.where(allowed, matrix @ q, -np.inf)
    return [int(i) for i in top_indices(cos, k) if cos[i] >= floor]


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), rank=st.integers(1, 200), noise=st.sampled_from([0.0, 0.05, 0.5, 3.0]),
       scale=st.sampled_from([1e-3, 1.0, 50.0]))
def test_the_bound_is_never_below_the_product(seed, rank, noise, scale):
    matrix = _rows(1500, rank, noise, seed) * np.float32(scale)  # rows of any norm
    bound = HeadBound()
    bound.advance(matrix)
    assert bound.count == len(matrix)
    rng = np.random.default_rng(seed + 3)
    queries = [matrix[int(rng.integers(0, 1500))] / scale, rng.standard_normal(DIM),
               np.eye(DIM)[DIM - 1]]  # a row, noise, a direction outside every head
    for q in queries:
        q = (q / np.linalg.norm(q)).astype(np.float32)
        exact = matrix.astype(np.float64) @ q.astype(np.float64)
        assert (bound.upper(q, len(matrix)) >= exact).all()


def test_heads_are_made_a_batch_per_call_and_cover_appended_rows(monkeypatch):
    monkeypatch.setattr(head_bound, "PROJECT_PER_CALL", 700)
    matrix = _rows(2000, 12, 0.05, 1)
    bound = HeadBound()
    counts = []
    for size in (1500, 1500, 1500, 2000):
        bound.advance(matrix[:size])
        counts.append(bound.count)
    assert counts == [700, 1400, 1500, 2000]
    q = matrix[1999]
    assert (bound.upper(q, 2000) >= matrix.astype(np.float64) @ q).all()
    assert bound.upper(q, 100).shape == (100,)  # an older, shorter matrix reads the prefix


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 10_000), k=st.integers(1, 8), floor=st.sampled_from([0.0, 0.3, 0.55, 0.8]),
       masked=st.floats(0.0, 0.9))
def test_the_scan_with_heads_finds_every_winner(seed, k, floor, masked):
    matrix = _rows(3000, 24, 0.3, seed)
    rng = np.random.default_rng(seed + 1)
    allowed = rng.random(3000) >= masked
    rows = Int8Rows()
    for _ in range(HEAD_FROM_CALL + 2):
        q = matrix[int(rng.integers(0, 3000))].copy()
        found = rows.candidates(matrix, q, k, floor, allowed)
        assert set(_exact(matrix, q, k, floor, allowed)) <= set(found.tolist())
        assert allowed[found].all()
    assert rows._head.count == 3000


def test_the_heads_prune_most_rows_of_structured_data(monkeypatch):
    matrix = _rows(4000, 16, 0.2, 5)
    seen = []
    original = int8_rows.row_dots

    def counting(rows, scale, q, blocks=None):
        seen.append(len(rows))
        return original(rows, scale, q, blocks)

    monkeypatch.setattr(int8_rows, "row_dots", counting)
    rows = Int8Rows()
    allowed = np.ones(4000, dtype=bool)
    for _ in range(HEAD_FROM_CALL):
        found = rows.candidates(matrix, matrix[11], 5, 0.55, allowed)
    assert 11 in found.tolist()
    assert seen[0] == 4000 and seen[-1] < 4000 * int8_rows.HEAD_PRUNES_BELOW


def test_the_heads_are_charged_before_they_are_made():
    matrix = _rows(int8_rows.MIN_ROWS + 10, 16, 0.2, 6)
    rows = Int8Rows()
    rows.sync(matrix)
    before = deep_nbytes(rows)
    assert before >= matrix.shape[0] * (DIM + HEAD_DIMS)  # the int8 rows and the heads to come
    for _ in range(HEAD_FROM_CALL + 1):
        rows.candidates(matrix, matrix[3], 5, 0.55, np.ones(len(matrix), dtype=bool))
    assert rows._head.count == len(matrix)
    assert deep_nbytes(rows) <= before * 1.3  # the heads' spare room is all that was not charged
