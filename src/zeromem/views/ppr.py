"""Personalized PageRank on a sparse symmetric graph (docs/design.md#personalized-pagerank).

The law: ``π = (1 − γ) r + γ Pᵀ π`` with ``P = D⁻¹A`` the row-normalized transition matrix of
the symmetric weighted adjacency ``A`` (degrees ``D``), ``r`` a restart distribution (sums to
1) and damping ``γ`` (0.6 in the Zero-Mem paper). Because ``A`` is symmetric,
``Pᵀπ = A (π / deg)``: neither a transposed nor a normalized copy is needed, and ``A`` may be
given as several parts that add up to it — the graph keeps an immutable base plus a small
delta of the turns a write changed (views/graph.py). Mass reaching a node without edges
returns to the restart distribution, so ``π`` always sums to 1.

Because ``γ < 1`` the map is a contraction: after ``t`` power steps the error is at most
``γᵗ``; 30 steps at γ = 0.6 leave < 2e-7.

Worked example: two nodes linked both ways, r = (1, 0), γ = 0.5 →
π₀ = 0.5 + 0.5 π₁, π₁ = 0.5 π₀ → π = (2/3, 1/3).

Cost: one sparse mat-vec per part per step, O(edges); no I/O.

``push_pagerank`` approximates the same ``π`` by forward push (Andersen, Chung & Lang 2006):
mass spreads outwards from the restart nodes and stops where a node's leftover (residual) mass
falls below ``ε`` times its weighted degree, so the work depends on ``ε`` and ``γ``, not on the
size of the graph. On a symmetric graph the result underestimates each node by at most
``ε · deg(v)``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .csr import row_slices

if TYPE_CHECKING:  # the matrices arrive built; scipy is not imported with the package
    import scipy.sparse as sp

DEFAULT_DAMPING = 0.6
DEFAULT_TOL = 1e-8
DEFAULT_MAX_ITER = 100


def personalized_pagerank(parts: list[sp.csr_matrix], degree: np.ndarray, restart: np.ndarray, *,
                       damping: float = DEFAULT_DAMPING, tol: float = DEFAULT_TOL,
                       max_iter: int = DEFAULT_MAX_ITER) -> np.ndarray:
    """Solve ``π = (1 − γ) r + γ Pᵀ π`` by power iteration, ``A = Σ parts`` symmetric with
    row sums ``degree`` (nodes of degree 0 are dangling: their mass returns to ``r``)."""
    if not 0.0 <= damping < 1.0:
        raise ValueError(f"damping must be in [0, 1), got {damping}")
    total = float(restart.sum())
    if total <= 0:
        return np.zeros(len(degree))
    # The iteration runs in the precision of the edge weights (float32 from adjacency.py): a
    # float64 vector would make scipy convert the whole matrix at every step.
    dtype = np.result_type(*(part.dtype for part in parts))
    r = (restart / total).astype(dtype)
    inverse = np.divide(1.0, degree, out=np.zeros_like(degree), where=degree > 0).astype(dtype)
    # Mass that reaches a node without edges goes back to the restart distribution; only such a
    # node that is itself a restart node can ever hold mass (nothing flows into it otherwise).
    dangling = np.flatnonzero((degree <= 0) & (r > 0))
    teleport = ((1.0 - damping) * r).astype(dtype)
    pi = r.copy()
    x = np.empty_like(pi)
    step = np.empty_like(pi)
    for _ in range(max_iter):
        np.multiply(pi, inverse, out=x)
        spread = parts[0] @ x
        for part in parts[1:]:
            spread += part @ x
        lost = float(pi[dangling].sum())
        if lost:
            spread += lost * r
        spread *= damping
        nxt = np.add(teleport, spread, out=spread)
        np.subtract(nxt, pi, out=step)
        if np.abs(step, out=step).sum() < tol:
            return nxt.astype(np.float64)
        pi = nxt
    return pi.astype(np.float64)


def push_pagerank(parts: list[sp.csr_matrix], degree: np.ndarray, restart: np.ndarray, *,
                            damping: float = DEFAULT_DAMPING, epsilon: float) -> np.ndarray:
    """Approximate ``π`` by forward push; ``0 ≤ π − result ≤ ε · deg`` at every node.

    A node's out-edges are its entries in every part, each weighted ``A[v, u] / deg[v]``. Every
    node whose residual reaches ``ε · deg`` is pushed in the same round: it keeps ``1 − γ`` of
    its residual and hands ``γ`` on along its out-edges (a node without edges hands it back to
    the restart distribution). Rounds are whole-array operations in a fixed order, so the
    result is deterministic.
    """
    if not 0.0 <= damping < 1.0:
        raise ValueError(f"damping must be in [0, 1), got {damping}")
    if epsilon <= 0:
        raise ValueError(f"epsilon must be positive, got {epsilon}")
    total = float(restart.sum())
    estimate = np.zeros(len(degree))
    if total <= 0:
        return estimate
    r = restart / total
    sources = np.flatnonzero(r)
    threshold = epsilon * np.where(degree > 0, degree, 1.0)
    residual = r.copy()
    active = sources[residual[sources] >= threshold[sources]]
    while active.size:
        mass = residual[active]
        residual[active] = 0.0
        estimate[active] += (1.0 - damping) * mass
        spread = damping * mass
        share = np.divide(spread, degree[active], out=np.zeros_like(spread), where=degree[active] > 0)
        all_targets = []
        for part in parts:
            edge, counts = row_slices(part.indptr, active)
            targets = part.indices[edge]
            np.add.at(residual, targets, part.data[edge] * np.repeat(share, counts))
            all_targets.append(targets)
        returned = float(spread[degree[active] <= 0].sum())
        if returned > 0:
            residual[sources] += returned * r[sources]
            all_targets.append(sources)
        targets = np.concatenate(all_targets)
        reached = targets[residual[targets] >= threshold[targets]]
        active = _distinct(reached)
    return estimate


def _distinct(values: np.ndarray) -> np.ndarray:
    """Sorted distinct values (np.unique's hash table costs more on these short int arrays)."""
    if values.size < 2:
        return values
    ordered = np.sort(values)
    return ordered[np.concatenate(([True], ordered[1:] != ordered[:-1]))]
