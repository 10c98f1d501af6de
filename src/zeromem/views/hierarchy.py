"""View 2: the temporal hierarchy, episode → window → turn → span (SPEC §2.3).

Coarse-to-fine: an episode (session) or window that matches the query lends part of its score
to the turns inside it, and a turn's best sentence span lends its score to the turn. A turn's
hierarchy score is ``Σ_level weight_level · Ŝ_level(unit containing or contained in the turn)``,
multiplied by its structural compatibility with the query (subject, time, boundary).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..indexes.snapshot import ScopeSnapshot

LEVEL_WEIGHTS = {"turn": 1.0, "span": 0.5, "window": 0.6, "episode": 0.3}


@dataclass
class Hierarchy:
    turn_units: np.ndarray
    turn_session: np.ndarray  # session id (int) per turn node
    sessions: list[str]
    episode_of_session: np.ndarray  # index into the episode level, -1 if none
    span_turn: np.ndarray  # turn node of each span (span-level order)
    member_turn: np.ndarray  # window membership as parallel arrays: turn node ...
    member_window: np.ndarray  # ... and the window (window-level order) that contains it

    @property
    def n_turns(self) -> int:
        return len(self.turn_units)


def build_hierarchy(snap: ScopeSnapshot) -> Hierarchy:
    turns = snap.units_of("turn")
    node_of_rowid = {snap.rowids[int(u)][0]: i for i, u in enumerate(turns)}
    sessions = sorted({snap.session[int(u)] for u in turns})
    session_id = {s: i for i, s in enumerate(sessions)}
    turn_session = np.asarray([session_id[snap.session[int(u)]] for u in turns], dtype=np.int64)
    episode_of_session = np.full(len(sessions), -1, dtype=np.int64)
    for j, u in enumerate(snap.units_of("episode")):
        s = snap.session[int(u)]
        if s in session_id:
            episode_of_session[session_id[s]] = j
    span_turn = np.asarray([node_of_rowid.get(snap.rowids[int(u)][0], -1)
                            for u in snap.units_of("span")], dtype=np.int64)
    rows, cols = [], []
    for j, u in enumerate(snap.units_of("window")):
        for rowid in snap.rowids[int(u)]:
            if rowid in node_of_rowid:
                rows.append(node_of_rowid[rowid])
                cols.append(j)
    return Hierarchy(turns, turn_session, sessions, episode_of_session, span_turn,
                     np.asarray(rows, dtype=np.int64), np.asarray(cols, dtype=np.int64))


def lift_to_turns(hier: Hierarchy, level_scores: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Each level's normalized scores expressed per turn (max over containing/contained units)."""
    n = hier.n_turns
    out = {"turn": np.asarray(level_scores.get("turn", np.zeros(n)), dtype=np.float64)}
    span = level_scores.get("span")
    lifted = np.zeros(n)
    if span is not None and len(span):
        valid = hier.span_turn >= 0
        np.maximum.at(lifted, hier.span_turn[valid], span[valid])
    out["span"] = lifted
    window = level_scores.get("window")
    lifted_window = np.zeros(n)
    if window is not None and len(window) and hier.member_turn.size:
        np.maximum.at(lifted_window, hier.member_turn, window[hier.member_window])
    out["window"] = lifted_window
    episode = level_scores.get("episode")
    if episode is not None and len(episode):
        per_session = np.where(hier.episode_of_session >= 0,
                               episode[np.maximum(hier.episode_of_session, 0)], 0.0)
        out["episode"] = per_session[hier.turn_session]
    else:
        out["episode"] = np.zeros(n)
    return out


def hierarchy_scores(lifted: dict[str, np.ndarray], weights: dict[str, float] | None = None) -> np.ndarray:
    weights = weights or LEVEL_WEIGHTS
    total = np.zeros_like(lifted["turn"])
    for level, weight in weights.items():
        total += weight * lifted[level]
    return total / sum(weights.values())
