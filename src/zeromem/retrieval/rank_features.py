"""The candidate pool of one search and a feature vector per candidate, for a learned ranker.

The pool is every turn the hand-tuned stages put forward (primary turns, their closure, the
next best by score) plus the best ``size`` turns by final score. Each candidate is described
only by what the engine already computed for the query: the channel scores at every level,
its rank in each channel within the pool, the closure reason that brought it in, where the
hand-tuned selection placed it, role / subject / time compatibility, its place in its session,
how much of the query's term weight it covers (alone and beyond the hand-tuned first pick), and
the query profile. A pure function of those arrays: same search, same matrix.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ..indexes.topk import top_indices
from .prepared import PreparedScope
from .profile import QueryProfile

POOL_SIZE = 50  # the best reordering of the top 50 is where the missing recall lies

# Channels read raw, each one a per-turn array the engine passes in under this name.
CHANNELS = ("score", "graph", "ppr", "lexical_refinement", "hierarchy", "h_turn", "h_span",
            "h_window", "h_episode", "h_title", "dense_cosine", "compatibility")
# Channels also given relative to the pool's best and as a rank within the pool.
RANKED_CHANNELS = ("score", "hierarchy", "graph", "ppr", "dense_cosine", "h_turn", "h_span")
# Closure reasons by the first words the closure writes (closure.py), then the two others.
REASONS = (("primary", "primary"), ("reply", "reply to "), ("context", "context of "),
           ("answer", "answer to the question after "), ("title_hop", "named in "),
           ("bridge", "bridge between "), ("ranked", "ranked"))

FEATURES: tuple[str, ...] = (
    *CHANNELS,
    *(f"{name}_rel" for name in RANKED_CHANNELS),
    *(f"{name}_rank" for name in RANKED_CHANNELS),
    "candidate_value_rel",
    *(f"reason_{name}" for name, _ in REASONS), "reason_pool",
    "hand_selected", "hand_rank",
    "question_like", "by_user", "log_terms", "first_in_session", "last_in_session",
    "neighbour_score_rel", "prev_selected", "next_selected",
    "session_pool_share", "session_best_rel", "session_selected",
    "query_coverage", "coverage_beyond_first",
    "q_terms", "q_aggregation", "q_about_asker", "q_temporal", "q_asks_time", "q_bridge",
    "q_names", "q_speakers", "q_relational", "small_scope", "log_live_turns",
)


@dataclass(frozen=True, slots=True)
class CandidatePool:
    """One search's candidates and their features (rows in ``nodes`` order).

    ``hand_order``: the rows the hand-tuned selection returned, in its order.
    """

    nodes: np.ndarray
    features: np.ndarray
    hand_order: tuple[int, ...]
    trace_ids: tuple[str, ...] = ()
    source_ids: tuple[str | None, ...] = ()


def pool_nodes(score: np.ndarray, chosen: Mapping[int, object], size: int = POOL_SIZE) -> np.ndarray:
    """The chosen turns and the ``size`` best by ``score`` (> 0), best score first, ties by node."""
    best = [int(i) for i in top_indices(score, size) if score[i] > 0]
    nodes = np.asarray(sorted(set(best) | set(chosen), key=lambda n: (-float(score[n]), n)), dtype=np.int64)
    return nodes


def candidate_features(prep: PreparedScope, profile: QueryProfile, *, relational: bool, small: bool,
                       channels: Mapping[str, np.ndarray], nodes: np.ndarray,
                       chosen: Mapping[int, tuple[float, str]], hand: Sequence[int],
                       weights: Mapping[str, float], budget: int) -> np.ndarray:
    """The ``len(nodes) × len(FEATURES)`` matrix (float64) for the pool ``nodes``.

    ``channels``: the per-turn arrays named in :data:`CHANNELS`; ``chosen``: the hand-tuned
    candidates (turn → (value, reason)); ``hand``: the turns it selected, in order; ``weights``:
    the query terms' idf (select.query_term_weights); ``budget``: the evidence budget k.
    """
    n = len(nodes)
    cols: list[np.ndarray] = []
    raw = {name: np.asarray(channels[name], dtype=np.float64)[nodes] for name in CHANNELS}
    cols.extend(raw[name] for name in CHANNELS)
    for name in RANKED_CHANNELS:
        top = float(raw[name].max(initial=0.0))
        cols.append(raw[name] / top if top > 0 else np.zeros(n))
    for name in RANKED_CHANNELS:
        cols.append(_ranks(raw[name]) / max(n, 1))
    values = np.array([chosen[int(v)][0] if int(v) in chosen else 0.0 for v in nodes])
    top_value = float(values.max(initial=0.0))
    cols.append(values / top_value if top_value > 0 else np.zeros(n))
    reasons = [chosen[int(v)][1] if int(v) in chosen else "" for v in nodes]
    for _, prefix in REASONS:
        cols.append(np.array([r.startswith(prefix) for r in reasons], dtype=np.float64))
    cols.append(np.array([r == "" for r in reasons], dtype=np.float64))

    position = {node: i for i, node in enumerate(hand)}
    cols.append(np.array([v in position for v in nodes.tolist()], dtype=np.float64))
    cols.append(np.array([position.get(v, budget) / max(budget, 1) for v in nodes.tolist()]))

    cols.append(prep.question_like[nodes].astype(np.float64))
    cols.append(prep.by_user[nodes].astype(np.float64))
    terms = [prep.turn_terms[v] for v in nodes.tolist()]
    cols.append(np.log1p([len(t) for t in terms]))
    prev_turn, next_turn = prep.hier.prev_turn.view()[nodes], prep.hier.next_turn.view()[nodes]
    cols.append((prev_turn < 0).astype(np.float64))
    cols.append((next_turn < 0).astype(np.float64))
    score = np.asarray(channels["score"], dtype=np.float64)
    best = float(raw["score"].max(initial=0.0)) or 1.0
    around = np.maximum(np.where(prev_turn >= 0, score[np.maximum(prev_turn, 0)], 0.0),
                        np.where(next_turn >= 0, score[np.maximum(next_turn, 0)], 0.0))
    cols.append(np.maximum(around, 0.0) / best)
    cols.append(np.array([int(p) in position for p in prev_turn.tolist()], dtype=np.float64))
    cols.append(np.array([int(p) in position for p in next_turn.tolist()], dtype=np.float64))

    session = prep.hier.turn_session[nodes]
    same = session[:, None] == session[None, :]
    cols.append(same.sum(axis=1) / max(n, 1))
    cols.append(np.where(same, np.maximum(raw["score"], 0.0)[None, :], 0.0).max(axis=1) / best)
    hand_sessions = prep.hier.turn_session[np.asarray(hand, dtype=np.int64)] if hand else np.zeros(0)
    cols.append(np.array([float(np.count_nonzero(hand_sessions == s)) for s in session.tolist()]))

    total = sum(weights.values())
    first = prep.turn_terms[hand[0]] if hand else frozenset()
    missing = {t: w for t, w in weights.items() if t not in first}
    left = sum(missing.values())
    cols.append(np.array([sum(w for t, w in weights.items() if t in have) / total if total else 0.0
                          for have in terms]))
    cols.append(np.array([sum(w for t, w in missing.items() if t in have) / left if left else 0.0
                          for have in terms]))

    query = [float(len(weights)), float(profile.aggregation), float(profile.about_asker),
             float(bool(profile.temporal_cues)), float(profile.asks_time), float(profile.bridge),
             float(len(profile.names)), float(len(profile.mentioned_speakers)), float(relational),
             float(small), float(np.log1p(prep.n_live))]
    cols.extend(np.full(n, value) for value in query)
    matrix = np.column_stack(cols) if n else np.zeros((0, len(FEATURES)))
    if matrix.shape[1] != len(FEATURES):
        raise AssertionError(f"{matrix.shape[1]} feature columns for {len(FEATURES)} names")
    return matrix


def _ranks(values: np.ndarray) -> np.ndarray:
    """0 for the largest value, ties in pool order (the pool is in score order)."""
    order = np.argsort(-values, kind="stable")
    out = np.empty(len(values))
    out[order] = np.arange(len(values))
    return out
