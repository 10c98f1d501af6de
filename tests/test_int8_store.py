"""A scope's levels hold their vectors as int8 (indexes/int8_store.py): cosines from exact
integer products, close to float32, the same wherever a row sits, and kept through writes,
clears and a persisted round trip."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from zeromem.indexes.dense import DenseIndex
from zeromem.indexes.int8_store import Int8RowStore, quantize
from zeromem.indexes.int_product import query_columns


def _unit_rows(n: int, dim: int = 384, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    rows = rng.standard_normal((n, dim)).astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def test_quantize_maps_each_row_onto_127_steps_of_its_own_scale():
    rows = np.array([[0.5, -0.25, 0.0], [0.0, 0.0, 0.0], [-2.0, 1.0, 0.5]], dtype=np.float32)
    signed, scale = quantize(rows)
    assert signed.dtype == np.int8 and scale.dtype == np.float32
    assert signed.tolist() == [[127, -64, 0], [0, 0, 0], [-127, 64, 32]]  # 63.5 → 64 (half to even)
    assert scale[1] == 1.0  # a zero row keeps a usable scale
    assert np.allclose(signed * scale[:, None], rows, atol=scale.max() / 2)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(1, 300))
def test_cosines_are_those_of_the_dequantized_rows(seed, n):
    rows = _unit_rows(n, seed=seed)
    q = _unit_rows(1, seed=seed + 1)[0]
    store = Int8RowStore(384, rows)
    dequantized = store.get(np.arange(n)).astype(np.float64)
    # off by at most what the query's two 7-bit columns leave over: scale · 127 · ‖d‖₁
    _, _, residual = query_columns(q)
    scale = store.state()["scale"]
    assert np.all(np.abs(store.dot_all(q) - dequantized @ q) <= scale * 127 * residual + 1e-6)
    # ...and those are within the quantization step of the float32 cosines
    assert np.abs(store.dot_all(q) - rows @ q).max() < 4e-3


def test_a_row_scores_the_same_wherever_it_sits_and_however_many_rows_there_are():
    rows = _unit_rows(3000, seed=2)
    q = _unit_rows(1, seed=3)[0]
    store = Int8RowStore(384, rows)
    whole = store.dot_all(q)
    picked = np.array([2999, 5, 1234, 5])
    assert np.array_equal(store.dot(picked, q), whole[picked])
    assert np.array_equal(Int8RowStore(384, rows[5:6]).dot_all(q), whole[5:6])


def test_writes_fill_slots_in_place_and_grow_the_store():
    rows = _unit_rows(10, seed=4)
    store = Int8RowStore(384, rows[:4])
    store.set(np.array([7, 1]), rows[[7, 1]])  # past the end: the store grows to 8 slots
    assert store.size == 8
    fresh = Int8RowStore(384, rows[[0, 1, 2, 3]])
    q = rows[9]
    assert np.array_equal(store.dot(np.array([0, 1, 2, 3]), q), fresh.dot_all(q))
    assert np.array_equal(store.dot(np.array([7]), q), Int8RowStore(384, rows[[7]]).dot_all(q))
    assert np.array_equal(store.get(np.array([5])), np.zeros((1, 384), dtype=np.float32))  # never written


def test_a_quantized_dense_index_round_trips_through_its_state():
    rows = _unit_rows(60, seed=5)
    q = _unit_rows(1, seed=6)[0]
    index = DenseIndex(quantized=True)
    index.set_rows(np.arange(60), rows)
    index.clear(np.array([3, 17]))
    state = index.state()
    assert state["rows"].dtype == np.int8 and state["scale"].shape == (60,)
    loaded = DenseIndex.from_state(state, quantized=True)
    assert np.array_equal(loaded.scores(q), index.scores(q))
    assert np.array_equal(loaded.alive, index.alive)
    # a float32 state (written before int8 levels, or by a float index) is quantized on load
    from_float = DenseIndex.from_state(DenseIndex(rows).state(), quantized=True)
    assert np.array_equal(from_float.scores(q), DenseIndex(rows, quantized=True).scores(q))


def test_quantized_and_float_indexes_rank_alike():
    rows = _unit_rows(2000, seed=7)
    q = rows[11] + 0.3 * rows[12]
    float_top, _ = DenseIndex(rows).search(q, 5)
    int8_top, _ = DenseIndex(rows, quantized=True).search(q, 5)
    assert float_top[:2].tolist() == int8_top[:2].tolist() == [11, 12]
    assert DenseIndex(rows, quantized=True).state()["rows"].nbytes == 2000 * 384  # a quarter of float32


def test_a_loaded_index_takes_writes_into_its_loaded_slots():
    rows = _unit_rows(20, seed=8)
    state = DenseIndex(rows, quantized=True).state()
    for array in state.values():
        array.flags.writeable = False  # as a snapshot's arrays are: views of its bytes
    loaded = DenseIndex.from_state(state, quantized=True)
    loaded.set_rows(np.array([0, 25]), rows[[5, 6]])  # rewrite a loaded slot, append past the end
    q = rows[5]
    scores = loaded.scores(q)
    assert len(scores) == 26 and scores[0] == scores[5]
    assert scores[25] == DenseIndex(rows[[6]], quantized=True).scores(q)[0]
