"""Everything the engine precomputes for one scope snapshot: graph, hierarchy, time, state."""

from __future__ import annotations

import datetime as dt
import re
from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from ..encoders.timexpr import TimeSpan, parse_anchor, resolve_relative
from ..indexes.snapshot import ScopeSnapshot
from ..views.graph import EntityGraph, build_graph, normalize_title
from ..views.hierarchy import Hierarchy, build_hierarchy
from .calibrate import state_assertions, supersession


DISAMBIGUATED_TITLE = 0.5


@dataclass
class PreparedScope:
    snap: ScopeSnapshot
    graph: EntityGraph
    hier: Hierarchy
    speakers: list[str]
    turn_rowid: np.ndarray  # trace rowid per turn node
    turn_text: list[str]  # verbatim trace text per turn node
    turn_lower: list[str]  # text plus attachment captions, lower-cased once for substring tests
    turn_speaker: list[str | None]
    turn_session_name: np.ndarray  # object array: each turn's session (for filters)
    turn_time: np.ndarray  # object array: each turn's ISO time (event, else session, else recorded)
    question_like: np.ndarray
    turn_dates: list[list[tuple[dt.date, dt.date]]]  # session date and dates it mentions
    annotations: dict[int, list[TimeSpan]]  # resolved relative expressions per turn node
    superseded_by: dict[int, int]
    session_titles: dict[int, str]  # hierarchy session id → normalized name, for names that are words
    title_strength: dict[int, float]  # how fully a query naming the title names that episode
    titled_turns: dict[int, list[int]]  # graph entity id → turn nodes of the episode named after it
    turn_terms: list[frozenset[str]]  # distinct index tokens per turn node (query coverage)
    term_df: dict[str, int]  # turn nodes containing each token
    subject_cache: dict[str | None, np.ndarray] = field(default_factory=dict)

    @property
    def n_turns(self) -> int:
        return self.graph.n_turns


def prepare(snap: ScopeSnapshot, alias: dict[str, str]) -> PreparedScope:
    graph = build_graph(snap, alias)
    hier = build_hierarchy(snap)
    turns = snap.units_of("turn")
    rowids = np.asarray([snap.rowids[int(u)][0] for u in turns], dtype=np.int64)
    traces = [snap.traces[int(r)] for r in rowids]
    texts = [t.text for t in traces]
    speakers_per_turn = [t.speaker for t in traces]
    question_like = np.asarray([t.text.rstrip().endswith("?") for t in traces])
    turn_dates: list[list[tuple[dt.date, dt.date]]] = []
    annotations: dict[int, list[TimeSpan]] = {}
    assertions = {}
    order = {}
    for node, trace in enumerate(traces):
        anchor = parse_anchor(trace.event_time or trace.session_time)
        ranges = [(anchor, anchor)] if anchor else []
        spans = resolve_relative(trace.text, anchor)
        if spans:
            annotations[node] = spans
            ranges += [(s.first, s.last) for s in spans]
        turn_dates.append(ranges)
        found = state_assertions(trace.text, trace.speaker)
        if found:
            assertions[node] = found
        order[node] = (trace.event_time or trace.session_time or trace.recorded_at, trace.seq, node)
    speakers = sorted({s for s in speakers_per_turn if s})
    titles = {i: normalize_title(name) for i, name in enumerate(hier.sessions)}
    # Machine ids ("session_12", "s1", UUIDs) name nothing a query could say.
    titles = {i: t for i, t in titles.items() if re.search(r"[a-z]{3}", t) and not re.search(r"\d", t)}
    searchable = [" ".join([t.text, *t.attachments]).lower() for t in traces]  # captions count
    strength = _title_strength(hier.sessions, titles)
    turn_terms = [frozenset(snap.tokens[int(u)]) for u in turns]
    term_df = Counter(term for terms in turn_terms for term in terms)
    session_names = np.asarray([t.session for t in traces], dtype=object)
    times = np.asarray([t.event_time or t.session_time or t.recorded_at for t in traces], dtype=object)
    return PreparedScope(snap, graph, hier, speakers, rowids, texts, searchable,
                         speakers_per_turn, session_names, times,
                         question_like, turn_dates, annotations, supersession(assertions, order),
                         titles, strength, _titled_turns(graph, hier, titles), turn_terms, dict(term_df))


def _title_strength(names: list[str], titles: dict[int, str]) -> dict[int, float]:
    """1 for an episode a query can name outright; ``DISAMBIGUATED_TITLE`` for "X (film)"
    while an episode named plain "X" exists — the query's "X" most likely means that one."""
    plain = {title for sid, title in titles.items() if "(" not in names[sid]}
    return {sid: DISAMBIGUATED_TITLE if "(" in names[sid] and title in plain else 1.0
            for sid, title in titles.items()}


def _titled_turns(graph: EntityGraph, hier: Hierarchy, titles: dict[int, str]) -> dict[int, list[int]]:
    by_session: dict[int, list[int]] = {}
    for node, sid in enumerate(hier.turn_session):
        by_session.setdefault(int(sid), []).append(node)
    out: dict[int, list[int]] = {}
    for sid, title in titles.items():
        key = graph.alias.get(title, title)
        if key in graph.entity_index:
            out.setdefault(graph.entity_index[key], []).extend(by_session.get(sid, []))
    return out
