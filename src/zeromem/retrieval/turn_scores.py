"""The per-turn inputs of both views: every level's score lifted onto turns, and PPR mass.

``score_every_turn`` computes them for every turn of the scope: BM25 and cosine over every unit
of every level, PPR by power iteration over the whole graph. Its cost grows with the scope
(~110 ms per query at 100k turns). Above ``RetrievalConfig.large_scope_turns`` the engine calls
``score_candidate_turns`` instead, which computes the same quantities for a thousand or so
candidate turns and leaves every other turn at 0:

- candidates: the best turns by BM25 and by cosine (the nearest cells of ``CellIndex``,
  re-scored exactly), the turns of the best spans and windows by BM25, ``required`` turns,
  then the turns PPR reaches from the best of those; BM25 is exact and cheap (postings only);
- PPR runs by forward push, whose cost does not grow with the graph;
- every level is scored only on the units that touch a candidate. BM25 is normalized over the
  whole level, as in the full path; cosines are normalized with the median of a fixed sample of
  the level's rows (``DenseIndex.sample_scores``) in place of the median of all rows.

Measured against the full path in docs/decisions.md.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..indexes.units import LEVELS
from ..views.csr import row_slices
from ..views.graph import graph_scores
from ..views.hierarchy import lift_onto, lift_to_turns
from .fuse import floor_of, normalize, rescale, top_indices
from .prepared import PreparedScope

LEXICAL_SHARE = 0.5  # within a level: BM25 vs dense
SEED_TURNS = 5


@dataclass
class TurnScores:
    lifted: dict[str, np.ndarray]  # per level, its normalized score lifted onto every turn
    ppr: np.ndarray  # PPR mass of every turn
    dense_cosine: np.ndarray  # raw turn-level cosine of every turn
    nodes: np.ndarray | None  # the turns that were scored (the rest are 0); None: all of them


def score_every_turn(prep: PreparedScope, qtokens: list[str], qvec: np.ndarray,
                     aligned: dict[int, float], *, damping: float,
                     lexical_share: float = LEXICAL_SHARE) -> TurnScores:
    snap = prep.snap
    level_scores: dict[str, np.ndarray] = {}
    dense_cosine = np.zeros(prep.n_turns)
    for level in LEVELS:
        if level not in snap.lexical:
            continue
        lex = normalize(snap.lexical[level].scores(qtokens))
        cos = snap.dense[level].scores(qvec)
        if level == "turn":
            dense_cosine = cos
        level_scores[level] = lexical_share * lex + (1 - lexical_share) * normalize(cos)
    turn_level = level_scores["turn"]
    ppr = graph_scores(prep.graph, aligned, _seeds(np.arange(len(turn_level)), turn_level),
                       damping=damping)
    return TurnScores(lift_to_turns(prep.hier, level_scores), ppr, dense_cosine, None)


def score_candidate_turns(prep: PreparedScope, qtokens: list[str], qvec: np.ndarray,
                          aligned: dict[int, float], *, damping: float, per_source: int,
                          required: np.ndarray, eligible: np.ndarray,
                          lexical_share: float = LEXICAL_SHARE) -> TurnScores:
    snap, hier, n = prep.snap, prep.hier, prep.n_turns
    bm25 = {level: snap.lexical[level].scores(qtokens) for level in LEVELS if level in snap.lexical}

    nearest, nearest_cos = snap.dense["turn"].candidates(qvec, 2 * per_source)
    norms: dict[str, tuple[float, float, float, float]] = {}  # per level, computed once
    turn_cos = np.full(n, np.nan)  # the turn level is asked twice: score each turn once

    def cosines(level: str, units: np.ndarray) -> np.ndarray:
        if level != "turn":
            return snap.dense[level].scores_of(qvec, units)
        missing = units[np.isnan(turn_cos[units])]
        turn_cos[missing] = snap.dense["turn"].scores_of(qvec, missing)
        return turn_cos[units]

    def level_scores(level: str, units: np.ndarray) -> np.ndarray:
        if level not in norms:
            lex, sample = bm25[level], snap.dense[level].sample_scores(qvec)
            cos_top = float(sample.max(initial=0.0))
            if level == "turn":
                cos_top = max(cos_top, float(nearest_cos.max(initial=0.0)))
            norms[level] = (floor_of(lex), float(lex.max()), floor_of(sample) if sample.size else 0.0,
                            cos_top)
        lex_floor, lex_top, cos_floor, cos_top = norms[level]
        cos = cosines(level, units)
        return (lexical_share * rescale(bm25[level][units], lex_floor, lex_top)
                + (1 - lexical_share) * rescale(cos, cos_floor, max(cos_top, float(cos.max(initial=0.0)))))

    # Turns a filter (session, time, metadata) excludes cannot be evidence: a narrow filter
    # makes every eligible turn a candidate, a wide one is applied to the turn rankings.
    allowed = np.flatnonzero(eligible)
    everyone = len(allowed) == n

    def best(scores: np.ndarray) -> np.ndarray:
        return _best(scores if everyone else np.where(eligible, scores, 0.0), per_source)

    if len(allowed) <= per_source:
        sources = [allowed, required]
    else:
        sources = [best(bm25["turn"]), nearest[eligible[nearest]][:per_source], required]
    if "span" in bm25:
        sources.append(hier.span_turn[_best(bm25["span"], per_source)])
    if "window" in bm25:
        positions, _ = row_slices(hier.window_turn_ptr, _best(bm25["window"], per_source))
        sources.append(hier.turns_by_window[positions])
    found = _union(sources)
    # PPR restarts at the best of these turns, then brings in the turns it reaches.
    ppr = graph_scores(prep.graph, aligned, _seeds(found, level_scores("turn", found)),
                       damping=damping, local=True)
    nodes = _union([found, best(ppr)])

    lifted = {}
    for level, values in lift_onto(hier, nodes, level_scores).items():
        lifted[level] = np.zeros(n)
        lifted[level][nodes] = values
    candidate_ppr = np.zeros(n)
    candidate_ppr[nodes] = ppr[nodes]
    return TurnScores(lifted, candidate_ppr, np.nan_to_num(turn_cos), nodes)


def _seeds(nodes: np.ndarray, turn_level: np.ndarray) -> dict[int, float]:
    """PPR restarts at the best turns of the turn level (as well as at the aligned entities)."""
    return {int(nodes[i]): float(turn_level[i]) for i in top_indices(turn_level, SEED_TURNS)
            if turn_level[i] > 0}


def _best(scores: np.ndarray, k: int) -> np.ndarray:
    top = top_indices(scores, k)
    return top[scores[top] > 0]


def _union(parts: list[np.ndarray]) -> np.ndarray:
    nodes = np.unique(np.concatenate(parts).astype(np.int64))
    return nodes[nodes >= 0]
