"""The bounded cache of prepared scope indexes: least recently used out first, by bytes.

A process that serves many tenants searches many scopes; each scope's prepared index takes
memory in proportion to its traces. The cache keeps the scopes searched most recently while
their measured bytes (footprint.py) fit ``Config.index_cache_mb``, and drops the least recently
used beyond that. A dropped scope is rebuilt (or read from its persisted snapshot) at its next
search; nothing is lost, since every index is derived from the store.

Loading a scope holds more than its final size for a while (snapshot bytes, a build's
temporaries): ``make_room`` reserves that much before the load, and ``put`` (or ``release``,
if the load failed) gives it back. Reservations count against the budget like held indexes,
and a load that would take them past the budget waits for the others to finish: several large
scopes loaded at once by concurrent searches do not each assume the whole budget is theirs.

The scope that was just used is never dropped to make room for itself: a scope larger than the
whole budget stays until the next scope is used, so a search always has its index. A scope is
measured when it enters the cache and again once it has grown by ``REMEASURE_GROWTH`` since;
in between its size is scaled by its number of turn slots (streaming writes add a few at a
time, and a walk per write would cost more than the write).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..results import IndexCacheStats
from .footprint import deep_nbytes

REMEASURE_GROWTH = 0.25  # share of turn slots added since the last measure that triggers a new one


class Reservation:
    """Bytes set aside for one load in progress (``IndexCache.make_room``); given back once."""

    __slots__ = ("nbytes",)

    def __init__(self, nbytes: int) -> None:
        self.nbytes = nbytes


@dataclass
class _Entry:
    value: Any
    nbytes: int
    measured_bytes: int
    measured_slots: int
    measured_version: int


class IndexCache:
    """Scope key → prepared index, bounded by ``budget_bytes``; thread-safe.

    ``slots(value)`` and ``version(value)`` tell how large a value is now and whether it
    changed; ``on_evict(key, value)`` runs for each value dropped (outside the cache's lock).
    """

    def __init__(self, budget_bytes: int, *, slots: Callable[[Any], int], version: Callable[[Any], int],
                 on_evict: Callable[[tuple[str, str], Any], None] | None = None,
                 measure: Callable[[Any], int] = deep_nbytes) -> None:
        if budget_bytes < 0:
            raise ValueError("the index cache budget must be >= 0 bytes")
        self.budget_bytes = budget_bytes
        self._slots = slots
        self._version = version
        self._on_evict = on_evict
        self._measure = measure
        self._entries: OrderedDict[tuple[str, str], _Entry] = OrderedDict()
        self._bytes = 0
        self._measured = [0, 0]  # measured bytes, measured slots of the values held (their sums)
        self._evicted_bytes = 0  # since take_evicted_bytes was last called
        self._hits = 0
        self._misses = 0
        self._evictions = 0
        self._reserved = 0  # bytes set aside by loads in progress (make_room → put / release)
        self._lock = threading.Lock()
        self._released = threading.Condition(self._lock)

    def _add(self, key: tuple[str, str], entry: _Entry) -> None:
        self._entries[key] = entry
        self._bytes += entry.nbytes
        self._measured[0] += entry.measured_bytes
        self._measured[1] += entry.measured_slots

    def _remove(self, entry: _Entry) -> None:
        self._bytes -= entry.nbytes
        self._measured[0] -= entry.measured_bytes
        self._measured[1] -= entry.measured_slots

    def _evict_while(self, over: Callable[[], bool]) -> list[tuple[tuple[str, str], Any]]:
        """Drop least recently used entries while ``over()`` (caller holds the lock)."""
        evicted = []
        while over():
            victim, dropped = self._entries.popitem(last=False)
            self._remove(dropped)
            self._evictions += 1
            self._evicted_bytes += dropped.nbytes
            evicted.append((victim, dropped.value))
        return evicted

    def get(self, key: tuple[str, str]) -> Any | None:
        """The cached value (now the most recently used), or None: a hit or a miss."""
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                self._misses += 1
                return None
            self._hits += 1
            self._entries.move_to_end(key)
            return entry.value

    def peek(self, key: tuple[str, str]) -> Any | None:
        """The cached value without counting a use."""
        with self._lock:
            entry = self._entries.get(key)
            return None if entry is None else entry.value

    def held_keys(self) -> list[tuple[str, str]]:
        with self._lock:
            return list(self._entries)

    def put(self, key: tuple[str, str], value: Any, reservation: Reservation | None = None) -> None:
        """Hold ``value`` for ``key`` (the most recently used), sized now; evict beyond budget
        (what other loads reserved counted in). ``reservation``: what this load's ``make_room``
        set aside, given back now.

        The caller holds the scope's lock, so ``value`` does not change while it is measured.
        """
        with self._lock:
            entry = self._entries.get(key)
        slots, version = self._slots(value), self._version(value)
        if (entry is not None and entry.value is value and entry.measured_slots > 0
                and slots <= entry.measured_slots * (1 + REMEASURE_GROWTH)):
            nbytes = (entry.nbytes if entry.measured_version == version
                      else entry.measured_bytes * slots // entry.measured_slots)
            measured = (entry.measured_bytes, entry.measured_slots, entry.measured_version)
        else:
            nbytes = self._measure(value)
            measured = (nbytes, slots, version)
        with self._lock:
            self._give_back(reservation)
            old = self._entries.pop(key, None)
            if old is not None:
                self._remove(old)
            self._add(key, _Entry(value, nbytes, *measured))
            evicted = self._evict_while(
                lambda: self._bytes + self._reserved > self.budget_bytes and len(self._entries) > 1)
        self._evicted(evicted)

    def _give_back(self, reservation: Reservation | None) -> None:
        if reservation is not None and reservation.nbytes:
            self._reserved -= reservation.nbytes
            reservation.nbytes = 0
            self._released.notify_all()

    def _evicted(self, evicted: list[tuple[tuple[str, str], Any]]) -> None:
        if self._on_evict is not None:
            for victim, value_out in evicted:
                self._on_evict(victim, value_out)

    def make_room(self, nbytes: int) -> Reservation:
        """Reserve ``nbytes`` for a scope about to be loaded, evicting least recently used values
        until they fit: its arrays are then not built on top of a full budget (the peak would be
        budget + scope). Waits while other loads' reservations leave no room (a load alone may
        reserve more than the budget). The caller gives the bytes back with ``put(...,
        reservation)``, or ``release(reservation)`` when it puts nothing."""
        with self._lock:
            self._released.wait_for(lambda: not self._reserved or self._reserved + nbytes <= self.budget_bytes)
            self._reserved += nbytes
            evicted = self._evict_while(
                lambda: bool(self._entries) and self._bytes + self._reserved > self.budget_bytes)
        self._evicted(evicted)
        return Reservation(nbytes)

    def release(self, reservation: Reservation) -> None:
        """Give back a reservation (a no-op once ``put`` or ``release`` gave it back)."""
        with self._lock:
            self._give_back(reservation)

    def bytes_per_slot(self, default: int) -> int:
        """The measured bytes per turn slot of the values held (``default`` when there are none)."""
        with self._lock:
            measured, slots = self._measured
        return measured // slots if slots else default

    def take_evicted_bytes(self) -> int:
        """Bytes evicted since the last call."""
        with self._lock:
            taken, self._evicted_bytes = self._evicted_bytes, 0
        return taken

    def discard(self, key: tuple[str, str]) -> None:
        """Forget ``key`` (its index was wiped); not counted as an eviction."""
        with self._lock:
            entry = self._entries.pop(key, None)
            if entry is not None:
                self._remove(entry)

    def stats(self) -> IndexCacheStats:
        with self._lock:
            return IndexCacheStats(self.budget_bytes, self._bytes, len(self._entries), self._hits,
                              self._misses, self._evictions)
