"""Deterministic top-k selection, the one used everywhere: descending score, ties by index."""

from __future__ import annotations

import numpy as np


def top_indices(scores: np.ndarray, k: int) -> np.ndarray:
    """Indices of the k best scores, best first, ties broken by lower index (deterministic).

    The result is always the prefix of the full sort by (-score, index), however it is found:
    a full sort for a large share of the array, a partial selection (O(n)) otherwise, with the
    ties at the cut settled by index.
    """
    if k <= 0 or scores.size == 0:
        return np.zeros(0, dtype=np.int64)
    if k * 4 >= scores.size:
        return np.lexsort((np.arange(scores.size), -scores))[:k]
    positive = np.flatnonzero(scores > 0)
    if k <= positive.size < scores.size // 2:
        # Mostly-zero scores (a large scope scores only its candidates): the k best are all
        # positive, and the positives keep index order, so selecting among them is the same.
        return positive[top_indices(scores[positive], k)]
    cut = np.partition(scores, scores.size - k)[scores.size - k]
    above = np.flatnonzero(scores > cut)
    equal = np.flatnonzero(scores == cut)[: k - above.size]
    chosen = np.concatenate([above, equal])
    return chosen[np.lexsort((chosen, -scores[chosen]))]


def top_k(scores: np.ndarray, k: int, *, positive_only: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """``top_indices`` with the scores (float32), optionally only the positive ones."""
    scores = np.asarray(scores)
    idx = top_indices(scores, min(k, len(scores))).astype(np.int64)
    if positive_only:
        idx = idx[scores[idx] > 0]
    return idx, scores[idx].astype(np.float32)
