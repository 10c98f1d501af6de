"""Exact integer row × column products (indexes/int_product.py): ONNX Runtime and numpy agree
to the last integer, whatever block or position a row has."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zeromem.indexes import int_product
from zeromem.indexes.int_product import (
    COLUMN_LIMIT,
    OFFSET,
    from_offset,
    products,
    query_columns,
    to_offset,
)


def _data(seed: int, n: int, d: int, c: int):
    rng = np.random.default_rng(seed)
    signed = rng.integers(-128, 128, (n, d)).astype(np.int8)
    signed[0] = 127  # the extremes of both operands: the sums a saturating kernel would clip
    signed[-1] = -128
    columns = rng.integers(-COLUMN_LIMIT, COLUMN_LIMIT + 1, (d, c)).astype(np.int8)
    columns[:, 0] = COLUMN_LIMIT
    return signed, columns


def test_to_offset_adds_128_to_every_int8():
    values = np.arange(-128, 128, dtype=np.int8)
    assert np.array_equal(to_offset(values).astype(np.int16), values.astype(np.int16) + OFFSET)
    assert np.array_equal(from_offset(to_offset(values)), values)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(1, 700), d=st.sampled_from([1, 16, 384, 1100]),
       c=st.integers(1, 3))
def test_products_are_the_exact_integer_product(seed, n, d, c):
    # n crosses SMALL_ROWS (numpy below, ONNX Runtime above); d = 1100 is past float32's exact
    # range for numpy's product (it then multiplies int32)
    signed, columns = _data(seed, n, d, c)
    expected = signed.astype(np.int64) @ columns.astype(np.int64)
    assert np.array_equal(products(to_offset(signed), columns), expected)


def test_a_row_gives_the_same_integers_wherever_it_sits():
    signed, columns = _data(3, 5000, 384, 2)
    rows = to_offset(signed)
    whole = products(rows, columns)
    for start, stop in ((0, 1), (17, 18), (4095, 4100), (1234, 5000)):
        assert np.array_equal(products(rows[start:stop], columns), whole[start:stop])


def test_numpy_fallback_gives_the_same_numbers(monkeypatch):
    signed, columns = _data(5, 9000, 64, 2)  # more than one fallback block
    with_ort = products(to_offset(signed), columns)
    monkeypatch.setattr(int_product, "_session", [None])  # as if onnxruntime failed to import
    assert np.array_equal(products(to_offset(signed), columns), with_ort)
    assert products(np.zeros((0, 64), dtype=np.uint8), columns).shape == (0, 2)


def test_columns_beyond_the_limit_are_refused():
    rows = np.zeros((2, 4), dtype=np.uint8)
    with pytest.raises(ValueError, match="63"):
        products(rows, np.full((4, 1), COLUMN_LIMIT + 1, dtype=np.int8))
    with pytest.raises(ValueError, match="63"):
        products(rows, np.full((4, 1), -128, dtype=np.int8))


@pytest.mark.parametrize("dtype", [np.float32, np.int16])
def test_rows_of_another_type_are_converted_to_uint8_first(dtype):
    rows = np.full((3, 4), 130, dtype=dtype)
    columns = np.ones((4, 1), dtype=np.int8)
    assert np.array_equal(products(rows, columns), np.full((3, 1), 4 * (130 - OFFSET)))


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), spread=st.sampled_from([1e-6, 1e-2, 1.0, 1e3]))
def test_query_columns_rebuild_the_query_up_to_the_reported_remainder(seed, spread):
    rng = np.random.default_rng(seed)
    q = rng.standard_normal(384) * rng.choice([spread, 1.0], 384)
    columns, steps, residual = query_columns(q)
    assert columns.shape == (384, 2) and np.abs(columns.astype(np.int16)).max() <= COLUMN_LIMIT
    rest = q - columns.astype(np.float64) @ steps
    assert abs(np.abs(rest).sum() - residual) <= 1e-12 * max(1.0, residual)
    assert np.abs(rest).max() <= np.abs(q).max() / (2 * COLUMN_LIMIT) ** 2 * (1 + 1e-9)


def test_a_zero_query_has_zero_columns():
    columns, steps, residual = query_columns(np.zeros(8))
    assert not columns.any() and residual == 0.0 and np.all(steps > 0)


def test_a_session_that_cannot_be_built_leaves_the_numbers_to_numpy(monkeypatch):
    import onnxruntime

    def refuse(*args, **kwargs):
        raise RuntimeError("no kernel for MatMulInteger")

    monkeypatch.setattr(onnxruntime, "InferenceSession", refuse)
    assert int_product._build() is None
    signed, columns = _data(9, 50, 16, 2)
    monkeypatch.setattr(int_product, "_session", [int_product._build()])
    assert np.array_equal(products(to_offset(signed), columns), signed.astype(np.int64) @ columns.astype(np.int64))
