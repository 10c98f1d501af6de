"""Which turn slots carry which title (``Trace.title``), kept in step with the scope index.

A title is looked up by its normalized form (``encoders.entities.normalize_title``): the
engine matches queries and entities against that key, and keeps the written form for display.
"""

from __future__ import annotations

from ..encoders.entities import normalize_title


class TurnTitles:
    """Turn slot → title, and normalized title → the slots that carry it."""

    def __init__(self) -> None:
        self._of: dict[int, str] = {}
        self._slots: dict[str, set[int]] = {}
        self._changes = 0
        self._changed_at: dict[str, int] = {}  # key → the change count when its slots last moved

    def changed_at(self, key: str) -> int:
        """A number that moves whenever the slots (or written titles) under ``key`` change: a
        reader caches what it derived from a key and redoes only the keys that moved."""
        return self._changed_at.get(key, 0)

    def of(self, slot: int) -> str | None:
        """The title of a turn slot's trace, if it has one."""
        return self._of.get(slot)

    def slots(self, key: str) -> list[int]:
        """Turn slots whose title normalizes to ``key``, in slot order."""
        return sorted(self._slots.get(key, ()))

    def names(self) -> list[str]:
        """Every normalized title some slot carries, sorted."""
        return sorted(self._slots)

    def set(self, slot: int, title: str | None) -> None:
        """Give ``slot`` this title (None, or one that normalizes to nothing: no title)."""
        old = self._of.pop(slot, None)
        if old is not None:
            key = normalize_title(old)
            self._moved(key)
            slots = self._slots.get(key)
            if slots is not None:
                slots.discard(slot)
                if not slots:
                    del self._slots[key]
        key = normalize_title(title) if title else ""
        if title and key:
            self._moved(key)
            self._of[slot] = title
            self._slots.setdefault(key, set()).add(slot)

    def _moved(self, key: str) -> None:
        self._changes += 1
        self._changed_at[key] = self._changes

    def state(self) -> list[list]:
        """[slot, title] pairs in slot order (JSON-able)."""
        return sorted([slot, title] for slot, title in self._of.items())

    @classmethod
    def from_state(cls, pairs: list[list]) -> TurnTitles:
        titles = cls()
        for slot, title in pairs:
            titles.set(int(slot), str(title))
        return titles
