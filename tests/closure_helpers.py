"""Closure inputs built from plain lists, shared by the closure tests."""

from __future__ import annotations

import numpy as np


def entity_turns(unit_entities):
    """``turns_of_entities`` for turns given as lists of entity ids: each entity's turns,
    ascending, entity by entity, and how many each has."""
    holders = {}
    for node, entities in enumerate(unit_entities):
        for entity in entities:
            holders.setdefault(entity, []).append(node)

    def lookup(entities):
        found = [holders.get(int(e), []) for e in entities]
        nodes = np.asarray([node for turns in found for node in turns], dtype=np.int64)
        return nodes, np.asarray([len(turns) for turns in found], dtype=np.int64)
    return lookup


def session_neighbours(session):
    """next/prev turn of each node: the adjacent node when it is in the same session."""
    session = np.asarray(session)
    n = len(session)
    nxt = np.full(n, -1)
    prev = np.full(n, -1)
    same = session[1:] == session[:-1]
    nxt[:-1][same] = np.arange(1, n)[same]
    prev[1:][same] = np.arange(n - 1)[same]
    return nxt, prev

