"""Bounds and shape checks of a persisted index, before any of it reaches compiled code.

``persist.decode`` runs ``check_state`` on the arrays and facts of a snapshot whose checksum
matched, and ``snapshots.load`` runs ``check_traces`` on the loaded index against the traces
read with it. A checksum only says the rows are the ones zeromem wrote; it cannot stop a
forger who recomputes it. These checks are what makes such a snapshot harmless: every id is
within the array it indexes (scipy's sparse kernels and a few numpy paths read memory by those
ids without looking: an offset past the arrays segfaulted a search), every CSR offset array
starts at 0, never decreases and ends at its values' length, the per-slot arrays of a level
agree in length, dtypes and dimensions are the ones the loaders expect, and the facts have
the types the engine reads them as. Anything else raises ``SnapshotRejected``: the scope is
then rebuilt from its traces.

Cost: a few vectorized passes over the arrays (min, max, diff), once per load, never per search.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

LEVELS = ("turn", "span", "window", "episode")
MAX_ORDINAL = 3_652_059  # datetime.date.max.toordinal()
INT32_MAX = (1 << 31) - 1


class SnapshotRejected(ValueError):
    """A persisted index that must not be used (damaged, forged, or from another scope)."""


def reject(reason: str) -> SnapshotRejected:
    return SnapshotRejected(reason)


class _Arrays:
    """The snapshot's arrays by name, read with their expected dtype and shape."""

    def __init__(self, arrays: Mapping[str, np.ndarray]) -> None:
        self._arrays = arrays

    def has(self, name: str) -> bool:
        return name in self._arrays

    def get(self, name: str, dtypes: str | tuple[str, ...], *, ndim: int = 1, length: int | None = None) -> np.ndarray:
        array = self._arrays.get(name)
        if array is None:
            raise reject(f"array {name!r} is missing")
        allowed = (dtypes,) if isinstance(dtypes, str) else dtypes
        if array.dtype not in [np.dtype(d) for d in allowed]:
            raise reject(f"array {name!r} has dtype {array.dtype}, expected {' or '.join(allowed)}")
        if array.ndim != ndim:
            raise reject(f"array {name!r} has {array.ndim} dimensions, expected {ndim}")
        if length is not None and len(array) != length:
            raise reject(f"array {name!r} has {len(array)} rows, expected {length}")
        return array

    def ids(self, name: str, dtypes: str | tuple[str, ...], low: int, high: int, *,
            length: int | None = None) -> np.ndarray:
        """An id array whose every value lies in [low, high)."""
        array = self.get(name, dtypes, length=length)
        _within(array, low, high, name)
        return array

    def csr(self, name: str, value_dtypes: str | tuple[str, ...], *, rows: int | None = None,
            max_rows: int | None = None, low: int | None = None, high: int | None = None,
            ptr_dtypes: str | tuple[str, ...] = "int64", ptr_name: str | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(ptr, values) of a row-grouped array: ``ptr`` starts at 0, never decreases and ends at
        ``len(values)``; ``rows`` (or at most ``max_rows``) rows; values in [low, high)."""
        ptr = self.get(ptr_name or f"{name}_ptr", ptr_dtypes)
        values = self.get(name, value_dtypes)
        _offsets(ptr, len(values), ptr_name or f"{name}_ptr")
        if rows is not None and len(ptr) - 1 != rows:
            raise reject(f"{name!r} has {len(ptr) - 1} rows, expected {rows}")
        if max_rows is not None and len(ptr) - 1 > max_rows:
            raise reject(f"{name!r} has {len(ptr) - 1} rows, at most {max_rows} expected")
        if low is not None and high is not None:
            _within(values, low, high, name)
        return ptr, values

    def finite(self, name: str, array: np.ndarray) -> None:
        if array.size and not np.isfinite(array).all():
            raise reject(f"array {name!r} holds a value that is not finite")


def _within(array: np.ndarray, low: int, high: int, name: str) -> None:
    if array.size and (int(array.min()) < low or int(array.max()) >= high):
        raise reject(f"array {name!r} holds an id outside [{low}, {high})")


def _offsets(ptr: np.ndarray, n_values: int, name: str) -> None:
    if len(ptr) < 1 or int(ptr[0]) != 0 or int(ptr[-1]) != n_values:
        raise reject(f"offsets {name!r} do not run from 0 to the values' length {n_values}")
    if len(ptr) > 1 and bool((np.diff(ptr) < 0).any()):
        raise reject(f"offsets {name!r} decrease")


# -- facts ----------------------------------------------------------------------------------
def _strings(value: Any, what: str, *, distinct: bool = False) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise reject(f"{what} is not a list of strings")
    if distinct and len(set(value)) != len(value):
        raise reject(f"{what} repeats a name")
    return value


def _counts(value: Any, what: str) -> None:
    if not isinstance(value, dict) or not all(isinstance(k, str) and _is_int(v) for k, v in value.items()):
        raise reject(f"{what} is not a map of names to counts")


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _optional(value: Any, kind: type) -> bool:
    return value is None or (isinstance(value, kind) and not isinstance(value, bool))


def _slot_keys(value: Any, what: str, n_turns: int) -> Iterable[tuple[int, Any]]:
    if not isinstance(value, dict):
        raise reject(f"{what} is not a map")
    for key, items in value.items():
        if not (isinstance(key, str) and key.isascii() and key.isdigit() and int(key) < n_turns):
            raise reject(f"{what} names a turn slot outside the index")
        if not isinstance(items, list):
            raise reject(f"{what} of a slot is not a list")
        yield int(key), items


def _check_facts(facts: Mapping[str, Any], n_turns: int, alive: np.ndarray) -> tuple[int, int, int, int]:
    """The facts' types; returns (terms, names, sessions, graph entities)."""
    if not _is_int(facts.get("version")) or facts["version"] < 0:
        raise reject("the version is not a count")
    terms = _strings(facts.get("terms"), "terms")
    names = _strings(facts.get("names"), "entity and label names")
    sessions = _strings(facts.get("sessions"), "sessions", distinct=True)
    _strings(facts.get("entity_names"), "entity names", distinct=True)
    titles = facts.get("turn_titles", [])
    if not isinstance(titles, list) or not all(
            isinstance(pair, list) and len(pair) == 2 and _is_int(pair[0]) and 0 <= pair[0] < n_turns
            and isinstance(pair[1], str) for pair in titles):
        raise reject("turn titles are not [turn slot, title] pairs")
    graph = facts.get("graph")
    if not isinstance(graph, dict):
        raise reject("the graph's facts are missing")
    entities = _strings(graph.get("entities"), "graph entities", distinct=True)
    alias = graph.get("alias")
    if not isinstance(alias, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in alias.items()):
        raise reject("graph aliases are not a map of names")
    if not _is_int(graph.get("n_live_turns")) or graph["n_live_turns"] < 0:
        raise reject("the graph's live turn count is not a count")
    for name in ("raw_counts", "person_counts", "key_counts"):
        _counts(graph.get(name), f"graph {name}")
    for _, spans in _slot_keys(facts.get("annotations"), "annotations", n_turns):
        for span in spans:
            if not (isinstance(span, list) and len(span) == 6 and isinstance(span[0], str)
                    and all(_is_int(x) for x in span[1:5]) and isinstance(span[5], str)
                    and 1 <= span[3] <= MAX_ORDINAL and 1 <= span[4] <= MAX_ORDINAL):
                raise reject("an annotation is not [surface, start, end, first day, last day, granularity]")
    for slot, found in _slot_keys(facts.get("assertions"), "state assertions", n_turns):
        if not alive[slot]:
            raise reject("a state assertion belongs to an empty turn slot")
        for item in found:
            if not (isinstance(item, list) and len(item) == 5 and _optional(item[0], str)
                    and isinstance(item[1], str) and isinstance(item[2], str) and _optional(item[3], str)
                    and _optional(item[4], int)):
                raise reject("a state assertion is not [speaker, attribute, value, session, seq]")
    return len(terms), len(names), len(sessions), len(entities)


# -- arrays ---------------------------------------------------------------------------------
def _check_level(a: _Arrays, level: str, n_terms: int, n_sessions: int) -> tuple[int, int]:
    """One level's slots; returns (slots, vector dimension or 0)."""
    p = f"{level}."
    alive = a.get(p + "alive", "bool")
    n = len(alive)
    session = a.ids(p + "session", "int32", -1, n_sessions, length=n)
    if n and bool((session[alive] < 0).any()):
        raise reject(f"a live {level} slot has no session")
    a.get(p + "position", "int32", length=n)
    a.get(p + "text_hash", "S12", length=n)
    if a.has(p + "unit_id"):
        a.get(p + "unit_id", "int64", length=n)
    ptr, _ = a.csr(p + "rowids", "int64", rows=n)
    a.csr(p + "tokens", "int32", rows=n, low=0, high=n_terms)
    if level == "turn" and n and bool((np.diff(ptr)[alive] < 1).any()):
        raise reject("a live turn slot covers no trace")
    # BM25 (indexes/lexical.py)
    lex = p + "lex."
    a.get(lex + "gen", "int32", length=n)
    a.finite(lex + "length", a.get(lex + "length", "float64", length=n))
    a.get(lex + "has_doc", "bool", length=n)
    df = a.get(lex + "df", "int64")
    if len(df) > n_terms or (df.size and int(df.min()) < 0):
        raise reject(f"{level} document frequencies do not fit the vocabulary")
    docs_ptr, docs = a.csr(lex + "post_docs", "int32", ptr_name=lex + "post_ptr", max_rows=n_terms, low=0, high=n)
    a.get(lex + "post_gens", "int32", length=len(docs))
    a.get(lex + "post_tfs", "float32", length=len(docs))
    totals = a.get(lex + "totals", "float64", length=2)
    a.finite(lex + "totals", totals)
    if not (0 <= totals[0] <= n and totals[0] == int(totals[0]) and totals[1] >= 0):
        raise reject(f"{level} document totals are out of range")
    if a.has(lex + "terms_ptr"):
        a.csr(lex + "terms_values", "int32", ptr_name=lex + "terms_ptr", max_rows=n, low=0, high=n_terms)
    del docs_ptr
    # vectors (indexes/dense.py, int8_store.py, cells.py)
    dense = p + "dense."
    a.get(dense + "alive", "bool", length=n)
    rows = a.get(dense + "rows", ("int8", "float32"), ndim=2, length=n)
    dim = int(rows.shape[1])
    if rows.dtype == np.int8:
        if dim == 0:
            raise reject(f"{level} vectors have no dimension")
        a.finite(dense + "scale", a.get(dense + "scale", "float32", length=n))
    elif dim:
        raise reject(f"{level} vectors are not int8 rows with a scale")
    if a.has(dense + "cells.centroids"):
        centroids = a.get(dense + "cells.centroids", "float32", ndim=2)
        if not len(centroids) or centroids.shape[1] != dim:
            raise reject(f"{level} cell centroids do not match the vectors")
        a.finite(dense + "cells.centroids", centroids)
        a.csr(dense + "cells.rows", "int64", ptr_name=dense + "cells.ptr", rows=len(centroids), low=0, high=n)
        a.csr(dense + "cells.extra_rows", "int64", ptr_name=dense + "cells.extra_ptr",
              max_rows=len(centroids), low=0, high=n)
        a.ids(dense + "cells.size", "int64", 0, INT32_MAX, length=1)
    return n, dim


def check_state(arrays: Mapping[str, np.ndarray], facts: Mapping[str, Any]) -> None:
    """Raise ``SnapshotRejected`` unless every array and fact is one ``PreparedScope.load_state``
    and the searches after it can read without an error or a read out of bounds."""
    a = _Arrays(arrays)
    turn_alive = a.get("turn.alive", "bool")
    n_turns = len(turn_alive)
    n_terms, n_names, n_sessions, n_entities = _check_facts(facts, n_turns, turn_alive)
    sizes: dict[str, int] = {}
    dims = set()
    for level in LEVELS:
        sizes[level], dim = _check_level(a, level, n_terms, n_sessions)
        if dim:
            dims.add(dim)
    # Turn slots: one live slot per trace (the index maps a trace's row number to its slot).
    ptr, rowids = a.get("turn.rowids_ptr", "int64"), a.get("turn.rowids", "int64")
    live = np.flatnonzero(turn_alive)
    firsts = rowids[ptr[live]] if len(live) else rowids[:0]
    if len(np.unique(firsts)) != len(firsts):
        raise reject("two live turn slots hold the same trace")
    # Sessions: each live turn is listed once, under its own session.
    turns_ptr, turns = a.csr("session_turns", "int64", rows=n_sessions, low=0, high=n_turns)
    listed_session = np.repeat(np.arange(n_sessions, dtype=np.int64), np.diff(turns_ptr))
    if (len(turns) != len(live) or len(np.unique(turns)) != len(turns) or not bool(turn_alive[turns].all())
            or not bool((a.get("turn.session", "int32")[turns] == listed_session).all())):
        raise reject("the sessions' turn lists do not match the live turns")
    a.ids("episode_of_session", "int64", -1, sizes["episode"], length=n_sessions)
    # Entity mentions per turn (ids into the names vocabulary).
    mention_ptr, _ = a.csr("mention_entity", "int32", max_rows=n_turns, low=0, high=n_names)
    for name, high in (("mention_label", n_names), ("mention_count", None)):
        other, _ = a.csr(name, "int32", max_rows=n_turns, low=None if high is None else 0, high=high)
        if not np.array_equal(other, mention_ptr):
            raise reject(f"{name} does not line up with mention_entity")
    vectors = a.get("entity_vectors", "float32", ndim=2)
    n_vectors = len(_strings(facts["entity_names"], "entity names"))
    if len(vectors) != n_vectors or (n_vectors and not vectors.shape[1]):
        raise reject("entity vectors do not match the entity names")
    if vectors.shape[1]:
        dims.add(int(vectors.shape[1]))
    a.finite("entity_vectors", vectors)
    if len(dims) > 1:
        raise reject(f"vectors of different dimensions {sorted(dims)}")
    # Dates per turn: pairs of valid day ordinals.
    dates_ptr, _ = a.csr("turn_dates", "int64", max_rows=n_turns, low=1, high=MAX_ORDINAL + 1)
    if bool((np.diff(dates_ptr) % 2).any()):
        raise reject("a turn's dates are not (first, last) pairs")
    _check_hierarchy(a, n_turns, sizes["span"], sizes["window"])
    _check_graph(a, n_turns, n_entities)


def _check_hierarchy(a: _Arrays, n_turns: int, n_spans: int, n_windows: int) -> None:
    """views/hierarchy.py: turn order, span owners, window memberships."""
    for name in ("hier.prev_turn", "hier.next_turn"):
        a.ids(name, "int64", -1, n_turns, length=n_turns)
    a.ids("hier.span_turn", "int64", -1, n_turns, length=n_spans)
    a.get("hier.window_gen", "int64", length=n_windows)
    members = a.ids("hier.member_turn", "int64", 0, n_turns)
    a.ids("hier.member_window", "int64", 0, n_windows, length=len(members))
    a.get("hier.member_gen", "int64", length=len(members))
    a.csr("hier.spans_of_turn", "int64", max_rows=n_turns, low=0, high=n_spans)
    a.csr("hier.windows_of_turn", "int64", max_rows=n_turns, low=0, high=n_windows)
    a.csr("hier.turns_of_window", "int64", max_rows=n_windows, low=0, high=n_turns)


def _check_graph(a: _Arrays, n_turns: int, n_entities: int) -> None:
    """views/graph.py and views/adjacency.py: edges per turn, and the CSR base PageRank reads."""
    a.get("graph.alive", "bool", length=n_turns)
    a.ids("graph.next_turn", "int64", -1, n_turns, length=n_turns)
    ids_ptr, _ = a.csr("graph.edge_ids", "int64", max_rows=n_turns, low=0, high=n_entities)
    weights_ptr, weights = a.csr("graph.edge_weights", "float64", max_rows=n_turns)
    if not np.array_equal(ids_ptr, weights_ptr):
        raise reject("graph edge weights do not line up with its edges")
    a.finite("graph.edge_weights", weights)
    a.finite("graph.df", a.get("graph.df", "float64", length=n_entities))
    base = ("graph.base_data", "graph.base_indices", "graph.base_indptr", "graph.base_degree",
            "graph.owner_ptr", "graph.owner_entries", "graph.dirty", "graph.base_shape")
    present = [a.has(name) for name in base]
    if not any(present):
        return  # no base was built yet: the first search builds it from the edges
    if not all(present):
        raise reject("the graph's adjacency is incomplete")
    shape = a.get("graph.base_shape", "int64", length=3)
    turn_capacity, entity_capacity, slots = (int(x) for x in shape)
    if not (n_turns <= turn_capacity and n_entities <= entity_capacity and 0 <= slots <= n_turns
            and turn_capacity + entity_capacity <= INT32_MAX):
        raise reject("the graph's adjacency has capacities that do not fit its turns and entities")
    n = turn_capacity + entity_capacity
    a.finite("graph.base_degree", a.get("graph.base_degree", "float64", length=n))
    _, data = a.csr("graph.base_data", "float32", ptr_name="graph.base_indptr", ptr_dtypes=("int32", "int64"), rows=n)
    indices = a.ids("graph.base_indices", ("int32", "int64"), 0, n, length=len(data))
    if a.get("graph.base_indptr", ("int32", "int64")).dtype != indices.dtype:
        raise reject("the graph's adjacency mixes index types")
    a.finite("graph.base_data", data)
    a.csr("graph.owner_entries", "int32", ptr_name="graph.owner_ptr", max_rows=n_turns, low=0, high=len(data))
    a.ids("graph.dirty", "int64", 0, n_turns)


def check_traces(index: Any, trace_sessions: Mapping[int, str], unsettled: frozenset[str]) -> None:
    """Raise ``SnapshotRejected`` unless the loaded index holds the scope's traces as the
    store does, outside the sessions the catch-up will re-read anyway (``unsettled``: changed
    since the snapshot's version, or not derived yet). A snapshot whose version row was moved
    forward would otherwise skip the sessions written in between: a live trace hidden.

    ``trace_sessions``: every trace of the scope (row number → session) read with the snapshot."""
    sessions = index.sessions
    turns = index.turns
    session_of_slot = turns.session.view()
    for rowid, slot in index.slot_of_rowid.items():
        held = sessions[int(session_of_slot[slot])]
        stored = trace_sessions.get(rowid)
        if stored != held and (held not in unsettled or (stored is not None and stored not in unsettled)):
            raise reject("the index holds a trace the store does not have in that session, "
                         "and no change since says why")
    held_rowids = index.slot_of_rowid
    for rowid, session in trace_sessions.items():
        if rowid not in held_rowids and session not in unsettled:
            raise reject("a trace of the store is missing from the index, and no change since says why")
