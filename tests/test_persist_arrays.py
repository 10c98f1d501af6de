"""The persisted index's arrays: ``.npy`` bytes read back as views, the plain header matched
without numpy's ast-based reader, anything else through it."""

from __future__ import annotations

import io

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from zeromem.retrieval import persist


def _npy(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=False)
    return buffer.getvalue()


def _numpy_header(blob: bytes) -> tuple:
    stream = io.BytesIO(blob)
    np.lib.format.read_magic(stream)
    shape, fortran, dtype = np.lib.format.read_array_header_1_0(stream)
    return shape, fortran, dtype, stream.tell()


DTYPES = st.sampled_from([np.int8, np.uint8, np.int32, np.int64, np.float32, np.float64, np.bool_,
                          np.dtype(">i4"), np.dtype("<U5")])


@settings(max_examples=80, deadline=None)
@given(hnp.arrays(DTYPES, hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=5)))
def test_an_array_reads_back_equal_with_the_header_numpy_reads(array):
    blob = _npy(array)
    assert persist._header(blob) == _numpy_header(blob)
    view = persist._view(blob)
    assert view.dtype == array.dtype and view.shape == array.shape
    np.testing.assert_array_equal(view, array)
    assert not view.flags.writeable  # a view of the stored bytes, copied on first write


def test_plain_headers_skip_numpy_reader_and_others_use_it(monkeypatch):
    calls = []
    real = np.lib.format.read_array_header_1_0

    def counting(stream, *args, **kwargs):
        calls.append(1)
        return real(stream, *args, **kwargs)

    monkeypatch.setattr(np.lib.format, "read_array_header_1_0", counting)
    persist._view(_npy(np.arange(12, dtype=np.int64).reshape(3, 4)))
    assert calls == []
    with pytest.raises(ValueError, match="layout"):  # Fortran order: numpy's reader, then refused
        persist._view(_npy(np.asfortranarray(np.ones((2, 3)))))
    assert calls == [1]


def test_object_arrays_are_refused():
    buffer = io.BytesIO()
    np.save(buffer, np.array(["a", 1], dtype=object), allow_pickle=True)
    with pytest.raises(ValueError, match="layout"):
        persist._view(buffer.getvalue())
