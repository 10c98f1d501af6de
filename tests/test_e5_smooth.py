"""SmoothQuant factors for the int8 multilingual graph (encoders/e5_smooth.py): the formula,
its guards, and that smoothing leaves the product unchanged in exact arithmetic."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from zeromem.encoders import e5_smooth
from zeromem.encoders.e5_file import Q4Matrix
from zeromem.encoders.e5_smooth import FLOOR, activation_ranges, smoothing_factors


class _Model:
    """One linear ("l0.fo") with given 4-bit weights: all smoothing_factors reads."""

    def __init__(self, matrix: Q4Matrix) -> None:
        self.matrix = matrix
        self.layers = 1

    def q4_tensor(self, name: str) -> Q4Matrix:
        return self.matrix


def _linear_names(model: _Model) -> list[str]:
    return ["l0.fo"]


def _q4(rows: int, cols: int, seed: int) -> Q4Matrix:
    """A random Q4_0 matrix in the file's layout (float16 scale, then 16 bytes of nibbles)."""
    rng = np.random.default_rng(seed)
    blocks = np.zeros((rows, cols // 32, 18), dtype=np.uint8)
    blocks[..., :2] = rng.uniform(0.01, 0.1, (rows, cols // 32, 1)).astype("<f2").view(np.uint8)
    blocks[..., 2:] = rng.integers(0, 256, (rows, cols // 32, 16))
    return Q4Matrix(blocks)


def test_factors_follow_smoothquant_rounded_to_powers_of_two(monkeypatch):
    monkeypatch.setattr(e5_smooth, "linear_names", _linear_names)
    matrix = _q4(8, 64, 0)
    ranges = {"l0.fo": np.geomspace(0.01, 1000.0, 64).astype(np.float32)}
    factors = smoothing_factors(_Model(matrix), ranges, alpha=0.8)["l0.fo"]  # type: ignore[arg-type]
    assert factors.dtype == np.float32 and factors.shape == (64,)
    assert np.array_equal(np.exp2(np.rint(np.log2(factors))), factors)  # powers of two
    columns = np.abs(_dense(matrix)).max(axis=0)
    raw = ranges["l0.fo"] ** 0.8 / columns ** 0.2
    expected = np.maximum(raw, np.median(raw))
    assert np.all(np.abs(np.log2(factors) - np.log2(expected)) <= 0.5 + 1e-6)
    # no channel is scaled above the median: factors never fall below it (rounded)
    assert factors.min() >= np.exp2(np.rint(np.log2(np.median(raw)))) - 1e-6
    # the largest channels get the largest factors
    assert factors[-1] > factors[40] > factors[0]


def test_a_silent_channel_or_zero_column_stays_finite(monkeypatch):
    monkeypatch.setattr(e5_smooth, "linear_names", _linear_names)
    matrix = _q4(4, 32, 1)
    ranges = {"l0.fo": np.zeros(32, dtype=np.float32)}
    factors = smoothing_factors(_Model(matrix), ranges)["l0.fo"]  # type: ignore[arg-type]
    assert np.all(np.isfinite(factors)) and np.all(factors > 0)
    assert FLOOR > 0


def test_activation_ranges_take_the_peak_per_channel_over_texts_and_prefixes():
    seen: list[str] = []

    def tapped(text: str) -> dict[str, np.ndarray]:
        seen.append(text)
        value = float(len(text))
        return {"l0.fo": np.array([[value, -2 * value], [0.5, 0.0]], dtype=np.float32)}

    ranges = activation_ranges(tapped, ["ab", "abcd"])
    assert seen == ["passage: ab", "query: ab", "passage: abcd", "query: abcd"]
    assert np.allclose(ranges["l0.fo"], [len("passage: abcd"), 2 * len("passage: abcd")])


def _dense(matrix: Q4Matrix) -> np.ndarray:
    from zeromem.encoders.e5_graph import dequantized
    return dequantized(matrix)


@settings(max_examples=30, deadline=None)
@given(arrays(np.float64, (3, 32), elements=st.floats(-50, 50)),
       arrays(np.float64, 32, elements=st.floats(-12, 12).map(np.exp2)))
def test_smoothing_leaves_the_exact_product_unchanged(x, factors):
    weights = _dense(_q4(5, 32, 2)).astype(np.float64)
    assert np.allclose((x / factors) @ (weights * factors).T, x @ weights.T, rtol=1e-9, atol=1e-9)
