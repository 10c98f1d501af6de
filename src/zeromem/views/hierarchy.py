"""View 2: the temporal hierarchy, episode → window → turn → span (docs/design.md#temporal-hierarchy).

Coarse-to-fine: an episode (session) or window that matches the query lends part of its score
to the turns inside it, and a turn's best sentence span lends its score to the turn. A turn's
hierarchy score is ``Σ_level weight_level · Ŝ_level(unit containing or contained in the turn)``,
multiplied by its structural compatibility with the query (subject, time, boundary).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..indexes.growable import Growable
from ..indexes.ragged import Ragged
from ..indexes.scope_index import Change, ScopeIndex

LEVEL_WEIGHTS = {"turn": 1.0, "span": 0.5, "window": 0.6, "episode": 0.3}


class Hierarchy:
    """Containment links between the levels of one scope, kept per slot (``update``).

    Per turn slot: its session, its neighbours in conversation order, its spans and windows;
    per window slot: its turns. Window membership is also kept as parallel arrays for lifting
    every turn at once; an entry is valid while its window slot still holds the window it was
    written for (a generation number per window slot).
    """

    def __init__(self, index: ScopeIndex) -> None:
        self.index = index
        self.prev_turn = Growable(np.int64, fill=-1)
        self.next_turn = Growable(np.int64, fill=-1)
        self.span_turn = Growable(np.int64, fill=-1)  # turn slot of each span slot
        self.spans_of_turn = Ragged(np.int64)
        self.windows_of_turn = Ragged(np.int64)
        self.turns_of_window = Ragged(np.int64)
        self._window_gen = Growable(np.int64)
        self._member_turn = Growable(np.int64)
        self._member_window = Growable(np.int64)
        self._member_gen = Growable(np.int64)
        self._members: tuple[int, np.ndarray, np.ndarray] | None = None
        self.version = 0

    @property
    def n_turns(self) -> int:
        return self.index.n_slots

    @property
    def sessions(self) -> list[str]:
        return self.index.sessions

    @property
    def turn_session(self) -> np.ndarray:
        """Session id per turn slot (-1 for an empty slot)."""
        return self.index.turns.session.view()

    @property
    def episode_of_session(self) -> np.ndarray:
        return self.index.episode_of_session.view()

    def members(self) -> tuple[np.ndarray, np.ndarray]:
        """(turn slot, window slot) of every live window membership."""
        if self._members is None or self._members[0] != self.version:
            gen = self._member_gen.view()
            valid = gen == self._window_gen.view()[self._member_window.view()]
            self._members = (self.version, self._member_turn.view()[valid], self._member_window.view()[valid])
        return self._members[1], self._members[2]

    def state(self) -> dict[str, np.ndarray]:
        out = {"prev_turn": self.prev_turn.view(), "next_turn": self.next_turn.view(),
               "span_turn": self.span_turn.view(), "window_gen": self._window_gen.view(),
               "member_turn": self._member_turn.view(), "member_window": self._member_window.view(),
               "member_gen": self._member_gen.view()}
        for name in ("spans_of_turn", "windows_of_turn", "turns_of_window"):
            ptr, values = getattr(self, name).flat()
            out[f"{name}_ptr"], out[name] = ptr, values
        return out

    @classmethod
    def from_state(cls, index: ScopeIndex, state: dict[str, np.ndarray]) -> Hierarchy:
        hier = cls(index)
        hier.prev_turn = Growable.wrap(state["prev_turn"], fill=-1)
        hier.next_turn = Growable.wrap(state["next_turn"], fill=-1)
        hier.span_turn = Growable.wrap(state["span_turn"], fill=-1)
        hier._window_gen = Growable.wrap(state["window_gen"])
        hier._member_turn = Growable.wrap(state["member_turn"])
        hier._member_window = Growable.wrap(state["member_window"])
        hier._member_gen = Growable.wrap(state["member_gen"])
        for name in ("spans_of_turn", "windows_of_turn", "turns_of_window"):
            setattr(hier, name, Ragged(np.int64, state[f"{name}_ptr"], state[name]))
        return hier

    def update(self, change: Change) -> None:
        index = self.index
        n = index.n_slots
        self.prev_turn.reserve(n)
        self.next_turn.reserve(n)
        self.spans_of_turn.reserve(n)
        self.windows_of_turn.reserve(n)
        for slot in change.turns_killed:
            self.prev_turn[slot] = -1
            self.next_turn[slot] = -1
        for sid in change.sessions:
            order = index.session_turns[sid]
            for i, slot in enumerate(order):
                self.prev_turn[slot] = order[i - 1] if i > 0 else -1
                self.next_turn[slot] = order[i + 1] if i + 1 < len(order) else -1
        spans, windows = index.levels["span"], index.levels["window"]
        self.span_turn.reserve(spans.size)
        for slot in change.units_killed.get("span", []):
            owner = int(self.span_turn[slot])
            if owner >= 0:
                held = self.spans_of_turn[owner]
                self.spans_of_turn[owner] = held[held != slot]
            self.span_turn[slot] = -1
        for slot in change.units_set.get("span", []):
            owner = index.slot_of_rowid.get(int(spans.rowids[slot][0]), -1)
            self.span_turn[slot] = owner
            if owner >= 0:
                self.spans_of_turn[owner] = np.append(self.spans_of_turn[owner], slot)
        self._window_gen.reserve(windows.size)
        self.turns_of_window.reserve(windows.size)
        for slot in change.units_killed.get("window", []):
            for turn in self.turns_of_window[slot].tolist():
                held = self.windows_of_turn[turn]
                self.windows_of_turn[turn] = held[held != slot]
            self.turns_of_window[slot] = ()
            self._window_gen[slot] += 1
        for slot in change.units_set.get("window", []):
            self._window_gen[slot] += 1
            members = [index.slot_of_rowid[r] for r in windows.rowids[slot].tolist() if r in index.slot_of_rowid]
            self.turns_of_window[slot] = members
            for turn in members:
                self.windows_of_turn[turn] = np.append(self.windows_of_turn[turn], slot)
            self._member_turn.extend(members)
            self._member_window.extend([slot] * len(members))
            self._member_gen.extend([int(self._window_gen[slot])] * len(members))
        self.version += 1


def lift_to_turns(hier: Hierarchy, level_scores: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Each level's normalized scores expressed per turn (max over containing/contained units)."""
    n = hier.n_turns
    out = {"turn": np.asarray(level_scores.get("turn", np.zeros(n)), dtype=np.float64)}
    span = level_scores.get("span")
    lifted = np.zeros(n)
    if span is not None and len(span):
        span_turn = hier.span_turn.view()[:len(span)]
        valid = span_turn >= 0
        np.maximum.at(lifted, span_turn[valid], span[valid])
    out["span"] = lifted
    window = level_scores.get("window")
    lifted_window = np.zeros(n)
    member_turn, member_window = hier.members()
    if window is not None and len(window) and member_turn.size:
        np.maximum.at(lifted_window, member_turn, window[member_window])
    out["window"] = lifted_window
    out["episode"] = _episode_scores(hier, level_scores.get("episode"), np.arange(n))
    return out


