"""Final selection of evidence within the turn budget, with session diversity.

Greedy: at each step take the candidate with the best *effective* score
``s(d) · δ^{n(session(d))}`` where ``n`` counts turns already selected from the same session and
``δ ∈ (0, 1]`` is the diversity factor (1 = plain ranking). Evidence for one question is often
spread over several sessions; without the discount the budget fills with near-duplicates of the
single best-matching conversation.
"""

from __future__ import annotations

from collections import Counter

import numpy as np


def select_diverse(candidates: dict[int, tuple[float, str]], session: np.ndarray, budget: int,
                   diversity: float = 1.0) -> list[tuple[int, tuple[float, str]]]:
    if not 0.0 < diversity <= 1.0:
        raise ValueError(f"diversity must be in (0, 1], got {diversity}")
    if diversity == 1.0:  # plain ranking: one sort
        return sorted(candidates.items(), key=lambda item: (-item[1][0], item[0]))[:budget]
    pool = dict(candidates)
    taken: Counter = Counter()
    out: list[tuple[int, tuple[float, str]]] = []
    while pool and len(out) < budget:
        best = min(pool, key=lambda n: (-pool[n][0] * diversity ** taken[int(session[n])], n))
        out.append((best, pool.pop(best)))
        taken[int(session[best])] += 1
    return out
