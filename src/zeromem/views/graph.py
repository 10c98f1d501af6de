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
from collections import defaultdict
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ..indexes.snapshot import ScopeSnapshot
from .csr import group_by_row
from .ppr import dangling_nodes, personalized_pagerank, push_pagerank, row_normalize

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


@dataclass
class EntityGraph:
    turn_units: np.ndarray  # snapshot indices of the turn nodes, node i ↔ turn_units[i]
    entities: list[str]
    entity_index: dict[str, int]
    transition: sp.csr_matrix
    unit_entities: list[list[int]]  # per turn node: entity ids
    entity_df: np.ndarray  # number of turns mentioning each entity
    entity_turn_ptr: np.ndarray  # entity j is mentioned by turn nodes ...
    entity_turn_nodes: np.ndarray  # ... entity_turn_nodes[entity_turn_ptr[j]:entity_turn_ptr[j + 1]]
    alias: dict[str, str]
    degree: np.ndarray  # weighted degree of every node (turns, then entities), for push PPR
    transposed: sp.csr_matrix | None = None  # Pᵀ, computed once for all queries
    dangling: np.ndarray | None = None  # nodes without edges, computed once for all queries

    def __post_init__(self) -> None:
        if self.transposed is None:
            self.transposed = self.transition.T.tocsr()
        if self.dangling is None:
            self.dangling = dangling_nodes(self.transition)

    @property
    def n_turns(self) -> int:
        return len(self.turn_units)


def build_graph(snap: ScopeSnapshot, alias: dict[str, str] | None = None) -> EntityGraph:
    alias = alias or {}
    turns = snap.units_of("turn")
    node_of_unit = {int(u): i for i, u in enumerate(turns)}
    per_unit: dict[int, dict[str, int]] = defaultdict(dict)
    for unit, entity, count in snap.mentions:
        if unit in node_of_unit:
            bucket = per_unit[node_of_unit[unit]]
            for key in with_heads(alias.get(entity, entity)):
                key = alias.get(key, key)
                bucket[key] = bucket.get(key, 0) + count
    # An episode named after an entity (a wiki page, a project, a person's thread) is about it:
    # its turns link to that entity even where they only say "he" or "it".
    mentioned = {e for bucket in per_unit.values() for e in bucket}
    for node, unit in enumerate(turns):
        title = normalize_title(snap.session[int(unit)])
        title = alias.get(title, title)
        if title in mentioned:
            bucket = per_unit[node]
            bucket[title] = bucket.get(title, 0) + 1
    entities = sorted({e for bucket in per_unit.values() for e in bucket})
    entity_index = {e: i for i, e in enumerate(entities)}
    n_t, n_e = len(turns), len(entities)
    rows, cols, vals = [], [], []
    unit_entities: list[list[int]] = [[] for _ in range(n_t)]
    df = np.zeros(n_e)
    for node in sorted(per_unit):
        for entity, weight in sorted(edge_weights(per_unit[node]).items()):
            j = n_t + entity_index[entity]
            rows += [node, j]
            cols += [j, node]
            vals += [weight, weight]
            unit_entities[node].append(entity_index[entity])
            df[entity_index[entity]] += 1
    for a in range(n_t - 1):
        ua, ub = int(turns[a]), int(turns[a + 1])
        if snap.session[ua] == snap.session[ub]:
            rows += [a, a + 1]
            cols += [a + 1, a]
            vals += [ADJACENCY_WEIGHT, ADJACENCY_WEIGHT]
    size = n_t + n_e
    adjacency = sp.csr_matrix((vals, (rows, cols)), shape=(size, size))
    mention_node = [node for node, ents in enumerate(unit_entities) for _ in ents]
    mention_entity = [j for ents in unit_entities for j in ents]
    entity_turn_ptr, entity_turn_nodes = group_by_row(np.asarray(mention_entity, dtype=np.int64),
                                                      np.asarray(mention_node, dtype=np.int64), n_e)
    return EntityGraph(turns, entities, entity_index, row_normalize(adjacency), unit_entities,
                       df, entity_turn_ptr, entity_turn_nodes, alias,
                       np.asarray(adjacency.sum(axis=1)).ravel())


def align_entities(graph: EntityGraph, query_ngrams: list[str], query_vec: np.ndarray | None,
                   entity_vectors: np.ndarray | None, entity_names: list[str]) -> dict[int, float]:
    """η(e | q): 1.0 for entities the query names exactly, cosine for close embeddings."""
    aligned: dict[int, float] = {}
    for gram in query_ngrams:
        key = graph.alias.get(gram, gram)
        if key in graph.entity_index:
            aligned[graph.entity_index[key]] = 1.0
    if query_vec is not None and entity_vectors is not None and len(entity_names):
        cos = entity_vectors @ query_vec
        top = np.argsort(-cos, kind="stable")[:DENSE_ALIGN_TOP]
        for i in top:
            if cos[i] < DENSE_ALIGN_MIN_COS:
                break
            key = graph.alias.get(entity_names[i], entity_names[i])
            j = graph.entity_index.get(key)
            if j is not None:
                aligned[j] = max(aligned.get(j, 0.0), float(cos[i]))
    return aligned


def graph_scores(graph: EntityGraph, aligned: dict[int, float], seed_turns: dict[int, float],
                 *, damping: float, local: bool = False) -> np.ndarray:
    """PPR mass on every turn node, restarting from aligned entities and seed turns.

    Entity restart mass is weighted by inverse document frequency so that an entity named in
    every turn (a speaker's own name) does not drown the rare, discriminative ones. ``local``
    approximates the mass by forward push, whose cost does not grow with the graph.
    """
    n_t, n_e = graph.n_turns, len(graph.entities)
    restart = np.zeros(n_t + n_e)
    for j, eta in aligned.items():
        restart[n_t + j] = eta * np.log1p(n_t / max(graph.entity_df[j], 1.0))
    entity_mass = restart.sum()
    if seed_turns:
        seeds = np.zeros(n_t + n_e)
        for node, weight in seed_turns.items():
            seeds[node] = weight
        seeds *= SEED_MASS_RATIO * (entity_mass if entity_mass > 0 else 1.0) / seeds.sum()
        restart += seeds
    if restart.sum() <= 0:
        return np.zeros(n_t)
    if local:
        pi = push_pagerank(graph.transition, restart, degree=graph.degree, damping=damping,
                           epsilon=PPR_PUSH_EPSILON)
    else:
        pi = personalized_pagerank(graph.transition, restart, damping=damping, tol=PPR_TOL,
                                   max_iter=PPR_MAX_ITER, transposed=graph.transposed,
                                   dangling=graph.dangling)
    return pi[:n_t]


def query_ngrams(tokens: list[str], max_n: int = MAX_NGRAM) -> list[str]:
    """All 1..max_n-grams of the query's normalized words, for exact entity alignment."""
    grams = []
    for n in range(1, max_n + 1):
        for i in range(len(tokens) - n + 1):
            grams.append(" ".join(tokens[i:i + n]))
    return grams
