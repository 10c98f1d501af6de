"""Personalized PageRank with the graph's low-degree nodes folded into their neighbours.

Most nodes of an entity graph have few neighbours: an entity named by one turn (on the HotpotQA
dev pool 64 570 of 78 779 live entity nodes) or by two or three. Take a set ``I`` of such nodes
no two of which are adjacent, and ``C`` the other nodes with edges. A folded node ``i`` satisfies
``ppr.py``'s law exactly as

    π_i = ((1 − γ) + γ λ) r_i + γ Σ_{c ~ i} (A_ic / deg c) π_c,

(``λ``: the mass that reached dangling restart nodes last step): all its neighbours are in
``C``. Substituted into the equations of ``C`` (the Schur complement of ``I``):

    π_C = ((1 − γ) + γ λ) r'_C + γ (A_CC + γ A_CI D_I⁻¹ A_IC) D_C⁻¹ π_C,
    r'_C = r_C + γ A_CI D_I⁻¹ r_I,

with ``D`` the full degrees. The fixed point is the same ``π``; the power iteration runs over
``C`` only with one symmetric matrix, the ``operator`` (a folded leaf becomes a self-loop of its
neighbour, a folded node of degree ``k`` joins its ``k`` neighbours pairwise), and each folded
node's mass is read off its neighbours at the end. On the HotpotQA pool the core shrinks from
167 080 node slots to ~8 500 at ``FOLD_MAX_NEIGHBOURS`` = 4 (~19 000 with leaves alone) while the
operator keeps about as many entries as the leaf-folded adjacency (docs/decisions/0054-smaller-ppr-core.md).

Which nodes fold: those with 1 … ``FOLD_MAX_NEIGHBOURS`` neighbours and no self-loop, except one
with a foldable neighbour that has fewer neighbours, or as many and a smaller id (so ``I`` has no
edge inside, leaves fold first, and of two leaves joined only to each other the first folds).
``Folding.build`` costs O(edges + k² per folded node), is vectorized, and is made once per graph
version and damping (views/graph.py): ~18 ms on the HotpotQA pool (~9 ms with leaves alone).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from .csr import row_slices

if TYPE_CHECKING:  # the matrices arrive built; scipy is not imported with the package
    import scipy.sparse as sp

# A folded node of k neighbours puts k² entries in the operator for the 2k it takes out: past a
# few neighbours the operator grows faster than the core shrinks (measured: decisions D-054).
FOLD_MAX_NEIGHBOURS = 4


@dataclass(frozen=True)
class Folding:
    """The folded graph for one damping ``γ`` (node ids are those of the full graph)."""

    n_nodes: int
    damping: float
    core: np.ndarray  # node ids with edges that are not folded, ascending
    operator: sp.csr_matrix  # A_CC + γ A_CI D_I⁻¹ A_IC over ``core`` (compact ids), symmetric
    core_inverse_degree: np.ndarray  # 1 / full degree, per core node
    folded: np.ndarray  # folded node ids, ascending
    folded_edges: sp.csr_matrix  # A_IC: per folded node (rows, in ``folded`` order) its core edges
    folded_inverse_degree: np.ndarray  # 1 / full degree, per folded node
    degree: np.ndarray  # full degree of every node
    core_slot: np.ndarray  # per node: its compact core id, −1 if not core (int32)
    folded_slot: np.ndarray  # per node: its position in ``folded``, −1 if not folded (int32)

    @classmethod
    def build(cls, parts: list[sp.csr_matrix], degree: np.ndarray, damping: float,
              max_neighbours: int = FOLD_MAX_NEIGHBOURS) -> Folding:
        """Fold the low-degree nodes of ``A = Σ parts`` (symmetric, row sums ``degree``)."""
        if not 0.0 <= damping < 1.0:
            raise ValueError(f"damping must be in [0, 1), got {damping}")
        # A new matrix either way: the parts are shared (and may be read-only snapshot views).
        adjacency = (parts[0].copy() if len(parts) == 1 else sum(parts[1:], parts[0])).tocsr()
        adjacency.eliminate_zeros()  # entries of removed turns are kept as zeros in a base
        n = adjacency.shape[0]
        neighbours = np.diff(adjacency.indptr)
        row = np.repeat(np.arange(n), neighbours)
        column = adjacency.indices
        foldable = (neighbours >= 1) & (neighbours <= max_neighbours)
        foldable[row[row == column]] = False
        fold = foldable.copy()
        # of two adjacent foldable nodes the one with fewer neighbours folds (ties: the smaller id)
        first = (neighbours[column] < neighbours[row]) | ((neighbours[column] == neighbours[row]) & (column < row))
        fold[row[foldable[row] & foldable[column] & first]] = False
        folded = np.flatnonzero(fold)
        core = np.flatnonzero((neighbours >= 1) & ~fold)
        compact = np.full(n, -1, dtype=np.int64)
        compact[core] = np.arange(len(core))
        within = adjacency[core][:, core]
        folded_edges = adjacency[folded][:, core].tocsr()
        full_degree = np.asarray(degree, dtype=np.float64)
        folded_inverse = 1.0 / full_degree[folded]  # every folded node has an edge
        # γ A_CI D_I⁻¹ A_IC, in the precision of the edge weights (as the power steps run)
        dtype = adjacency.dtype
        scaled = folded_edges.copy()
        scaled.data *= np.repeat(damping * folded_inverse, np.diff(folded_edges.indptr)).astype(dtype)
        operator = (within + (folded_edges.T @ scaled)).tocsr()
        core_degree = full_degree[core]
        inverse = np.divide(1.0, core_degree, out=np.zeros_like(core_degree), where=core_degree > 0)
        folded_slot = np.full(n, -1, dtype=np.int32)
        folded_slot[folded] = np.arange(len(folded), dtype=np.int32)
        return cls(n, float(damping), core, operator, inverse.astype(dtype), folded, folded_edges,
                   folded_inverse, full_degree, compact.astype(np.int32), folded_slot)


def folded_pagerank_from(folding: Folding, seeds: np.ndarray, mass: np.ndarray, *, tol: float,
                         max_iter: int, n_out: int | None = None) -> np.ndarray:
    """``ppr.personalized_pagerank``'s ``π`` (damping: the folding's) over the folded graph: the
    same fixed point, power steps over the core only (and the dangling restart nodes), until
    the L1 step is below ``tol``. ``n_out``: only nodes ``0 … n_out − 1`` are wanted (a search
    reads the turn nodes); the others are not computed. The restart is given by its entries:
    distinct node ids ``seeds`` (in any order) holding ``mass`` (≥ 0; zeros hold nothing).

    A restart vector has a handful of nonzero entries: the work outside the power steps follows
    them and ``n_out``, not the number of nodes (no vector over every node is made or summed).
    """
    n_out = folding.n_nodes if n_out is None else min(n_out, folding.n_nodes)
    seeds = np.asarray(seeds, dtype=np.int64)
    mass = np.asarray(mass, dtype=np.float64)
    total = float(mass.sum())
    if total <= 0:
        return np.zeros(n_out)
    gamma = folding.damping
    dtype = folding.operator.dtype
    n_core = len(folding.core)
    r_seeds = mass / total
    r_core = np.zeros(n_core)
    at_core = folding.core_slot[seeds]
    r_core[at_core[at_core >= 0]] = r_seeds[at_core >= 0]
    # Restart mass on a folded node reaches its neighbours one step later, damped once.
    at_folded = folding.folded_slot[seeds]
    on_folded = at_folded >= 0
    edges = folding.folded_edges
    edge, counts = row_slices(edges.indptr, at_folded[on_folded])
    share = r_seeds[on_folded] * folding.folded_inverse_degree[at_folded[on_folded]]
    r_core += gamma * np.bincount(edges.indices[edge], weights=edges.data[edge] * np.repeat(share, counts),
                                  minlength=n_core)
    r_core = r_core.astype(dtype)
    # Restart nodes without edges hold their mass until it returns to the restart distribution.
    hold = (folding.degree[seeds] <= 0) & (r_seeds > 0)
    dangling = seeds[hold]
    r_dangling = r_seeds[hold].astype(dtype)
    teleport = ((1.0 - gamma) * r_core).astype(dtype)
    pi = r_core.copy()
    pi_dangling = r_dangling.copy()
    x = np.empty_like(pi)
    step = np.empty_like(pi)
    holding = len(dangling) > 0  # without dangling restart nodes no mass is ever lost
    lost = 0.0
    for _ in range(max_iter):
        np.multiply(pi, folding.core_inverse_degree, out=x)
        spread = folding.operator @ x
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
    # each wanted folded node from its neighbours' final mass (the folded nodes are ascending,
    # so the wanted ones are the first rows of ``folded_edges``)
    folded_out = int(np.searchsorted(folding.folded, n_out))
    if folded_out:
        np.multiply(pi, folding.core_inverse_degree, out=x)
        stop = int(edges.indptr[folded_out])
        rows = np.repeat(np.arange(folded_out), np.diff(edges.indptr[:folded_out + 1]))
        received = np.bincount(rows, weights=edges.data[:stop] * x[edges.indices[:stop]], minlength=folded_out)
        r_folded = np.zeros(folded_out)
        wanted = on_folded & (at_folded < folded_out)
        r_folded[at_folded[wanted]] = r_seeds[wanted]
        out[folding.folded[:folded_out]] = ((1.0 - gamma) + gamma * lost) * r_folded + gamma * received
    return out
