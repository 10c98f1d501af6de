"""What a ``ScopeIndex`` already holds, asked by the store while it reads a scope's changes.

A write changes a few units of its session (its turn, spans, window, episode): the store reads
the (rowid, version) of the changed sessions' traces and the ids of their units, asks
``HeldUnits`` (``store.roles.changes.HeldRows``), and reads whole rows only of what the index
lacks — by unit id where the index knows every id of the session (each slot keeps its unit's
store id), else by comparing every unit's key. ``ScopeIndex.apply`` then keeps the held units'
slots, exactly as it would keep them after reading the sessions whole.
"""

from __future__ import annotations

import numpy as np

from .scope_index import TURN, Level, ScopeIndex


class HeldUnits:
    """``HeldRows`` over one index, for the duration of one read (the index does not change
    meanwhile: the scope's lock is held). The store asks ``has_trace`` for every trace of the
    changed sessions before it asks ``unit_ids`` or ``has_unit``."""

    def __init__(self, index: ScopeIndex) -> None:
        self.index = index
        self._places: dict[tuple[int, str], dict[int, int]] = {}  # (session, level) → position → slot
        self._stale: set[int] = set()  # rowids of the traces it was asked for and lacks

    def has_trace(self, rowid: int, version: int) -> bool:
        index = self.index
        slot = index.slot_of_rowid.get(rowid)
        if slot is not None and index.turns.alive[slot]:
            trace = index.traces[slot]
            # The title too: an index loaded from a snapshot reads its traces as they are now
            # but its titles as they were saved.
            if trace is not None and trace.version == version and index.titles.of(slot) == trace.title:
                return True
        self._stale.add(rowid)
        return False

    def has_unit(self, session: str, level: str, position: int, text_hash: str, rowids: tuple[int, ...]) -> bool:
        index = self.index
        sid = index.session_id.get(session)
        if sid is None or not rowids:
            return False
        if level == TURN:
            # A turn whose trace is read again is read whole too, and refilled as it would be
            # from a whole read (the store asks about traces first).
            slot = index.slot_of_rowid.get(rowids[0])
            if slot is None or len(rowids) != 1 or rowids[0] in self._stale:
                return False
            turns = index.turns
            return bool(turns.alive[slot]) and self._same(turns, slot, sid, position, text_hash)
        by_place = self._places.get((sid, level))
        if by_place is None:
            units = index.levels[level]
            slots = np.flatnonzero(units.session.view() == sid)
            by_place = self._places[(sid, level)] = dict(zip(units.position.view()[slots].tolist(), slots.tolist()))
        slot = by_place.get(position)
        units = index.levels[level]
        return (slot is not None and self._same(units, slot, sid, position, text_hash)
                and tuple(units.rowids[slot].tolist()) == rowids)

    def unit_ids(self, session: str) -> set[int] | None:
        index = self.index
        sid = index.session_id.get(session)
        if sid is None:
            return set()
        ids: set[int] = set()
        for level in index.levels.values():
            uids = level.unit_id.view()[np.flatnonzero(level.session.view() == sid)]
            if (uids < 0).any():
                return None  # derived in memory, or loaded from a snapshot that kept no ids
            ids.update(uids.tolist())
        turns = index.turns
        for rowid in self._stale:  # their turns are read again, whole
            slot = index.slot_of_rowid.get(rowid)
            if slot is not None:
                ids.discard(int(turns.unit_id[slot]))
        return ids

    @staticmethod
    def _same(level: Level, slot: int, sid: int, position: int, text_hash: str) -> bool:
        """Whether a live slot holds a unit of this session at this position with this text
        (``Level.key`` without building it)."""
        return (int(level.session[slot]) == sid and int(level.position[slot]) == position
                and level.text_hash[slot].ljust(12, b"\0").hex() == text_hash)
