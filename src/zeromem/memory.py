"""The public facade. ``Memory`` delegates: the store keeps traces, the indexer derives units,
the engine retrieves. It holds no logic of its own beyond argument plumbing."""

from __future__ import annotations

import builtins
import dataclasses
import logging
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Self

from .config import Config, default_db_path
from .encoders.bundle import EncoderFailure, Encoders
from .errors import InvalidInput
from .indexes.indexer import Indexer, RefreshReport
from .ingest import check_conversations, load_file
from .retrieval.answer_calibration import Answer, calibrate_answer
from .retrieval.engine import SearchResult
from .retrieval.render import RenderedContext
from .retrieval.service import Retriever
from .store import TraceDraft, open_store
from .store.base import parse_trace_id
from .types import Evidence, HistoryEvent, Scope, Trace

_UNSET: Any = object()
_log = logging.getLogger("zeromem")
_DRAFT_FIELDS = set(TraceDraft.__slots__)


class Memory:
    """An agent's memory, backed by an embedded SQLite file (the source of record).

    >>> mem = Memory(":memory:")
    >>> tid = mem.add("I moved to Denver last week.", speaker="Ana", session="s1")
    >>> mem.get(tid).text
    'I moved to Denver last week.'
    """

    def __init__(self, path: str | Path | None = None, *, user: str | None = None,
                 agent: str | None = None, config: Config | None = None) -> None:
        self.config = config or Config()
        self.store = open_store(path if path is not None else default_db_path(),
                                max_text_chars=self.config.max_text_chars)
        self.scope = Scope(user, agent)
        self.encoders = Encoders(self.config.encoders)
        retrieval = self.config.retrieval
        self.indexer = Indexer(self.store, lambda: self.encoders, window_turns=retrieval.window_turns,
                               stride=retrieval.window_stride)
        self.retriever = Retriever(self.store, self.indexer, self.encoders, retrieval)

    # -- lifecycle ----------------------------------------------------------------------
    @property
    def path(self) -> str:
        return self.store.path

    def close(self) -> None:
        """Persist large scopes' indexes that changed (so the next open is fast), then close."""
        try:
            self.retriever.save_all()
        except Exception as exc:  # noqa: BLE001 - a cache; the store itself is intact
            _log.warning("zeromem: could not persist the in-memory index: %s", exc)
        self.store.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _scope(self, user: Any, agent: Any) -> Scope:
        return Scope(self.scope.user if user is _UNSET else user,
                     self.scope.agent if agent is _UNSET else agent)

    # -- writes -------------------------------------------------------------------------
    def add(self, text: str, *, session: str | None = None, speaker: str | None = None,
            role: str | None = None, session_time: Any = None, event_time: Any = None,
            seq: int | None = None, source_id: str | None = None,
            metadata: Mapping[str, Any] | None = None, attachments: Iterable[str] | None = None,
            user: str | None = _UNSET, agent: str | None = _UNSET) -> str:
        """Store one trace verbatim and return its short id (e.g. ``'t42'``)."""
        draft = TraceDraft(text=text, session=session, speaker=speaker, role=role,
                           session_time=session_time, event_time=event_time, seq=seq,
                           source_id=source_id, metadata=metadata, attachments=attachments)
        scope = self._scope(user, agent)
        tid = self.store.add_many([draft], scope)[0]
        self._derive(scope)
        return tid

    def add_many(self, traces: Iterable[Mapping[str, Any] | TraceDraft], *,
                 user: str | None = _UNSET, agent: str | None = _UNSET) -> list[str]:
        """Store a batch (e.g. a whole conversation) in one transaction: all or nothing."""
        if isinstance(traces, (str, bytes, Mapping)):
            raise InvalidInput("add_many takes a list of traces (dicts with at least 'text')")
        drafts = [_to_draft(item, index) for index, item in enumerate(traces)]
        scope = self._scope(user, agent)
        ids = self.store.add_many(drafts, scope)
        self._derive(scope)
        return ids

    def import_file(self, path: str | Path, *, format: str | None = None,
                    user: str | None = _UNSET, agent: str | None = _UNSET) -> dict[str, list[str]]:
        """Import a LoCoMo, OpenAI-chat or JSONL file; returns {conversation name: trace ids}.

        Every trace of every conversation is checked before the first one is stored, and all
        of them are stored in one transaction, so a bad file stores nothing. All conversations
        land in one scope; give each its own ``user`` by calling ``zeromem.ingest.load_file``
        and ``add_many`` yourself.
        """
        conversations = load_file(path, format=format)
        check_conversations(conversations, self.store)
        scope = self._scope(user, agent)
        batches = [([_to_draft(item, index) for index, item in enumerate(conv.drafts)], scope)
                   for conv in conversations]
        ids = self.store.add_batches(batches)  # one transaction: the whole file or nothing
        self._derive(scope)
        return {conv.name: conv_ids for conv, conv_ids in zip(conversations, ids)}

    def update(self, trace_id: str, *, text: str | None = None,
               metadata: Mapping[str, Any] | None = None,
               user: str | None = _UNSET, agent: str | None = _UNSET) -> Trace:
        """Replace a trace's text and/or metadata; the old version stays in its history."""
        scope = self._scope(user, agent)
        trace = self.store.update(trace_id, scope, text=text, metadata=metadata)
        self._derive(scope)
        return trace

    def delete(self, trace_id: str, *, user: str | None = _UNSET, agent: str | None = _UNSET) -> None:
        """Delete one trace; it leaves every index at once (and every other process's
        in-memory index at its next search)."""
        scope = self._scope(user, agent)
        self.store.delete(trace_id, scope)
        self._derive(scope)

    def delete_scope(self, *, user: str | None = _UNSET, agent: str | None = _UNSET) -> int:
        """Delete everything stored for one (user, agent) scope, and only that scope."""
        return self.store.delete_scope(self._scope(user, agent))

    # -- reads --------------------------------------------------------------------------
    def get(self, trace_id: str, *, user: str | None = _UNSET, agent: str | None = _UNSET) -> Trace:
        """Return one trace by id (NotFound if it is not in this scope)."""
        return self.store.get(trace_id, self._scope(user, agent))

    def list(self, *, session: str | None = None, since: Any = None, until: Any = None,
             metadata: Mapping[str, Any] | None = None, limit: int | None = None,
             offset: int = 0, user: str | None = _UNSET, agent: str | None = _UNSET) -> list[Trace]:
        """Traces of one scope in conversation order, filtered by session, time and metadata."""
        return self.store.list(self._scope(user, agent), session=session, since=since,
                               until=until, metadata=dict(metadata) if metadata else None,
                               limit=limit, offset=offset)

    def history(self, trace_id: str, *, user: str | None = _UNSET,
                agent: str | None = _UNSET) -> builtins.list[HistoryEvent]:
        """Every add / update / delete event of a trace, oldest first."""
        return self.store.history(trace_id, self._scope(user, agent))

    def stats(self, *, all_scopes: bool = False, user: str | None = _UNSET,
              agent: str | None = _UNSET) -> dict[str, Any]:
        """Counts of traces, sessions, history events and derived units."""
        return self.store.stats(None if all_scopes else self._scope(user, agent))


    # -- derived indexes ----------------------------------------------------------------
    def _derive(self, scope: Scope, *, force: bool = False) -> None:
        """After a committed write: derive what it touched (``Config.index_on_write``).

        The write is already stored; a failure here (no model installed, a crash in an
        encoder) must not look like a failed write, so it is logged and the sessions stay
        marked dirty: the next ``index()`` or ``search()`` derives them, or says what is wrong.
        Once an encoder is known to be down, writes do not try again (search answers degraded
        meanwhile, see ``health``); reopening the memory does.
        """
        if not (self.config.index_on_write or force) or self.encoders.failures():
            return
        try:
            self.indexer.refresh(scope)
        except EncoderFailure as exc:  # logged once; the next search derives what it can
            self.encoders.fail(exc.component, exc)
        except Exception as exc:  # noqa: BLE001 - reported, and retried by the next search
            _log.warning("zeromem: indexing after a write was deferred to the next search: %s", exc)

    def index(self, *, progress: bool = False, user: str | None = _UNSET,
              agent: str | None = _UNSET) -> RefreshReport:
        """Bring this scope's units, vectors and entity graph up to date with its traces."""
        scope = self._scope(user, agent)
        report = self.indexer.refresh(scope, progress=progress)
        self._persist(scope)
        return report

    def reindex(self, *, progress: bool = False, user: str | None = _UNSET,
                agent: str | None = _UNSET) -> RefreshReport:
        """Throw away every derived unit of this scope and rebuild them from the traces."""
        scope = self._scope(user, agent)
        report = self.indexer.rebuild(scope, progress=progress)
        self._persist(scope)
        return report

    def _persist(self, scope: Scope) -> None:
        """After bulk indexing: build the in-memory index of a large scope and persist it, so
        the first search (in this process or the next) does not derive it again."""
        if self.store.count(scope) >= max(1, self.config.retrieval.snapshot_min_turns):
            self.retriever.prepared(scope)
            self.retriever.save(scope)

    def health(self) -> dict[str, Any]:
        """Whether this memory can answer, and with which models (a server's readiness check).

        Returns ``{"ready", "store", "embedder", "ner", "degraded"}``. ``store`` is ``"ok"`` when
        a read of the store succeeds, else ``"error: <why>"``. ``embedder`` and ``ner`` are
        ``"ok"`` or ``"unavailable: <why>"``: each is loaded on the first call (seconds) and the
        outcome is kept, so later calls cost a store read. ``degraded`` has one line per
        unavailable model saying what searches skip without it. ``ready`` is True exactly when
        the store works: writes are accepted and searches answer, possibly degraded (a missing
        model never makes a write fail or a search raise). A model that failed is tried again
        only by a new ``Memory``.
        """
        return self.retriever.health(self.scope)

    # -- retrieval ------------------------------------------------------------------------
    def search(self, query: str, *, k: int = 10, session: str | None = None, as_of: Any = None,
               filters: Mapping[str, Any] | None = None, user: str | None = _UNSET,
               agent: str | None = _UNSET) -> builtins.list[Evidence]:
        """Evidence for ``query``: at most ``k`` verbatim turns, best first, with provenance.

        No language model is called. ``as_of`` hides traces after that time; ``filters``
        keeps traces whose metadata equals the given values.
        """
        return self.search_detailed(query, k=k, session=session, as_of=as_of, filters=filters,
                                    user=user, agent=agent).evidence

    def search_detailed(self, query: str, *, k: int = 10, session: str | None = None,
                        as_of: Any = None, filters: Mapping[str, Any] | None = None,
                        user: str | None = _UNSET, agent: str | None = _UNSET) -> SearchResult:
        """Like ``search`` but also returns the query profile, route, timings, no-answer score
        and ``degraded``: what the search had to do without (empty when every model works).

        When the embedder or the NER pipeline is missing or fails, search still answers from
        what works — BM25 and the hierarchy always, the graph if NER works, dense similarity if
        the embedder works — and ``degraded`` says which component failed, why, and what was
        skipped (docs/decisions.md, "Degraded search").
        """
        return self.retriever.search(self._scope(user, agent), query, k=k, session=session,
                                     as_of=as_of, filters=dict(filters) if filters else None)

    def render_context(self, query: str, *, k: int = 10, budget_tokens: int | None = 2000,
                       session: str | None = None, as_of: Any = None,
                       filters: Mapping[str, Any] | None = None, user: str | None = _UNSET,
                       agent: str | None = _UNSET) -> RenderedContext:
        """The prompt block for ``query``: chronological evidence within ``budget_tokens``;
        its ``degraded`` says what the search had to do without (see ``search_detailed``)."""
        result = self.search_detailed(query, k=k, session=session, as_of=as_of, filters=filters,
                                      user=user, agent=agent)
        rendered = self.render(result.evidence, budget_tokens=budget_tokens, user=user, agent=agent)
        return dataclasses.replace(rendered, degraded=tuple(result.degraded))

    def render(self, evidence: Iterable[Evidence], *, budget_tokens: int | None = 2000,
               user: str | None = _UNSET, agent: str | None = _UNSET) -> RenderedContext:
        """The prompt block for evidence already retrieved (e.g. by ``search_detailed``)."""
        return self.retriever.render(self._scope(user, agent), list(evidence), budget_tokens)

    def answer(self, query: str, reader: Any, *, k: int = 10, budget_tokens: int | None = 2000,
               calibrate: bool = True, user: str | None = _UNSET, agent: str | None = _UNSET) -> Answer:
        """The one LLM call of the loop: ``reader.answer(query, context)`` on rendered evidence,
        then deterministic answer calibration (SPEC §2.5) against that same evidence: grounded
        or not, which traces support it, normalized to the question's answer type."""
        if not hasattr(reader, "answer"):
            raise InvalidInput("reader must have an answer(question, context) method; see zeromem.reader")
        context = self.render_context(query, k=k, budget_tokens=budget_tokens, user=user, agent=agent)
        reply = reader.answer(query, context)
        raw = getattr(reply, "text", reply)
        if not isinstance(raw, str):
            raise InvalidInput(f"reader.answer must return text or an object with .text, got {type(reply).__name__}")
        if not calibrate:
            return Answer(raw, reply, None, context)
        calibrated = calibrate_answer(raw, query, list(context.evidence))
        return Answer(calibrated.text, reply, calibrated, context)

    # -- browsing (the inspector, MCP resources) ------------------------------------------
    def sessions(self, *, user: str | None = _UNSET,
                 agent: str | None = _UNSET) -> builtins.list[dict[str, Any]]:
        """The scope's sessions in conversation order: name, trace count, first and last time."""
        return self.store.sessions(self._scope(user, agent))

    def neighbourhood(self, trace_id: str, *, limit: int = 20, user: str | None = _UNSET,
                      agent: str | None = _UNSET) -> dict[str, Any]:
        """A trace's place in the entity–context graph: the entities its turn mentions (with
        how many turns of the scope mention each) and up to ``limit`` other traces that share
        an entity with it, most shared first. Derives the trace's session first if needed."""
        scope = self._scope(user, agent)
        trace = self.store.get(trace_id, scope)
        if self.store.dirty_sessions(scope):
            self._derive(scope, force=True)
        entities, neighbours = self.store.trace_entities(scope, parse_trace_id(trace_id), limit)
        others = self.store.get_rowids([rowid for rowid, _ in neighbours])
        return {
            "trace": trace,
            "entities": [{"entity": e, "label": label, "surface": surface, "count": count, "turns": df}
                         for e, label, surface, count, df in entities],
            "neighbours": [{"trace": others[rowid], "shared": shared}
                           for rowid, shared in neighbours if rowid in others],
        }


def _to_draft(item: Any, index: int) -> TraceDraft:
    if isinstance(item, TraceDraft):
        return item
    if not isinstance(item, Mapping):
        raise InvalidInput(f"trace #{index} must be a dict with at least 'text', got {type(item).__name__}")
    unknown = set(item) - _DRAFT_FIELDS
    if unknown:
        raise InvalidInput(f"trace #{index} has unknown fields {sorted(unknown)}; "
                           f"allowed: {sorted(_DRAFT_FIELDS)}")
    if "text" not in item:
        raise InvalidInput(f"trace #{index} has no 'text'")
    return TraceDraft(**item)