def _episode_scores(hier: Hierarchy, episode: np.ndarray | None, nodes: np.ndarray) -> np.ndarray:
    """The episode score of each given turn slot (0 for empty slots and sessionless turns)."""
    out = np.zeros(len(nodes))
    if episode is None or not len(episode):
        return out
    sessions = hier.turn_session[nodes]
    has = sessions >= 0
    episodes = np.full(len(nodes), -1, dtype=np.int64)
    episodes[has] = hier.episode_of_session[sessions[has]]
    valid = episodes >= 0
    out[valid] = episode[episodes[valid]]
    return out


def lift_onto(hier: Hierarchy, nodes: np.ndarray,
              level_scores: Callable[[str, np.ndarray], np.ndarray]) -> dict[str, np.ndarray]:
    """``lift_to_turns`` for the given turns only, aligned with ``nodes``.

    ``level_scores(level, units)`` returns that level's normalized scores for just the listed
    units (slots of that level), so a level is scored only on the units that touch a node.
    """
    out = {"turn": np.asarray(level_scores("turn", nodes), dtype=np.float64)}
    for level, lists in (("span", hier.spans_of_turn), ("window", hier.windows_of_turn)):
        per_node = [lists[node] for node in nodes.tolist()]
        counts = np.fromiter((len(units) for units in per_node), dtype=np.int64, count=len(per_node))
        lifted = np.zeros(len(nodes))
        if counts.sum():
            units = np.concatenate(per_node).astype(np.int64)
            np.maximum.at(lifted, np.repeat(np.arange(len(nodes)), counts), level_scores(level, units))
        out[level] = lifted
    sessions = hier.turn_session[nodes]
    episodes = np.where(sessions >= 0, hier.episode_of_session[np.maximum(sessions, 0)], -1)
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
