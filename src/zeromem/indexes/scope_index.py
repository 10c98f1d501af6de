"""The in-memory index of one scope, kept up to date one re-derived session at a time.

Every unit lives in a *slot* of its level (turn, span, window, episode). A write re-derives
the sessions it touched (indexer.py) and the scope version moves on; ``apply`` then takes those
sessions' stored units and changes only their slots:

- a turn keeps its slot for the life of its trace (an update rewrites the slot in place), new
  traces get new slots in trace-id order, a deleted trace's slot is cleared and stays empty —
  so turn slots are always in trace-id order, with or without gaps, and ties between equal
  scores (broken by slot) break the same way as in an index built from scratch;
- a span, window or episode whose text and traces did not change keeps its slot; the others
  are cleared and their slots reused for the session's new units (slot order of these levels
  carries no meaning: the engine lifts them onto turns by maximum);
- BM25 postings, vectors and per-slot data change for exactly those slots (``LexicalIndex``
  recomputes idf and avgdl from counts at query time, so nothing else goes stale).

``Change`` lists the slots that changed, so the views above (graph, hierarchy, per-turn data)
update the same slots. Cost of ``apply``: O(units of the changed sessions).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from ..store.base import TraceRows
from ..types import Scope, Trace
from .dense import DenseIndex
from .growable import Growable
from .int8_rows import Int8Rows
from .lexical import LexicalIndex, Vocabulary
from .ragged import Ragged
from .stored import TURN, SessionUnits, StoredUnit
from .titles import TurnTitles
from .units import LEVELS

GROUPED = ("window", "episode")  # their text is their turns' texts joined by newlines


@dataclass
class Change:
    """Which slots one ``apply`` changed."""

    turns_set: list[int] = field(default_factory=list)  # new or rewritten turn slots
    turns_killed: list[int] = field(default_factory=list)
    units_set: dict[str, list[int]] = field(default_factory=dict)  # span / window / episode
    units_killed: dict[str, list[int]] = field(default_factory=dict)
    sessions: set[int] = field(default_factory=set)
    # (entity, label, count) mentions that changed turns had before this change
    old_mentions: dict[int, list[tuple[str, str, int]]] = field(default_factory=dict)


class TraceSlots:
    """The trace of each turn slot: a ``Trace``, None, or (for an index loaded from a snapshot)
    a rowid into the ``TraceRows`` read with it, made into a Trace the first time it is asked
    for — a search needs the traces of its evidence, not of every turn."""

    def __init__(self, size: int = 0, rows: TraceRows | None = None) -> None:
        self._items: list[Trace | int | None] = [None] * size
        self._rows = rows

    def __len__(self) -> int:
        return len(self._items)

    def append(self, trace: Trace | None) -> None:
        self._items.append(trace)

    def point(self, slot: int, rowid: int) -> None:
        """The slot's trace is row ``rowid`` of the loaded TraceRows (if it is there)."""
        self._items[slot] = rowid if self._rows is not None and rowid in self._rows else None

    def loaded_fields(self) -> tuple[list[int], list[int], list[tuple]]:
        """For an index loaded from a snapshot: (slots, rowids, fields) of every slot whose trace
        is a row of the loaded ``TraceRows``, in slot order — one pass, not a call per turn."""
        if self._rows is None:
            return [], [], []
        pointed = [(slot, item) for slot, item in enumerate(self._items) if isinstance(item, int)]
        rowids = [rowid for _, rowid in pointed]
        return [slot for slot, _ in pointed], rowids, self._rows.fields_many(rowids)

    def __getitem__(self, slot: int) -> Trace | None:
        item = self._items[slot]
        if isinstance(item, int):
            assert self._rows is not None
            item = self._items[slot] = self._rows.trace(item)
        return item

    def __setitem__(self, slot: int, trace: Trace | None) -> None:
        self._items[slot] = trace


