"""A numpy array that grows by doubling, for per-slot data that a write appends to in place.

Appending ``m`` items costs O(m) amortized (a copy only when the capacity doubles), and
``view()`` is the filled prefix without a copy, so an in-memory index can take one write at a
time without re-allocating arrays the size of the whole scope.
"""

from __future__ import annotations

import numpy as np

LARGE_BYTES = 64 << 20


class Growable:
    """A 1-D (or row-wise 2-D) array with a filled length and a doubling capacity."""

    def __init__(self, dtype, fill=0, width: int | None = None, capacity: int = 64) -> None:
        self.dtype = np.dtype(dtype)
        self.fill = fill
        self.width = width
        shape = (capacity,) if width is None else (capacity, width)
        self._data = np.full(shape, fill, dtype=self.dtype)
        self.size = 0

    @classmethod
    def wrap(cls, array: np.ndarray, fill=0) -> Growable:
        """A Growable whose filled part is ``array`` (no copy until it grows)."""
        array = np.asarray(array)
        out = cls.__new__(cls)
        out.dtype = array.dtype
        out.fill = fill
        out.width = None if array.ndim == 1 else array.shape[1]
        out._data = array
        out.size = len(array)
        return out

    def __len__(self) -> int:
        return self.size

    @property
    def capacity(self) -> int:
        """Items the array has room for without growing (``size`` of them filled)."""
        return len(self._data)

    def view(self) -> np.ndarray:
        return self._data[:self.size]

    def reserve(self, size: int) -> None:
        """Make room for ``size`` items (new items hold ``fill``); never shrinks."""
        if size <= len(self._data):
            if size > self.size:
                self._writable()
                self._data[self.size:size] = self.fill
                self.size = size
            return
        # Double small arrays; grow large ones by a quarter (still amortized O(1)) so that a
        # 100 MB array does not briefly need 300 MB.
        grow = 2 * len(self._data) if self._data.nbytes < LARGE_BYTES else len(self._data) + len(self._data) // 4
        capacity = max(size, grow)
        shape = (capacity,) if self.width is None else (capacity, self.width)
        grown = np.full(shape, self.fill, dtype=self.dtype)
        grown[:self.size] = self._data[:self.size]
        self._data = grown
        self.size = size

    def _writable(self) -> None:
        """Arrays loaded from a persisted index are read-only views of its bytes; the first
        write copies them."""
        if not self._data.flags.writeable:
            self._data = self._data.copy()

    def append(self, value) -> int:
        """Append one item; returns its index."""
        index = self.size
        self.reserve(index + 1)
        self._data[index] = value
        return index

    def extend(self, values) -> None:
        values = np.asarray(values, dtype=self.dtype)
        start = self.size
        self.reserve(start + len(values))
        self._data[start:start + len(values)] = values

    def __getitem__(self, index):
        return self.view()[index]

    def __setitem__(self, index, value) -> None:
        self._writable()
        self.view()[index] = value
