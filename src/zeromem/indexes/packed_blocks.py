"""Integer products with the full blocks of a large row matrix held prepacked by ONNX Runtime.

int_product.py hands ONNX Runtime a matrix's rows as the left operand of ``MatMulInteger`` on
every query, and MLAS repacks all of them for each call: 49 846 rows × 384 take 6.4 ms on one
core of an AMD EPYC host, where a plain copy of the same 19 MB takes 1.1 ms. Turned around — the
query's columns as the left operand, the rows as a constant right operand — MLAS packs the
rows once, when the session is made, and a product then only reads the packed copy: ~1.0 ms
for the same rows in blocks of 4 096 (docs/decisions/0047-entity-rich-search.md).

Rows change (a level's slots are written in place, entity rows are appended), so each full
block of ``BLOCK_ROWS`` rows gets its own session, made when a product needs it; the rows past
the last full block go through int_product's per-call product. A row written after its block
was packed is *stale*: its product comes from the current row (numpy, exact) and replaces the
session's; a block with more than ``STALE_LIMIT`` stale rows is packed again when next used.
A matrix is packed from its ``PACK_FROM_CALL``-th product on, at most ``PACK_PER_CALL`` blocks
per product: a scope searched once (a cold tenant) does not pay for packing (~1 ms per 1 000
rows) that only later searches repay, and no one search pays for a whole large matrix.

The numbers are those of int_product.py exactly: integer sums do not depend on the operand
order or the kernel. The query's int8 columns (±63) are fed as uint8 with zero point 64 (1…127)
and the rows as int8 (±127; a block holding −128 is never packed), so a CPU without VNNI,
whose kernel adds two uint8 × int8 products in a saturating int16, stays exact:
2 · 127 · 127 = 32 258 < 32 767.

ONNX Runtime holds about twice a block's bytes for it (the packed copy and the initializer);
``native_nbytes`` reports that for every full block, packed yet or not, so the index cache
budgets it from the scope's first measure on (retrieval/footprint.py).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..encoders.onnx_proto import INT32, UINT8, GraphWriter, value_info
from .int_product import column_products, from_offset, numpy_products, session_options

BLOCK_ROWS = 4096
STALE_LIMIT = BLOCK_ROWS // 16  # rows fixed by numpy per block before packing it again is cheaper
PACK_FROM_CALL = 2
PACK_PER_CALL = 2  # blocks one product packs (~4 ms each): a large matrix is packed over a few searches
_QUERY_ZERO_POINT = 64
_NATIVE_COPIES = 2  # bytes ONNX Runtime holds per packed block, in units of the block's int8 bytes


@dataclass
class _Block:
    session: Any
    stale: set[int] = field(default_factory=set)  # rows (within the block) written since packing


class PackedBlocks:
    """The packed sessions of one row matrix's full blocks; the matrix itself stays with its
    owner (``Int8RowStore``, ``Int8Rows``), which reports writes through ``rewritten``."""

    def __init__(self) -> None:
        self._blocks: list[_Block | None] = []
        self._calls = 0
        self._width = 0  # the row width the blocks were packed at
        self._expected = (0, 0)  # (rows, width) of the matrix, as its owner last reported
        self._lock = threading.Lock()

    def rewritten(self, rows: np.ndarray) -> None:
        """Slots about to be written: a packed block holding one is stale there."""
        rows = np.asarray(rows, dtype=np.int64)
        if not len(rows) or not self._blocks:
            return
        with self._lock:
            packed = rows[rows < len(self._blocks) * BLOCK_ROWS]
            for block_id in np.unique(packed // BLOCK_ROWS).tolist():
                block = self._blocks[block_id]
                if block is None:
                    continue
                block.stale.update((packed[packed // BLOCK_ROWS == block_id] % BLOCK_ROWS).tolist())
                if len(block.stale) > STALE_LIMIT:
                    self._blocks[block_id] = None

    def reset(self) -> None:
        """Forget every block (the matrix was replaced)."""
        with self._lock:
            self._blocks = []
            self._width = 0
            self._expected = (0, 0)

    def expect(self, rows: int, width: int) -> None:
        """The matrix now has ``rows`` rows of ``width`` (what ``native_nbytes`` charges for)."""
        self._expected = (rows, width)

    def native_nbytes(self) -> int:
        """Bytes ONNX Runtime holds, or will hold once they are packed, for the full blocks of
        the matrix last ``expect``-ed (outside numpy's arrays). Charged before they are packed,
        so that the index cache's measure of a scope does not grow behind its back."""
        rows, width = self._expected
        if rows < BLOCK_ROWS or _packer() is None:
            return 0
        return _NATIVE_COPIES * BLOCK_ROWS * width * (rows // BLOCK_ROWS)

    def products(self, rows: np.ndarray, columns: np.ndarray, correction: np.ndarray) -> np.ndarray:
        """``(rows − 128) @ columns`` ``[n, c]`` (int32 once packed, else int64), as
        ``int_product.column_products`` computes it (``rows`` offset-binary uint8,
        C-contiguous; ``columns`` int8 within ±63; ``correction`` = 128 · Σ columns)."""
        full = len(rows) // BLOCK_ROWS
        with self._lock:
            self._calls += 1
            if len(rows) > self._expected[0]:
                self._expected = (len(rows), rows.shape[1])
            if full == 0 or self._calls < PACK_FROM_CALL or _packer() is None:
                return column_products(rows, columns, correction)
            if self._width != rows.shape[1]:
                self._blocks, self._width = [], rows.shape[1]
            budget = [PACK_PER_CALL]
            blocks = [self._block(i, rows, budget) for i in range(full)]
        query = np.ascontiguousarray(columns.T.astype(np.int16) + _QUERY_ZERO_POINT, dtype=np.uint8)
        # column-major, int32 (|product| ≤ 127 · 63 · width): each block's output is copied as
        # is, one contiguous run per column, and row_dots reads the columns whole
        out = np.empty((columns.shape[1], len(rows)), dtype=np.int32)
        for i, block in enumerate(blocks):
            start, stop = i * BLOCK_ROWS, (i + 1) * BLOCK_ROWS
            part = rows[start:stop]
            if block is None:
                out[:, start:stop] = column_products(part, columns, correction).T
                continue
            out[:, start:stop] = block.session.run(None, {"query": query})[0]
            stale = sorted(block.stale)
            if stale:
                out[:, start + np.asarray(stale)] = (numpy_products(part[stale], columns) - correction).T
        tail = full * BLOCK_ROWS
        out[:, tail:] = column_products(rows[tail:], columns, correction).T
        return out.T

    def _block(self, block_id: int, rows: np.ndarray, budget: list[int]) -> _Block | None:
        """The packed block ``block_id``, made now if missing and ``budget`` (blocks this call
        may still pack) allows; None where it is not packed."""
        while len(self._blocks) <= block_id:
            self._blocks.append(None)
        block = self._blocks[block_id]
        if block is None:
            if budget[0] <= 0:
                return None
            budget[0] -= 1
            part = rows[block_id * BLOCK_ROWS:(block_id + 1) * BLOCK_ROWS]
            session = _pack(part)
            if session is None:
                return None
            block = self._blocks[block_id] = _Block(session)
        return block


def _pack(part: np.ndarray) -> Any:
    """A session computing ``(query − 64) @ (part − 128)ᵀ`` with ``part`` a constant; None when
    ``part`` holds −128 (offset 0), which could saturate a non-VNNI kernel."""
    builder = _packer()
    if builder is None or not part.all():
        return None
    return builder(np.ascontiguousarray(from_offset(part).T))


_packer_state: list[Any] = []  # [] not tried; [None] ONNX Runtime unavailable; [make-session]
_packer_lock = threading.Lock()


def _packer() -> Any:
    if not _packer_state:
        with _packer_lock:
            if not _packer_state:
                _packer_state.append(_load_packer())
    return _packer_state[0]


def _load_packer() -> Any:
    try:
        import onnxruntime as ort
    except ImportError:
        return None

    def make(weights: np.ndarray) -> Any:
        graph = GraphWriter("packed_block")
        graph.const("rows", weights)
        graph.const("query_zero_point", np.array(_QUERY_ZERO_POINT, dtype=np.uint8))
        graph.op("MatMulInteger", "query", "rows", "query_zero_point", output="products")
        width, count = weights.shape
        model = graph.model([value_info("query", UINT8, ["c", width])],
                            [value_info("products", INT32, ["c", count])], opset=17, ir_version=8,
                            producer="zeromem")
        try:
            return ort.InferenceSession(model, session_options(ort), providers=["CPUExecutionProvider"])
        except Exception:  # noqa: BLE001 - onnxruntime's own types; the per-call product gives the same numbers
            return None

    return make

