"""View 1: the entity–context graph (docs/design.md#entity-context-graph).

Nodes are turn units and entities; a turn links to each entity detected in it with the
frequency-normalized weight ``w(d, e) = c(e, d) / Σ_e' c(e', d)``, and consecutive turns of a
session link to each other (weight ``ADJACENCY_WEIGHT``) to keep local continuity. Only observed
co-occurrence is recorded: no triples, no inferred relations. Retrieval aligns the query to
entities (exact n-gram match plus embedding cosine), restarts a Personalized PageRank there and
reads the stationary mass on the turns.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np

from ..encoders.aliases import AliasLinks
from ..encoders.entities import normalize_title
from ..indexes.growable import Growable
from ..indexes.int8_rows import top_cosines
from ..indexes.ragged import Ragged
from ..indexes.scope_index import Change, ScopeIndex
from ..indexes.topk import top_indices
from .adjacency import BaseDeltaAdjacency
from .ppr import push_pagerank
from .ppr_folded import Folding, folded_pagerank_from

if TYPE_CHECKING:  # scipy is imported where a graph is first built, not with the package
    import scipy.sparse as sp

# Only names take aliases ("mel" → "melanie"); a noun phrase is no nickname.
ALIAS_LABELS = frozenset({"PERSON", "NAME"})

DENSE_ALIGN_MIN_COS = 0.55
DENSE_ALIGN_TOP = 5
MAX_NGRAM = 4
SEED_MASS_RATIO = 1.0
PPR_TOL = 1e-3  # L1; scores are normalized by their maximum afterwards (docs/decisions/0054-smaller-ppr-core.md)
PPR_MAX_ITER = 30  # γ = 0.6: the error after 30 steps is below 0.6³⁰ ≈ 2e-7
# Forward push on large scopes: a turn's mass is at most ε·deg (deg ≤ ~2) below the exact one,
# and the scores are divided by their maximum (~4e-2: the seed turns), so the normalized error
# stays below 1e-3 (measured at 100k turns: 3e-4; docs/decisions/0006-large-scopes.md).
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


def edge_weights(counts: dict[str, int]) -> dict[str, float]:
    """``w(d, e) = c(e, d) / Σ c(e', d)`` for the entities of one unit."""
    total = sum(counts.values())
    return {e: c / total for e, c in counts.items()} if total else {}


class EntityGraph:
    """The unit–entity graph of one scope, changed turn by turn (``update``).

    This class decides which edges each turn slot has; ``adjacency`` (adjacency.py) stores them
    for PageRank as a CSR base plus a delta. Node ``t`` is turn slot ``t``; entity ``j`` is node
    ``turn_capacity + j``.

    A turn owns its edges to entities and its adjacency edge to the next turn of its session.
    Two rules make edges depend on scope-wide state: alias links between names (a new mention
    of "Melanie" can make "mel" an alias) and the title rule (a trace titled after an entity
    that some turn mentions links to it). When either changes for a key, the turns that use the key
    — found through their edges to its old target — are re-derived as well.
    """

    def __init__(self) -> None:
        self.entities: list[str] = []
        self.entity_index: dict[str, int] = {}
        self.alias: dict[str, str] = {}
        self.edge_ids = Ragged(np.int64)  # per turn slot: entity ids, in entity-name order
        self.edge_weights = Ragged(np.float64)
        self.next_turn = Growable(np.int64, fill=-1)  # per turn slot: next turn of its session
        self.alive = Growable(bool, fill=False)  # turn slots that have edges
        self._df = Growable(np.float64)  # live turns linked to each entity
        self.raw_counts: Counter = Counter()  # raw entity key → mentions in live turns
        self.person_counts: Counter = Counter()  # the same for names (alias candidates)
        self.key_counts: Counter = Counter()  # graph key (aliased, with heads) → live mentions
        self.n_live_turns = 0
        self.version = 0
        self.adjacency = BaseDeltaAdjacency(self)
        # (version, the names list, how many of its names, mask) of the last mentioned_mask
        self._mentioned: tuple[int, Sequence[str], int, np.ndarray] | None = None
        self._recounted: set[str] = set()  # raw keys whose count changed since the last mask
        self._folding: tuple[int, float, Folding] | None = None
        self._links = AliasLinks()  # ``alias``, kept up to date name by name
        # person keys recounted since the links were last updated (None: all of them, after a load)
        self._person_changed: set[str] | None = set()

    # -- reads --------------------------------------------------------------------------
    @property
    def n_turns(self) -> int:
        """Turn slots (node ids below this are turns; empty slots have no edges)."""
        return self.alive.size

    @property
    def turn_capacity(self) -> int:
        return self.adjacency.turn_capacity

    @property
    def n_nodes(self) -> int:
        return self.adjacency.n_nodes

    @property
    def entity_df(self) -> np.ndarray:
        return self._df.view()

    @property
    def unit_entities(self) -> _EntityLists:
        return _EntityLists(self.edge_ids)

    def parts(self) -> tuple[list[sp.csr_matrix], np.ndarray]:
        """The adjacency as [base, delta] CSR matrices (n_nodes²) and every node's degree."""
        return self.adjacency.parts(self.version)

    def folding(self, damping: float) -> Folding:
        """The adjacency with its low-degree nodes folded (views/ppr_folded.py) for PPR at
        ``damping``; made once per graph version (retrieval/scopes.py builds it before the
        index cache sizes the scope)."""
        cached = self._folding
        if cached is None or cached[0] != self.version or cached[1] != damping:
            cached = self._folding = (self.version, damping, Folding.build(*self.parts(), damping))
        return cached[2]

    def mentioned_mask(self, entity_names: Sequence[str], rows: Mapping[str, int]) -> np.ndarray:
        """Per name of ``entity_names`` (append-only: the scope's entities with a vector; ``rows``
        gives each name's place in it), whether a live turn still mentions it; made once per
        graph version, and after a write only at the names it recounted and the new names."""
        cached = self._mentioned
        start = cached[2] if cached is not None and cached[1] is entity_names else 0
        if cached is not None and start and cached[0] == self.version and start == len(entity_names):
            return cached[3]
        counts = self.raw_counts
        mask = np.empty(len(entity_names), dtype=bool)
        if start:
            assert cached is not None
            mask[:start] = cached[3][:start]
            for name in self._recounted:
                place = rows.get(name)
                if place is not None and place < start:
                    mask[place] = counts.get(name, 0) > 0
        fresh = entity_names[start:]
        mask[start:] = np.fromiter((counts.get(name, 0) > 0 for name in fresh), dtype=bool, count=len(fresh))
        self._recounted = set()
        self._mentioned = (self.version, entity_names, len(entity_names), mask)
        return mask

    def turns_of_entities(self, entity_ids: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
        """(turn slots, count per entity): each entity's live turns, ascending, entity by entity."""
        parts, _ = self.parts()
        found: list[np.ndarray] = []
        counts = np.zeros(len(entity_ids), dtype=np.int64)
        for i, j in enumerate(entity_ids):
            node = self.turn_capacity + int(j)
            chunks = []
            for part in parts:
                lo, hi = part.indptr[node], part.indptr[node + 1]
                chunks.append(part.indices[lo:hi][part.data[lo:hi] > 0])
            turns = np.unique(np.concatenate(chunks)).astype(np.int64)
            found.append(turns)
            counts[i] = len(turns)
        return (np.concatenate(found) if found else np.zeros(0, dtype=np.int64)), counts

    # -- persistence --------------------------------------------------------------------
    def state(self) -> tuple[dict[str, np.ndarray], dict]:
        ids_ptr, ids = self.edge_ids.flat()
        w_ptr, weights = self.edge_weights.flat()
        arrays = {"edge_ids_ptr": ids_ptr, "edge_ids": ids, "edge_weights_ptr": w_ptr,
                  "edge_weights": weights, "next_turn": self.next_turn.view(), "alive": self.alive.view(),
                  "df": self._df.view(), **self.adjacency.state()}
        facts = {"entities": self.entities, "alias": self.alias, "n_live_turns": self.n_live_turns,
                 "raw_counts": {k: v for k, v in self.raw_counts.items() if v},
                 "person_counts": {k: v for k, v in self.person_counts.items() if v},
                 "key_counts": {k: v for k, v in self.key_counts.items() if v}}
        return arrays, facts

    @classmethod
    def from_state(cls, arrays: dict[str, np.ndarray], facts: dict) -> EntityGraph:
        graph = cls()
        graph.entities = list(facts["entities"])
        graph.entity_index = {e: i for i, e in enumerate(graph.entities)}
        graph.alias = dict(facts["alias"])
        graph.n_live_turns = int(facts["n_live_turns"])
        graph.raw_counts = Counter(facts["raw_counts"])
        graph.person_counts = Counter(facts["person_counts"])
        graph._links.links = dict(graph.alias)  # what moves at the first update is measured from these
        graph._person_changed = None  # the links are rebuilt from the counts at the first update
        graph.key_counts = Counter(facts["key_counts"])
        graph.edge_ids = Ragged(np.int64, arrays["edge_ids_ptr"], arrays["edge_ids"])
        graph.edge_weights = Ragged(np.float64, arrays["edge_weights_ptr"], arrays["edge_weights"])
        graph.next_turn = Growable.wrap(arrays["next_turn"], fill=-1)
        graph.alive = Growable.wrap(arrays["alive"], fill=False)
        graph._df = Growable.wrap(arrays["df"])
        graph.edge_ids.reserve(graph.alive.size)
        graph.edge_weights.reserve(graph.alive.size)
        graph.adjacency.load(arrays)
        return graph

    # -- writes -------------------------------------------------------------------------
    def update(self, index: ScopeIndex, change: Change, next_turn: np.ndarray) -> None:
        """Bring the graph in line with ``index`` after ``change``; ``next_turn`` per turn slot."""
        n = index.n_slots
        self.alive.reserve(n)
        self.next_turn.reserve(n)
        self.edge_ids.reserve(n)
        self.edge_weights.reserve(n)
        alive = index.turns.alive.view()
        touched = set(change.turns_set) | set(change.turns_killed)
        was_positive: dict[str, bool] = {}

        def count(bucket: dict[str, int], sign: int) -> None:
            for key, c in bucket.items():
                if key not in was_positive:
                    was_positive[key] = self.key_counts[key] > 0
                self.key_counts[key] += sign * c

        # Mentions the changed turns had leave the counts (keyed with the alias map they were
        # counted with), their new mentions come in.
        for slot in sorted(touched):
            old = change.old_mentions.get(slot, [])
            self._count_raw(old, -1)
            count(_bucket(old, self.alias), -1)
        for slot in sorted(change.turns_set):
            if alive[slot]:
                self._count_raw(index.mentions_of(slot), +1)
        old_alias = self.alias
        if self._person_changed is None:  # loaded from a snapshot: link every name once
            changed = sorted(self._links.rebuild(self.person_counts))
        else:
            changed = sorted(self._links.update(self.person_counts, sorted(self._person_changed)))
        if changed:  # a new dict: ``old_alias`` keeps the links the old counts were keyed with
            self.alias = dict(self._links.links)
        self._person_changed = set()
        relinked: set[int] = set()
        if changed:
            # A turn whose bucket used a changed key has an edge to that key's old target.
            targets = {old_alias.get(key, key) for key in changed}
            ids = [self.entity_index[t] for t in sorted(targets) if t in self.entity_index]
            if ids:
                relinked |= set(self.turns_of_entities(ids)[0].tolist())
            for key in changed:
                relinked |= self._title_turns(index, key)
            relinked -= touched
            for slot in sorted(relinked):
                count(_bucket(index.mentions_of(slot), old_alias), -1)
        for slot in sorted(touched | relinked):
            if alive[slot]:
                mentions = index.mentions_of(slot)
                count(_bucket(mentions, self.alias), +1)
        edges = touched | relinked
        for sid in change.sessions:
            for slot in index.session_turns[sid]:
                if self.next_turn[slot] != int(next_turn[slot]):
                    self.next_turn[slot] = int(next_turn[slot])
                    edges.add(slot)
        for slot in change.turns_killed:
            self.next_turn[slot] = -1
        # A key that became mentioned (or stopped being) changes the title edges of its traces.
        for key, before in was_positive.items():
            if before != (self.key_counts[key] > 0):
                edges |= self._title_turns(index, key)
        for slot in sorted(edges):
            self._set_edges(index, slot, bool(alive[slot]))
        self.n_live_turns = index.n_live_turns
        self.version += 1
        self.adjacency.changed(edges)

    def _count_raw(self, mentions: list[tuple[str, str, int]], sign: int) -> None:
        for entity, label, c in mentions:
            self.raw_counts[entity] += sign * c
            self._recounted.add(entity)
            if label in ALIAS_LABELS:
                self.person_counts[entity] += sign * c
                if self._person_changed is not None:
                    self._person_changed.add(entity)

    def _title_turns(self, index: ScopeIndex, key: str) -> set[int]:
        """Turns whose trace's title is ``key`` (or an alias of it)."""
        names = [key] + [t for t, target in self.alias.items() if target == key]
        out: set[int] = set()
        for title in names:
            out.update(index.titles.slots(title))
        return out

    def _set_edges(self, index: ScopeIndex, slot: int, alive: bool) -> None:
        df = self._df
        old = self.edge_ids[slot]
        if len(old):
            np.subtract.at(df.view(), old, 1.0)
        if not alive:
            self.edge_ids[slot] = ()
            self.edge_weights[slot] = ()
            self.alive[slot] = False
            return
        bucket = _bucket(index.mentions_of(slot), self.alias)
        raw_title = index.titles.of(slot)
        title = normalize_title(raw_title) if raw_title else ""
        title = self.alias.get(title, title)
        # A trace titled after an entity (a page, a note on a project or a person) is about it:
        # it links to that entity even where its text only says "he" or "it".
        if title and self.key_counts[title] > 0:
            bucket[title] = bucket.get(title, 0) + 1
        weights = sorted(edge_weights(bucket).items())
        ids = []
        for entity, _ in weights:
            j = self.entity_index.get(entity)
            if j is None:
                j = self.entity_index[entity] = len(self.entities)
                self.entities.append(entity)
                df.reserve(j + 1)
            ids.append(j)
        self.edge_ids[slot] = ids
        self.edge_weights[slot] = [w for _, w in weights]
        self.alive[slot] = True
        if ids:
            np.add.at(df.view(), np.asarray(ids, dtype=np.int64), 1.0)

class _EntityLists:
    """``unit_entities[slot]``: a turn's entity ids as a list (read-only view of the graph)."""

    def __init__(self, edge_ids: Ragged) -> None:
        self._edge_ids = edge_ids

    def __getitem__(self, slot: int) -> list[int]:
        return self._edge_ids[slot].tolist()

    def __len__(self) -> int:
        return len(self._edge_ids)


def _bucket(mentions: list[tuple[str, str, int]], alias: dict[str, str]) -> dict[str, int]:
    """Graph keys of a turn's mentions: aliased, with their head nouns, summed counts."""
    bucket: dict[str, int] = {}
    for entity, _, c in mentions:
        for key in with_heads(alias.get(entity, entity)):
            key = alias.get(key, key)
            bucket[key] = bucket.get(key, 0) + c
    return bucket


def align_entities(graph: EntityGraph, query_ngrams: list[str], query_vec: np.ndarray | None,
                   index: ScopeIndex) -> dict[int, float]:
    """η(e | q): 1.0 for entities the query names exactly, cosine for close embeddings (the
    ``DENSE_ALIGN_TOP`` closest of at least ``DENSE_ALIGN_MIN_COS``)."""
    entity_names = index.entity_names
    aligned: dict[int, float] = {}
    for gram in query_ngrams:
        key = graph.alias.get(gram, gram)
        j = graph.entity_index.get(key)
        if j is not None and graph.entity_df[j] > 0:
            aligned[j] = 1.0
    if query_vec is not None and len(entity_names):
        # names nobody mentions any more (their last turn was deleted) align with nothing
        cos = top_cosines(index.entity_matrix(), index.entity_int8, query_vec, DENSE_ALIGN_TOP,
                          DENSE_ALIGN_MIN_COS, graph.mentioned_mask(entity_names, index.entity_row))
        # only rows that reach the floor can align: the selection runs over those (a handful),
        # not over every row of the scope
        close = np.flatnonzero(cos >= DENSE_ALIGN_MIN_COS)
        for i in close[top_indices(cos[close], DENSE_ALIGN_TOP)].tolist():
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
    # The adjacency is brought up to date first: rebuilding it may grow the turn capacity, which
    # moves every entity node (entity j is node turn_capacity + j).
    if local:
        parts, degree = graph.parts()
    else:
        folding = graph.folding(damping)
    n_t = graph.n_turns
    # The restart as its nonzero entries (entity nodes follow every turn slot, so the two sets
    # never meet): a vector over every node would cost more than the power steps save.
    nodes = [graph.turn_capacity + j for j in aligned]
    mass = [eta * np.log1p(graph.n_live_turns / max(graph.entity_df[j], 1.0)) for j, eta in aligned.items()]
    entity_mass = float(np.sum(mass)) if mass else 0.0
    seed_total = float(np.sum(list(seed_turns.values()))) if seed_turns else 0.0
    if seed_total > 0:
        scale = SEED_MASS_RATIO * (entity_mass if entity_mass > 0 else 1.0) / seed_total
        nodes.extend(seed_turns)
        mass.extend(weight * scale for weight in seed_turns.values())
    seeds, restart_mass = np.asarray(nodes, dtype=np.int64), np.asarray(mass, dtype=np.float64)
    if restart_mass.sum() <= 0:
        return np.zeros(n_t)
    if local:
        restart = np.zeros(graph.n_nodes)
        restart[seeds] = restart_mass
        pi = push_pagerank(parts, degree, restart, damping=damping, epsilon=PPR_PUSH_EPSILON)
    else:
        pi = folded_pagerank_from(folding, seeds, restart_mass, tol=PPR_TOL, max_iter=PPR_MAX_ITER, n_out=n_t)
    return pi[:n_t]


def query_ngrams(tokens: list[str], max_n: int = MAX_NGRAM) -> list[str]:
    """All 1..max_n-grams of the query's normalized words, for exact entity alignment."""
    grams = []
    for n in range(1, max_n + 1):
        for i in range(len(tokens) - n + 1):
            grams.append(" ".join(tokens[i:i + n]))
    return grams
