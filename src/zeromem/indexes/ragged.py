"""A list of short integer (or float) arrays, one per slot, stored in two flat arrays.

Slot ``i`` holds ``values[ptr[i]:ptr[i + 1]]`` of a compact *base*; a write replaces a slot's
array in a small dict of *overrides* instead of shifting the flat arrays. Past
``COMPACT_SHARE`` of overridden slots the overrides are folded into a new base (amortized
O(1) per write). Per slot this costs a few bytes instead of a Python object, which is what
keeps a 100k-trace scope's index in memory small and loadable from a snapshot in one read.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

COMPACT_SHARE = 0.25


class Ragged:
    """Per-slot arrays of one dtype; ``self[slot]`` is a read-only array (empty if unset)."""

    def __init__(self, dtype=np.int64, ptr: np.ndarray | None = None, values: np.ndarray | None = None) -> None:
        self.dtype = np.dtype(dtype)
        self._ptr = np.zeros(1, dtype=np.int64) if ptr is None else np.asarray(ptr, dtype=np.int64)
        self._values = np.zeros(0, dtype=self.dtype) if values is None else np.asarray(values, dtype=self.dtype)
        self._over: dict[int, np.ndarray] = {}
        self.size = len(self._ptr) - 1

    @classmethod
    def from_lists(cls, items: Iterable[Iterable], dtype=np.int64) -> Ragged:
        arrays = [np.asarray(list(item), dtype=dtype) for item in items]
        lengths = np.fromiter((len(a) for a in arrays), dtype=np.int64, count=len(arrays))
        ptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        values = np.concatenate(arrays) if arrays else np.zeros(0, dtype=dtype)
        return cls(dtype, ptr, values)

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, slot: int) -> np.ndarray:
        found = self._over.get(slot)
        if found is not None:
            return found
        if slot < len(self._ptr) - 1:
            return self._values[self._ptr[slot]:self._ptr[slot + 1]]
        return np.zeros(0, dtype=self.dtype)

    def __setitem__(self, slot: int, values) -> None:
        array = np.asarray(values, dtype=self.dtype)
        array.flags.writeable = False
        self._over[slot] = array
        if slot >= self.size:
            self.size = slot + 1
        if len(self._over) > max(1024, COMPACT_SHARE * self.size):
            self.compact()

    def reserve(self, size: int) -> None:
        self.size = max(self.size, size)

    def append(self, values) -> int:
        slot = self.size
        self[slot] = values
        return slot

    def lengths(self) -> np.ndarray:
        """Length of every slot's array."""
        base = np.diff(self._ptr)
        out = np.zeros(self.size, dtype=np.int64)
        out[:len(base)] = base[:self.size]
        for slot, array in self._over.items():
            out[slot] = len(array)
        return out

    def compact(self) -> None:
        """Fold the overrides into one flat base."""
        if not self._over and len(self._ptr) - 1 == self.size:
            return
        lengths = self.lengths()
        ptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        values = np.empty(int(ptr[-1]), dtype=self.dtype)
        base_n = len(self._ptr) - 1
        keep = np.ones(min(base_n, self.size), dtype=bool)
        over = [s for s in self._over if s < len(keep)]
        keep[over] = False
        kept = np.flatnonzero(keep)
        if len(kept):
            # copy the base slots that were not overridden, in one gather
            starts, ends = self._ptr[kept], self._ptr[kept + 1]
            counts = ends - starts
            src = np.repeat(starts - np.cumsum(counts) + counts, counts) + np.arange(int(counts.sum()))
            dst = np.repeat(ptr[kept] - np.cumsum(counts) + counts, counts) + np.arange(int(counts.sum()))
            values[dst] = self._values[src]
        for slot, array in self._over.items():
            values[ptr[slot]:ptr[slot + 1]] = array
        self._ptr, self._values, self._over = ptr, values, {}

    def flat(self) -> tuple[np.ndarray, np.ndarray]:
        """(ptr, values) with every override folded in."""
        self.compact()
        return self._ptr, self._values
