"""Personalized PageRank with the graph's leaves folded into their neighbours.

Most nodes of an entity graph are leaves: an entity named by one turn only (on the HotpotQA
dev pool 64 570 of 78 779 live entity nodes), linked to nothing else. A leaf ``e`` with its one
neighbour ``t`` (edge weight ``w = deg(e)``) satisfies ``ppr.py``'s law exactly as

    π_e = (1 − γ) r_e + γ λ r_e + γ (w / deg t) π_t,

(``λ``: the mass that reached dangling restart nodes last step) and what it hands back to ``t``
is ``γ π_e``. Substituted into ``t``'s own equation, the leaves of ``t`` become a restart bonus
and a self-loop:

    r'_t = r_t + γ Σ_{e leaf of t} r_e,     π_t = (1 − γ) r'_t + γ (A_cc D⁻¹ π)_t + γ λ r'_t
                                                   + γ² (L_t / deg t) π_t,

with ``A_cc`` the adjacency among the remaining ("core") nodes, ``deg t`` the full degree and
``L_t`` the weight of ``t``'s leaf edges. The fixed point is the same ``π``; the power iteration
runs over the core only (on the HotpotQA pool ~19 000 of 167 000 node slots: slots without
edges drop out too), and each leaf's mass is read off its neighbour at the end. Two leaves
joined only to each other are not folded (each is the other's only neighbour).

``LeafFolding.build`` costs O(edges) and is made once per graph version (views/graph.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # the matrices arrive built; scipy is not imported with the package
    import scipy.sparse as sp


@dataclass(frozen=True)
class LeafFolding:
    """The core adjacency and where every folded leaf hangs (node ids of the full graph)."""

    n_nodes: int
    core: np.ndarray  # node ids with edges that are not folded, ascending
    core_adjacency: sp.csr_matrix  # A restricted to ``core`` (compact ids)
    core_inverse_degree: np.ndarray  # 1 / full degree, per core node
    core_leaf_share: np.ndarray  # L_t / deg t: the share of a core node's degree on its leaves
    leaves: np.ndarray  # folded node ids, ascending
    leaf_anchor: np.ndarray  # per leaf: its neighbour's compact id
    leaf_share: np.ndarray  # per leaf: w / deg(neighbour)
    degree: np.ndarray  # full degree of every node
    core_slot: np.ndarray  # per node: its compact core id, −1 if not core (int32)
    leaf_slot: np.ndarray  # per node: its position in ``leaves``, −1 if not folded (int32)

    @classmethod
    def build(cls, parts: list[sp.csr_matrix], degree: np.ndarray) -> LeafFolding:
        """Fold the leaves of ``A = Σ parts`` (symmetric, row sums ``degree``)."""
        # A new matrix either way: the parts are shared (and may be read-only snapshot views).
        adjacency = (parts[0].copy() if len(parts) == 1 else sum(parts[1:], parts[0])).tocsr()
        adjacency.eliminate_zeros()  # entries of removed turns are kept as zeros in a base
        n = adjacency.shape[0]
        neighbours = np.diff(adjacency.indptr)
        single = np.flatnonzero(neighbours == 1)
        anchor = adjacency.indices[adjacency.indptr[single]]
        folded = single[neighbours[anchor] >= 2]
        anchor = adjacency.indices[adjacency.indptr[folded]]
        weight = adjacency.data[adjacency.indptr[folded]].astype(np.float64)
        is_core = neighbours >= 1
        is_core[folded] = False
        core = np.flatnonzero(is_core)
        compact = np.full(n, -1, dtype=np.int64)
        compact[core] = np.arange(len(core))
        core_adjacency = adjacency[core][:, core].tocsr()
        core_degree = degree[core].astype(np.float64)
        inverse = np.divide(1.0, core_degree, out=np.zeros_like(core_degree), where=core_degree > 0)
        leaf_weight = np.bincount(compact[anchor], weights=weight, minlength=len(core))
        dtype = core_adjacency.dtype
        leaf_slot = np.full(n, -1, dtype=np.int32)
        leaf_slot[folded] = np.arange(len(folded), dtype=np.int32)
        return cls(n, core, core_adjacency, inverse.astype(dtype), (leaf_weight * inverse).astype(dtype),
                   folded, compact[anchor], weight / degree[anchor], np.asarray(degree, dtype=np.float64),
                   compact.astype(np.int32), leaf_slot)


def folded_pagerank(folding: LeafFolding, restart: np.ndarray, *, damping: float, tol: float,
                    max_iter: int, n_out: int | None = None) -> np.ndarray:
    """``ppr.personalized_pagerank``'s ``π`` over the folded graph: the same fixed point, power
    steps over the core only (and the dangling restart nodes), until the L1 step is below
    ``tol``. ``n_out``: only nodes ``0 … n_out − 1`` are wanted (a search reads the turn
    nodes); the others are not computed.

    A restart vector has a handful of nonzero entries: the work outside the power steps follows
    them and ``n_out``, not the number of nodes (the same numbers as a pass over every node:
    the sums skip only zeros).
    """
    if not 0.0 <= damping < 1.0:
        raise ValueError(f"damping must be in [0, 1), got {damping}")
    n_out = folding.n_nodes if n_out is None else min(n_out, folding.n_nodes)
    total = float(restart.sum())
    if total <= 0:
        return np.zeros(n_out)
    gamma = damping
    dtype = folding.core_adjacency.dtype
    n_core = len(folding.core)
    seeds = np.flatnonzero(restart)
    r_seeds = restart[seeds] / total
    r_core = np.zeros(n_core)
    at_core = folding.core_slot[seeds]
    r_core[at_core[at_core >= 0]] = r_seeds[at_core >= 0]
    # Restart mass on a leaf reaches its anchor one step later, damped once.
    at_leaf = folding.leaf_slot[seeds]
    on_leaf = at_leaf >= 0
    r_core = r_core + gamma * np.bincount(folding.leaf_anchor[at_leaf[on_leaf]], weights=r_seeds[on_leaf],
                                          minlength=n_core)
    r_core = r_core.astype(dtype)
    # Restart nodes without edges hold their mass until it returns to the restart distribution.
    hold = (folding.degree[seeds] <= 0) & (r_seeds > 0)
    dangling = seeds[hold]
    r_dangling = r_seeds[hold].astype(dtype)
    teleport = ((1.0 - gamma) * r_core).astype(dtype)
    self_loop = (gamma * folding.core_leaf_share).astype(dtype)
    pi = r_core.copy()
    pi_dangling = r_dangling.copy()
    x = np.empty_like(pi)
    step = np.empty_like(pi)
    looped = np.empty_like(pi)
    holding = len(dangling) > 0  # without dangling restart nodes no mass is ever lost
    lost = 0.0
    for _ in range(max_iter):
        np.multiply(pi, folding.core_inverse_degree, out=x)
        spread = folding.core_adjacency @ x
        spread += np.multiply(self_loop, pi, out=looped)
        if holding:
            lost = float(pi_dangling.sum())
        if lost:
            spread += lost * r_core
        spread *= gamma
        nxt = np.add(teleport, spread, out=spread)
        np.subtract(nxt, pi, out=step)
        change = float(np.abs(step, out=step).sum())
        if holding:
            nxt_dangling = (1.0 - gamma) * r_dangling + gamma * lost * r_dangling
            change += float(np.abs(nxt_dangling - pi_dangling).sum())
            pi_dangling = nxt_dangling
        pi = nxt
        if change < tol:
            break
    lost = float(pi_dangling.sum())
    out = np.zeros(n_out)
    core_out = int(np.searchsorted(folding.core, n_out))
    out[folding.core[:core_out]] = pi[:core_out]
    out[dangling[dangling < n_out]] = pi_dangling[dangling < n_out]
    leaves_out = int(np.searchsorted(folding.leaves, n_out))
    r_leaves = np.zeros(leaves_out)
    wanted = on_leaf & (at_leaf < leaves_out)
    r_leaves[at_leaf[wanted]] = r_seeds[wanted]
    out[folding.leaves[:leaves_out]] = ((1.0 - gamma) + gamma * lost) * r_leaves \
        + gamma * folding.leaf_share[:leaves_out] * pi[folding.leaf_anchor[:leaves_out]]
    return out
