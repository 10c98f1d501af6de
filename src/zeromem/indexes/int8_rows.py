"""Exact top cosines over a large float32 matrix, found by reading an int8 copy of it.

A search aligns the query with every entity name of the scope (views/graph.align_entities):
one matrix-vector product over all entity vectors, which on an entity-rich memory is tens of
megabytes per query (49 846 × 384 float32 on the HotpotQA dev pool: 12.6 ms on one thread of
an AVX2 host, bound by memory bandwidth). ``Int8Rows`` keeps each row as int8 times a per-row
scale (a quarter of the bytes) and bounds the error of what it computes from them.

The query is written as two int8 columns, ``q ≈ a·q₁ + b·q₂`` (``q₁`` rounds ``q`` to 63
steps either side, ``q₂`` the remainder to 63 finer ones: 7-bit columns keep the product exact
on CPUs without VNNI, see int_product.py), so that the scan is an exact integer product
(int_product.py: ONNX Runtime's VNNI kernels, ~1 ms for the pool's 49 846 rows; numpy's
float product of int8 rows took 3–4.5 ms). With ``r_i`` the int8 row, ``s_i`` its scale and
``d = q − a·q₁ − b·q₂`` (each component at most ``b/2``):

    |row_i · q − s_i·(a·r_i·q₁ + b·r_i·q₂)| ≤ (s_i / 2)·‖q‖₁ + s_i·127·‖d‖₁

(rounding moves each row component by at most half a step, and ``|r_i · d| ≤ 127·‖d‖₁``), plus a
float32 summation margin. Every row whose upper bound can reach the floor and the k-th best
lower bound is a candidate; the caller scores the candidates exactly with the float32 rows, so
the result is the exact one, not an approximation.

Rows are append-only (entity vectors are), so new rows are quantized when they appear and
earlier ones are kept: they go into spare room at the end of the buffer, which grows by a
quarter when full, so a write that adds a few entities does not copy the whole copy.
"""

from __future__ import annotations

import numpy as np

from .head_bound import HeadBound
from .int_product import dot_slack, offset_rows, row_dots

# Below this many rows the float32 product costs about as much as the int8 scan (< 2 ms).
MIN_ROWS = 8192
_SUM_MARGIN = 1e-4  # float32 summation error of a 384-term dot product, with room
_GROWTH = 1.25  # spare room made when the buffer is full (amortized copies; ≤ 25 % unused)
HEAD_FROM_CALL = 2  # a scope searched once does not pay for the heads (~0.5 ms per 1 000 rows)
HEAD_PRUNES_BELOW = 0.25  # share of rows past which the head bound is not worth a gather


