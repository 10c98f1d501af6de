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

from typing import Sequence

import numpy as np


def select_evidence(candidates: dict[int, tuple[float, str]], session: np.ndarray, budget: int, *,
                    diversity: float = 1.0, coverage_gain: float = 0.0,
                    query_weights: dict[str, float] | None = None,
                    turn_terms: Sequence[frozenset[str]] | None = None) -> list[tuple[int, tuple[float, str]]]:
    if not 0.0 < diversity <= 1.0:
        raise ValueError(f"diversity must be in (0, 1], got {diversity}")
    if coverage_gain < 0:
        raise ValueError(f"coverage_gain must be >= 0, got {coverage_gain}")
    weights = query_weights or {}
    total = sum(weights.values())
    cover = coverage_gain > 0 and total > 0 and turn_terms is not None
    if diversity == 1.0 and not cover:  # plain ranking: one sort
        return sorted(candidates.items(), key=lambda item: (-item[1][0], item[0]))[:budget]
    nodes = np.asarray(sorted(candidates), dtype=np.int64)  # ascending: ties go to the lower node
    base = np.asarray([candidates[int(node)][0] for node in nodes])
    node_session = np.asarray(session)[nodes]
    terms = list(weights)
    has_term = (np.asarray([[t in turn_terms[int(node)] for t in terms] for node in nodes], dtype=np.float64)
                if cover else np.zeros((len(nodes), 0)))
    missing = np.asarray([weights[t] for t in terms]) / total if cover else np.zeros(0)
    discount = np.ones(len(nodes))
    open_ = np.ones(len(nodes), dtype=bool)
    out: list[tuple[int, tuple[float, str]]] = []
    while len(out) < min(budget, len(nodes)):
        effective = base * discount + coverage_gain * (has_term @ missing)
        effective[~open_] = -np.inf
        best = int(np.argmax(effective))  # first maximum = lowest node among equals
        node = int(nodes[best])
        out.append((node, candidates[node]))
        open_[best] = False
        discount[node_session == node_session[best]] *= diversity
        if cover:
            missing = missing * (1.0 - has_term[best])
    return out


def query_term_weights(query_tokens: Sequence[str], document_frequency: dict[str, int],
                       n_docs: int) -> dict[str, float]:
    """BM25's idf of each distinct query term the scope contains, in query order."""
    out: dict[str, float] = {}
    for term in query_tokens:
        df = document_frequency.get(term, 0)
        if df and term not in out:
            out[term] = float(np.log(1.0 + (n_docs - df + 0.5) / (df + 0.5)))
    return out
