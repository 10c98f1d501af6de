"""Prepacked blocks of rows (indexes/packed_blocks.py): the same integers as the per-call
product, before and after packing, after rows are rewritten, and where a block cannot be packed."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zeromem.indexes import packed_blocks
from zeromem.indexes.int8_store import Int8RowStore
from zeromem.indexes.int_product import COLUMN_LIMIT, OFFSET, to_offset
from zeromem.indexes.packed_blocks import BLOCK_ROWS, PACK_FROM_CALL, PACK_PER_CALL, STALE_LIMIT, PackedBlocks
from zeromem.retrieval.footprint import deep_nbytes


def _rows(seed: int, n: int, d: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    signed = rng.integers(-127, 128, (n, d)).astype(np.int8)
    signed[0] = 127  # the extremes a saturating kernel would clip
    signed[1] = -127
    return to_offset(signed)


def _columns(seed: int, d: int, c: int) -> np.ndarray:
    rng = np.random.default_rng(seed + 1)
    columns = rng.integers(-COLUMN_LIMIT, COLUMN_LIMIT + 1, (d, c)).astype(np.int8)
    columns[:, 0] = COLUMN_LIMIT
    return columns


def _expected(rows: np.ndarray, columns: np.ndarray) -> np.ndarray:
    return (rows.astype(np.int64) - OFFSET) @ columns.astype(np.int64)


def _products(blocks: PackedBlocks, rows: np.ndarray, columns: np.ndarray) -> np.ndarray:
    correction = OFFSET * columns.astype(np.int64).sum(axis=0)
    return blocks.products(np.ascontiguousarray(rows), columns, correction)


@settings(max_examples=12, deadline=None)
@given(seed=st.integers(0, 10_000), extra=st.integers(0, BLOCK_ROWS + 7), d=st.sampled_from([4, 48, 384]),
       c=st.integers(1, 3))
def test_packed_products_are_the_exact_integer_product(seed, extra, d, c):
    rows, columns = _rows(seed, BLOCK_ROWS + extra, d), _columns(seed, d, c)
    blocks = PackedBlocks()
    for _ in range(PACK_FROM_CALL + 1):  # before packing, then packed
        assert np.array_equal(_products(blocks, rows, columns), _expected(rows, columns))
    assert blocks.native_nbytes() > 0


def test_nothing_is_packed_before_the_second_product_but_every_full_block_is_charged():
    rows, columns = _rows(1, 2 * BLOCK_ROWS + 9, 16), _columns(1, 16, 2)
    blocks = PackedBlocks()
    blocks.expect(len(rows), 16)
    charged = 2 * packed_blocks._NATIVE_COPIES * BLOCK_ROWS * 16
    assert blocks.native_nbytes() == charged  # what the cache measures before any search
    _products(blocks, rows, columns)
    assert not any(blocks._blocks) and blocks.native_nbytes() == charged
    _products(blocks, rows, columns)
    assert all(blocks._blocks) and blocks.native_nbytes() == charged
    small = PackedBlocks()
    small.expect(BLOCK_ROWS - 1, 16)
    assert small.native_nbytes() == 0


def test_a_large_matrix_is_packed_a_few_blocks_per_product():
    blocks_in_matrix = 2 * PACK_PER_CALL + 1
    rows, columns = _rows(6, blocks_in_matrix * BLOCK_ROWS + 11, 8), _columns(6, 8, 1)
    blocks = PackedBlocks()
    packed = []
    for _ in range(PACK_FROM_CALL + 3):
        assert np.array_equal(_products(blocks, rows, columns), _expected(rows, columns))
        packed.append(sum(block is not None for block in blocks._blocks))
    assert packed == [0] * (PACK_FROM_CALL - 1) + [PACK_PER_CALL, 2 * PACK_PER_CALL] + [blocks_in_matrix] * 2


def test_rewritten_rows_are_taken_from_the_matrix_then_repacked():
    d = 32
    rows, columns = _rows(2, 2 * BLOCK_ROWS + 5, d), _columns(2, d, 2)
    blocks = PackedBlocks()
    for _ in range(PACK_FROM_CALL):
        _products(blocks, rows, columns)
    rng = np.random.default_rng(9)
    few = np.array([3, 4100, 4101, 2 * BLOCK_ROWS + 1])  # two blocks and the tail
    blocks.rewritten(few)
    rows[few] = to_offset(rng.integers(-127, 128, (len(few), d)).astype(np.int8))
    assert np.array_equal(_products(blocks, rows, columns), _expected(rows, columns))
    assert blocks._blocks[0].stale == {3} and blocks._blocks[1].stale == {4, 5}
    many = np.arange(10, 10 + STALE_LIMIT + 1)  # past the limit: block 0 is packed again
    blocks.rewritten(many)
    rows[many] = to_offset(rng.integers(-127, 128, (len(many), d)).astype(np.int8))
    assert blocks._blocks[0] is None
    assert np.array_equal(_products(blocks, rows, columns), _expected(rows, columns))
    assert blocks._blocks[0] is not None and not blocks._blocks[0].stale


def test_a_block_holding_minus_128_is_not_packed_and_stays_exact():
    rows, columns = _rows(3, 2 * BLOCK_ROWS, 8), _columns(3, 8, 2)
    rows[BLOCK_ROWS + 7, 2] = 0  # int8 −128
    blocks = PackedBlocks()
    for _ in range(PACK_FROM_CALL + 1):
        assert np.array_equal(_products(blocks, rows, columns), _expected(rows, columns))
    assert blocks._blocks[0] is not None and blocks._blocks[1] is None


def test_without_onnxruntime_the_per_call_product_answers(monkeypatch):
    monkeypatch.setattr(packed_blocks, "_packer_state", [None])
    rows, columns = _rows(4, BLOCK_ROWS + 3, 8), _columns(4, 8, 2)
    blocks = PackedBlocks()
    for _ in range(PACK_FROM_CALL + 1):
        assert np.array_equal(_products(blocks, rows, columns), _expected(rows, columns))
    assert blocks.native_nbytes() == 0  # nothing will be packed


def test_a_level_scores_the_same_packed_and_its_footprint_counts_the_blocks():
    rng = np.random.default_rng(5)
    vectors = rng.standard_normal((BLOCK_ROWS + 100, 64)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    store = Int8RowStore(64, vectors)
    q = vectors[7]
    charged = packed_blocks._NATIVE_COPIES * BLOCK_ROWS * 64
    plain = Int8RowStore(64, vectors)
    plain._blocks.expect(0, 64)  # as if nothing could be packed
    assert deep_nbytes(store) == pytest.approx(deep_nbytes(plain) + charged, abs=4096)  # before any search
    first = store.dot_all(q)
    measured = deep_nbytes(store)
    for _ in range(PACK_FROM_CALL):
        assert np.array_equal(store.dot_all(q), first)
    assert store._blocks._blocks[0] is not None
    assert deep_nbytes(store) == pytest.approx(measured, abs=4096)  # packing did not change the measure
    # a write into a packed block shows in the next product
    store.set(np.array([5]), vectors[[9]])
    state = store.state()
    assert np.array_equal(store.dot_all(q), Int8RowStore(64, state["rows"], state["scale"]).dot_all(q))
    assert store.dot(np.array([5]), q)[0] == store.dot_all(q)[5]
