"""Cosine search over unit vectors: exact numpy below a size threshold, HNSW (usearch) above.

``scores`` is always exact — one matrix-vector product — because the engine fuses the scores of
every unit. On a large scope the engine instead scores only candidate rows (``scores_of``),
normalizes with the cosines of a fixed sample (``sample_scores``) and finds the candidates
through coarse cells (``candidates``, see cells.py), cheap enough to build on every snapshot
load. ``search`` uses the approximate index only when the index holds at least
``ann_threshold`` vectors; its candidates are then re-scored exactly, so returned scores are
true cosines and the order is deterministic (descending score, ties by index).

Why usearch: at 100k vectors synthesized from LoCoMo turns, usearch, hnswlib and faiss HNSW
(M=16, ef_construction=128, one thread) reach the same recall@10 against exact search (0.93-0.94
at ef=64, 0.97-0.98 at ef=128) at sub-millisecond latency, and all take minutes to build on
one busy core. usearch has the smallest wheel, no OpenMP, incremental add/remove and
serialization. The graph is built lazily, on the first ``search`` at or above the threshold:
building costs ~0.5-1.5 ms per vector, so it only pays off for a snapshot that answers
thousands of ``search`` calls; ``scores`` never needs it. Numbers in docs/decisions.md.
"""

from __future__ import annotations

import threading

import numpy as np


from ..errors import InvalidInput, ModelUnavailable
from .cells import PROBES, ROWS_PER_CELL, CellIndex
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


class DenseIndex:
    """An immutable cosine index over the rows of ``vectors`` (zero rows never match)."""

    def __init__(self, vectors: np.ndarray, *, ann_threshold: int = ANN_THRESHOLD) -> None:
        self.vectors = _normalized(vectors)
        self.size, self.dim = self.vectors.shape
        self.ann_threshold = ann_threshold
        step = max(1, self.size // DISTRIBUTION_SAMPLE)
        self._sample = self.vectors if step == 1 else self.vectors[::step].copy()
        self._ann = None
        self._ann_lock = threading.Lock()
        self._cells: CellIndex | None = None
        self._cells_lock = threading.Lock()

    def __len__(self) -> int:
        return self.size

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

    def scores(self, qvec: np.ndarray) -> np.ndarray:
        """Exact cosine of the query with every row (float32, row order)."""
        if self.size == 0 or self.dim == 0:
            return np.zeros(self.size, dtype=np.float32)
        q = self._query(qvec)
        if self.size < SINGLE_THREAD_ABOVE:
            return self.vectors @ q
        # OpenBLAS runs a large matrix-vector product on every core; on 2 cores shared with an
        # encoder or another process that is 2-5x slower than einsum's single-threaded loop
        # (measured at 10k rows: 8.0 ms vs 2.0 ms p50).
        return np.einsum("ij,j->i", self.vectors, q)

    def scores_of(self, qvec: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """Exact cosine of the query with the given rows only (float32, in ``rows`` order)."""
        if self.dim == 0 or len(rows) == 0:
            return np.zeros(len(rows), dtype=np.float32)
        return self.vectors[rows] @ self._query(qvec)

    def sample_scores(self, qvec: np.ndarray) -> np.ndarray:
        """Cosines of a fixed, evenly spaced sample of at most ~2·``DISTRIBUTION_SAMPLE`` rows:
        the shape of ``scores`` (its median, its spread) without scoring every row."""
        if self.size == 0 or self.dim == 0:
            return np.zeros(0, dtype=np.float32)
        return self._sample @ self._query(qvec)

    def search(self, qvec: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """The ``k`` nearest rows: (indices, cosines), best first, ties in index order."""
        if k <= 0 or self.size == 0 or self.dim == 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        if not self.uses_ann:
            return top_k(self.scores(qvec), k)
        q = self._query(qvec)
        wanted = min(self.size, max(k * ANN_OVERFETCH, k + 10))
        found = self.ann().search(q, wanted)
        keys = np.unique(np.asarray(found.keys, dtype=np.int64))
        keys = keys[(keys >= 0) & (keys < self.size)]
        exact = self.vectors[keys] @ q
        idx, scores = top_k(exact, k)
        return keys[idx], scores

    def candidates(self, qvec: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """About the ``k`` nearest rows, cheaply: the rows of the query's nearest cells
        (``CellIndex``, built on first use), re-scored exactly; best first, ties in index order."""
        if k <= 0 or self.size == 0 or self.dim == 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        q = self._query(qvec)
        if self.size <= ROWS_PER_CELL * PROBES:  # the probed cells would hold about every row
            return top_k(self.vectors @ q, k)
        with self._cells_lock:
            if self._cells is None:
                self._cells = CellIndex(self.vectors, ROWS_PER_CELL)
        rows = self._cells.probe(q, PROBES)
        idx, scores = top_k(self.vectors[rows] @ q, k)
        return rows[idx], scores

    def ann(self):
        """The HNSW graph, built on first use: the engine fuses exact ``scores`` of every unit
        and may never call ``search``, and building costs ~0.5 ms per vector on one core."""
        with self._ann_lock:
            if self._ann is None:
                self._ann = self._build_ann()
            return self._ann

    def _build_ann(self):
        try:
            from usearch.index import Index
        except ImportError as err:
            raise ModelUnavailable("approximate search above "
                                   f"{self.ann_threshold} vectors needs usearch: "
                                   "`pip install 'zeromem[ann]'` (or raise ann_threshold)") from err
        index = Index(ndim=self.dim, metric="ip", dtype="f32", connectivity=ANN_CONNECTIVITY,
                      expansion_add=ANN_EXPANSION_ADD, expansion_search=ANN_EXPANSION_SEARCH)
        # one thread: the HNSW graph (and so every result) is then the same on every build
        index.add(np.arange(self.size, dtype=np.uint64), self.vectors, threads=1)
        return index
