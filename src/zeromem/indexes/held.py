"""What a ``ScopeIndex`` already holds, asked by the store while it reads a scope's changes.

A write re-derives its session, but only a few of the session's units change (its turn, spans,
window, episode): the store reads the keys of the changed sessions' units and traces, asks
``HeldUnits``, and reads texts, vectors, mentions and traces only for what the index lacks
(``store.roles.changes.HeldRows``). ``ScopeIndex.apply`` then keeps the held units' slots,
exactly as it would keep them after reading them whole.
"""

from __future__ import annotations

import numpy as np

from .scope_index import TURN, ScopeIndex


class HeldUnits:
    """``HeldRows`` over one index, for the duration of one read (the index does not change
    meanwhile: the scope's lock is held). The store asks ``has_trace`` for every trace of the
    changed sessions before it asks ``has_unit``."""

    def __init__(self, index: ScopeIndex) -> None:
        self.index = index
        self._keys: dict[tuple[int, str], set[tuple | None]] = {}
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
        if sid is None:
            return False
        key = (position, text_hash, rowids)
        if level == TURN:
            # A turn whose trace is read again is read whole too, and refilled as it would be
            # from a whole read (the store asks about traces first).
            if not rowids or rowids[0] in self._stale:
                return False
            slot = index.slot_of_rowid.get(rowids[0])
            turns = index.turns
            return slot is not None and turns.key(slot) == key and int(turns.session[slot]) == sid
        held = self._keys.get((sid, level))
        if held is None:
            units = index.levels[level]
            held = self._keys[(sid, level)] = {
                units.key(slot) for slot in np.flatnonzero(units.session.view() == sid).tolist()}
        return key in held