class Level:
    """The slots of one level: liveness, session, covered traces, BM25 document, vector.

    Everything per slot is a flat array or a ``Ragged`` list, not a Python object, so a scope
    of 100k traces (≈400k units) stays small in memory and loads from a snapshot in one read.
    """

    def __init__(self, name: str, vocabulary: Vocabulary) -> None:
        self.name = name
        self.alive = Growable(bool, fill=False)
        self.session = Growable(np.int32, fill=-1)
        self.position = Growable(np.int32, fill=-1)
        self.text_hash = Growable("S12", fill=b"")  # the 12-byte digest behind the hex text_hash
        self.unit_id = Growable(np.int64, fill=-1)  # the store's row id of the slot's unit (-1: none known)
        self.rowids = Ragged(np.int64)
        self.tokens = Ragged(np.int32)
        self.lexical = LexicalIndex(vocabulary=vocabulary, remember_terms=False)  # tokens are here
        self.dense = DenseIndex(quantized=True)  # int8 rows: int8_store.py
        self.free: list[int] = []
        # Slots loaded from a persisted index are not reused: their arrays are read-only views
        # of the snapshot's bytes that a rewrite would copy (the vectors no longer are: int8
        # levels copy theirs at load).
        self.reuse_floor = 0
        self._live: tuple[int, np.ndarray] | None = None
        self.changes = 0

    @property
    def size(self) -> int:
        return self.alive.size

    def live(self) -> np.ndarray:
        """Indices of the live slots (cached until the next change)."""
        if self._live is None or self._live[0] != self.changes:
            self._live = (self.changes, np.flatnonzero(self.alive.view()))
        return self._live[1]

    def key(self, slot: int) -> tuple | None:
        """What identifies a unit across re-derivations: position, text hash, traces."""
        if not self.alive[slot]:
            return None
        return (int(self.position[slot]), self.text_hash[slot].ljust(12, b"\0").hex(),
                tuple(self.rowids[slot].tolist()))

    def new_slot(self, reuse: bool) -> int:
        if reuse and self.free:
            return self.free.pop()
        slot = self.alive.append(False)
        self.session.append(-1)
        self.position.append(-1)
        self.text_hash.append(b"")
        self.unit_id.append(-1)
        self.rowids.reserve(slot + 1)
        self.tokens.reserve(slot + 1)
        self.lexical.reserve(slot + 1)
        return slot

    def fill(self, slot: int, session: int, key: tuple, rowids: tuple[int, ...],
             tokens: np.ndarray, vector: np.ndarray | None, uid: int = -1) -> None:
        self.alive[slot] = True
        self.unit_id[slot] = uid
        self.session[slot] = session
        self.position[slot] = key[0]
        self.text_hash[slot] = bytes.fromhex(key[1])
        self.rowids[slot] = rowids
        self.lexical.remove_document(slot, self.tokens[slot])  # a turn rewritten in place
        self.tokens[slot] = tokens
        self.lexical.set_document(slot, tokens)
        self.dense.set_rows(np.asarray([slot]), None if vector is None else vector[None, :])
        self.changes += 1

    def state(self) -> dict[str, np.ndarray]:
        rowids_ptr, rowids = self.rowids.flat()
        tokens_ptr, tokens = self.tokens.flat()
        out = {"alive": self.alive.view(), "session": self.session.view(), "position": self.position.view(),
               "text_hash": self.text_hash.view(), "unit_id": self.unit_id.view(),
               "rowids_ptr": rowids_ptr, "rowids": rowids,
               "tokens_ptr": tokens_ptr, "tokens": tokens, "free": np.asarray(self.free, dtype=np.int64)}
        out.update({f"lex.{k}": v for k, v in self.lexical.state().items()})
        out.update({f"dense.{k}": v for k, v in self.dense.state().items()})
        return out

    @classmethod
    def from_state(cls, name: str, vocabulary: Vocabulary, state: dict[str, np.ndarray]) -> Level:
        level = cls(name, vocabulary)
        level.alive = Growable.wrap(state["alive"], fill=False)
        level.session = Growable.wrap(state["session"], fill=-1)
        level.position = Growable.wrap(state["position"], fill=-1)
        level.text_hash = Growable.wrap(state["text_hash"], fill=b"")
        # (A snapshot written before unit ids were kept has none: that scope's sessions are read
        # by key until they change.)
        level.unit_id = Growable.wrap(state["unit_id"] if "unit_id" in state
                                      else np.full(level.alive.size, -1, dtype=np.int64), fill=-1)
        level.rowids = Ragged(np.int64, state["rowids_ptr"], state["rowids"])
        level.tokens = Ragged(np.int32, state["tokens_ptr"], state["tokens"])
        level.rowids.reserve(level.alive.size)
        level.tokens.reserve(level.alive.size)
        level.reuse_floor = level.alive.size
        level.free = []
        level.lexical = LexicalIndex.from_state(
            {k[4:]: v for k, v in state.items() if k.startswith("lex.")}, vocabulary)
        level.dense = DenseIndex.from_state({k[6:]: v for k, v in state.items() if k.startswith("dense.")},
                                            quantized=True)
        return level

    def kill(self, slot: int, reuse: bool) -> None:
        self.alive[slot] = False
        self.unit_id[slot] = -1
        self.session[slot] = -1
        self.position[slot] = -1
        self.text_hash[slot] = b""
        self.lexical.remove_document(slot, self.tokens[slot])
        self.rowids[slot] = ()
        self.tokens[slot] = ()
        self.dense.clear(np.asarray([slot]))
        if reuse and slot >= self.reuse_floor:
            self.free.append(slot)
        self.changes += 1


