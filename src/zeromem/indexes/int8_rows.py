"""Exact top cosines over a large float32 matrix, found by reading an int8 copy of it.

A search aligns the query with every entity name of the scope (views/graph.align_entities):
one matrix-vector product over all entity vectors, which on an entity-rich memory is tens of
megabytes per query (49 846 × 384 float32 on the HotpotQA dev pool: 12.6 ms on one thread,
bound by memory bandwidth). ``Int8Rows`` keeps each row as int8 times a per-row scale (a quarter
of the bytes), scans that, and bounds its error: with ``s_i`` the row's scale and the query
``q``, ``|row_i · q − approx_i| ≤ (s_i / 2) · ‖q‖₁`` (rounding moves each component by at most
half a step), plus a float32 summation margin. Every row whose upper bound can reach the floor
and the k-th best lower bound is a candidate; the caller scores the candidates exactly with the
float32 rows, so the result is the exact one, not an approximation (6.5 ms on the same pool).

Rows are append-only (entity vectors are), so new rows are quantized when they appear and
earlier ones are kept.
"""

from __future__ import annotations

import numpy as np

# Below this many rows the float32 product costs about as much as the int8 scan (< 2 ms).
MIN_ROWS = 8192
_BLOCK = 1024  # rows converted to float32 at a time: stays in the core's cache
_SUM_MARGIN = 1e-4  # float32 summation error of a 384-term dot product, with room


class Int8Rows:
    """An int8 copy of an append-only float32 matrix, for exact top-k / floor searches."""

    def __init__(self) -> None:
        self._state: tuple[np.ndarray, np.ndarray] = (np.zeros((0, 0), dtype=np.int8),
                                                      np.zeros(0, dtype=np.float32))

    @property
    def nbytes(self) -> int:
        rows, scale = self._state
        return int(rows.nbytes + scale.nbytes)

    def candidates(self, matrix: np.ndarray, q: np.ndarray, k: int, floor: float,
                   allowed: np.ndarray) -> np.ndarray:
        """Rows (ascending) that may be among the ``k`` largest ``matrix[i] · q`` of the
        ``allowed`` rows while reaching ``floor``: a superset of those rows, never missing one."""
        rows, scale = self._synced(matrix)
        approx = np.empty(len(rows), dtype=np.float32)
        qf = np.asarray(q, dtype=np.float32)
        for start in range(0, len(rows), _BLOCK):
            stop = start + _BLOCK
            approx[start:stop] = rows[start:stop].astype(np.float32) @ qf
        approx *= scale
        slack = scale * (0.5 * float(np.abs(qf).sum())) + _SUM_MARGIN
        lower = np.where(allowed, approx - slack, -np.inf)
        upper = np.where(allowed, approx + slack, -np.inf)
        bar = floor
        if 0 < k <= int(allowed.sum()):
            bar = max(bar, float(np.partition(lower, len(lower) - k)[len(lower) - k]))
        return np.flatnonzero(upper >= bar)

    def sync(self, matrix: np.ndarray) -> None:
        """Quantize the rows of ``matrix`` not held yet, if it is large enough to be scanned
        (done as rows are added, so that the scope's measured size includes the copy)."""
        if len(matrix) >= MIN_ROWS:
            self._synced(matrix)

    def _synced(self, matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The int8 rows and scales of every row of ``matrix`` (new rows quantized now)."""
        rows, scale = self._state
        if len(rows) and rows.shape[1] != matrix.shape[1]:
            rows, scale = self._state = (np.zeros((0, matrix.shape[1]), dtype=np.int8),
                                         np.zeros(0, dtype=np.float32))
        if len(rows) >= len(matrix):  # rows are only appended: an older version is a prefix
            return rows[:len(matrix)], scale[:len(matrix)]
        fresh = np.asarray(matrix[len(rows):], dtype=np.float32)
        fresh_scale = (np.abs(fresh).max(axis=1) / 127.0).astype(np.float32)
        step = np.where(fresh_scale > 0, fresh_scale, 1.0)[:, None]
        fresh_rows = np.clip(np.rint(fresh / step), -127, 127).astype(np.int8)
        # A new tuple, assigned at once: a search reading the old one is not disturbed.
        self._state = (np.concatenate([rows.reshape(-1, matrix.shape[1]), fresh_rows]),
                       np.concatenate([scale, fresh_scale]))
        return self._state


def top_cosines(matrix: np.ndarray, int8: Int8Rows, q: np.ndarray, k: int, floor: float,
                allowed: np.ndarray) -> np.ndarray:
    """Every row's ``row · q`` where it can matter, -inf elsewhere: exact for each of the ``k``
    best ``allowed`` rows that reach ``floor`` (and for any other row the scan kept). Below
    ``MIN_ROWS`` rows the float32 product is computed for all of them."""
    if len(matrix) < MIN_ROWS:
        return np.where(allowed, matrix @ q, -np.inf).astype(np.float32)
    rows = int8.candidates(matrix, q, k, floor, allowed)
    out = np.full(len(matrix), -np.inf, dtype=np.float32)
    out[rows] = matrix[rows] @ q
    return out

