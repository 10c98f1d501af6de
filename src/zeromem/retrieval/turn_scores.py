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

Measured against the full path in docs/decisions/0006-large-scopes.md.

Without a query vector (``qvec`` None: the embedder is down, see docs/design.md#degraded-search)
every cosine is 0 and no turn is a candidate by cosine; the engine then gives BM25 the
whole of each level's score (``lexical_share`` 1).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..indexes.topk import top_indices
from ..indexes.units import LEVELS
from ..views.graph import graph_scores
from ..views.hierarchy import lift_onto, lift_to_turns
from .fuse import floor_of, normalize_live, rescale
from .prepared import PreparedScope

LEXICAL_SHARE = 0.5  # within a level: BM25 vs dense
SEED_TURNS = 5


@dataclass
class TurnScores:
    lifted: dict[str, np.ndarray]  # per level, its normalized score lifted onto every turn
    ppr: np.ndarray  # PPR mass of every turn
    dense_cosine: np.ndarray  # raw turn-level cosine of every turn
    nodes: np.ndarray | None  # the turns that were scored (the rest are 0); None: all of them


def _level_arrays(prep: PreparedScope, level: str, qtokens: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """(BM25 of every slot of ``level``, its live slots)."""
    units = prep.index.levels[level]
    return _fit(units.lexical.scores(qtokens), units.size), units.live()


def _fit(values: np.ndarray, size: int) -> np.ndarray:
    if len(values) >= size:
        return values[:size]
    out = np.zeros(size, dtype=values.dtype)
    out[:len(values)] = values
    return out


def score_every_turn(prep: PreparedScope, qtokens: Sequence[str], qvec: np.ndarray | None,
                     aligned: dict[int, float], *, damping: float,
                     lexical_share: float = LEXICAL_SHARE) -> TurnScores:
    index = prep.index
    level_scores: dict[str, np.ndarray] = {}
    dense_cosine = np.zeros(prep.n_turns)
    for level in LEVELS:
        lex, live = _level_arrays(prep, level, qtokens)
        units = index.levels[level]
        cos = (_fit(units.dense.scores(qvec), units.size) if qvec is not None
               else np.zeros(units.size, dtype=np.float32))
        if level == "turn":
            dense_cosine = np.where(units.alive.view(), cos, 0.0)
        level_scores[level] = (lexical_share * normalize_live(lex, live)
                               + (1 - lexical_share) * normalize_live(cos, live))
    turn_level = level_scores["turn"]
    ppr = graph_scores(prep.graph, aligned, _seeds(np.arange(len(turn_level)), turn_level),
                       damping=damping)
    return TurnScores(lift_to_turns(prep.hier, level_scores), ppr, dense_cosine, None)


def score_candidate_turns(prep: PreparedScope, qtokens: Sequence[str], qvec: np.ndarray | None,
                          aligned: dict[int, float], *, damping: float, per_source: int,
                          required: np.ndarray, eligible: np.ndarray,
                          lexical_share: float = LEXICAL_SHARE) -> TurnScores:
    index, hier, n = prep.index, prep.hier, prep.n_turns
    bm25: dict[str, np.ndarray] = {}
    live_of: dict[str, np.ndarray] = {}
    for level in LEVELS:
        bm25[level], live_of[level] = _level_arrays(prep, level, qtokens)
    dense = {level: index.levels[level].dense for level in LEVELS}

    if qvec is not None:
        nearest, nearest_cos = dense["turn"].candidates(qvec, 2 * per_source)
    else:
        nearest, nearest_cos = np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
    norms: dict[str, tuple[float, float, float, float]] = {}  # per level, computed once
    turn_cos = np.full(n, np.nan)  # the turn level is asked twice: score each turn once

    def cosines(level: str, units: np.ndarray) -> np.ndarray:
        if qvec is None:
            return np.zeros(len(units), dtype=np.float32)
        if level != "turn":
            return dense[level].scores_of(qvec, units)
        missing = units[np.isnan(turn_cos[units])]
        turn_cos[missing] = dense["turn"].scores_of(qvec, missing)
        chosen: np.ndarray = turn_cos[units]
        return chosen

    def level_scores(level: str, units: np.ndarray) -> np.ndarray:
        if level not in norms:
            lex = bm25[level][live_of[level]]
            sample = dense[level].sample_scores(qvec) if qvec is not None else np.zeros(0, dtype=np.float32)
            cos_top = float(sample.max(initial=0.0))
            if level == "turn":
                cos_top = max(cos_top, float(nearest_cos.max(initial=0.0)))
            norms[level] = (floor_of(lex) if lex.size else 0.0, float(lex.max(initial=0.0)),
                            floor_of(sample) if sample.size else 0.0, cos_top)
        lex_floor, lex_top, cos_floor, cos_top = norms[level]
        cos = cosines(level, units)
        return (lexical_share * rescale(bm25[level][units], lex_floor, lex_top)
                + (1 - lexical_share) * rescale(cos, cos_floor, max(cos_top, float(cos.max(initial=0.0)))))

    # Turns a filter (session, time, metadata) excludes cannot be evidence: a narrow filter
    # makes every eligible turn a candidate, a wide one is applied to the turn rankings.
    allowed = np.flatnonzero(eligible)
    everyone = len(allowed) == len(live_of["turn"])

    def best(scores: np.ndarray) -> np.ndarray:
        return _best(scores if everyone else np.where(eligible, scores, 0.0), per_source)

    if len(allowed) <= per_source:
        sources = [allowed, required]
    else:
        sources = [best(bm25["turn"]), nearest[eligible[nearest]][:per_source], required]
    if len(live_of["span"]):
        sources.append(hier.span_turn.view()[_best(bm25["span"], per_source)])
    if len(live_of["window"]):
        windows = _best(bm25["window"], per_source)
        sources.append(np.concatenate([hier.turns_of_window[w] for w in windows.tolist()] + [np.zeros(0, np.int64)]))
    found = _union(sources)
    found = found[prep.alive[found]]
    # PPR restarts at the best of these turns, then brings in the turns it reaches.
    ppr = graph_scores(prep.graph, aligned, _seeds(found, level_scores("turn", found)),
                       damping=damping, local=True)
    best_ppr = best(ppr)
    nodes = _union([found, best_ppr[prep.alive[best_ppr]]])

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
    positive: np.ndarray = top[scores[top] > 0]
    return positive


def _union(parts: list[np.ndarray]) -> np.ndarray:
    nodes = np.unique(np.concatenate(parts).astype(np.int64))
    return nodes[nodes >= 0]
