"""Row-grouped index arrays (CSR layout): "the items of row r" as one slice, gathered for
many rows at once without a Python loop."""

from __future__ import annotations

import numpy as np


def row_slices(ptr: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Positions of every item of the given rows (row by row), and how many each row has."""
    rows = np.asarray(rows, dtype=np.int64)
    starts = ptr[rows]
    counts = ptr[rows + 1] - starts
    positions = np.repeat(starts - np.cumsum(counts) + counts, counts) + np.arange(int(counts.sum()))
    return positions, counts
