"""Closure inputs built from plain lists, shared by the closure tests."""

from __future__ import annotations

import numpy as np


def entity_turns(ptr, nodes):
    """``turns_of_entities`` over a CSR (entity → turn nodes) built by the test."""
    from zeromem.views.csr import row_slices

    def lookup(entities):
        positions, counts = row_slices(ptr, np.asarray(entities, dtype=np.int64))
        return nodes[positions], counts
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

