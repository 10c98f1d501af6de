"""Exact integer products of many uint8 rows with a few int8 columns.

The int8 scans (int8_rows.py) need ``rows @ columns`` over tens of thousands of 384-byte rows
per query. numpy has no fast integer matrix product (its int8 ``einsum`` converts element by
element: 49 846 × 384 rows, 4.5 ms); ONNX Runtime's ``MatMulInteger`` runs MLAS's
unsigned-by-signed int8 kernels (VNNI / AVX2 dot-product instructions): 0.97 ms for the same
rows and two columns on one thread. The left operand must be unsigned for that kernel (signed
by signed is 4× slower), so callers keep their rows as offset-binary uint8 (``int8 + 128``)
and subtract ``128 · Σ column`` afterwards, which ``products`` does.

Columns are kept within ±63 (``COLUMN_LIMIT``): without VNNI, MLAS multiplies uint8 by int8 with
``vpmaddubsw``, which adds two products into a saturating int16 — 255·127·2 would overflow,
255·63·2 = 32 130 does not — so the products are exact on AVX2 hosts too. Integer sums are
exact, so the result does not depend on the kernel, the block a row falls in
or the machine — unlike a float product (a BLAS kernel rounds a row by its position). Without
ONNX Runtime (a core dependency, but an import can fail), and for a few hundred rows, the same
numbers come from numpy.
"""

from __future__ import annotations

import logging
import threading
from typing import Any, Protocol

import numpy as np

from ..encoders.onnx_proto import INT8, INT32, UINT8, GraphWriter, value_info

OFFSET = 128  # stored uint8 = int8 + OFFSET
COLUMN_LIMIT = 63  # |column entry| at most this: no int16 saturation in non-VNNI kernels
# Up to this many rows numpy's product of the integers as float32 is quicker than one ONNX
# Runtime call (~25 µs; 50 rows 5 µs, 500 rows 29 µs); it is also numpy's block size.
SMALL_ROWS = 512

_log = logging.getLogger(__name__)
_lock = threading.Lock()
_session: list[Any] = []  # [] not tried yet; [None] ONNX Runtime unavailable; [session]
_last_query: list[Any] = []  # [(query bytes, _split's answer)]: replaced, never edited


class BlockProducts(Protocol):
    """What ``row_dots`` asks of a matrix's packed blocks (packed_blocks.PackedBlocks)."""

    def products(self, rows: np.ndarray, columns: np.ndarray, correction: np.ndarray) -> np.ndarray: ...


def to_offset(rows: np.ndarray) -> np.ndarray:
    """int8 rows as offset-binary uint8 (``int8 + 128``, the same bits with the top one flipped)."""
    return (np.asarray(rows, dtype=np.int8).view(np.uint8) ^ np.uint8(0x80)).astype(np.uint8, copy=False)


def from_offset(rows: np.ndarray) -> np.ndarray:
    """``to_offset`` undone: offset-binary uint8 rows back to int8 (a copy)."""
    return (np.asarray(rows, dtype=np.uint8) ^ np.uint8(0x80)).view(np.int8)


def products(rows: np.ndarray, columns: np.ndarray) -> np.ndarray:
    """``(rows − 128) @ columns`` exactly, as int64 ``[n, c]``: ``rows`` uint8 ``[n, d]``
    (offset-binary, C-contiguous), ``columns`` int8 ``[d, c]`` within ±``COLUMN_LIMIT``."""
    columns = np.ascontiguousarray(columns, dtype=np.int8)
    if columns.size and int(np.abs(columns.astype(np.int16)).max()) > COLUMN_LIMIT:
        raise ValueError(f"column entries must lie within ±{COLUMN_LIMIT} (an int16 sum of two "
                         "uint8 × int8 products saturates above it on CPUs without VNNI)")
    return column_products(np.ascontiguousarray(rows, dtype=np.uint8), columns,
                           OFFSET * columns.astype(np.int64).sum(axis=0))


def column_products(rows: np.ndarray, columns: np.ndarray, correction: np.ndarray) -> np.ndarray:
    """``products`` without its checks: ``correction`` is ``128 · Σ columns`` (int64 ``[c]``)."""
    if not len(rows):
        return np.zeros((0, columns.shape[1]), dtype=np.int64)
    session = _ort_session() if len(rows) > SMALL_ROWS else None
    if session is not None:
        raw = session.run(None, {"rows": rows, "columns": columns})[0].astype(np.int64)
    else:
        raw = numpy_products(rows, columns)
    raw -= correction
    return raw


def numpy_products(rows: np.ndarray, columns: np.ndarray) -> np.ndarray:
    """The same integers from numpy, a block of rows at a time: as float32 while every sum fits
    in its 24-bit mantissa (then no sum is rounded, in any order), else as int32."""
    exact_in_float = rows.shape[1] * 255 * COLUMN_LIMIT < 2**24
    kind = np.float32 if exact_in_float else np.int32
    wide = columns.astype(kind)
    if len(rows) <= SMALL_ROWS:
        return (rows.astype(kind) @ wide).astype(np.int64)
    out = np.empty((len(rows), columns.shape[1]), dtype=np.int64)
    for start in range(0, len(rows), SMALL_ROWS):
        out[start:start + SMALL_ROWS] = rows[start:start + SMALL_ROWS].astype(kind) @ wide
    return out