class ScopeIndex:
    """Units, BM25 postings and vectors of one scope, per level, changed session by session."""

    def __init__(self, scope: Scope, tokenize_many: Callable[[Sequence[str]], list[list[str]]]) -> None:
        self.scope = scope
        self.version = 0
        self.tokenize_many = tokenize_many
        self.vocabulary = Vocabulary()
        self.levels = {name: Level(name, self.vocabulary) for name in LEVELS}
        self.sessions: list[str] = []
        self.session_id: dict[str, int] = {}
        self.session_turns: list[list[int]] = []  # per session: turn slots in conversation order
        self.episode_of_session = Growable(np.int64, fill=-1)
        self.slot_of_rowid: dict[int, int] = {}
        self.traces = TraceSlots()  # per turn slot
        self.titles = TurnTitles()  # per turn slot: its trace's title (Trace.title)
        # Entity mentions per turn slot: (entity, label) ids into ``names``, and counts.
        self.names = Vocabulary()
        self.mention_entity = Ragged(np.int32)
        self.mention_label = Ragged(np.int32)
        self.mention_count = Ragged(np.int32)
        self.entity_row: dict[str, int] = {}
        self.entity_names: list[str] = []
        self.entity_vectors = Growable(np.float32, width=1, capacity=1)
        self._entity_dim = 0
        self.entity_int8 = Int8Rows()  # the entity vectors scanned as int8 (int8_rows.py)

    # -- reads --------------------------------------------------------------------------
    @property
    def turns(self) -> Level:
        return self.levels[TURN]

    @property
    def n_slots(self) -> int:
        return self.turns.size

    @property
    def n_live_turns(self) -> int:
        return len(self.turns.live())

    def trace_of_slot(self, slot: int) -> Trace:
        trace = self.traces[slot]
        assert trace is not None, f"turn slot {slot} is empty"
        return trace

    def mentions_of(self, slot: int) -> list[tuple[str, str, int]]:
        """(entity, label, count) of every entity mentioned in a turn slot."""
        terms = self.names.terms
        return [(terms[e], terms[lab], c) for e, lab, c in zip(
            self.mention_entity[slot].tolist(), self.mention_label[slot].tolist(),
            self.mention_count[slot].tolist())]

    def _set_mentions(self, slot: int, mentions: Sequence[tuple[str, str, str, int]]) -> None:
        self.mention_entity[slot] = self.names.encode([m[0] for m in mentions])
        self.mention_label[slot] = self.names.encode([m[1] for m in mentions])
        self.mention_count[slot] = [m[3] for m in mentions]

    def entity_matrix(self) -> np.ndarray:
        return self.entity_vectors.view() if self._entity_dim else np.zeros((0, 0), dtype=np.float32)

    # -- persistence --------------------------------------------------------------------
    def state(self) -> tuple[dict[str, np.ndarray], dict]:
        """(arrays, JSON-able facts) that ``from_state`` turns back into this index; the
        traces themselves are not part of it (they are read from the store)."""
        arrays: dict[str, np.ndarray] = {}
        for name, level in self.levels.items():
            arrays.update({f"{name}.{k}": v for k, v in level.state().items()})
        turns_ptr, turns = Ragged.from_lists(self.session_turns).flat()
        arrays.update({"session_turns_ptr": turns_ptr, "session_turns": turns,
                       "episode_of_session": self.episode_of_session.view(),
                       "entity_vectors": self.entity_matrix()})
        for name in ("mention_entity", "mention_label", "mention_count"):
            ptr, values = getattr(self, name).flat()
            arrays[f"{name}_ptr"], arrays[name] = ptr, values
        facts = {"version": self.version, "sessions": self.sessions,
                 "terms": self.vocabulary.terms, "names": self.names.terms,
                 "entity_names": self.entity_names,
                 "turn_titles": self.titles.state()}
        return arrays, facts

    @classmethod
    def from_state(cls, scope: Scope, tokenize_many: Callable[[Sequence[str]], list[list[str]]],
                   arrays: dict[str, np.ndarray], facts: dict, traces: TraceRows) -> ScopeIndex:
        index = cls(scope, tokenize_many)
        index.version = int(facts["version"])
        index.vocabulary = Vocabulary(facts["terms"])
        index.names = Vocabulary(facts["names"])
        for name in LEVELS:
            index.levels[name] = Level.from_state(
                name, index.vocabulary, {k[len(name) + 1:]: v for k, v in arrays.items() if k.startswith(name + ".")})
        index.sessions = list(facts["sessions"])
        index.session_id = {s: i for i, s in enumerate(index.sessions)}
        ptr, turns = arrays["session_turns_ptr"], arrays["session_turns"].tolist()
        index.session_turns = [turns[ptr[i]:ptr[i + 1]] for i in range(len(index.sessions))]
        index.episode_of_session = Growable.wrap(arrays["episode_of_session"], fill=-1)
        for name in ("mention_entity", "mention_label", "mention_count"):
            ragged = Ragged(np.int32, arrays[f"{name}_ptr"], arrays[name])
            ragged.reserve(index.turns.size)
            setattr(index, name, ragged)
        vectors = arrays["entity_vectors"]
        index.entity_names = list(facts["entity_names"])
        index.entity_row = {name: i for i, name in enumerate(index.entity_names)}
        if vectors.ndim == 2 and vectors.shape[1]:
            index._entity_dim = vectors.shape[1]
            index.entity_vectors = Growable.wrap(np.ascontiguousarray(vectors, dtype=np.float32))
            index.entity_int8.sync(index.entity_matrix())  # built before the cache sizes the scope
        turns_level = index.turns
        alive = turns_level.alive.view()
        rowids_ptr, rowids = turns_level.rowids.flat()
        firsts = np.full(turns_level.size, -1, dtype=np.int64)
        has = np.diff(rowids_ptr)[:turns_level.size] > 0
        firsts[:len(has)][has] = rowids[rowids_ptr[:-1][has]]
        index.traces = TraceSlots(turns_level.size, traces)
        index.slot_of_rowid = {}
        for slot in np.flatnonzero(alive).tolist():
            rowid = int(firsts[slot])
            index.slot_of_rowid[rowid] = slot
            index.traces.point(slot, rowid)
        index.titles = TurnTitles.from_state(facts.get("turn_titles", []))
        return index

    # -- writes -------------------------------------------------------------------------
    def add_entity_vectors(self, vectors: dict[str, np.ndarray]) -> list[str]:
        """Remember the vectors of entities not seen before; returns their names."""
        added = []
        for name in sorted(vectors):
            if name in self.entity_row:
                continue
            vec = np.asarray(vectors[name], dtype=np.float32).reshape(-1)
            if not self._entity_dim:
                self._entity_dim = len(vec)
                self.entity_vectors = Growable(np.float32, width=len(vec))
            if len(vec) != self._entity_dim:
                continue  # a mixed store is refused by the embedder fingerprint check
            self.entity_row[name] = self.entity_vectors.append(vec)
            self.entity_names.append(name)
            added.append(name)
        self.entity_int8.sync(self.entity_matrix())
        return added

    def apply(self, batch: Sequence[SessionUnits]) -> Change:
        """Replace the units of the given sessions with their stored units."""
        change = Change(units_set={lvl: [] for lvl in LEVELS if lvl != TURN},
                        units_killed={lvl: [] for lvl in LEVELS if lvl != TURN})
        turns = self.turns
        # New traces get slots in trace-id order across the whole batch.
        new_rowids = sorted({u.rowids[0] for s in batch for u in s.units
                             if u.level == TURN and u.rowids[0] not in self.slot_of_rowid})
        for rowid in new_rowids:
            slot = turns.new_slot(reuse=False)
            self.slot_of_rowid[rowid] = slot
            self.traces.append(None)
        for data in sorted(batch, key=lambda s: s.session):
            self._apply_session(data, change)
        return change

    def _apply_session(self, data: SessionUnits, change: Change) -> None:
        sid = self.session_id.get(data.session)
        if sid is None:
            sid = self.session_id[data.session] = len(self.sessions)
            self.sessions.append(data.session)
            self.session_turns.append([])
            self.episode_of_session.append(-1)
        change.sessions.add(sid)
        turns = self.turns
        traces = data.traces
        ids = data.unit_ids
        turn_units = [u for u in data.units if u.level == TURN]
        keep = {u.rowids[0] for u in turn_units}
        for slot in self.session_turns[sid]:
            rowid = int(turns.rowids[slot][0])
            # (Read by ids, a turn none of the read units covers stays if its unit is still there.)
            if rowid not in keep and turns.alive[slot] and (ids is None or int(turns.unit_id[slot]) not in ids):
                change.old_mentions[slot] = self.mentions_of(slot)
                turns.kill(slot, reuse=False)
                self.traces[slot] = None
                self.titles.set(slot, None)
                self._set_mentions(slot, ())
                del self.slot_of_rowid[rowid]
                change.turns_killed.append(slot)
        ordered: list[int] = []
        retokenize: list[tuple[int, StoredUnit]] = []
        for unit in turn_units:
            slot = self.slot_of_rowid[unit.rowids[0]]
            ordered.append(slot)
            if unit.text is None:
                continue  # held, and so is its trace (held.HeldUnits): nothing of it changed
            key = (unit.position, unit.text_hash, unit.rowids)
            # A trace left out of the read is one the index holds as it is (held.HeldUnits).
            trace = traces[unit.rowids[0]] if unit.rowids[0] in traces else self.traces[slot]
            # (A loaded index reads its traces as they are now, so a title changed since the
            # snapshot shows as a title the slot does not have yet.)
            if (turns.alive[slot] and turns.key(slot) == key and self.traces[slot] == trace
                    and self.titles.of(slot) == (trace.title if trace is not None else None)):
                turns.unit_id[slot] = unit.uid  # the same unit (its row may be a new one)
                continue
            change.old_mentions[slot] = self.mentions_of(slot) if turns.alive[slot] else []
            self.traces[slot] = trace
            self.titles.set(slot, trace.title if trace is not None else None)
            self._set_mentions(slot, unit.mentions)
            retokenize.append((slot, unit))
        for (slot, unit), tokens in zip(retokenize, self._tokens([_text(u) for _, u in retokenize])):
            turns.fill(slot, sid, (unit.position, unit.text_hash, unit.rowids), unit.rowids, tokens,
                       unit.vector, unit.uid)
            change.turns_set.append(slot)
        if ids is not None:  # the turns not read keep their slots: all of them in position order
            listed = set(ordered)
            ordered += [slot for slot in self.session_turns[sid] if slot not in listed and turns.alive[slot]]
            ordered.sort(key=lambda slot: int(turns.position[slot]))
        self.session_turns[sid] = ordered
        if not ordered:
            self.episode_of_session[sid] = -1
        for level in LEVELS:
            if level != TURN:
                self._apply_level(self.levels[level], sid, [u for u in data.units if u.level == level],
                                  change, ids)

    def _apply_level(self, level: Level, sid: int, units: list[StoredUnit], change: Change,
                     ids: set[int] | None) -> None:
        wanted = {(u.position, u.text_hash, u.rowids): u for u in units}
        held = {key for key, unit in wanted.items() if unit.text is None}
        session_slots = np.flatnonzero(level.session.view() == sid)
        fresh: list[tuple[tuple, StoredUnit]]
        existing: dict[tuple | None, int]
        if ids is not None:
            # Read by ids: only the slots whose unit is gone are looked at (a read unit equal to
            # one of them keeps it, as a read by key would); the others stay as they are.
            uids = level.unit_id.view()[session_slots].tolist()
            existing = {level.key(slot): slot for slot, uid in zip(session_slots.tolist(), uids) if uid not in ids}
        elif held and len(held) == len(session_slots) and (level.name != "episode" or len(held) == len(wanted)):
            # Every unit the index has in this session is held (so still wanted): none to clear,
            # and no key of the session's slots to compute (a write changes a few units).
            existing = {}
        else:
            existing = {level.key(slot): slot for slot in session_slots.tolist()}
        for key, slot in existing.items():
            if key not in wanted:
                level.kill(slot, reuse=True)
                change.units_killed[level.name].append(slot)
            else:
                level.unit_id[slot] = wanted[key].uid
        fresh = [(key, unit) for key, unit in wanted.items() if key not in existing and key not in held]
        if level.name in GROUPED:
            tokens = [self._grouped_tokens(unit) for _, unit in fresh]
        else:
            tokens = self._tokens([_text(unit) for _, unit in fresh])
        for (key, unit), unit_tokens in zip(fresh, tokens):
            slot = level.new_slot(reuse=True)
            level.fill(slot, sid, key, unit.rowids, unit_tokens, unit.vector, unit.uid)
            change.units_set[level.name].append(slot)
        if level.name == "episode" and ids is not None:
            live_slots = np.flatnonzero(level.session.view() == sid)
            self.episode_of_session[sid] = int(live_slots[0]) if len(live_slots) else -1
        elif level.name == "episode" and (existing or fresh):  # (else: the held episode stays)
            live = [slot for key, slot in existing.items() if key in wanted]
            live += change.units_set["episode"][-len(fresh):] if fresh else []
            self.episode_of_session[sid] = live[0] if live else -1

    def _tokens(self, texts: list[str]) -> list[np.ndarray]:
        if not texts:
            return []
        return [self.vocabulary.encode(tokens) for tokens in self.tokenize_many(texts)]

    def _grouped_tokens(self, unit: StoredUnit) -> np.ndarray:
        """A window's or episode's tokens are its turns' tokens end to end (no token crosses
        the newline that joins them, see units.group); others are tokenized themselves."""
        turns = self.turns
        parts = []
        for rowid in unit.rowids:
            slot = self.slot_of_rowid.get(rowid)
            if slot is None or not turns.alive[slot]:
                return self._tokens([_text(unit)])[0]
            parts.append(turns.tokens[slot])
        return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int32)


def _text(unit: StoredUnit) -> str:
    """The text of a unit ``apply`` (re)fills: never a held one, which keeps its slot."""
    if unit.text is None:
        raise RuntimeError(f"a {unit.level} unit the index was said to hold is missing from it")
    return unit.text

