"""View 1: the entity–context graph (SPEC §2.2).

Nodes are turn units and entities; a turn links to each entity detected in it with the
frequency-normalized weight ``w(d, e) = c(e, d) / Σ_e' c(e', d)``, and consecutive turns of a
session link to each other (weight ``ADJACENCY_WEIGHT``) to keep local continuity. Only observed
co-occurrence is recorded: no triples, no inferred relations. Retrieval aligns the query to
entities (exact n-gram match plus embedding cosine), restarts a Personalized PageRank there and
reads the stationary mass on the turns.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from typing import Iterable, Sequence

import numpy as np
import scipy.sparse as sp

from ..encoders.aliases import link_aliases
from ..indexes.scope_index import Change, ScopeIndex
from .ppr import symmetric_pagerank, symmetric_push_pagerank

# Only names take aliases ("mel" → "melanie"); a noun phrase is no nickname.
ALIAS_LABELS = frozenset({"PERSON", "NAME"})

ADJACENCY_WEIGHT = 0.3
DENSE_ALIGN_MIN_COS = 0.55
DENSE_ALIGN_TOP = 5
MAX_NGRAM = 4
SEED_MASS_RATIO = 1.0
PPR_TOL = 1e-4  # L1; scores are normalized by their maximum afterwards (1e-5: same recall, +5 steps)
PPR_MAX_ITER = 30  # γ = 0.6: the error after 30 steps is below 0.6³⁰ ≈ 2e-7
# Forward push on large scopes: a turn's mass is at most ε·deg (deg ≤ ~2) below the exact one,
# and the scores are divided by their maximum (~4e-2: the seed turns), so the normalized error
# stays below 1e-3 (measured at 100k turns: 3e-4; docs/decisions.md).
PPR_PUSH_EPSILON = 1e-5


_GENERIC_HEADS = frozenset("""day days week weeks month months year years time times thing things
way ways lot lots bit kind kinds sort one ones stuff people person guy guys morning night evening
weekend weekends today yesterday tomorrow""".split())


def with_heads(entity: str) -> list[str]:
    """An entity key and the suffixes of a multi-word key ("lgbtq support group" → "support
    group", "group"): an English noun phrase is a kind of its head, so both mentions meet there.
    Generic heads ("week", "thing") are left out: they would connect everything to everything."""
    words = entity.split()
    keys = [entity]
    for start in range(1, len(words)):
        suffix = " ".join(words[start:])
        if start == len(words) - 1 and (suffix in _GENERIC_HEADS or len(suffix) < 3):
            continue
        keys.append(suffix)
    return keys


_PARENTHETICAL = re.compile(r"\s*\([^)]*\)")
_NON_WORD = re.compile(r"[^\w\s]+")


def normalize_title(name: str) -> str:
    """An episode or page name as an entity key: "Ed Wood (film)" → "ed wood"."""
    text = _PARENTHETICAL.sub("", name or "")
    return " ".join(_NON_WORD.sub(" ", text).lower().split())


def edge_weights(counts: dict[str, int]) -> dict[str, float]:
    """``w(d, e) = c(e, d) / Σ c(e', d)`` for the entities of one unit."""
    total = sum(counts.values())
    return {e: c / total for e, c in counts.items()} if total else {}


class EntityGraph:
    """The unit–entity graph of one scope, changed turn by turn (``update``).

    Nodes: turn slot ``t`` is node ``t``; entity ``j`` is node ``turn_capacity + j``. The
    symmetric adjacency ``A`` is an immutable CSR *base* plus a small *delta*: a turn whose
    edges changed ("dirty") has its entries in the base zeroed and its current edges in the
    delta, rebuilt per version from the dirty turns only; degrees are kept per node. When the
    delta outgrows ``DELTA_SHARE`` of the base, or a capacity is reached, the base is rebuilt
    from every turn's edges (amortized O(1) per write).

    A turn owns its edges to entities and its adjacency edge to the next turn of its session.
    Two rules make edges depend on scope-wide state: alias links between names (a new mention
    of "Melanie" can make "mel" an alias) and the episode-title rule (a session named after an
    entity that some turn mentions). When either changes for a key, the turns that use the key
    are re-derived as well.
    """

    DELTA_SHARE = 0.1

    def __init__(self) -> None:
        self.entities: list[str] = []
        self.entity_index: dict[str, int] = {}
        self.alias: dict[str, str] = {}
        self.edges: list[tuple[np.ndarray, np.ndarray] | None] = []  # per turn slot
        self.unit_entities: list[list[int]] = []  # per turn slot, in entity-name order
        self.next_turn: list[int] = []  # per turn slot: the next turn of its session, or -1
        self.entity_df = np.zeros(0)  # live turns linked to each entity
        self.raw_counts: Counter = Counter()  # raw entity key → mentions in live turns
        self.person_counts: Counter = Counter()  # the same for names (alias candidates)
        self.key_counts: Counter = Counter()  # graph key (aliased, with heads) → live mentions
        self.key_turns: dict[str, set[int]] = defaultdict(set)  # raw key or head → turn slots
        self.title_turns: dict[str, set[int]] = defaultdict(set)  # episode title → turn slots
        self.n_live_turns = 0
        self.turn_capacity = 0
        self.entity_capacity = 0
        self.version = 0
        self._raw: dict[int, tuple[tuple[str, str, int], ...]] = {}
        self._slot_keys: dict[int, dict[str, int]] = {}
        self._slot_raw_keys: dict[int, set[str]] = {}
        self._slot_title: dict[int, str] = {}
        self._base: sp.csr_matrix | None = None
        self._base_rows = np.zeros(0, dtype=np.int64)
        self._base_degree = np.zeros(0)
        self._base_positions: dict[int, np.ndarray] = {}
        self._base_entries = 0
        self._dirty: set[int] = set()
        self._cache: tuple | None = None

    # -- reads --------------------------------------------------------------------------
    @property
    def n_turns(self) -> int:
        """Turn slots (node ids below this are turns; empty slots have no edges)."""
        return len(self.edges)

    @property
    def n_nodes(self) -> int:
        return self.turn_capacity + self.entity_capacity

    def parts(self) -> tuple[list[sp.csr_matrix], np.ndarray]:
        """The adjacency as [base, delta] CSR matrices (n_nodes²) and every node's degree."""
        self._ensure_base()
        assert self._base is not None
        if self._cache is None or self._cache[0] != self.version:
            rows, cols, vals = self._owned_entries(sorted(self._dirty))
            n = self.n_nodes
            degree = self._base_degree.copy()
            parts = [self._base]
            if vals:
                rows_a = np.asarray(rows, dtype=np.int64)
                parts.append(sp.csr_matrix((vals, (rows_a, cols)), shape=(n, n)))
                degree += np.bincount(rows_a, weights=vals, minlength=n)[:n]
            self._cache = (self.version, parts, degree)
        return self._cache[1], self._cache[2]

    def turns_of_entities(self, entity_ids: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
        """(turn slots, count per entity): each entity's live turns, ascending, entity by entity."""
        parts, _ = self.parts()
        found: list[np.ndarray] = []
        counts = np.zeros(len(entity_ids), dtype=np.int64)
        for i, j in enumerate(entity_ids):
            node = self.turn_capacity + int(j)
            chunks = [part.indices[part.indptr[node]:part.indptr[node + 1]][
                part.data[part.indptr[node]:part.indptr[node + 1]] > 0] for part in parts]
            turns = np.unique(np.concatenate(chunks)).astype(np.int64)
            found.append(turns)
            counts[i] = len(turns)
        return (np.concatenate(found) if found else np.zeros(0, dtype=np.int64)), counts

    # -- writes -------------------------------------------------------------------------
    def update(self, index: ScopeIndex, change: Change, next_turn: np.ndarray) -> None:
        """Bring the graph in line with ``index`` after ``change``; ``next_turn`` per turn slot."""
        n = index.n_slots
        while len(self.edges) < n:
            self.edges.append(None)
            self.unit_entities.append([])
            self.next_turn.append(-1)
        touched = set(change.turns_set) | set(change.turns_killed)
        for slot in touched:
            self._forget_mentions(slot)
        alive = index.turns.alive.view()
        for slot in change.turns_set:
            if alive[slot]:
                self._count_mentions(index, slot)
        old_alias = self.alias
        live_names = {k: c for k, c in self.person_counts.items() if c > 0}
        self.alias = link_aliases(sorted(live_names), live_names)
        for key in set(old_alias) | set(self.alias):
            if old_alias.get(key) != self.alias.get(key):
                touched |= self.key_turns.get(key, set()) | self.title_turns.get(key, set())
        for sid in change.sessions:
            for slot in index.session_turns[sid]:
                if self.next_turn[slot] != int(next_turn[slot]):
                    self.next_turn[slot] = int(next_turn[slot])
                    touched.add(slot)
        for slot in change.turns_killed:
            self.next_turn[slot] = -1
        # A key that becomes mentioned (or stops being) changes the title edges of its episodes.
        keys_before = set().union(*(self._slot_keys.get(s, {}).keys() for s in touched)) if touched else set()
        was_mentioned = {key: self.key_counts.get(key, 0) > 0 for key in keys_before}
        for slot in sorted(touched):
            self._drop_keys(slot)
        for slot in sorted(touched):
            if alive[slot]:
                self._add_keys(index, slot)
        keys_after = set().union(*(self._slot_keys.get(s, {}).keys() for s in touched)) if touched else set()
        for key in keys_before | keys_after:
            if was_mentioned.get(key, False) != (self.key_counts.get(key, 0) > 0):
                touched |= self.title_turns.get(key, set())
        for slot in sorted(touched):
            self._set_edges(slot, bool(alive[slot]))
        self.n_live_turns = index.n_live_turns
        self.version += 1
        if self._base is None:
            return
        if (n > self.turn_capacity or len(self.entities) > self.entity_capacity
                or len(self._dirty | touched) > self.DELTA_SHARE * max(len(self._base_positions), 1000)):
            self._base = None  # rebuilt on the next read
            return
        for slot in touched - self._dirty:
            self._mask_in_base(slot)
        self._dirty |= touched

    def _forget_mentions(self, slot: int) -> None:
        for entity, label, count in self._raw.pop(slot, ()):
            self.raw_counts[entity] -= count
            if label in ALIAS_LABELS:
                self.person_counts[entity] -= count

    def _count_mentions(self, index: ScopeIndex, slot: int) -> None:
        raw = tuple((entity, label, count) for entity, label, _, count in index.mentions[slot])
        self._raw[slot] = raw
        for entity, label, count in raw:
            self.raw_counts[entity] += count
            if label in ALIAS_LABELS:
                self.person_counts[entity] += count

    def _drop_keys(self, slot: int) -> None:
        for key, count in self._slot_keys.pop(slot, {}).items():
            self.key_counts[key] -= count
        for key in self._slot_raw_keys.pop(slot, ()):
            self.key_turns[key].discard(slot)
        title = self._slot_title.pop(slot, "")
        if title:
            self.title_turns[title].discard(slot)
            self.title_turns[self.alias.get(title, title)].discard(slot)

    def _add_keys(self, index: ScopeIndex, slot: int) -> None:
        alias = self.alias
        bucket: dict[str, int] = {}
        raw_keys: set[str] = set()
        for entity, _, count in self._raw.get(slot, ()):
            raw_keys.add(entity)
            for key in with_heads(alias.get(entity, entity)):
                raw_keys.add(key)
                key = alias.get(key, key)
                bucket[key] = bucket.get(key, 0) + count
        self._slot_keys[slot] = bucket
        for key, count in bucket.items():
            self.key_counts[key] += count
        self._slot_raw_keys[slot] = raw_keys
        for key in raw_keys:
            self.key_turns[key].add(slot)
        title = normalize_title(index.sessions[int(index.turns.session[slot])])
        if title:
            self._slot_title[slot] = title
            self.title_turns[title].add(slot)
            self.title_turns[alias.get(title, title)].add(slot)

    def _set_edges(self, slot: int, alive: bool) -> None:
        old = self.edges[slot]
        if old is not None:
            np.subtract.at(self.entity_df, old[0], 1.0)
        if not alive:
            self.edges[slot] = None
            self.unit_entities[slot] = []
            return
        bucket = dict(self._slot_keys.get(slot, {}))
        title = self._slot_title.get(slot, "")
        title = self.alias.get(title, title)
        # An episode named after an entity (a page, a project, a person's thread) is about it:
        # its turns link to that entity even where they only say "he" or "it".
        if title and self.key_counts.get(title, 0) > 0:
            bucket[title] = bucket.get(title, 0) + 1
        weights = sorted(edge_weights(bucket).items())
        ids = []
        for entity, _ in weights:
            j = self.entity_index.get(entity)
            if j is None:
                j = self.entity_index[entity] = len(self.entities)
                self.entities.append(entity)
            ids.append(j)
        if len(self.entity_df) < len(self.entities):
            grown = np.zeros(2 * len(self.entities))
            grown[:len(self.entity_df)] = self.entity_df
            self.entity_df = grown
        ids_arr = np.asarray(ids, dtype=np.int64)
        self.edges[slot] = (ids_arr, np.asarray([w for _, w in weights], dtype=np.float64))
        self.unit_entities[slot] = ids
        np.add.at(self.entity_df, ids_arr, 1.0)

    def _owned_entries(self, slots: Iterable[int]) -> tuple[list[int], list[int], list[float]]:
        rows: list[int] = []
        cols: list[int] = []
        vals: list[float] = []
        offset = self.turn_capacity
        for slot in slots:
            edges = self.edges[slot] if slot < len(self.edges) else None
            if edges is None:
                continue
            for j, w in zip(edges[0].tolist(), edges[1].tolist()):
                rows += [slot, offset + j]
                cols += [offset + j, slot]
                vals += [w, w]
            nxt = self.next_turn[slot]
            if nxt >= 0 and self.edges[nxt] is not None:
                rows += [slot, nxt]
                cols += [nxt, slot]
                vals += [ADJACENCY_WEIGHT, ADJACENCY_WEIGHT]
        return rows, cols, vals

    def _ensure_base(self) -> None:
        if self._base is not None:
            return
        self.turn_capacity = max(64, 2 * len(self.edges))
        self.entity_capacity = max(64, 2 * len(self.entities))
        if len(self.entity_df) < self.entity_capacity:
            grown = np.zeros(self.entity_capacity)
            grown[:len(self.entity_df)] = self.entity_df
            self.entity_df = grown
        owner: list[int] = []
        rows: list[int] = []
        cols: list[int] = []
        vals: list[float] = []
        slots = [s for s in range(len(self.edges)) if self.edges[s] is not None]
        for slot in slots:
            r, c, v = self._owned_entries([slot])
            rows += r
            cols += c
            vals += v
            owner += [slot] * len(r)
        n = self.n_nodes
        rows_a = np.asarray(rows, dtype=np.int64)
        cols_a = np.asarray(cols, dtype=np.int64)
        order = np.lexsort((cols_a, rows_a))
        indptr = np.searchsorted(rows_a[order], np.arange(n + 1))
        self._base = sp.csr_matrix((np.asarray(vals, dtype=np.float64)[order], cols_a[order], indptr),
                                   shape=(n, n))
        self._base_rows = rows_a[order]
        position = np.empty(len(order), dtype=np.int64)
        position[order] = np.arange(len(order))
        owner_a = np.asarray(owner, dtype=np.int64)
        by_owner = np.argsort(owner_a, kind="stable")
        bounds = np.searchsorted(owner_a[by_owner], np.arange(len(self.edges) + 1))
        self._base_positions = {slot: position[by_owner[bounds[slot]:bounds[slot + 1]]] for slot in slots}
        self._base_degree = np.bincount(rows_a, weights=np.asarray(vals, dtype=np.float64),
                                        minlength=n)[:n].astype(np.float64)
        self._base_entries = len(order)
        self._dirty = set()
        self._cache = None

    def _mask_in_base(self, slot: int) -> None:
        """Zero a turn's entries in the base: its current edges live in the delta from now on."""
        assert self._base is not None
        positions = self._base_positions.pop(slot, None)
        if positions is None or not len(positions):
            return
        np.subtract.at(self._base_degree, self._base_rows[positions], self._base.data[positions])
        self._base.data[positions] = 0.0


def align_entities(graph: EntityGraph, query_ngrams: list[str], query_vec: np.ndarray | None,
                   entity_vectors: np.ndarray | None, entity_names: list[str]) -> dict[int, float]:
    """η(e | q): 1.0 for entities the query names exactly, cosine for close embeddings."""
    aligned: dict[int, float] = {}
    for gram in query_ngrams:
        key = graph.alias.get(gram, gram)
        j = graph.entity_index.get(key)
        if j is not None and graph.entity_df[j] > 0:
            aligned[j] = 1.0
    if query_vec is not None and entity_vectors is not None and len(entity_names):
        cos = entity_vectors @ query_vec
        # names nobody mentions any more (their last turn was deleted) align with nothing
        cos = np.where([graph.raw_counts.get(name, 0) > 0 for name in entity_names], cos, -np.inf)
        top = np.argsort(-cos, kind="stable")[:DENSE_ALIGN_TOP]
        for i in top:
            if cos[i] < DENSE_ALIGN_MIN_COS:
                break
            key = graph.alias.get(entity_names[i], entity_names[i])
            j = graph.entity_index.get(key)
            if j is not None and graph.entity_df[j] > 0:
                aligned[j] = max(aligned.get(j, 0.0), float(cos[i]))
    return aligned


def graph_scores(graph: EntityGraph, aligned: dict[int, float], seed_turns: dict[int, float],
                 *, damping: float, local: bool = False) -> np.ndarray:
    """PPR mass on every turn slot, restarting from aligned entities and seed turns.

    Entity restart mass is weighted by inverse document frequency so that an entity named in
    every turn (a speaker's own name) does not drown the rare, discriminative ones. ``local``
    approximates the mass by forward push, whose cost does not grow with the graph.
    """
    parts, degree = graph.parts()
    n_t = graph.n_turns
    restart = np.zeros(graph.n_nodes)
    for j, eta in aligned.items():
        restart[graph.turn_capacity + j] = eta * np.log1p(graph.n_live_turns / max(graph.entity_df[j], 1.0))
    entity_mass = restart.sum()
    if seed_turns:
        seeds = np.zeros(graph.n_nodes)
        for node, weight in seed_turns.items():
            seeds[node] = weight
        seeds *= SEED_MASS_RATIO * (entity_mass if entity_mass > 0 else 1.0) / seeds.sum()
        restart += seeds
    if restart.sum() <= 0:
        return np.zeros(n_t)
    if local:
        pi = symmetric_push_pagerank(parts, degree, restart, damping=damping, epsilon=PPR_PUSH_EPSILON)
    else:
        pi = symmetric_pagerank(parts, degree, restart, damping=damping, tol=PPR_TOL, max_iter=PPR_MAX_ITER)
    return pi[:n_t]


def query_ngrams(tokens: list[str], max_n: int = MAX_NGRAM) -> list[str]:
    """All 1..max_n-grams of the query's normalized words, for exact entity alignment."""
    grams = []
    for n in range(1, max_n + 1):
        for i in range(len(tokens) - n + 1):
            grams.append(" ".join(tokens[i:i + n]))
    return grams
