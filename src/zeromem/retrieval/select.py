"""Final selection of evidence within the turn budget: session diversity and query coverage.

Greedy: at each step take the candidate with the best *effective* score

    e(d) = s(d) · δ^{n(session(d))} + λ · Σ_{t ∈ q ∩ d, t ∉ covered} idf(t) / Σ_{t ∈ q} idf(t)

where ``n`` counts turns already selected from the same session, ``δ ∈ (0, 1]`` is the diversity
factor (1 = no discount) and ``covered`` holds the query terms the turns already selected
contain. Evidence for one question is often spread over several turns that each answer a part
of it (a film and the actress who starred in it; a hobby in one session and its date in
another): once a part is covered, a near-duplicate of the same part is worth less than a turn
that covers what is still missing. With ``λ = 0`` and ``δ = 1`` this is a plain ranking.
"""

from __future__ import annotations

import heapq
from collections import Counter
from collections.abc import Sequence
from typing import Protocol, TypeVar

import numpy as np

T_co = TypeVar("T_co", covariant=True)


class ByNode(Protocol[T_co]):
    """Anything indexed by turn node (a list, or a view computing items on demand)."""

    def __getitem__(self, node: int, /) -> T_co: ...


class CountLookup(Protocol):
    """``.get(term, default)`` → a count (a dict, or the index's document frequencies)."""

    def get(self, term: str, default: int = 0, /) -> int: ...



def select_evidence(candidates: dict[int, tuple[float, str]], session: np.ndarray, budget: int, *,
                    diversity: float = 1.0, coverage_gain: float = 0.0,
                    query_weights: dict[str, float] | None = None,
                    turn_terms: ByNode[frozenset[str]] | None = None) -> list[tuple[int, tuple[float, str]]]:
    if not 0.0 < diversity <= 1.0:
        raise ValueError(f"diversity must be in (0, 1], got {diversity}")
    if coverage_gain < 0:
        raise ValueError(f"coverage_gain must be >= 0, got {coverage_gain}")
    weights = query_weights or {}
    total = sum(weights.values())
    cover = coverage_gain > 0 and total > 0 and turn_terms is not None
    if diversity == 1.0 and not cover:  # plain ranking: one sort
        return sorted(candidates.items(), key=lambda item: (-item[1][0], item[0]))[:budget]
    # Lazy greedy: an effective score never grows as the selection grows (sessions fill up,
    # terms get covered), so a stale score is an upper bound and only the top of the heap
    # needs recomputing — the same picks as recomputing every candidate at every step.
    # Query terms as bits: a turn's coverage and the still-missing terms are ints, and each
    # set of terms is summed once, in query order (a fixed float order: same input, same picks).
    term_weights = list(weights.values())
    terms_of = turn_terms if turn_terms is not None else {}
    covers = {node: sum(1 << i for i, t in enumerate(weights) if t in terms_of[node]) if cover else 0
              for node in candidates}
    gain_of: dict[int, float] = {}
    missing = (1 << len(term_weights)) - 1
    taken: Counter[str] = Counter()
    session_of = dict(zip(candidates, np.asarray(session)[list(candidates)].tolist()))

    def effective(node: int) -> float:
        score = candidates[node][0]
        if diversity != 1.0:
            score *= diversity ** taken[session_of[node]]
        bits = covers[node] & missing
        if bits:
            if bits not in gain_of:
                gain_of[bits] = coverage_gain * sum(w for i, w in enumerate(term_weights) if bits >> i & 1) / total
            score += gain_of[bits]
        return score

    heap = [(-effective(node), node) for node in candidates]
    heapq.heapify(heap)
    out: list[tuple[int, tuple[float, str]]] = []
    while heap and len(out) < budget:
        _, node = heapq.heappop(heap)
        current = (-effective(node), node)
        if heap and current > heap[0]:
            heapq.heappush(heap, current)  # fell behind a stale bound: look again
            continue
        out.append((node, candidates[node]))
        taken[session_of[node]] += 1
        missing &= ~covers[node]
    return out


def query_term_weights(query_tokens: Sequence[str], document_frequency: CountLookup,
                       n_docs: int) -> dict[str, float]:
    """BM25's idf of each distinct query term the scope contains, in query order."""
    out: dict[str, float] = {}
    for term in query_tokens:
        df = document_frequency.get(term, 0)
        if df and term not in out:
            out[term] = float(np.log(1.0 + (n_docs - df + 0.5) / (df + 0.5)))
    return out
