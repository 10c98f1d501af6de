"""Vectors by slot held as int8 with one scale per row: what a scope's levels search.

A scope's unit vectors are float32 in the store (the source of record); in memory the engine
holds each as ``round(v / s)`` in int8 with ``s = max|v| / 127`` (``quantize``) — a quarter of
the bytes — and computes every cosine from them with one exact integer product
(int_product.py: the query split into two 7-bit columns). A cosine is then that of the
dequantized row, off the float32 one by ~5e-4 (decisions D-014, D-045), and it is the
same number wherever the row sits and however many rows there are (integer sums are exact;
a float product is rounded by the row's position in the kernel's blocks).

Rows are held offset-binary (uint8 = int8 + 128), the operand ONNX Runtime's fast kernel
takes, in growable arrays that a write fills in place; a large level's full blocks of rows are
also held prepacked for the product over every row (packed_blocks.py).
"""

from __future__ import annotations

import numpy as np

from .growable import Growable
from .int_product import OFFSET, from_offset, row_dots, to_offset
from .packed_blocks import PackedBlocks


def quantize(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """int8 rows and one float32 scale per row: ``row ≈ int8 · scale`` (symmetric, per row)."""
    rows = np.asarray(rows, dtype=np.float32)
    scale = np.abs(rows).max(axis=1) / 127.0 if rows.size else np.zeros(len(rows), dtype=np.float32)
    scale[scale == 0] = 1.0
    return np.round(rows / scale[:, None]).astype(np.int8), scale.astype(np.float32)


class Int8RowStore:
    """int8 rows (offset-binary) and their scales by slot; the interface of ``dense.RowStore``."""

    def __init__(self, dim: int, rows: np.ndarray | None = None, scale: np.ndarray | None = None) -> None:
        """``rows``: int8 rows with their ``scale`` (a persisted index), or float32 rows to
        quantize (``scale`` None)."""
        self.dim = dim
        self._blocks = PackedBlocks()  # full blocks of rows prepacked for dot_all
        if rows is None or not len(rows):
            self._rows = Growable(np.uint8, fill=OFFSET, width=dim)
            self._scale = Growable(np.float32, fill=1.0)
            return
        if scale is None:
            rows, scale = quantize(rows)
        # fresh writable arrays, wrapped without a further copy (a loaded snapshot's arrays
        # are read-only views of its bytes)
        self._rows = Growable.wrap(to_offset(rows), fill=OFFSET)
        self._scale = Growable.wrap(np.array(scale, dtype=np.float32), fill=1.0)
        self._blocks.expect(self.size, dim)

    @property
    def size(self) -> int:
        return self._rows.size

    def reserve(self, size: int) -> None:
        if size > self.size:
            self._rows.reserve(size)
            self._scale.reserve(size)
            self._blocks.expect(self.size, self.dim)

    def get(self, rows: np.ndarray) -> np.ndarray:
        """float32 copies of the given rows (dequantized)."""
        rows = np.asarray(rows, dtype=np.int64)
        return from_offset(self._rows.view()[rows]).astype(np.float32) * self._scale.view()[rows, None]

    def dot(self, rows: np.ndarray, q: np.ndarray) -> np.ndarray:
        """``row · q`` for the given rows (float32, in ``rows`` order)."""
        rows = np.asarray(rows, dtype=np.int64)
        if not len(rows):
            return np.zeros(0, dtype=np.float32)
        found, _ = row_dots(self._rows.view()[rows], self._scale.view()[rows], q)
        return found.astype(np.float32)

    def dot_all(self, q: np.ndarray) -> np.ndarray:
        """``row · q`` for every row, in order."""
        if not self.size:
            return np.zeros(0, dtype=np.float32)
        found, _ = row_dots(self._rows.view(), self._scale.view(), q, self._blocks)
        return found.astype(np.float32)

    def set(self, rows: np.ndarray, values: np.ndarray) -> None:
        rows = np.asarray(rows, dtype=np.int64)
        if not len(rows):
            return
        self.reserve(int(rows.max()) + 1)
        self._blocks.rewritten(rows)
        signed, scale = quantize(values)
        self._rows.view()[rows] = to_offset(signed)
        self._scale.view()[rows] = scale

    def state(self) -> dict[str, np.ndarray]:
        """Every slot's int8 row and scale (as ``quantize`` returns them), as
        ``DenseIndex.from_state`` reads them back."""
        return {"rows": from_offset(self._rows.view()), "scale": self._scale.view().copy()}
