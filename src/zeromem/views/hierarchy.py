"""View 2: the temporal hierarchy, episode → window → turn → span (SPEC §2.3).

Coarse-to-fine: an episode (session) or window that matches the query lends part of its score
to the turns inside it, and a turn's best sentence span lends its score to the turn. A turn's
hierarchy score is ``Σ_level weight_level · Ŝ_level(unit containing or contained in the turn)``,
multiplied by its structural compatibility with the query (subject, time, boundary).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..indexes.snapshot import ScopeSnapshot
from .csr import group_by_row, row_slices

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
    # The same links grouped by turn, for lifting onto a few turns: turn i's spans are
    # spans_by_turn[span_ptr[i]:span_ptr[i + 1]], its windows likewise.
    span_ptr: np.ndarray
    spans_by_turn: np.ndarray
    window_ptr: np.ndarray
    windows_by_turn: np.ndarray
    window_turn_ptr: np.ndarray  # and the other way: window j covers turns_by_window[...]
    turns_by_window: np.ndarray

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
    member_turn, member_window = np.asarray(rows, dtype=np.int64), np.asarray(cols, dtype=np.int64)
    spanned = np.flatnonzero(span_turn >= 0)
    span_ptr, spans_by_turn = group_by_row(span_turn[spanned], spanned, len(turns))
    window_ptr, windows_by_turn = group_by_row(member_turn, member_window, len(turns))
    window_turn_ptr, turns_by_window = group_by_row(member_window, member_turn,
                                                    len(snap.units_of("window")))
    return Hierarchy(turns, turn_session, sessions, episode_of_session, span_turn, member_turn,
                     member_window, span_ptr, spans_by_turn, window_ptr, windows_by_turn,
                     window_turn_ptr, turns_by_window)


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


def lift_onto(hier: Hierarchy, nodes: np.ndarray,
              level_scores: Callable[[str, np.ndarray], np.ndarray]) -> dict[str, np.ndarray]:
    """``lift_to_turns`` for the given turns only, aligned with ``nodes``.

    ``level_scores(level, units)`` returns that level's normalized scores for just the listed
    units (indices in level order), so a level is scored only on the units that touch a node.
    """
    out = {"turn": np.asarray(level_scores("turn", nodes), dtype=np.float64)}
    for level, ptr, units in (("span", hier.span_ptr, hier.spans_by_turn),
                              ("window", hier.window_ptr, hier.windows_by_turn)):
        positions, counts = row_slices(ptr, nodes)
        lifted = np.zeros(len(nodes))
        if positions.size:
            np.maximum.at(lifted, np.repeat(np.arange(len(nodes)), counts),
                          level_scores(level, units[positions]))
        out[level] = lifted
    episodes = hier.episode_of_session[hier.turn_session[nodes]]
    lifted = np.zeros(len(nodes))
    has_episode = episodes >= 0
    if has_episode.any():
        lifted[has_episode] = level_scores("episode", episodes[has_episode])
    out["episode"] = lifted
    return out


def hierarchy_scores(lifted: dict[str, np.ndarray], weights: dict[str, float] | None = None) -> np.ndarray:
    weights = weights or LEVEL_WEIGHTS
    total = np.zeros_like(lifted["turn"])
    for level, weight in weights.items():
        total += weight * lifted[level]
    return total / sum(weights.values())
