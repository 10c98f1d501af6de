"""What ``ScopeIndex.apply`` takes: a changed session's units as the store keeps them, read by
``store.read_changes`` (``session_batches`` turns its rows into them)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..store.rows import parse_rowids
from ..types import Trace

TURN = "turn"  # the level every other level lifts its scores onto


@dataclass(slots=True)
class StoredUnit:
    """One derived unit as the store keeps it (the input of ``apply``)."""

    level: str
    position: int
    text: str | None  # None: the index holds this unit already (``held.HeldUnits``)
    text_hash: str
    rowids: tuple[int, ...]
    vector: np.ndarray | None
    mentions: tuple[tuple[str, str, str, int], ...] = ()  # (entity, label, surface, count), turns
    uid: int = -1  # the store's id of the unit row (-1: derived in memory)


@dataclass(slots=True)
class SessionUnits:
    """A session's traces (row number → trace, conversation order) and units, read in one
    transaction."""

    session: str
    traces: dict[int, Trace]
    units: list[StoredUnit]
    # Read by unit ids (``held.HeldUnits.unit_ids``): ``units`` are only the session's units the
    # index did not hold, and these are the ids of all its units now; None: ``units`` are all.
    unit_ids: set[int] | None = None



def session_batches(delta: dict) -> list[SessionUnits]:
    """``store.read_changes`` rows → one ``SessionUnits`` per changed session."""
    by_ids = delta.get("unit_ids", {})
    by_session = {name: SessionUnits(name, {}, [], by_ids.get(name)) for name in delta["sessions"]}
    for rowid, trace in delta["traces"]:
        key = trace.session if trace.session is not None else ""
        if key in by_session:
            by_session[key].traces[rowid] = trace
    mentions: dict[int, list[tuple[str, str, str, int]]] = {}
    for uid, entity, label, surface, count in delta["mentions"]:
        mentions.setdefault(uid, []).append((entity, label, surface, count))
    for uid, session, level, position, text, text_hash, rowids, vec in delta["units"]:
        if session not in by_session:
            continue
        vector = np.frombuffer(vec, dtype=np.float32) if vec is not None else None
        by_session[session].units.append(StoredUnit(
            level, position, text, text_hash, rowids if isinstance(rowids, tuple) else parse_rowids(rowids), vector,
            tuple(mentions.get(uid, ())) if level == TURN else (), int(uid)))
    return [by_session[name] for name in delta["sessions"]]
