"""Coarse cells over unit vectors (an inverted file, "IVF"): cheap approximate neighbours.

k-means puts the rows into about ``n / ROWS_PER_CELL`` cells; a query scores the cell centroids
and reads only the rows of its ``PROBES`` nearest cells, so its cost stays near
``PROBES · ROWS_PER_CELL`` rows however large the index grows. Why not the HNSW graph of
``DenseIndex.search``: that costs ~0.8 ms per row to build (80 s at 100k rows, on one core),
cells ~2 s, and a snapshot is rebuilt after every write. Recall against exact search on LoCoMo
units, in docs/decisions.md.

Deterministic: the initial centroids are evenly spaced rows of an evenly spaced training
sample, the iteration count is fixed, matrix products run on one BLAS thread, and every tie is
settled by index.
"""

from __future__ import annotations

import numpy as np
from threadpoolctl import threadpool_limits

ROWS_PER_CELL = 256
PROBES = 32
TRAIN_SAMPLE = 16_384  # rows k-means learns the centroids from
ITERATIONS = 8


class CellIndex:
    """Cells over the rows of ``vectors`` (unit length, as ``DenseIndex`` keeps them)."""

    def __init__(self, vectors: np.ndarray, rows_per_cell: int = ROWS_PER_CELL) -> None:
        n = len(vectors)
        with threadpool_limits(limits=1, user_api="blas"):
            self.centroids = _kmeans(vectors, max(1, n // rows_per_cell))
            cell = np.empty(n, dtype=np.int64)
            for start in range(0, n, TRAIN_SAMPLE):  # in blocks: one (block × cells) product
                cell[start:start + TRAIN_SAMPLE] = np.argmax(
                    vectors[start:start + TRAIN_SAMPLE] @ self.centroids.T, axis=1)
        self.rows = np.argsort(cell, kind="stable")
        self.ptr = np.searchsorted(cell[self.rows], np.arange(len(self.centroids) + 1))

    def probe(self, q: np.ndarray, probes: int = PROBES) -> np.ndarray:
        """Rows of the ``probes`` cells whose centroids are closest to ``q`` (ascending)."""
        closeness = self.centroids @ q
        order = np.lexsort((np.arange(len(closeness)), -closeness))[:probes]
        return np.sort(np.concatenate([self.rows[self.ptr[c]:self.ptr[c + 1]] for c in order]))


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
