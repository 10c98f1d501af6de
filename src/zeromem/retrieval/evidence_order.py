"""The order of the selected evidence, once selection has chosen it.

- ``with_current_states``: a superseded state selected without the state that replaced it
  brings its successor along while the budget has room;
- ``newest_state_first``: of a stale state and its successor, the newest goes first
  (docs/design.md#supersession);
- ``taking_turns``: a message that asks several questions gets the whole message's best, then
  each question's next in turn (D-053).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..types import Evidence

# Selected turns, best first: (turn node, (score, why)).
Ranked = list[tuple[int, Any]]


def taking_turns(whole: list[Evidence], answers: list[list[Evidence]], k: int) -> list[Evidence]:
    """At most ``k`` evidence items: ``whole``'s first, then each list's next in turn, then the
    rest of ``whole``; a trace appears once, where it first comes."""
    queue = whole[:1] + [items[rank] for rank in range(k) for items in answers if rank < len(items)] + whole[1:]
    out: list[Evidence] = []
    seen: set[str] = set()
    for item in queue:
        if item.trace_id not in seen and len(out) < k:
            seen.add(item.trace_id)
            out.append(item)
    return out


def with_current_states(ranked: Ranked, superseded_by: dict[int, int], eligible: np.ndarray,
                        budget: int) -> Ranked:
    """A stale state shown without the state that replaced it misleads the reader ("I live in
    Boston [superseded by t…]" and no t…): while the evidence has room, the successor of every
    selected superseded turn joins it (when the search may show it: session, time, filters).
    A full budget is left as it is; the stale turn still names its successor."""
    shown = {node for node, _ in ranked}
    out = list(ranked)
    for node, _ in ranked:
        newer = superseded_by.get(node)
        if len(out) >= budget:
            break
        if newer is not None and newer not in shown and eligible[newer]:
            out.append((newer, (0.0, "current state")))
            shown.add(newer)
    return out


def newest_state_first(ranked: Ranked, superseded_by: dict[int, int]) -> Ranked:
    """When a superseded turn and its successor are both selected, the successor goes first."""
    positions = {node: i for i, (node, _) in enumerate(ranked)}
    order = list(ranked)
    for node, newer in superseded_by.items():
        if node in positions and newer in positions and positions[newer] > positions[node]:
            a, b = positions[node], positions[newer]
            order[a], order[b] = order[b], order[a]
            positions[node], positions[newer] = b, a
    return order
