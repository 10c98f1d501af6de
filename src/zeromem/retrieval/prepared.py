"""Everything the engine precomputes for one scope snapshot: graph, hierarchy, time, state."""

from __future__ import annotations

import datetime as dt
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..encoders.entities import strip_qualifier
from ..encoders.timexpr import TimeSpan, parse_anchor, resolve_relative
from ..indexes.growable import Growable
from ..indexes.ragged import Ragged
from ..indexes.scope_index import Change, ScopeIndex
from ..lifecycle.supersede import StateAssertion, restrict, state_assertions, supersession
from ..store.base import TraceRows
from ..store.dates import utc_key
from ..types import Scope, Trace
from ..views.graph import EntityGraph
from ..views.hierarchy import Hierarchy
from .calibrate import subject_compat
from .speaker_names import NEIGHBOUR_REACH, SpeakerNames, addressed_names, learn_names

MAX_COUNTED_WORDS = 64  # median_turn_words counts longer turns as this many
# A memory of a few turns is too small for some views built to search a long history: its few
# entities are each named in most turns (PPR mass follows degree, not the query) and idf from a
# handful of turns is noise (a word in 5 of 8 turns, often the question's subject, counts for
# nearly nothing). Below SMALL_SCOPE_TURNS live turns (about one conversation session) the scope
# is ``PreparedScope.small``: the engine gives the graph view no weight and lets the dense cosine
# lead each level's score, and the query embedding keeps the speakers' names (query_reading.py).
SMALL_SCOPE_TURNS = 24
# A memory whose median turn has at most this many words is ``PreparedScope.short_messages``
# (chat in bursts: "lol", "same here", "Going skiing tmrw"): the query embedding leaves the
# speakers' names out (query_reading.embedded) and, past a small scope, selection adds no
# coverage bonus (engine._chat_of_short_messages).
SHORT_MESSAGE_WORDS = 15

DISAMBIGUATED_TITLE = 0.5
NOT_NAME_LABELS = frozenset({"DATE", "TIME", "CARDINAL", "ORDINAL", "PERCENT", "MONEY", "QUANTITY"})


