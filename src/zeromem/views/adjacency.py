"""The graph view's adjacency as PageRank reads it: an immutable CSR base plus a small delta.

Nodes: turn slot ``t`` is node ``t``; entity ``j`` is node ``turn_capacity + j``. A turn owns
its edges to entities and its adjacency edge to the next turn of its session (both directions
are stored: the matrix is symmetric). scipy cannot change a CSR matrix's structure cheaply
(building one for 100k turns takes 40-80 ms), so a turn whose edges changed ("dirty") has its
entries in the base zeroed and its current edges in a delta rebuilt per version from the dirty
turns only; degrees are kept per node. When the delta outgrows ``DELTA_SHARE`` of the base, or
a capacity is reached, the base is rebuilt from every turn's edges, vectorized (amortized O(1)
per write).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

import numpy as np

from ..indexes.growable import Growable
from ..indexes.ragged import Ragged

if TYPE_CHECKING:  # imported by the methods that build a matrix: ~0.2 s off `import zeromem`
    import scipy.sparse as sp

ADJACENCY_WEIGHT = 0.3  # between consecutive turns of a session
# Edge weights as PageRank reads them: single precision halves the memory a power step streams
# through (PPR converges to an L1 tolerance of 1e-3, far above float32's rounding; measured on
# the HotpotQA pool and LoCoMo: identical rankings, docs/decisions/0034-search-cost.md).
WEIGHT_DTYPE = np.float32


def _csr(arg: tuple, shape: tuple[int, int], *, copy: bool = False) -> sp.csr_matrix:
    """A CSR matrix; scipy.sparse is imported on the first one, not with the package."""
    import scipy.sparse

    return scipy.sparse.csr_matrix(arg, shape=shape, copy=copy)


class TurnEdges(Protocol):
    """What the adjacency is built from (the entity graph): per turn slot its entity ids and
    weights, its next turn, whether it has edges; and how many entities there are."""

    edge_ids: Ragged
    edge_weights: Ragged
    next_turn: Growable
    alive: Growable
    entities: list[str]


class BaseDeltaAdjacency:
    """The symmetric adjacency of turns and entities as [base, delta] CSR parts."""

    DELTA_SHARE = 0.1

    def __init__(self, edges: TurnEdges) -> None:
        self._edges = edges
        self.turn_capacity = 0
        self.entity_capacity = 0
        self._base: sp.csr_matrix | None = None
        self._base_degree = np.zeros(0)
        self._owner_ptr = np.zeros(1, dtype=np.int64)  # base entries owned by each turn slot ...
        self._owner_entries = np.zeros(0, dtype=np.int32)  # ... as positions in the base
        self._base_slots = 0
        self._dirty: set[int] = set()
        self._cache: tuple | None = None

    @property
    def n_nodes(self) -> int:
        return self.turn_capacity + self.entity_capacity

    def parts(self, version: int) -> tuple[list[sp.csr_matrix], np.ndarray]:
        """[base, delta] CSR matrices (n_nodes²) and every node's degree, at ``version``."""
        self._ensure_base()
        assert self._base is not None
        if self._cache is None or self._cache[0] != version:
            rows, cols, vals = self._owned_entries(np.asarray(sorted(self._dirty), dtype=np.int64))
            n = self.n_nodes
            degree = self._base_degree.copy()
            parts = [self._base]
            if len(vals):
                parts.append(_csr((vals, (rows, cols)), shape=(n, n)))
                degree += np.bincount(rows, weights=vals, minlength=n)[:n]
            self._cache = (version, parts, degree)
        return self._cache[1], self._cache[2]

    def changed(self, slots: set[int]) -> None:
        """These turns' edges changed (after the edges themselves were updated)."""
        if self._base is None:
            return
        edges = self._edges
        if (edges.alive.size > self.turn_capacity or len(edges.entities) > self.entity_capacity
                or len(self._dirty | slots) > self.DELTA_SHARE * max(self._base_slots, 1000)):
            self._base = None  # rebuilt on the next read
            return
        for slot in slots - self._dirty:
            self._mask_in_base(slot)
        self._dirty |= slots

    # -- persistence --------------------------------------------------------------------
    def state(self) -> dict[str, np.ndarray]:
        if self._base is None:
            return {}
        return {"base_data": self._base.data, "base_indices": self._base.indices,
                "base_indptr": self._base.indptr, "base_degree": self._base_degree,
                "owner_ptr": self._owner_ptr, "owner_entries": self._owner_entries,
                "dirty": np.asarray(sorted(self._dirty), dtype=np.int64),
                "base_shape": np.asarray([self.turn_capacity, self.entity_capacity, self._base_slots],
                                         dtype=np.int64)}

    def load(self, arrays: dict[str, np.ndarray]) -> None:
        if "base_data" not in arrays:
            return
        self.turn_capacity, self.entity_capacity, self._base_slots = (int(x) for x in arrays["base_shape"])
        n = self.n_nodes
        self._base = _csr((arrays["base_data"], arrays["base_indices"], arrays["base_indptr"]),
                          shape=(n, n), copy=False)
        self._base_degree = np.array(arrays["base_degree"])
        self._owner_ptr = arrays["owner_ptr"]
        self._owner_entries = arrays["owner_entries"]
        self._dirty = set(arrays["dirty"].tolist())
        self._cache = None

    # -- building -----------------------------------------------------------------------
    def _owned_entries(self, slots: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(rows, cols, weights) of the entries the given turn slots own, both directions.

        Vectorized over the slots (the dirty turns grow to ``DELTA_SHARE`` of the base between
        rebuilds, and every version rebuilds the delta from all of them), in the order a loop
        over the slots would emit them — per slot its entity edges, their mirror, its
        next-turn edge and its mirror — so each CSR row sums its entries in the same order."""
        edges = self._edges
        alive = edges.alive.view()
        slots = slots[alive[slots]] if len(slots) else slots.astype(np.int64)
        if not len(slots):
            return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, WEIGHT_DTYPE)
        ids = [edges.edge_ids[slot] for slot in slots.tolist()]
        counts = np.fromiter((len(a) for a in ids), dtype=np.int64, count=len(ids))
        n_edges = int(counts.sum())
        owner = np.repeat(np.arange(len(slots)), counts)
        ents = self.turn_capacity + (np.concatenate(ids).astype(np.int64) if n_edges else np.zeros(0, np.int64))
        weights = (np.concatenate([edges.edge_weights[slot] for slot in slots.tolist()]) if n_edges
                   else np.zeros(0))
        nxt = edges.next_turn.view()[slots].astype(np.int64)
        linked = nxt >= 0
        linked[linked] = alive[nxt[linked]]
        with_next = np.flatnonzero(linked)
        src, dst = slots[with_next], nxt[with_next]
        adj = np.full(len(with_next), ADJACENCY_WEIGHT)
        turn = slots[owner]
        rows = np.concatenate([turn, ents, src, dst])
        cols = np.concatenate([ents, turn, dst, src])
        vals = np.concatenate([weights, weights, adj, adj])
        # (slot, part, position within the part): the order of the per-slot loop
        position = np.arange(n_edges)
        order = np.lexsort((np.concatenate([position, position, np.zeros(2 * len(with_next), np.int64)]),
                            np.repeat(np.arange(4), [n_edges, n_edges, len(with_next), len(with_next)]),
                            np.concatenate([owner, owner, with_next, with_next])))
        return rows[order], cols[order], vals[order].astype(WEIGHT_DTYPE)

    def _ensure_base(self) -> None:
        """Build the base from every turn's edges, vectorized (no per-turn Python)."""
        if self._base is not None:
            return
        edges = self._edges
        n_t = edges.alive.size
        self.turn_capacity = max(64, 2 * n_t)
        self.entity_capacity = max(64, 2 * len(edges.entities))
        ptr, ids = edges.edge_ids.flat()
        _, weights = edges.edge_weights.flat()
        counts = np.diff(ptr)[:n_t] if len(ptr) > 1 else np.zeros(0, dtype=np.int64)
        counts = np.concatenate([counts, np.zeros(n_t - len(counts), dtype=np.int64)])
        owner_e = np.repeat(np.arange(n_t), counts)
        ents = self.turn_capacity + ids[:int(counts.sum())]
        w = weights[:int(counts.sum())]
        nxt = edges.next_turn.view()[:n_t]
        alive = edges.alive.view()[:n_t]
        has_next = (nxt >= 0) & alive
        has_next[has_next] = alive[nxt[has_next]]
        src = np.flatnonzero(has_next)
        dst = nxt[src]
        adj = np.full(len(src), ADJACENCY_WEIGHT)
        rows = np.concatenate([owner_e, ents, src, dst])
        cols = np.concatenate([ents, owner_e, dst, src])
        vals = np.concatenate([w, w, adj, adj])
        owner = np.concatenate([owner_e, owner_e, src, src])
        n = self.n_nodes
        order = np.lexsort((cols, rows))
        indptr = np.searchsorted(rows[order], np.arange(n + 1))
        self._base = _csr((vals[order].astype(WEIGHT_DTYPE), cols[order], indptr), shape=(n, n))
        position = np.empty(len(order), dtype=np.int64)
        position[order] = np.arange(len(order))
        by_owner = np.argsort(owner, kind="stable")
        self._owner_ptr = np.searchsorted(owner[by_owner], np.arange(n_t + 1))
        self._owner_entries = position[by_owner].astype(np.int32)
        self._base_degree = np.bincount(rows, weights=vals.astype(WEIGHT_DTYPE), minlength=n)[:n].astype(np.float64)
        self._base_slots = int(alive.sum())
        self._dirty = set()
        self._cache = None

    def _mask_in_base(self, slot: int) -> None:
        """Zero a turn's entries in the base: its current edges live in the delta from now on."""
        assert self._base is not None
        if slot + 1 >= len(self._owner_ptr):
            return
        positions = self._owner_entries[self._owner_ptr[slot]:self._owner_ptr[slot + 1]]
        if not len(positions):
            return
        if not self._base.data.flags.writeable:  # loaded from a persisted index
            self._base.data = self._base.data.copy()
        rows = np.searchsorted(self._base.indptr, positions, side="right") - 1
        np.subtract.at(self._base_degree, rows, self._base.data[positions])
        self._base.data[positions] = 0.0
