"""Per-view score normalization and weighted fusion (docs/design.md#fusion).

``normalize`` maps one view's raw scores onto [0, 1] relative to that view's own distribution:
``Ŝ(d) = clip((S(d) − m) / (max S − m), 0, 1)`` with ``m`` the median, so a view whose scores
are all alike contributes little and a view with one clear winner contributes it fully. For
sparse scores (BM25, PageRank mass: median 0) this is plain division by the maximum.
``fuse`` is ``S = ρ Ŝ_primary + (1 − ρ) Ŝ_secondary`` generalised to named weights.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np


def normalize(scores: np.ndarray) -> np.ndarray:
    scores = np.asarray(scores, dtype=np.float64)
    if scores.size == 0:
        return scores
    if scores.size == 1:  # a lone unit is its own median: it is the best match there is
        return (scores > 0).astype(np.float64)
    return rescale(scores, floor_of(scores), float(scores.max()))


def normalize_live(scores: np.ndarray, live: np.ndarray) -> np.ndarray:
    """``normalize`` with the distribution taken over the ``live`` entries only; the other
    entries (empty slots of an index) come out 0."""
    scores = np.asarray(scores, dtype=np.float64)
    if len(live) == len(scores):  # every entry live (``live`` holds distinct indices): no gather
        return normalize(scores)
    out = np.zeros_like(scores)
    if not len(live):
        return out
    out[live] = normalize(scores[live])
    return out


def floor_of(scores: np.ndarray) -> float:
    """The ``m`` of ``normalize``: the median, or 0 for mostly-zero scores."""
    if scores.min() >= 0 and 2 * np.count_nonzero(scores) < scores.size:
        return 0.0  # mostly zeros (BM25, PageRank mass): the median is 0, no need to sort
    return _median(scores)


def rescale(scores: np.ndarray, floor: float, top: float) -> np.ndarray:
    """``clip((S − floor) / (top − floor), 0, 1)``: ``normalize`` with its constants given, for
    scores known only on a subset of units whose distribution was estimated elsewhere."""
    scores = np.asarray(scores, dtype=np.float64)
    if top <= floor:
        return np.zeros_like(scores)
    return np.clip((scores - floor) / (top - floor), 0.0, 1.0)


def _median(values: np.ndarray) -> float:
    """np.median's value via one partial partition (np.median's own overhead dominates here)."""
    m = values.size // 2
    if values.size % 2:
        return float(np.partition(values, m)[m])
    part = np.partition(values, (m - 1, m))
    return float((part[m - 1] + part[m]) / 2)


def fuse(views: Mapping[str, np.ndarray], weights: Mapping[str, float]) -> np.ndarray:
    """Weighted sum of already-normalized views; views with zero weight are skipped."""
    total = None
    for name, weight in sorted(weights.items()):
        if weight == 0 or name not in views:
            continue
        part = weight * np.asarray(views[name], dtype=np.float64)
        total = part if total is None else total + part
    if total is None:
        size = len(next(iter(views.values()))) if views else 0
        return np.zeros(size)
    return total
