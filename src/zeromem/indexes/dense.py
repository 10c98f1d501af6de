"""Cosine search over unit vectors held in slots that a write fills, replaces or clears in place:
exact numpy below a size threshold, HNSW (usearch) above.

``scores`` covers every row — one matrix-vector product — because the engine fuses the scores of
every unit; a scope's levels hold int8 rows (``quantized``, int8_store.py), whose scores are
those of the dequantized rows, the dense baselines float32 rows, scored exactly. On a large
scope the engine instead scores only candidate rows (``scores_of``), normalizes with the cosines
of a fixed sample (``sample_scores``) and finds the candidates through coarse cells
(``candidates``, see cells.py), built once and then kept: rows written later are assigned to
their nearest cell. ``search`` uses the approximate index only when the index holds at least
``ann_threshold`` vectors; its candidates are then re-scored exactly, so returned scores are
true cosines and the order is deterministic (descending score, ties by index).

Why usearch: at 100k vectors synthesized from LoCoMo turns, usearch, hnswlib and faiss HNSW
(M=16, ef_construction=128, one thread) reach the same recall@10 against exact search (0.93-0.94
at ef=64, 0.97-0.98 at ef=128) at sub-millisecond latency, and all take minutes to build on
one busy core. usearch has the smallest wheel, no OpenMP, incremental add/remove and
serialization. The graph is built lazily, on the first ``search`` at or above the threshold:
building costs ~0.5-1.5 ms per vector, so it only pays off for a snapshot that answers
thousands of ``search`` calls; ``scores`` never needs it. Numbers in docs/decisions/0005-usearch-hnsw.md
(``search`` now serves only the dense baselines).
"""

from __future__ import annotations

import contextlib
import threading

import numpy as np

from ..errors import InvalidInput, ModelUnavailable
from .cells import PROBES, ROWS_PER_CELL, CellIndex
from .growable import Growable
from .int8_store import Int8RowStore
from .topk import top_k

ANN_THRESHOLD = 20_000
ANN_CONNECTIVITY = 16  # HNSW M: links per node
ANN_EXPANSION_ADD = 128  # ef_construction
ANN_EXPANSION_SEARCH = 128  # ef at query time: recall@10 0.94 at 64, 0.98 at 128 (100k)
ANN_OVERFETCH = 2  # ANN candidates per requested result, re-scored exactly
SINGLE_THREAD_ABOVE = 4096  # rows; see ``scores``
# Rows whose cosines stand for the whole index when only some rows are scored (their median
# sets the normalization floor): evenly spaced, so the same rows on every load.
DISTRIBUTION_SAMPLE = 2048


def _normalized(vectors: np.ndarray) -> np.ndarray:
    vectors = np.ascontiguousarray(vectors, dtype=np.float32)
    if vectors.ndim != 2:
        raise InvalidInput(f"vectors must be a 2-D array (n, dim), got shape {vectors.shape}")
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    # rows that are already unit length (every embedder's output) are left bit-identical
    needs = np.abs(norms[:, 0] - 1.0) > 1e-4
    if needs.any():
        vectors = vectors.copy()
        vectors[needs] /= np.maximum(norms[needs], 1e-12)
    return vectors


