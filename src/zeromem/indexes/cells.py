"""Coarse cells over unit vectors (an inverted file, "IVF"): cheap approximate neighbours.

k-means puts the rows into about ``n / ROWS_PER_CELL`` cells; a query scores the cell centroids
and reads only the rows of its ``PROBES`` nearest cells, so its cost stays near
``PROBES · ROWS_PER_CELL`` rows however large the index grows. Why not the HNSW graph of
``DenseIndex.search``: that costs ~0.8 ms per row to build (80 s at 100k rows, on one core),
cells ~2 s, and a snapshot is rebuilt after every write. Recall against exact search on LoCoMo
units, in docs/decisions/0006-large-scopes.md.

Deterministic: the initial centroids are evenly spaced rows of an evenly spaced training
sample, the iteration count is fixed, matrix products run on one BLAS thread, and every tie is
settled by index.
"""

from __future__ import annotations

import numpy as np

from ..blas import one_blas_thread
from .ragged import Ragged
from .topk import top_indices

ROWS_PER_CELL = 256
PROBES = 32
TRAIN_SAMPLE = 16_384  # rows k-means learns the centroids from
ITERATIONS = 8


class CellIndex:
    """Cells over the rows of ``vectors`` (unit length, as ``DenseIndex`` keeps them).

    ``rows`` names the rows (slot numbers) the vectors belong to (default 0..n-1). Rows
    assigned later (``assign``) join the cell of their nearest centroid; a probe may return a
    row more than once or a row since cleared — callers filter and re-score exactly.
    """

    def __init__(self, vectors: np.ndarray, rows_per_cell: int = ROWS_PER_CELL,
                 rows: np.ndarray | None = None) -> None:
        n = len(vectors)
        names = np.arange(n, dtype=np.int64) if rows is None else np.asarray(rows, dtype=np.int64)
        with one_blas_thread():
            self.centroids = _kmeans(vectors, max(1, n // rows_per_cell))
            cell = np.empty(n, dtype=np.int64)
            for start in range(0, n, TRAIN_SAMPLE):  # in blocks: one (block × cells) product
                cell[start:start + TRAIN_SAMPLE] = np.argmax(
                    vectors[start:start + TRAIN_SAMPLE] @ self.centroids.T, axis=1)
        order = np.argsort(cell, kind="stable")
        self.rows = names[order]
        self.ptr = np.searchsorted(cell[order], np.arange(len(self.centroids) + 1))
        self._extra: dict[int, list[int]] = {}

    def state(self) -> dict[str, np.ndarray]:
        extra = Ragged.from_lists([self._extra.get(c, []) for c in range(len(self.centroids))])
        extra_ptr, extra_rows = extra.flat()
        return {"centroids": self.centroids, "rows": self.rows, "ptr": self.ptr,
                "extra_ptr": extra_ptr, "extra_rows": extra_rows}

    @classmethod
    def from_state(cls, state: dict[str, np.ndarray]) -> CellIndex:
        cells = cls.__new__(cls)
        cells.centroids = state["centroids"]
        cells.rows = state["rows"]
        cells.ptr = state["ptr"]
        ptr, rows = state["extra_ptr"], state["extra_rows"].tolist()
        cells._extra = {c: rows[ptr[c]:ptr[c + 1]] for c in range(len(ptr) - 1) if ptr[c + 1] > ptr[c]}
        return cells

    def assign(self, rows: np.ndarray, vectors: np.ndarray) -> None:
        """Rows written after the build join the cell of their nearest centroid."""
        if not len(rows):
            return
        with one_blas_thread():
            cells = np.argmax(np.asarray(vectors, dtype=np.float32) @ self.centroids.T, axis=1)
        for row, cell in zip(np.asarray(rows).tolist(), cells.tolist()):
            self._extra.setdefault(cell, []).append(row)

    def probe(self, q: np.ndarray, probes: int = PROBES) -> np.ndarray:
        """Distinct rows of the ``probes`` cells whose centroids are closest to ``q`` (ascending)."""
        closeness = self.centroids @ q
        order = top_indices(closeness, probes)
        parts = [self.rows[self.ptr[c]:self.ptr[c + 1]] for c in order]
        parts += [np.asarray(self._extra[c], dtype=np.int64) for c in order.tolist() if c in self._extra]
        return np.unique(np.concatenate(parts))


def _kmeans(vectors: np.ndarray, k: int) -> np.ndarray:
    """Spherical k-means (cosine) on an evenly spaced sample of the rows."""
    sample = vectors[:: max(1, len(vectors) // TRAIN_SAMPLE)]
    centroids = sample[np.linspace(0, len(sample) - 1, k).astype(np.int64)].copy()
    for _ in range(ITERATIONS):
        cell = np.argmax(sample @ centroids.T, axis=1)
        order = np.argsort(cell, kind="stable")
        present, starts = np.unique(cell[order], return_index=True)
        sums = np.add.reduceat(sample[order], starts, axis=0)
        norms = np.linalg.norm(sums, axis=1, keepdims=True)
        keep = norms[:, 0] > 0
        centroids[present[keep]] = sums[keep] / norms[keep]  # an emptied cell keeps its centroid
    return centroids