class Int8Rows:
    """An int8 copy of an append-only float32 matrix, for exact top-k / floor searches. Rows are
    held offset-binary (uint8 = int8 + 128: int_product.py)."""

    def __init__(self) -> None:
        # (uint8 buffer, scale buffer, rows filled): rows past the count are spare room
        self._state: tuple[np.ndarray, np.ndarray, int] = (np.zeros((0, 0), dtype=np.uint8),
                                                           np.zeros(0, dtype=np.float32), 0)
        self._head = HeadBound()  # the rows' heads: which rows can reach a floor (head_bound.py)
        self._calls = 0

    @property
    def nbytes(self) -> int:
        """Bytes held, spare room included."""
        rows, scale, _count = self._state
        return int(rows.nbytes + scale.nbytes)

    @property
    def count(self) -> int:
        """Rows quantized so far."""
        return self._state[2]

    def candidates(self, matrix: np.ndarray, q: np.ndarray, k: int, floor: float,
                   allowed: np.ndarray) -> np.ndarray:
        """Rows (ascending) that may be among the ``k`` largest ``matrix[i] · q`` of the
        ``allowed`` rows while reaching ``floor``: a superset of those rows, never missing one.

        From the second call on, the rows get heads (head_bound.py) a few thousand per call;
        once every row has one, only the rows whose head bound reaches the floor are scanned
        in int8 — unless that is more than ``HEAD_PRUNES_BELOW`` of them."""
        rows, scale = self._synced(matrix)
        self._calls += 1
        reach = None
        if self._calls >= HEAD_FROM_CALL:
            self._head.advance(matrix)
            if self._head.count >= len(rows):
                near = np.flatnonzero((self._head.upper(q, len(rows)) >= floor) & allowed)
                if len(near) <= HEAD_PRUNES_BELOW * len(rows):
                    reach = near
        if reach is None:
            approx, residual = row_dots(rows, scale, q)
            slack = self._slack(scale, q, residual)
            # Only rows whose upper bound reaches the floor can qualify (a handful of the
            # scope's rows), and the k-th best lower bound matters only where k of them reach
            # the floor too: both are found among those rows, not by a pass over all of them.
            reach = np.flatnonzero((approx + slack >= floor) & allowed)
            approx, slack = approx[reach], slack[reach]
        else:
            approx, residual = row_dots(rows[reach], scale[reach], q)
            slack = self._slack(scale[reach], q, residual)
        upper = approx + slack
        keep = upper >= floor
        reach, approx, slack, upper = reach[keep], approx[keep], slack[keep], upper[keep]
        bar = floor
        if k > 0:
            lower = approx - slack
            if int((lower >= floor).sum()) >= k:
                bar = max(bar, float(np.partition(lower, len(lower) - k)[len(lower) - k]))
        return reach[upper >= bar]

    @staticmethod
    def _slack(scale: np.ndarray, q: np.ndarray, residual: float) -> np.ndarray:
        return dot_slack(scale, q, residual) + _SUM_MARGIN

    def sync(self, matrix: np.ndarray) -> None:
        """Quantize the rows of ``matrix`` not held yet, if it is large enough to be scanned
        (done as rows are added, so that the scope's measured size includes the copy)."""
        if len(matrix) >= MIN_ROWS:
            self._synced(matrix)
            self._head.expect(len(matrix), matrix.shape[1])

    def _synced(self, matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The (offset-binary) int8 rows and scales of every row of ``matrix`` (new rows quantized now)."""
        rows, scale, count = self._state
        dim = matrix.shape[1]
        if rows.shape[1] != dim:
            rows, scale, count = (np.zeros((0, dim), dtype=np.uint8), np.zeros(0, dtype=np.float32), 0)
        wanted = len(matrix)
        if count >= wanted:  # rows are only appended: an older version is a prefix
            return rows[:wanted], scale[:wanted]
        if wanted > len(rows):
            # The first fill is sized exactly (a loaded scope may never grow); later ones leave room.
            room = wanted if count == 0 else max(wanted, int(len(rows) * _GROWTH))
            grown = np.zeros((room, dim), dtype=np.uint8)
            grown_scale = np.zeros(room, dtype=np.float32)
            grown[:count] = rows[:count]
            grown_scale[:count] = scale[:count]
            rows, scale = grown, grown_scale
        # Written past the filled count only: a search reading a shorter prefix is not disturbed,
        # and two threads filling the same rows write the same values.
        rows[count:wanted], scale[count:wanted] = offset_rows(matrix[count:wanted])
        self._state = (rows, scale, wanted)
        return rows[:wanted], scale[:wanted]


def top_cosines(matrix: np.ndarray, int8: Int8Rows, q: np.ndarray, k: int, floor: float,
                allowed: np.ndarray) -> np.ndarray:
    """Every row's ``row · q`` where it can matter, -inf elsewhere: exact for each of the ``k``
    best ``allowed`` rows that reach ``floor`` (and for any other row the scan kept). Below
    ``MIN_ROWS`` rows the float32 product is computed for all of them."""
    if len(matrix) < MIN_ROWS:
        return np.where(allowed, matrix @ q, -np.inf).astype(np.float32)
    rows = int8.candidates(matrix, q, k, floor, allowed)
    out = np.full(len(matrix), -np.inf, dtype=np.float32)
    # einsum, not a BLAS product: it rounds a row the same however many candidates there are
    # (a BLAS kernel rounds by position), so which rows the bound kept never shows in a cosine
    out[rows] = np.einsum("ij,j->i", matrix[rows], np.asarray(q, dtype=np.float32))
    return out

