"""An upper bound of ``row · q`` for every row of a large matrix, from a third of its bytes.

Entity alignment needs the rows whose cosine with the query can reach a floor (int8_rows.py):
a handful of a scope's tens of thousands of entity names. Reading every int8 row for that is
~19 MB a query on the HotpotQA dev pool (memory-bound: ~1.2 ms). Most of an embedding's
energy lies in a few directions: on that pool the 128 leading principal directions of the
entity vectors hold 80 % of it. With ``V`` orthonormal (those directions first), ``h = Vₕᵀ r``
a row's head and ``t_r = ‖r − Vₕ h‖`` the norm of the rest (Cauchy–Schwarz on the rest):

    row · q = h · Vₕᵀq + (rest of r) · (rest of q) ≤ h · Vₕᵀq + t_r · t_q.

The heads are held as int8 (128 bytes a row, scanned as int_product.py does, with the same
error bound), so the scan reads a third of the bytes; only the rows whose bound reaches the
floor (0.4 % of the pool's rows at 128 directions, 2.8 % at 96) are scanned in full.

Exactness: the bound holds for any orthonormal ``V``, so the directions only decide how much is
pruned, never what is found; they are taken once, from an evenly spaced sample of the rows at
the time (``BASIS_SAMPLE``), and kept for the rows added later. Heads are computed in float32
(float64 costs 6× as much): each head component is then off by at most ``d·u·‖r‖`` (``u`` the
float32 unit roundoff), which enters the bound as ``ROUNDING · ‖r‖ · ‖Vₕᵀq‖`` and lowers the
head norm used for ``t_r`` by as much, so ``t_r`` is an upper bound as well.
"""

from __future__ import annotations

import threading

import numpy as np

from .growable import Growable
from .int_product import dot_slack, offset_rows, row_dots
from .packed_blocks import PackedBlocks

HEAD_DIMS = 128
BASIS_SAMPLE = 4096  # rows whose second moment gives the directions (~35 ms at 384 dims)
PROJECT_PER_CALL = 16_384  # rows projected per call until all are (~25 ms): no one search pays for all
# float32 error of a head, per unit of ‖r‖: √m · d · 2⁻²⁴ for the sums, plus the rounding of the
# directions themselves (√m · 2⁻²⁴), with room (1.6e-4 for m = 128, d = 384)
_ROUNDING_PER_TERM = 2.0 ** -24 * 1.5
_SUM_MARGIN = 1e-4  # the float64 arithmetic of the bound itself, with room
_BYTES_PER_ROW = 4 + 8 + 8  # a head's scale, rest norm and norm


class HeadBound:
    """The int8 heads and rest norms of an append-only float32 matrix's rows."""

    def __init__(self) -> None:
        self._basis: np.ndarray | None = None  # [d, m] float64, orthonormal columns
        self._basis32: np.ndarray | None = None
        self._heads = Growable(np.uint8, width=0)  # offset-binary int8 heads
        self._scale = Growable(np.float32)
        self._rest = Growable(np.float64)  # upper bound of each row's rest norm
        self._norm = Growable(np.float64)  # ‖r‖ of each row
        self._expected = 0  # rows of the matrix, as its owner last reported
        self._blocks = PackedBlocks()
        self._lock = threading.Lock()

    def expect(self, rows: int, width: int) -> None:
        """The matrix now has ``rows`` rows of ``width``: what ``native_nbytes`` charges for."""
        self._expected = rows
        self._blocks.expect(rows, min(HEAD_DIMS, width))

    def native_nbytes(self) -> int:
        """The bytes of the heads not made yet (their packed blocks are charged by
        ``PackedBlocks``): a scope is measured with its heads from its first measure on."""
        return max(0, self._expected - self._scale.capacity) * (HEAD_DIMS + _BYTES_PER_ROW)

    @property
    def count(self) -> int:
        """Rows with a head so far."""
        return self._scale.size

    def advance(self, matrix: np.ndarray) -> None:
        """Project up to ``PROJECT_PER_CALL`` of the rows not projected yet (the directions are
        found first, from the rows there are)."""
        with self._lock:
            if self._basis is None or self._basis.shape[0] != matrix.shape[1]:
                self._start(matrix)
            start = self.count
            stop = min(len(matrix), start + PROJECT_PER_CALL)
            if stop <= start:
                return
            rows = np.asarray(matrix[start:stop], dtype=np.float32)
            assert self._basis32 is not None
            heads = rows @ self._basis32
            norm = np.sqrt(np.einsum("ij,ij->i", rows, rows, dtype=np.float64))
            head_norm = np.sqrt(np.einsum("ij,ij->i", heads, heads, dtype=np.float64))
            head_low = np.maximum(head_norm - self._rounding() * norm, 0.0)
            int8_heads, scale = offset_rows(heads)
            self._heads.extend(int8_heads)
            self._scale.extend(scale)
            self._rest.extend(np.sqrt(np.maximum(norm * norm - head_low * head_low, 0.0) + 1e-12))
            self._norm.extend(norm)

    def upper(self, q: np.ndarray, n: int) -> np.ndarray:
        """An upper bound of ``row · q`` for each of the first ``n ≤ count`` rows (float64)."""
        assert self._basis is not None
        query = np.asarray(q, dtype=np.float64).reshape(-1)
        head_q = query @ self._basis
        # + 1e-12 under the roots: float64 cancellation when the rest is tiny
        rest_q = float(np.sqrt(max(float(query @ query) - float(head_q @ head_q), 0.0) + 1e-12))
        head_q_norm = float(np.sqrt(head_q @ head_q))
        heads, scale = self._heads.view()[:n], self._scale.view()[:n]
        approx, residual = row_dots(heads, scale, head_q, self._blocks)
        slack = dot_slack(scale, head_q, residual)
        return (approx + slack + (self._rounding() * head_q_norm) * self._norm.view()[:n]
                + rest_q * self._rest.view()[:n] + _SUM_MARGIN)

    def _rounding(self) -> float:
        assert self._basis is not None
        d, m = self._basis.shape
        return float(np.sqrt(m) * (d + 1) * _ROUNDING_PER_TERM)

    def _start(self, matrix: np.ndarray) -> None:
        d = matrix.shape[1]
        step = max(1, len(matrix) // BASIS_SAMPLE)
        sample = np.asarray(matrix[::step][:BASIS_SAMPLE], dtype=np.float64)
        values, vectors = np.linalg.eigh(sample.T @ sample)
        order = np.argsort(-values, kind="stable")[:min(HEAD_DIMS, d)]
        self._basis = np.ascontiguousarray(vectors[:, order])
        self._basis32 = self._basis.astype(np.float32)
        self._heads = Growable(np.uint8, width=self._basis.shape[1])
        self._scale = Growable(np.float32)
        self._rest = Growable(np.float64)
        self._norm = Growable(np.float64)
        self._blocks.reset()