class PreparedScope:
    """Everything the engine reads for one scope, updated slot by slot (``update``).

    Turn nodes are the turn slots of the ``ScopeIndex`` (an empty slot — a deleted trace —
    is a node with no edges that no search returns; ``alive`` says which). Per-turn data (text,
    dates, state assertions, terms) is computed once per changed turn; scope-wide summaries
    (speakers, term document frequencies, supersession, titles) are kept by counts or
    recomputed from those per-turn pieces, never from the traces again.
    """

    def __init__(self, index: ScopeIndex) -> None:
        self.index = index
        self.graph = EntityGraph()
        self.hier = Hierarchy(index)
        # Per turn slot, grown in place as slots are added (views below).
        self._rowid = Growable(np.int64, fill=-1)
        self._question_like = Growable(bool, fill=False)
        self._by_user = Growable(bool, fill=False)  # role "user": the person the agent serves
        self._session_name = Growable(object, fill=None)  # each turn's session (for filters)
        # UTC key (store.dates.utc_key) of the event, else session, else recorded time: what
        # as_of compares against, in instant order whatever offsets the traces were given.
        self._time = Growable(object, fill="")
        self.turn_text: list[str] = []
        self.turn_lower: list[str] = []  # text plus attachment captions, lower-cased once
        self.turn_speaker: list[str | None] = []
        self.turn_dates: list[list[tuple[dt.date, dt.date]]] = []  # session date and dates mentioned
        self.turn_terms = _TurnTerms(index)  # distinct index tokens per turn (query coverage)
        self.annotations: dict[int, list[TimeSpan]] = {}  # resolved relative expressions per turn
        self.term_df = _TermCounts(index)  # live turns containing each token
        self._subject_compat: dict[str | None, Growable] = {}
        self._speaker_counts: Counter[str | None] = Counter()
        self._assertions: dict[int, list[StateAssertion]] = {}
        self._order: dict[int, tuple[Any, int, int]] = {}
        self._superseded: dict[int, int] | None = {}
        self._titles: _Titles | None = None
        self._titles_by_key: dict[str, tuple[int, np.ndarray, np.ndarray, str]] = {}  # see _title_data
        self._titles_of: object = None  # the index's TurnTitles those entries were read from
        self._label_masks: dict[frozenset[str], tuple[int, np.ndarray]] = {}
        self._vocatives: dict[int, tuple[str, ...]] = {}  # turn → names it addresses someone by
        self._speaker_names: tuple[int, SpeakerNames] | None = None
        self._date_range: tuple[int, tuple[dt.date, dt.date] | None] | None = None
        self._turn_words = np.zeros(MAX_COUNTED_WORDS + 1, dtype=np.int64)  # live turns by word count
        self._median_words: tuple[int, int] | None = None  # (version, median_turn_words)
        self.version = 0
        self.changed_since_save = 0  # turns changed since this index was last persisted

    # -- reads --------------------------------------------------------------------------
    @property
    def n_turns(self) -> int:
        return self.index.n_slots

    @property
    def alive(self) -> np.ndarray:
        return self.index.turns.alive.view()

    @property
    def n_live(self) -> int:
        return self.index.n_live_turns

    @property
    def small(self) -> bool:
        """Whether the scope has fewer than ``SMALL_SCOPE_TURNS`` live turns: too few for the
        graph view (and, with one speaker, for windows; and to leave the speakers' names out of
        the query embedding)."""
        return self.n_live < SMALL_SCOPE_TURNS

    @property
    def short_messages(self) -> bool:
        """Whether the median live turn has at most ``SHORT_MESSAGE_WORDS`` words (text with
        no spaces, as Chinese is written, counts one word a turn)."""
        return self.median_turn_words <= SHORT_MESSAGE_WORDS

    @property
    def turn_rowid(self) -> np.ndarray:
        return self._rowid.view()

    @property
    def question_like(self) -> np.ndarray:
        return self._question_like.view()

    @property
    def by_user(self) -> np.ndarray:
        """Turns written in the role "user" (not the assistant, a tool or the system)."""
        return self._by_user.view()

    @property
    def turn_session_name(self) -> np.ndarray:
        return self._session_name.view()

    @property
    def turn_time(self) -> np.ndarray:
        return self._time.view()

    def subject_compat(self, subject: str | None) -> np.ndarray:
        """``calibrate.subject_compat`` of every turn for ``subject``: computed once per subject,
        then kept up to date for the turns each update changes."""
        cached = self._subject_compat.get(subject)
        if cached is None:
            cached = self._subject_compat[subject] = Growable.wrap(
                subject_compat(self.turn_speaker, self.turn_lower, subject), fill=1.0)
        return cached.view()

    @property
    def speakers(self) -> list[str]:
        return sorted(s for s, c in self._speaker_counts.items() if c > 0 and s)

    @property
    def speaker_names(self) -> SpeakerNames:
        """The speakers and the other names the conversation calls them by (speaker_names.py),
        learned at most once per version (and only when a query needs them) from the few turns
        that address someone by name."""
        if self._speaker_names is None or self._speaker_names[0] != self.version:
            speakers = self.speakers
            vocatives = dict(self._vocatives)  # learned on first need, from this version's turns
            self._speaker_names = (self.version, SpeakerNames(
                speakers, lambda: learn_names(vocatives, self._addressee, self._writers, speakers),
                self._writers))
        return self._speaker_names[1]

    @property
    def median_turn_words(self) -> int:
        """The median number of words of a live turn (counts above ``MAX_COUNTED_WORDS`` count
        as that many); 0 for an empty memory."""
        if self._median_words is None or self._median_words[0] != self.version:
            total = int(self._turn_words.sum())
            median = int(np.searchsorted(np.cumsum(self._turn_words), (total + 1) // 2)) if total else 0
            self._median_words = (self.version, median)
        return self._median_words[1]

    @property
    def date_range(self) -> tuple[dt.date, dt.date] | None:
        """The first and last day a live turn is dated (its event or session date), once per
        version; None when no turn is dated."""
        if self._date_range is None or self._date_range[0] != self.version:
            anchors = [ranges[0][0] for ranges in self.turn_dates if ranges]
            self._date_range = (self.version, (min(anchors), max(anchors)) if anchors else None)
        return self._date_range[1]

    def _writers(self, word: str) -> Counter[str | None]:
        """How many live turns of each speaker contain ``word`` (as the index tokenizes it)."""
        tokens = self.index.tokenize_many([word])[0]
        if not tokens:
            return Counter()
        lexical = self.index.turns.lexical
        slots = lexical.documents(tokens[0]).tolist()
        return Counter(self.turn_speaker[int(slot)] for slot in slots
                       if int(slot) < len(self.turn_speaker) and self.turn_rowid[int(slot)] >= 0)

    def _addressee(self, turn: int) -> str | None:
        """Whom a turn talks to: the speaker of the nearest earlier turn of its session by
        someone else, else of the nearest later one."""
        own = self.turn_speaker[turn]
        for links in (self.hier.prev_turn.view(), self.hier.next_turn.view()):
            other = int(links[turn]) if turn < len(links) else -1
            for _ in range(NEIGHBOUR_REACH):
                if other < 0:
                    break
                if self.turn_speaker[other] and self.turn_speaker[other] != own:
                    return self.turn_speaker[other]
                other = int(links[other])
        return None

    @property
    def superseded_by(self) -> dict[int, int]:
        if self._superseded is None:
            self._superseded = supersession(self._assertions, self._order)
        return self._superseded

    def superseded_within(self, visible: np.ndarray) -> dict[int, int]:
        """Supersession among the ``visible`` turns only: the state as of a time."""
        return supersession(restrict(self._assertions, lambda node: bool(visible[node])), self._order)

    @property
    def titles(self) -> dict[str, np.ndarray]:
        """Normalized title → the live turn nodes whose trace carries it (``Trace.title``)."""
        return self._title_data().nodes

    @property
    def title_strength(self) -> dict[str, np.ndarray]:
        """Per title, how fully a query naming it names each of its turns (aligned with ``titles``)."""
        return self._title_data().strength

    @property
    def title_written(self) -> dict[str, str]:
        """Per title, how it is written (its first trace's title, qualifier dropped)."""
        return self._title_data().written

    @property
    def title_words(self) -> int:
        """The most words any title has (a query's n-grams up to this length can name one)."""
        return self._title_data().longest

    @property
    def titled_turns(self) -> dict[int, list[int]]:
        """Graph entity id → turn nodes titled after that entity."""
        return self._title_data().by_entity

    def named_entities(self, node: int) -> list[int]:
        """Graph ids of the entities a turn mentions as names, not as a date, time, number or
        quantity: "September" or "2" in a text does not point at the page "September (2007 film)"
        or "2 (Dover album)". (Excluding common noun phrases too changed nothing measured.)"""
        ids = self.graph.entity_index
        out = []
        for entity, label, _ in self.index.mentions_of(node):
            j = ids.get(self.graph.alias.get(entity, entity))
            if j is not None and label not in NOT_NAME_LABELS:
                out.append(j)
        return out

    def turns_with_labels(self, labels: frozenset[str]) -> np.ndarray:
        """Per turn node: whether the turn mentions an entity carrying one of ``labels``
        (computed from the index's mention arrays once per version and label set)."""
        cached = self._label_masks.get(labels)
        if cached is None or cached[0] != self.version:
            index = self.index
            mask = np.zeros(index.n_slots, dtype=bool)
            ids = index.names.lookup(sorted(labels))
            if ids:
                ptr, values = index.mention_label.flat()
                hits = np.flatnonzero(np.isin(values, ids))
                slots = np.searchsorted(ptr, hits, side="right") - 1
                mask[slots[slots < index.n_slots]] = True
            mask &= self.alive
            if len(self._label_masks) > 16:  # a few label sets exist; never let it grow
                self._label_masks.clear()
            cached = self._label_masks[labels] = (self.version, mask)
        return cached[1]

    def trace(self, node: int) -> Trace:
        return self.index.trace_of_slot(node)

    # -- writes -------------------------------------------------------------------------
    def update(self, change: Change) -> None:
        index = self.index
        n = index.n_slots
        self._grow(n)
        for slot in change.turns_killed + change.turns_set:
            self._forget(slot)
        self.turn_terms.forget(change.turns_killed + change.turns_set)
        for slot in change.turns_set:
            trace = index.trace_of_slot(slot)
            rowid = int(index.turns.rowids[slot][0])
            self._set_trace(slot, rowid, trace)
            anchor = parse_anchor(trace.event_time or trace.session_time)
            ranges = [(anchor, anchor)] if anchor else []
            spans = resolve_relative(trace.text, anchor)
            if spans:
                self.annotations[slot] = spans
                ranges += [(s.first, s.last) for s in spans]
            self.turn_dates[slot] = ranges
            found = state_assertions(trace.text, trace.speaker, trace.session, trace.seq)
            if found:
                self._assertions[slot] = found
                self._order[slot] = _order_key(trace, rowid)
        self._after_update(change)

    def _set_trace(self, slot: int, rowid: int, trace: Trace) -> None:
        self._set_fields_many([slot], [rowid], [(trace.text, trace.attachments, trace.speaker, trace.session,
                                                 trace.event_time, trace.session_time, trace.recorded_at,
                                                 trace.role)])

    def _set_fields_many(self, slots: list[int], rowids: list[int], rows: list[tuple[Any, ...]]) -> None:
        """The per-turn facts that are read straight off the traces (``rows``: the fields of
        ``TraceRows.fields_many``), the arrays set in one assignment each: a cold open sets every turn."""
        question_like, by_user, sessions, times = [], [], [], []
        for slot, (text, attachments, speaker, session, event_time, session_time, recorded_at,
                   role) in zip(slots, rows):
            self.turn_text[slot] = text
            self.turn_lower[slot] = (" ".join([text, *attachments]) if attachments else text).lower()  # captions count
            self.turn_speaker[slot] = speaker
            self._speaker_counts[speaker] += 1
            self._turn_words[min(len(text.split()), MAX_COUNTED_WORDS)] += 1
            vocatives = addressed_names(text) if speaker else ()
            if vocatives:
                self._vocatives[slot] = vocatives
            else:
                self._vocatives.pop(slot, None)
            question_like.append(text.rstrip().endswith(("?", "？")))
            by_user.append(role == "user")
            sessions.append(session)
            times.append(utc_key(event_time or session_time or recorded_at))
        at = np.asarray(slots, dtype=np.int64)
        self._rowid[at] = rowids
        self._question_like[at] = question_like
        self._by_user[at] = by_user
        self._session_name[at] = sessions
        self._time[at] = times

    def _after_update(self, change: Change) -> None:
        index = self.index
        n = index.n_slots
        self.hier.update(change)
        self.graph.update(index, change, self.hier.next_turn.view())
        self._superseded = None
        self._titles = None
        changed = np.asarray(sorted(set(change.turns_set) | set(change.turns_killed)), dtype=np.int64)
        for subject, cached in self._subject_compat.items():
            cached.reserve(n)
            if len(changed):
                cached[changed] = subject_compat([self.turn_speaker[i] for i in changed.tolist()],
                                                 [self.turn_lower[i] for i in changed.tolist()], subject)
        self.changed_since_save += len(changed)
        self.version += 1

    def _grow(self, n: int) -> None:
        old = len(self.turn_text)
        if n <= old:
            return
        extra = n - old
        for array in (self._rowid, self._question_like, self._by_user, self._session_name, self._time):
            array.reserve(n)
        self.turn_text += [""] * extra
        self.turn_lower += [""] * extra
        self.turn_speaker += [None] * extra
        self.turn_dates += [[]] * extra  # placeholders; a turn's list is replaced, never mutated

    def _forget(self, slot: int) -> None:
        if self.turn_rowid[slot] < 0:
            return
        self._speaker_counts[self.turn_speaker[slot]] -= 1
        self._vocatives.pop(slot, None)
        self._turn_words[min(len(self.turn_text[slot].split()), MAX_COUNTED_WORDS)] -= 1
        self._rowid[slot] = -1
        self.turn_text[slot] = ""
        self.turn_lower[slot] = ""
        self.turn_speaker[slot] = None
        self._question_like[slot] = False
        self._by_user[slot] = False
        self._session_name[slot] = None
        self._time[slot] = ""
        self.turn_dates[slot] = []
        self.annotations.pop(slot, None)
        self._assertions.pop(slot, None)
        self._order.pop(slot, None)

    def _title_data(self) -> _Titles:
        if self._titles is None or self._titles.version != self.version:
            titles, graph = self.index.titles, self.graph
            # A key whose slots did not move keeps what was derived from it (a write touches a
            # few titles; the pool of an encyclopedia holds thousands).
            before = self._titles_by_key if self._titles_of is titles else {}
            self._titles_of = titles
            per_key: dict[str, tuple[int, np.ndarray, np.ndarray, str]] = {}
            for key in titles.names():
                moved = titles.changed_at(key)
                kept = before.get(key)
                if kept is None or kept[0] != moved:
                    slots = titles.slots(key)
                    raw = [titles.of(slot) or "" for slot in slots]
                    kept = (moved, np.asarray(slots, dtype=np.int64),
                            np.asarray(title_strength(raw), dtype=np.float64), strip_qualifier(raw[0]))
                per_key[key] = kept
            self._titles_by_key = per_key
            nodes = {key: kept[1] for key, kept in per_key.items()}
            by_entity: dict[int, list[int]] = {}
            df = graph.entity_df
            for key, key_nodes in nodes.items():  # aliases and entity counts move with every write
                j = graph.entity_index.get(graph.alias.get(key, key))
                if j is not None and df[j] > 0:
                    by_entity.setdefault(j, []).extend(key_nodes.tolist())
            longest = max((key.count(" ") + 1 for key in nodes), default=0)
            self._titles = _Titles(self.version, nodes, {key: kept[2] for key, kept in per_key.items()},
                                   by_entity, {key: kept[3] for key, kept in per_key.items()}, longest)
        return self._titles

    # -- persistence --------------------------------------------------------------------
    def state(self) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        """Everything needed to load this scope without re-deriving it (``load_state``)."""
        arrays, facts = self.index.state()
        dates = Ragged.from_lists(([d.toordinal() for pair in ranges for d in pair] for ranges in self.turn_dates),
                                  dtype=np.int64)
        arrays["turn_dates_ptr"], arrays["turn_dates"] = dates.flat()
        arrays.update({f"hier.{k}": v for k, v in self.hier.state().items()})
        graph_arrays, graph_facts = self.graph.state()
        arrays.update({f"graph.{k}": v for k, v in graph_arrays.items()})
        facts["graph"] = graph_facts
        facts["annotations"] = {str(slot): [[s.surface, s.start_char, s.end_char, s.first.toordinal(),
                                             s.last.toordinal(), s.granularity] for s in spans]
                                for slot, spans in self.annotations.items()}
        facts["assertions"] = {str(slot): [[a.speaker, a.attribute, a.value, a.session, a.seq] for a in found]
                               for slot, found in self._assertions.items()}
        return arrays, facts

    @classmethod
    def load_state(cls, scope: Scope, tokenize_many: Callable[[Sequence[str]], list[list[str]]],
                   arrays: dict[str, np.ndarray], facts: dict[str, Any],
                   traces: TraceRows) -> PreparedScope:
        index = ScopeIndex.from_state(scope, tokenize_many, arrays, facts, traces)
        prep = cls(index)
        n = index.n_slots
        prep._grow(n)
        # The live turns whose trace was read with the snapshot (one deleted since is not: the
        # next sync clears its slot).
        slots, rowids, fields = index.traces.loaded_fields()
        prep._set_fields_many(slots, rowids, fields)
        first_rowid = dict(zip(slots, rowids))
        ptr, days = arrays["turn_dates_ptr"].tolist(), arrays["turn_dates"].tolist()
        # Most turns carry just their session's date: equal lists are one shared (read-only) list.
        shared: dict[tuple[int, ...], list[tuple[dt.date, dt.date]]] = {}
        from_ordinal = dt.date.fromordinal
        for slot in range(min(n, len(ptr) - 1)):
            lo, hi = ptr[slot], ptr[slot + 1]
            if hi > lo:
                key = tuple(days[lo:hi])
                ranges = shared.get(key)
                if ranges is None:
                    ranges = shared[key] = [(from_ordinal(key[i]), from_ordinal(key[i + 1]))
                                            for i in range(0, len(key), 2)]
                prep.turn_dates[slot] = ranges
        prep.annotations = {int(slot): [TimeSpan(sur, a, b, from_ordinal(f), from_ordinal(la), g)
                                        for sur, a, b, f, la, g in spans]
                            for slot, spans in facts["annotations"].items()}
        prep._assertions = {int(slot): [StateAssertion(*a) for a in found]
                            for slot, found in facts["assertions"].items()}
        prep._order = {slot: _order_key(trace, first_rowid[slot]) for slot in prep._assertions
                       if (trace := index.traces[slot]) is not None}
        prep.hier = Hierarchy.from_state(index, {k[5:]: v for k, v in arrays.items() if k.startswith("hier.")})
        prep.graph = EntityGraph.from_state({k[6:]: v for k, v in arrays.items() if k.startswith("graph.")},
                                            facts["graph"])
        prep._superseded = None
        return prep


class _TurnTerms:
    """``turn_terms[slot]``: the distinct index tokens of a turn, from its BM25 document
    (made on first use: a search asks for a few hundred candidates, not every turn)."""

    CACHE = 50_000

    def __init__(self, index: ScopeIndex) -> None:
        self._index = index
        self._cache: dict[int, frozenset[str]] = {}

    def __getitem__(self, slot: int) -> frozenset[str]:
        found = self._cache.get(slot)
        if found is None:
            terms = self._index.vocabulary.terms
            found = frozenset(terms[t] for t in self._index.turns.tokens[slot].tolist())
            if len(self._cache) >= self.CACHE:
                self._cache.clear()
            self._cache[slot] = found
        return found

    def forget(self, slots: Iterable[int]) -> None:
        for slot in slots:
            self._cache.pop(slot, None)


class _TermCounts:
    """``term_df.get(token)``: how many live turns contain a token (the turn level's df)."""

    def __init__(self, index: ScopeIndex) -> None:
        self._index = index

    def get(self, token: str, default: int = 0) -> int:
        return self._index.turns.lexical.document_frequency(token) or default


def _order_key(trace: Trace, rowid: int) -> tuple[Any, int, int]:
    """Which of two state assertions is newer: time, then order in the session, then row number."""
    return (trace.event_time or trace.session_time or trace.recorded_at, trace.seq, rowid)


@dataclass(frozen=True, slots=True)
class _Titles:
    version: int
    nodes: dict[str, np.ndarray]
    strength: dict[str, np.ndarray]
    by_entity: dict[int, list[int]]
    written: dict[str, str]
    longest: int  # words in the longest title


def title_strength(raw_titles: list[str]) -> list[float]:
    """For raw titles that share one normalized title: 1 for a title a query can name outright,
    ``DISAMBIGUATED_TITLE`` for "X (film)" while a plain "X" exists too — a query's bare "X"
    most likely means that one."""
    plain = any("(" not in title for title in raw_titles)
    return [DISAMBIGUATED_TITLE if plain and "(" in title else 1.0 for title in raw_titles]
