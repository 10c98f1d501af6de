"""Deterministic top-k selection shared by the indexes: descending score, ties by index."""

from __future__ import annotations

import numpy as np


def top_k(scores: np.ndarray, k: int, *, positive_only: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Indices and scores of the ``k`` best entries, best first; equal scores in index order.

    ``argpartition`` narrows the candidates in O(n), then only the few that tie at the cut are
    sorted, so the result never depends on how the partition happened to break ties.
    """
    scores = np.asarray(scores)
    n = len(scores)
    if k <= 0 or n == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
    k = min(k, n)
    if k < n:
        cut = scores[np.argpartition(-scores, k - 1)[k - 1]]
        candidates = np.flatnonzero(scores >= cut)
    else:
        candidates = np.arange(n)
    order = np.lexsort((candidates, -scores[candidates]))[:k]
    idx = candidates[order].astype(np.int64)
    if positive_only:
        idx = idx[scores[idx] > 0]
    return idx, scores[idx].astype(np.float32)
