"""An immutable in-memory view of one scope's units, loaded from the store for retrieval.

Loaded once per scope version (a write bumps the version, the next search reloads), so the hot
path touches only numpy arrays and prebuilt indexes.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import numpy as np

from typing import TYPE_CHECKING

from ..types import Scope, Trace
from .units import LEVELS

if TYPE_CHECKING:  # the index backends import numeric libraries; load them only to search
    from .dense import DenseIndex
    from .lexical import LexicalIndex


@dataclass
class ScopeSnapshot:
    scope: Scope
    version: int
    level: np.ndarray  # (n,) index into LEVELS
    text: list[str]
    rowids: list[tuple[int, ...]]
    session: list[str]
    position: np.ndarray
    speaker: list[str | None]
    time: list[str | None]
    vectors: np.ndarray  # (n, dim) float32, zero rows where a unit has no vector
    traces: dict[int, Trace]
    mentions: list[tuple[int, str, int]]  # (unit index, entity, count) for turn units
    entity_surface: dict[str, str]
    entity_label: dict[str, str]
    entity_names: list[str]
    entity_vectors: np.ndarray
    tokens: list[list[str]]
    by_level: dict[str, np.ndarray] = field(default_factory=dict)
    lexical: dict[str, "LexicalIndex"] = field(default_factory=dict)
    dense: dict[str, "DenseIndex"] = field(default_factory=dict)
    turn_of_rowid: dict[int, int] = field(default_factory=dict)

    @property
    def size(self) -> int:
        return len(self.text)

    def units_of(self, level: str) -> np.ndarray:
        return self.by_level.get(level, np.zeros(0, dtype=np.int64))


def load_snapshot(store, scope: Scope, tokenize_many, dim: int | None = None) -> ScopeSnapshot:
    """Read every unit, vector and mention of ``scope`` and build the per-level indexes."""
    from .dense import DenseIndex
    from .lexical import LexicalIndex

    version = store.scope_version(scope)
    user, agent = scope.key
    rows = store.read(
        "SELECT u.id, u.level, u.text, u.trace_rowids, u.session, u.position, u.speaker, u.time, v.vec"
        " FROM units u LEFT JOIN unit_vectors v ON v.unit_id = u.id"
        " WHERE u.user_key=? AND u.agent_key=?"
        " ORDER BY u.session, CASE u.level WHEN 'episode' THEN 0 WHEN 'window' THEN 1"
        " WHEN 'turn' THEN 2 ELSE 3 END, u.position", (user, agent))
    level_code = {name: i for i, name in enumerate(LEVELS)}
    index_of_uid: dict[int, int] = {}
    levels, texts, rowids, sessions, positions, speakers, times, blobs = [], [], [], [], [], [], [], []
    for uid, level, text, trace_rowids, session, position, speaker, time, vec in rows:
        index_of_uid[uid] = len(texts)
        levels.append(level_code[level])
        texts.append(text)
        rowids.append(tuple(json.loads(trace_rowids)))
        sessions.append(session)
        positions.append(position)
        speakers.append(speaker)
        times.append(time)
        blobs.append(vec)
    width = next((len(b) // 4 for b in blobs if b is not None), dim or 0)
    vectors = np.zeros((len(texts), width), dtype=np.float32)
    for i, blob in enumerate(blobs):
        if blob is not None:
            vectors[i] = np.frombuffer(blob, dtype=np.float32)
    mentions: list[tuple[int, str, int]] = []
    surfaces: dict[str, str] = {}
    labels: dict[str, str] = {}
    for uid, entity, surface, count, label in store.read(
            "SELECT m.unit_id, m.entity, m.surface, m.count, m.label FROM unit_mentions m"
            " JOIN units u ON u.id = m.unit_id WHERE u.user_key=? AND u.agent_key=?"
            " ORDER BY m.unit_id, m.entity", (user, agent)):
        mentions.append((index_of_uid[uid], entity, count))
        surfaces.setdefault(entity, surface)
        labels.setdefault(entity, label)
    entity_rows = store.read(
        "SELECT entity, vec FROM entity_vectors WHERE user_key=? AND agent_key=? ORDER BY entity",
        (user, agent))
    entity_names = [r[0] for r in entity_rows]
    entity_vectors = (np.stack([np.frombuffer(r[1], dtype=np.float32) for r in entity_rows])
                      if entity_rows else np.zeros((0, width), dtype=np.float32))
    traces = {int(t.id[1:]): t for t in store.list(scope)}
    snap = ScopeSnapshot(
        scope=scope, version=version, level=np.asarray(levels, dtype=np.int8), text=texts,
        rowids=rowids, session=sessions, position=np.asarray(positions, dtype=np.int64),
        speaker=speakers, time=times, vectors=vectors, traces=traces, mentions=mentions,
        entity_surface=surfaces, entity_label=labels, entity_names=entity_names, entity_vectors=entity_vectors,
        tokens=_unit_tokens(levels, texts, rowids, tokenize_many))
    for code, name in enumerate(LEVELS):
        idx = np.flatnonzero(snap.level == code)
        snap.by_level[name] = idx
        if len(idx):
            snap.lexical[name] = LexicalIndex([snap.tokens[i] for i in idx])
            snap.dense[name] = DenseIndex(vectors[idx])
    for i in snap.units_of("turn"):
        snap.turn_of_rowid[rowids[i][0]] = int(i)
    return snap


def _unit_tokens(level_codes: list[int], texts: list[str], rowids: list[tuple[int, ...]],
                 tokenize_many) -> list[list[str]]:
    """BM25 tokens of every unit, tokenizing only turns and spans.

    A window or an episode is its turns' texts joined by newlines (``units._group``), and the
    tokenizer never makes one token across a newline, so its tokens are its turns' tokens end
    to end. That skips ~60% of the text (loading a 100k-turn scope: tens of seconds). A unit
    whose text is not that join is tokenized itself.
    """
    grouped = {LEVELS.index("window"), LEVELS.index("episode")}
    turn_code = LEVELS.index("turn")
    tokens: list[list[str]] = [[] for _ in texts]

    def tokenize_units(units: list[int]) -> None:
        for i, unit_tokens in zip(units, tokenize_many([texts[i] for i in units])):
            tokens[i] = unit_tokens

    tokenize_units([i for i, code in enumerate(level_codes) if code not in grouped])
    turn_of_rowid = {rowids[i][0]: i for i, code in enumerate(level_codes) if code == turn_code}
    leftover = []
    for i, code in enumerate(level_codes):
        if code not in grouped:
            continue
        parts = [turn_of_rowid.get(rowid) for rowid in rowids[i]]
        if None not in parts and "\n".join(texts[p] for p in parts) == texts[i]:
            tokens[i] = [token for p in parts for token in tokens[p]]
        else:
            leftover.append(i)
    tokenize_units(leftover)
    return tokens
