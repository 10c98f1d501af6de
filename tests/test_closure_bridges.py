"""Closure: graph bridges computed with arrays agree with their plain definition."""

from __future__ import annotations

import numpy as np

from closure_helpers import entity_turns, session_neighbours
from zeromem.retrieval.closure import BRIDGE_DECAY, closure_candidates


def _reference_bridges(primary, scores, unit_entities, entity_df, limit):
    """Turns outside ``primary`` sharing a non-hub entity with ≥ 2 primary turns: most sources,
    best mean source score, lowest node first (the definition, one Python loop per turn)."""
    n = len(scores)
    links = {}
    for other in range(n):
        if other in primary:
            continue
        sources = {node for node in primary for e in unit_entities[node]
                   if entity_df[e] <= max(3, 0.05 * n) and e in unit_entities[other]}
        if len(sources) >= 2:
            links[other] = sources
    ranked = sorted(links, key=lambda o: (-len(links[o]), -np.mean([scores[s] for s in links[o]]), o))
    return {o: sorted(links[o]) for o in ranked[:limit]}


def test_bridges_match_their_definition_on_random_graphs():
    rng = np.random.default_rng(4)
    for _ in range(30):
        n, n_e = 120, 40
        unit_entities = [sorted(set(rng.integers(0, n_e, size=rng.integers(0, 4)).tolist())) for _ in range(n)]
        df = np.bincount([e for ents in unit_entities for e in ents], minlength=n_e).astype(float)
        nxt, prev = session_neighbours(np.arange(n))
        scores = rng.random(n)
        primary = sorted(rng.choice(n, size=6, replace=False).tolist(), key=lambda i: -scores[i])
        found = closure_candidates(primary, scores, session=np.arange(n), question_like=np.zeros(n, bool),
                                   unit_entities=unit_entities, entity_df=df,
                                   turns_of_entities=entity_turns(unit_entities),
                                   next_turn=nxt, prev_turn=prev, neighbours=0, bridges=3)
        expected = _reference_bridges(set(primary), scores, unit_entities, df, 3)
        assert {node for node, (_, reason) in found.items() if reason.startswith("bridge")} == set(expected)
        for node, sources in expected.items():
            value, reason = found[node]
            assert reason == "bridge between " + ", ".join(map(str, sources))
            assert abs(value - BRIDGE_DECAY * np.mean([scores[s] for s in sources])) < 1e-12