def offset_rows(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """float rows as offset-binary int8 (``round(row / scale)`` within ±127) and their float32
    scales, ``max|row| / 127`` (0 for an all-zero row, whose int8 row is then all zero)."""
    rows = np.asarray(rows, dtype=np.float32)
    scale = (np.abs(rows).max(axis=1) / 127.0).astype(np.float32)
    step = np.where(scale > 0, scale, 1.0)[:, None]
    return to_offset(np.clip(np.rint(rows / step), -127, 127).astype(np.int8)), scale


def dot_slack(scale: np.ndarray, q: np.ndarray, residual: float) -> np.ndarray:
    """How far each of ``row_dots``'s values may be from the product of the float row it was
    quantized from (``offset_rows``) with ``q``: half a step per component, plus the query
    split's remainder (``residual``, ``row_dots``'s second answer) — before float rounding."""
    return scale * (0.5 * float(np.abs(np.asarray(q, dtype=np.float64)).sum()) + 127.0 * residual)


def query_columns(q: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
    """A float query as two int8 columns and their steps, ``q ≈ columns @ steps``, and
    ``‖d‖₁``, the L1 norm of what the two leave over: the first column rounds ``q`` to
    ``COLUMN_LIMIT`` steps either side, the second the remainder to as many finer ones
    (``‖d‖∞ ≤ step₂ / 2 ≤ max|q| / 15 876``)."""
    return _split(q)[0]


def _split(q: np.ndarray) -> tuple[tuple[np.ndarray, np.ndarray, float], np.ndarray]:
    """``query_columns`` and the columns' ``128 · Σ``; a search asks for the same query once
    per level, so the last answer is kept."""
    query = np.asarray(q, dtype=np.float64).reshape(-1)
    key = query.tobytes()
    last = _last_query[-1] if _last_query else None  # one read of an immutable pair
    if last is not None and last[0] == key:
        return last[1]
    columns = np.empty((len(query), 2), dtype=np.int8)
    steps = np.ones(2, dtype=np.float64)
    rest = query
    for i in range(2):
        top = np.abs(rest).max() if len(rest) else 0.0
        if top > 0:
            steps[i] = top / COLUMN_LIMIT
        part = np.rint(rest / steps[i])  # |rest / step| ≤ COLUMN_LIMIT by the choice of step
        columns[:, i] = part
        rest = rest - steps[i] * part
    found = ((columns, steps, float(np.abs(rest).sum())), OFFSET * columns.astype(np.int64).sum(axis=0))
    _last_query[:] = [(key, found)]
    return found


def row_dots(rows: np.ndarray, scale: np.ndarray, q: np.ndarray,
             blocks: BlockProducts | None = None) -> tuple[np.ndarray, float]:
    """``(rows − 128) · scale`` times ``q`` for every row, in float64, from one exact integer
    product; and the query's left-over ``‖d‖₁`` (each value is off the exact product with the
    dequantized row by at most ``scale · 127 · ‖d‖₁`` plus float64 rounding). ``blocks``: the
    packed blocks of ``rows`` (packed_blocks.py), the same integers sooner."""
    (columns, steps, residual), correction = _split(q)
    rows = np.ascontiguousarray(rows, dtype=np.uint8)
    ints = (blocks.products(rows, columns, correction) if blocks is not None
            else column_products(rows, columns, correction))
    # column by column, each an elementwise product and sum: the same float64 on every CPU
    # (a BLAS matrix-vector product may fuse multiply-adds or not)
    found = ints[:, 0] * steps[0]
    for j in range(1, len(steps)):
        found += ints[:, j] * steps[j]
    found *= scale
    return found, residual


def session_options(ort: Any) -> Any:
    """Options of the product sessions: one thread (a search runs on one core; the other
    serves another), no spinning, no arena (the outputs are small and a packed block's session
    lives as long as its scope)."""
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.enable_cpu_mem_arena = False
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return options


def _ort_session() -> Any:
    if not _session:
        with _lock:
            if not _session:
                _session.append(_build())
    return _session[0]


def _build() -> Any:
    try:
        import onnxruntime as ort
    except ImportError:
        return None
    graph = GraphWriter("int_product")
    graph.op("MatMulInteger", "rows", "columns", output="products")
    model = graph.model([value_info("rows", UINT8, ["n", "d"]), value_info("columns", INT8, ["d", "c"])],
                        [value_info("products", INT32, ["n", "c"])], opset=17, ir_version=8,
                        producer="zeromem")
    try:
        return ort.InferenceSession(model, session_options(ort), providers=["CPUExecutionProvider"])
    except Exception as err:  # noqa: BLE001 - onnxruntime's own types; numpy gives the same numbers
        _log.warning("ONNX Runtime cannot run the integer product (%s): numpy computes it, slower", err)
        return None
