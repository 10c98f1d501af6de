"""Typed results of ``Memory``: a search (``SearchResult``, with its ``SearchExplain``) and the
reports of the inspection methods: ``health``, ``stats``, ``sessions``, ``neighbourhood`` and
``compact``.

Frozen dataclasses, so a report is a value: compare it, hash it (where its fields allow), turn it
into JSON with ``dataclasses.asdict`` (``CompactReport.as_dict`` leaves out what its backend does
not report). Each field is documented in its class.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .types import Evidence, Trace


@dataclass(frozen=True, slots=True)
class IndexCacheStats:
    """This process's in-memory indexes (``Config.index_cache_mb``), all scopes together.

    ``budget_bytes`` is the cache's budget; ``bytes`` and ``scopes`` what it holds now;
    ``hits``, ``misses`` (a scope built or read from its snapshot) and ``evictions`` count
    since the process started.
    """

    budget_bytes: int
    bytes: int
    scopes: int
    hits: int
    misses: int
    evictions: int


@dataclass(frozen=True, slots=True)
class Health:
    """Whether a memory can answer, and with which models (``Memory.health``).

    ``ready`` is True exactly when the store works (writes are accepted and searches answer,
    possibly degraded). ``store`` is ``"ok"`` or ``"error: <why>"``; ``embedder`` and ``ner``
    are ``"ok"`` or ``"unavailable: <why>"``. ``degraded`` has one line per unavailable model
    saying what searches skip without it. ``index_cache`` describes this process's in-memory
    indexes. ``snapshots_discarded`` counts the persisted indexes this process refused to use
    (damaged, forged, or not matching the store: each scope was rebuilt from its traces and a
    warning logged); anything above 0 is worth a look at the store's disk. ``placement`` is
    None except on a Citus cluster, where it says how the data is placed: each node with its
    shard groups and scopes, and which tables are distributed, reference or local
    (``PostgresStore.placement``; docs/postgres.md).
    """

    ready: bool
    store: str
    embedder: str
    ner: str
    degraded: tuple[str, ...]
    index_cache: IndexCacheStats
    snapshots_discarded: int = 0
    placement: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class Stats:
    """Counts of what a store holds, for one scope or the whole store (``Memory.stats``).

    ``path`` is the store (a file path or a redacted URL); ``traces``, ``sessions`` and
    ``characters`` (of trace text) are totals; ``scopes`` counts (user, agent) pairs (1 for
    one scope); ``speakers`` maps each speaker (``""`` for none) to its trace count;
    ``history_events`` maps ``"add"`` / ``"update"`` / ``"delete"`` to counts;
    ``first_time`` / ``last_time`` span the traces' event or session times (ISO 8601, None
    when undated); ``units`` maps each derived level (turn, span, window, episode) to a count.
    """

    path: str
    traces: int
    sessions: int
    characters: int
    scopes: int
    speakers: dict[str, int]
    history_events: dict[str, int]
    first_time: str | None
    last_time: str | None
    units: dict[str, int]


@dataclass(frozen=True, slots=True)
class SessionInfo:
    """One session of a scope (``Memory.sessions``): its name (None for traces stored
    without one), how many traces it holds, and its first and last time (ISO 8601)."""

    session: str | None
    traces: int
    first_time: str | None
    last_time: str | None


@dataclass(frozen=True, slots=True)
class NeighbourEntity:
    """An entity a trace mentions: its normalized key ``entity``, NER ``label``, the
    ``surface`` form in the text, how many times the trace mentions it (``count``) and how
    many turns of the scope mention it (``turns``)."""

    entity: str
    label: str
    surface: str
    count: int
    turns: int


@dataclass(frozen=True, slots=True)
class Neighbour:
    """Another trace that shares entities with the one asked about, and which (``shared``)."""

    trace: Trace
    shared: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Neighbourhood:
    """A trace's place in the entity–context graph (``Memory.neighbourhood``): the trace,
    the entities it mentions, and the traces sharing an entity with it, most shared first."""

    trace: Trace
    entities: tuple[NeighbourEntity, ...]
    neighbours: tuple[Neighbour, ...]


@dataclass(frozen=True, slots=True)
class CompactReport:
    """What ``Memory.compact`` did: the store, its size in bytes before and after, and
    ``retained``: what may still hold erased text (empty when nothing does).

    ``checkpointed`` (SQLite) says whether the write-ahead log was checkpointed and truncated;
    ``done`` (PostgreSQL) lists the maintenance steps that ran. Each is None on the other backend.
    """

    store: str
    bytes_before: int
    bytes_after: int
    retained: tuple[str, ...]
    checkpointed: bool | None = None
    done: tuple[str, ...] | None = None

    def as_dict(self) -> dict[str, Any]:
        """The report as JSON-ready data, without the field its backend does not report."""
        out: dict[str, Any] = {"store": self.store, "bytes_before": self.bytes_before,
                               "bytes_after": self.bytes_after}
        if self.checkpointed is not None:
            out["checkpointed"] = self.checkpointed
        if self.done is not None:
            out["done"] = list(self.done)
        out["retained"] = list(self.retained)
        return out


@dataclass(frozen=True, slots=True)
class QuerySummary:
    """What a search read from its query (the engine's query profile, as plain values).

    ``subject`` is the participant the question is about (None if none); ``answer_type`` the
    kind of answer asked for (``"person"``, ``"time"``, ``"place"``...); ``keywords`` and
    ``names`` the words and capitalized names it matched on; ``time_cues`` the periods it
    names, each as (first day, last day) in ISO 8601; ``asks_time`` whether it asks when;
    ``aggregation`` whether it asks for a list ("What activities does X do?").
    """

    subject: str | None
    answer_type: str
    keywords: tuple[str, ...]
    names: tuple[str, ...]
    time_cues: tuple[tuple[str, str], ...]
    asks_time: bool
    aggregation: bool


@dataclass(frozen=True, slots=True)
class NoAnswerSignals:
    """What the no-answer score of a search was computed from, each in [0, 1]
    (``zeromem.retrieval.calibrate.NoAnswerInputs`` documents each one): how much of the
    question the best evidence covers, how close it is, and whether the question's subject
    said it."""

    keyword_coverage: float
    term_coverage: float
    unseen_terms: float
    top_cosine: float
    names_missing: float
    off_subject: float
    subject_asks: float
    subject_addresses: float
    subject_unsaid: float


@dataclass(frozen=True, slots=True)
class SearchExplain:
    """How a search found its evidence (``SearchResult.explain``).

    ``route`` is the retrieval route it took: ``"relational"`` (the entity graph leads) or
    ``"local"`` (the hierarchy of turns, windows and sessions leads), with ``route_weight``
    the leading view's share (ρ); ``query`` what it read from the query; ``timings``
    milliseconds per stage (``encode_ms``, ``total_ms``...); ``no_answer_inputs`` what the
    no-answer score was computed from (None for an empty memory).
    """

    route: str
    route_weight: float
    query: QuerySummary
    timings: dict[str, float]
    no_answer_inputs: NoAnswerSignals | None


@dataclass(frozen=True, slots=True)
class SearchResult:
    """What ``Memory.search_detailed`` returns: the evidence, best first, and how it was found.

    ``no_answer_score`` (0–1) is high when memory probably holds no answer; ``no_answer`` is
    True when it is at least the threshold the no-answer model was fitted for
    (``zeromem.retrieval.calibrate.NO_ANSWER_THRESHOLD``: ≥ 90 % precision on the development
    data). ``degraded`` says what the search had to do without (empty when every model
    works); ``explain`` how it searched.
    """

    evidence: tuple[Evidence, ...]
    no_answer_score: float
    no_answer: bool
    degraded: tuple[str, ...]
    explain: SearchExplain

    @property
    def timings(self) -> dict[str, float]:
        """Deprecated alias of ``explain.timings`` (CHANGELOG: 1.1)."""
        return self.explain.timings

    @property
    def no_answer_inputs(self) -> NoAnswerSignals | None:
        """Deprecated alias of ``explain.no_answer_inputs`` (CHANGELOG: 1.1)."""
        return self.explain.no_answer_inputs