class RowStore:
    """float32 vectors by slot: a fixed *base* (as loaded from a persisted index, possibly a
    read-only view of its bytes) and a growable *extra* for the slots written after it.

    Appending never copies the base; only rewriting a base slot in place copies it once.
    (A scope's levels hold int8 rows instead: int8_store.Int8RowStore.)
    """

    def __init__(self, dim: int, base: np.ndarray | None = None) -> None:
        self.dim = dim
        self.base = np.zeros((0, dim), dtype=np.float32) if base is None else base
        self.extra = Growable(np.float32, width=dim)

    @property
    def size(self) -> int:
        return len(self.base) + self.extra.size

    def reserve(self, size: int) -> None:
        if size > self.size:
            self.extra.reserve(size - len(self.base))

    def get(self, rows: np.ndarray) -> np.ndarray:
        """float32 copies of the given rows."""
        rows = np.asarray(rows, dtype=np.int64)
        n0 = len(self.base)
        if rows.size and rows.max() < n0:
            return self.base[rows]
        out = np.empty((len(rows), self.dim), dtype=np.float32)
        low = rows < n0
        if low.any():
            out[low] = self.base[rows[low]]
        if (~low).any():
            out[~low] = self.extra.view()[rows[~low] - n0]
        return out

    def dot(self, rows: np.ndarray, q: np.ndarray) -> np.ndarray:
        """float32 ``row · q`` for the given rows."""
        return np.einsum("ij,j->i", self.get(rows), q)

    def dot_all(self, q: np.ndarray) -> np.ndarray:
        """``row · q`` for every row, in order."""
        parts = [np.einsum("ij,j->i", self.base, q)] if len(self.base) else []
        if self.extra.size:
            parts.append(np.einsum("ij,j->i", self.extra.view(), q))
        return np.concatenate(parts) if parts else np.zeros(0, dtype=np.float32)

    def set(self, rows: np.ndarray, values: np.ndarray) -> None:
        rows = np.asarray(rows, dtype=np.int64)
        n0 = len(self.base)
        low = rows < n0
        if low.any():
            if not self.base.flags.writeable:
                self.base = self.base.copy()
            self.base[rows[low]] = values[low]
        if (~low).any():
            self.extra.reserve(max(self.extra.size, int(rows[~low].max()) - n0 + 1))
            self.extra[rows[~low] - n0] = values[~low]

    def state(self) -> dict[str, np.ndarray]:
        """The rows as ``DenseIndex.from_state`` reads them back."""
        return {"rows": self.get(np.arange(self.size))}


class DenseIndex:
    """A cosine index over rows (slots); a cleared slot is dead and never matches.

    ``quantized``: hold the rows as int8 (``int8_store.Int8RowStore``: a quarter of the
    memory, cosines from exact integer products) — what a scope's levels do; the dense
    baselines keep float32 rows."""

    def __init__(self, vectors: np.ndarray | None = None, *, ann_threshold: int = ANN_THRESHOLD,
                 dim: int | None = None, quantized: bool = False) -> None:
        self.ann_threshold = ann_threshold
        self.dim = dim or 0
        self.quantized = quantized
        self._rows: RowStore | Int8RowStore | None = None
        self._alive = Growable(bool, fill=False)
        self._changes = 0  # bumped by every write: cached samples and the ANN graph follow it
        self._sample: tuple[int, np.ndarray] | None = None
        self._ann = None
        self._ann_at = -1
        self._ann_lock = threading.Lock()
        self._cells: CellIndex | None = None
        self._cells_size = 0
        self._cells_lock = threading.Lock()
        if vectors is not None:
            vectors = _normalized(vectors)
            self.dim = vectors.shape[1]
            self.set_rows(np.arange(len(vectors)), vectors)

    # -- writes -------------------------------------------------------------------------
    def set_rows(self, slots: np.ndarray, vectors: np.ndarray | None) -> None:
        """Write unit vectors into ``slots`` (None: the units have no vector, zero rows)."""
        slots = np.asarray(slots, dtype=np.int64)
        if not len(slots):
            return
        if vectors is not None and len(vectors):
            vectors = _normalized(np.asarray(vectors, dtype=np.float32).reshape(len(slots), -1))
            if self._rows is None:
                self.dim = self.dim or vectors.shape[1]
            if vectors.shape[1] != self.dim:
                raise InvalidInput(f"a vector of dimension {vectors.shape[1]} cannot join an index "
                                   f"of dimension {self.dim}: run `zeromem reindex`")
        top = int(slots.max()) + 1
        self._alive.reserve(max(top, self._alive.size))
        if self._rows is None and self.dim:
            self._rows = Int8RowStore(self.dim) if self.quantized else RowStore(self.dim)
        if self._rows is not None:
            self._rows.reserve(top)
            self._rows.set(slots, np.zeros((len(slots), self.dim), dtype=np.float32) if vectors is None else vectors)
        self._alive[slots] = True
        self._changes += 1
        if self._cells is not None and self._rows is not None:
            self._cells.assign(slots, self._rows_f32(slots))

    def clear(self, slots: np.ndarray) -> None:
        slots = np.asarray(slots, dtype=np.int64)
        slots = slots[slots < self._alive.size]
        if not len(slots):
            return
        # A cleared row keeps its numbers: every reader skips dead rows (they have no score,
        # no lifting, no candidacy), and not writing them keeps a loaded base untouched.
        self._alive[slots] = False
        self._changes += 1

    # -- reads --------------------------------------------------------------------------
    @property
    def size(self) -> int:
        return self._alive.size

    def __len__(self) -> int:
        return self.size

    @property
    def vectors(self) -> np.ndarray:
        """Every row as float32 (a copy; dequantized for int8 rows: use sparingly)."""
        if self._rows is None:
            return np.zeros((self.size, self.dim), dtype=np.float32)
        return self._rows.get(np.arange(self.size))

    @property
    def alive(self) -> np.ndarray:
        return self._alive.view()

    @property
    def uses_ann(self) -> bool:
        """Whether ``search`` goes through the HNSW graph (built on the first search)."""
        return self.size >= self.ann_threshold and self.dim > 0

    def _query(self, qvec: np.ndarray) -> np.ndarray:
        q = np.asarray(qvec, dtype=np.float32).reshape(-1)
        if q.shape[0] != self.dim:
            raise InvalidInput(f"query vector has dimension {q.shape[0]}, the index {self.dim}; "
                               "encode queries with the model that encoded the units")
        norm = float(np.linalg.norm(q))
        return q / norm if norm > 0 else q

    def _rows_f32(self, rows: np.ndarray) -> np.ndarray:
        """Rows as float32 (dequantized for int8 rows)."""
        if self._rows is None:
            return np.zeros((0, self.dim), dtype=np.float32)
        return self._rows.get(rows)

    def scores(self, qvec: np.ndarray) -> np.ndarray:
        """Cosine of the query with every row (float32, row order): exact for float32 rows,
        that of the dequantized row for int8 ones.

        float32 rows: one single-threaded ``einsum`` for every size: the same row gives the
        same float wherever it sits (a BLAS kernel may round a row differently by its
        position), and OpenBLAS running a large matrix-vector product on both cores of a shared
        2-core machine is 2-5x slower (measured at 10k rows: 8.0 ms vs 2.0 ms p50). int8 rows:
        one exact integer product (int_product.py), position-independent as well.
        """
        if self.size == 0 or self.dim == 0 or self._rows is None:
            return np.zeros(self.size, dtype=np.float32)
        out = self._rows.dot_all(self._query(qvec))
        return out[:self.size] if len(out) >= self.size else np.concatenate(
            [out, np.zeros(self.size - len(out), dtype=np.float32)])

    def scores_of(self, qvec: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """Exact cosine of the query with the given rows only (float32, in ``rows`` order)."""
        if self.dim == 0 or len(rows) == 0 or self._rows is None:
            return np.zeros(len(rows), dtype=np.float32)
        return self._rows.dot(rows, self._query(qvec))

    def sample_rows(self) -> np.ndarray:
        """An evenly spaced sample of at most ~2·``DISTRIBUTION_SAMPLE`` live rows."""
        if self._sample is None or self._sample[0] != self._changes:
            live = np.flatnonzero(self.alive)
            step = max(1, len(live) // DISTRIBUTION_SAMPLE)
            self._sample = (self._changes, live[::step])
        return self._sample[1]

    def sample_scores(self, qvec: np.ndarray) -> np.ndarray:
        """Cosines of the sampled live rows: the shape of ``scores`` (its median, its spread)
        without scoring every row."""
        if self.size == 0 or self.dim == 0:
            return np.zeros(0, dtype=np.float32)
        return self.scores_of(qvec, self.sample_rows())

    def search(self, qvec: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """The ``k`` nearest live rows: (indices, cosines), best first, ties in index order."""
        if k <= 0 or self.size == 0 or self.dim == 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        if not self.uses_ann:
            scores = np.where(self.alive, self.scores(qvec), -np.inf)
            idx, found = top_k(scores, min(k, int(self.alive.sum())))
            return idx, found
        q = self._query(qvec)
        wanted = min(self.size, max(k * ANN_OVERFETCH, k + 10))
        found = self.ann().search(q, wanted)
        keys = np.unique(np.asarray(found.keys, dtype=np.int64))
        keys = keys[(keys >= 0) & (keys < self.size)]
        keys = keys[self.alive[keys]]
        exact = self._rows_f32(keys) @ q
        idx, scores = top_k(exact, k)
        return keys[idx], scores

    def candidates(self, qvec: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """About the ``k`` nearest live rows, cheaply: the rows of the query's nearest cells
        (``CellIndex``, built on first use and kept), re-scored exactly; best first, ties in
        index order."""
        if k <= 0 or self.size == 0 or self.dim == 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        q = self._query(qvec)
        alive = self.alive
        if self.size <= ROWS_PER_CELL * PROBES:  # the probed cells would hold about every row
            rows = np.flatnonzero(alive)
        else:
            with self._cells_lock:
                live = int(alive.sum())
                # Rows written after the build join their nearest cell; rebuild only when the
                # index has doubled or halved since, so the cells keep ~ROWS_PER_CELL rows.
                if self._cells is None or not self._cells_size / 2 <= live <= 2 * self._cells_size:
                    rows = np.flatnonzero(alive)
                    self._cells = CellIndex(self._rows_f32(rows), ROWS_PER_CELL, rows=rows)
                    self._cells_size = live
                rows = self._cells.probe(q, PROBES)
            rows = rows[alive[rows]]
        idx, scores = top_k(self._rows.dot(rows, q) if self._rows is not None
                            else np.zeros(len(rows), dtype=np.float32), k)
        return rows[idx], scores

    def ann(self):
        """The HNSW graph over the live rows, built on first use (and again after writes):
        the engine fuses exact ``scores`` of every unit and may never call ``search``, and
        building costs ~0.5 ms per vector on one core."""
        with self._ann_lock:
            if self._ann is None or self._ann_at != self._changes:
                self._ann = self._build_ann()
                self._ann_at = self._changes
            return self._ann

    def _build_ann(self):
        with contextlib.suppress(ImportError):
            # usearch's SIMD library loaded before onnxruntime makes every later ONNX Runtime
            # session segfault (seen here with usearch 2.26 / onnxruntime 1.2x): load ORT first.
            import onnxruntime  # noqa: F401
        try:
            from usearch.index import Index
        except ImportError as err:
            raise ModelUnavailable("approximate search above "
                                   f"{self.ann_threshold} vectors needs usearch: "
                                   "`pip install 'zeromem[ann]'` (or raise ann_threshold)") from err
        index = Index(ndim=self.dim, metric="ip", dtype="f32", connectivity=ANN_CONNECTIVITY,
                      expansion_add=ANN_EXPANSION_ADD, expansion_search=ANN_EXPANSION_SEARCH)
        rows = np.flatnonzero(self.alive)
        # one thread: the HNSW graph (and so every result) is then the same on every build
        index.add(rows.astype(np.uint64), self._rows_f32(rows), threads=1)
        return index

    # -- persistence --------------------------------------------------------------------
    def state(self) -> dict[str, np.ndarray]:
        """Arrays for ``from_state``: the rows as held (float32, or int8 with a scale per row)."""
        out: dict[str, np.ndarray] = {"alive": self.alive}
        out.update(self._rows.state() if self._rows is not None
                   else {"rows": np.zeros((self.size, 0), dtype=np.float32)})
        if self._cells is not None:
            out.update({f"cells.{k}": v for k, v in self._cells.state().items()})
            out["cells.size"] = np.asarray([self._cells_size], dtype=np.int64)
        return out

    @classmethod
    def from_state(cls, state: dict[str, np.ndarray], *, quantized: bool = False) -> DenseIndex:
        """The index ``state`` describes; ``quantized`` holds its rows as int8 whichever form
        they were written in (float32 rows are quantized now, int8 rows dequantized for a
        float32 index)."""
        index = cls(quantized=quantized)
        rows, scale = state["rows"], state.get("scale")
        index._alive = Growable.wrap(state["alive"], fill=False)
        if rows.ndim == 2 and rows.shape[1]:
            index.dim = rows.shape[1]
            if quantized:
                index._rows = Int8RowStore(index.dim, rows, scale)
            else:
                index._rows = RowStore(index.dim, rows if scale is None else rows.astype(np.float32) * scale[:, None])
        if "cells.centroids" in state:
            index._cells = CellIndex.from_state({k[6:]: v for k, v in state.items() if k.startswith("cells.")})
            index._cells_size = int(state["cells.size"][0])
        return index
