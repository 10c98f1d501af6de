"""The public facade. ``Memory`` delegates: the store keeps traces, the indexer derives units,
the engine retrieves. It holds no logic of its own beyond argument plumbing."""

from __future__ import annotations

import builtins
import dataclasses
import logging
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Self

from .config import Config, default_db_path
from .encoders.bundle import EncoderFailure, Encoders, store_sample
from .encoders.token_count import count_budget_tokens
from .errors import InvalidInput
from .indexes.indexer import Indexer, RefreshReport
from .ingest import ImportResult, check_conversations, load_file, skip_stored
from .lifecycle.active import ACTIVE_HEADING, EVIDENCE_HEADING, ActiveMemory
from .lifecycle.cards import Card
from .lifecycle.service import ARCHIVED, PINNED, Lifecycle, check_lifecycle_metadata
from .results import (
    CompactReport,
    Health,
    Neighbour,
    NeighbourEntity,
    Neighbourhood,
    NoAnswerSignals,
    QuerySummary,
    SearchExplain,
    SearchResult,
    SessionInfo,
    Stats,
)
from .retrieval import engine
from .retrieval.answer_calibration import Answer, calibrate_answer
from .retrieval.calibrate import NO_ANSWER_THRESHOLD
from .retrieval.reading import Reader
from .retrieval.render import RenderedContext
from .retrieval.retriever import Retriever
from .store import TraceDraft, open_store, validate
from .store.base import DeleteReceipt, scope_key
from .store.portable import BackupReport, RestoreReport, export_lines
from .store.portable import import_export as restore_export
from .tracing import (
    describe_delete,
    describe_refresh,
    describe_render,
    describe_search,
    describe_write,
    traced,
)
from .types import SAME_SCOPE, Evidence, HistoryEvent, SameScope, Scope, TimeLike, Trace

_log = logging.getLogger("zeromem")
_DRAFT_FIELDS = set(TraceDraft.__slots__)


class Memory:
    """An agent's memory, backed by an embedded SQLite file (the source of record).

    ``path`` is a SQLite file (default: ``Config``'s default path), ``":memory:"``, or a
    ``postgresql://`` URL. ``user`` and ``agent`` name the scope every call reads and writes;
    each method's ``user=`` / ``agent=`` overrides it for that call (``SAME_SCOPE``, the
    default, keeps this memory's own; None means "no user" / "no agent"), and
    ``scoped(user=..., agent=...)`` gives a view of one scope whose methods take neither.

    Naming: ``k`` is the number of ranked results (search, render_context, answer); ``limit``
    caps a listing (list, cards, neighbourhood); ``filters`` keeps traces whose metadata
    equals the given values (search, list). Times are ``TimeLike``.

    >>> mem = Memory(":memory:")
    >>> tid = mem.add("I moved to Denver last week.", speaker="Ana", session="s1")
    >>> mem.get(tid).text
    'I moved to Denver last week.'
    """

    def __init__(self, path: str | Path | None = None, *, user: str | None = None,
                 agent: str | None = None, config: Config | None = None) -> None:
        if config is not None and not isinstance(config, Config):
            raise InvalidInput(f"config must be a zeromem Config, got {type(config).__name__}")
        self.config: Config = config or Config()
        self.config.validate()  # again: a field may have been changed since the Config was built
        scope_key(Scope(user, agent))  # a default scope no call could use is refused here, not at every call
        self._store = open_store(path if path is not None else default_db_path(),
                                max_text_chars=self.config.max_text_chars,
                                lock_timeout_s=self.config.lock_timeout_s,
                                erase_rewrite_mb=self.config.erase_rewrite_mb)
        self.scope: Scope = Scope(user, agent)
        self._encoders = Encoders(self.config.encoders, sample=lambda: store_sample(self._store))
        retrieval = self.config.retrieval
        self._indexer = Indexer(self._store, lambda: self._encoders, window_turns=retrieval.window_turns,
                               stride=retrieval.window_stride)
        self._retriever = Retriever(self._store, self._indexer, self._encoders, retrieval,
                                   self.config.index_cache_bytes)
        self._lifecycle = Lifecycle(self._store, lambda: self._encoders)

    # -- lifecycle ----------------------------------------------------------------------
    @property
    def path(self) -> str:
        """Where the store is: a file path, ``":memory:"``, or a URL without its password."""
        return self._store.path

    def close(self) -> None:
        """Persist large scopes' indexes that changed (so the next open is fast), then close."""
        try:
            self._retriever.save_all()
        except Exception as exc:  # noqa: BLE001 - a cache; the store itself is intact
            _log.warning("zeromem: could not persist the in-memory index: %s", exc)
        self._store.close()

    def __enter__(self) -> Self:
        """``with Memory(...) as mem:`` closes it at the end of the block."""
        return self

    def __exit__(self, *exc: object) -> None:
        """Close (see ``close``)."""
        self.close()

    def scoped(self, *, user: str | SameScope | None = SAME_SCOPE,
               agent: str | SameScope | None = SAME_SCOPE) -> ScopedMemory:
        """This memory in one scope, without ``user=`` / ``agent=`` on every call:
        ``mem.scoped(user="ana").search("...")`` is ``mem.search("...", user="ana")``.
        ``SAME_SCOPE`` (the default) keeps this memory's own user or agent; None means "no
        user" / "no agent". The view shares this memory (closing the memory ends it)."""
        scope = self._scope(user, agent)
        scope_key(scope)  # a scope no call could use is refused here, as by the constructor
        return ScopedMemory(self, scope)

    def _scope(self, user: str | SameScope | None, agent: str | SameScope | None) -> Scope:
        return Scope(self.scope.user if user is SAME_SCOPE else user,
                     self.scope.agent if agent is SAME_SCOPE else agent)

    # -- writes -------------------------------------------------------------------------
    @traced("zeromem.add", describe_write)
    def add(self, text: str, *, session: str | None = None, speaker: str | None = None,
            role: str | None = None, session_time: TimeLike = None, event_time: TimeLike = None,
            seq: int | None = None, source_id: str | None = None,
            metadata: Mapping[str, Any] | None = None, attachments: Iterable[str] | None = None,
            user: str | SameScope | None = SAME_SCOPE, agent: str | SameScope | None = SAME_SCOPE) -> str:
        """Store one trace verbatim and return its short id (e.g. ``'t4k2x9q7m'``)."""
        check_lifecycle_metadata(metadata)
        draft = TraceDraft(text=text, session=session, speaker=speaker, role=role,
                           session_time=session_time, event_time=event_time, seq=seq,
                           source_id=source_id, metadata=metadata, attachments=attachments)
        scope = self._scope(user, agent)
        tid = self._store.add_many([draft], scope)[0]
        self._derive(scope, written=[tid])
        return tid

    @traced("zeromem.add_many", describe_write)
    def add_many(self, traces: Iterable[Mapping[str, Any] | TraceDraft], *,
                 user: str | SameScope | None = SAME_SCOPE, agent: str | SameScope | None = SAME_SCOPE) -> list[str]:
        """Store a batch (e.g. a whole conversation) in one transaction: all or nothing."""
        if isinstance(traces, (str, bytes, Mapping)) or not isinstance(traces, Iterable):
            raise InvalidInput("add_many takes a list of traces (dicts with at least 'text')")
        drafts = [_to_draft(item, index) for index, item in enumerate(traces)]
        for draft in drafts:
            check_lifecycle_metadata(draft.metadata)
        scope = self._scope(user, agent)
        ids = self._store.add_many(drafts, scope)
        self._derive(scope, written=ids)
        return ids

    def import_file(self, path: str | Path, *, format: str | None = None,
                    allow_duplicates: bool = False, user: str | SameScope | None = SAME_SCOPE,
                    agent: str | SameScope | None = SAME_SCOPE) -> ImportResult:
        """Import a LoCoMo, OpenAI-chat or JSONL file; returns {conversation name: new trace ids}.

        Every trace of every conversation is checked before the first one is stored, and all
        of them are stored in one transaction, so a bad file stores nothing. All conversations
        land in one scope; give each its own ``user`` by calling ``zeromem.ingest.load_file``
        and ``add_many`` yourself.

        Importing is idempotent: traces the scope already holds (same session, source id,
        speaker, role, text, attachments and times; see ``zeromem.ingest.dedupe``) are left
        out and counted in the result's ``skipped`` ({conversation name: count}), so importing
        a file again stores nothing. ``allow_duplicates=True`` stores every trace regardless.
        """
        if not isinstance(allow_duplicates, bool):
            raise InvalidInput(f"allow_duplicates must be True or False, got {allow_duplicates!r}")
        conversations = load_file(path, format=format)
        check_conversations(conversations, self._store, names_as_scopes=False)
        scope = self._scope(user, agent)
        batches = [([_to_draft(item, index) for index, item in enumerate(conv.drafts)], scope)
                   for conv in conversations]
        skipped = [0] * len(batches)
        if not allow_duplicates:
            batches, skipped = skip_stored(self._store, batches)
        ids = self._store.add_batches(batches)  # one transaction: the whole file or nothing
        self._derive(scope, written=[tid for batch in ids for tid in batch])
        return ImportResult({conv.name: conv_ids for conv, conv_ids in zip(conversations, ids)},
                            {conv.name: count for conv, count in zip(conversations, skipped)})

    @traced("zeromem.update", describe_write)
    def update(self, trace_id: str, *, text: str | None = None,
               metadata: Mapping[str, Any] | None = None, keep_history: bool = True,
               user: str | SameScope | None = SAME_SCOPE, agent: str | SameScope | None = SAME_SCOPE) -> Trace:
        """Replace a trace's text and/or metadata.

        The old version stays in its history (``history``), by design, so that every change
        can be audited. ``keep_history=False`` erases it instead: the earlier versions' text
        and metadata leave the history (the events stay, with their times) and the store's
        files, as ``delete`` erases a trace.
        """
        check_lifecycle_metadata(metadata)  # as add does: importance, pinned, archived, expires_at
        scope = self._scope(user, agent)
        trace = self._store.update(trace_id, scope, text=text, metadata=metadata, keep_history=keep_history)
        self._derive(scope, written=[trace.id])
        return trace

    @traced("zeromem.delete", describe_delete)
    def delete(self, trace_id: str, *, keep_history: bool = False, user: str | SameScope | None = SAME_SCOPE,
               agent: str | SameScope | None = SAME_SCOPE) -> DeleteReceipt:
        """Delete one trace and erase its text; returns a receipt of what was removed where.

        The text leaves every table (the history keeps tombstones: event and time, no text),
        every derived index and persisted index, and the store's files (SQLite: secure_delete
        and a WAL checkpoint; see ``DeleteReceipt.retained`` for what a backend still keeps).
        It leaves every search at once, in other processes at their next search.
        ``keep_history=True`` keeps the old text and metadata in the history instead.
        """
        scope = self._scope(user, agent)
        receipt = self._store.delete(trace_id, scope, keep_history=keep_history)
        self._derive(scope, written=[])
        return receipt

    def delete_session(self, session: str, *, keep_history: bool = False, user: str | SameScope | None = SAME_SCOPE,
                       agent: str | SameScope | None = SAME_SCOPE) -> DeleteReceipt:
        """Delete every trace of one session (a whole conversation) as ``delete`` deletes one;
        NotFound if the scope has no such session."""
        scope = self._scope(user, agent)
        receipt = self._store.delete_session(session, scope, keep_history=keep_history)
        self._derive(scope, written=[])
        return receipt

    def delete_scope(self, *, user: str | SameScope | None = SAME_SCOPE,
                     agent: str | SameScope | None = SAME_SCOPE) -> DeleteReceipt:
        """Delete everything stored for one (user, agent) scope, and only that scope: traces,
        history, derived rows and facts; returns the receipt (``receipt.traces``: how many)."""
        scope = self._scope(user, agent)
        receipt = self._store.delete_scope(scope)
        self._retriever.forget(scope)  # this process's in-memory index of it goes too
        return receipt

    def compact(self) -> CompactReport:
        """Rewrite the store's files without the space erasures freed (every scope; slow on a
        large store). SQLite already overwrites erased bytes (secure_delete); PostgreSQL needs
        this (VACUUM FULL) to drop deleted row versions from its files: see the receipt's
        ``retained`` and the returned ``retained`` for what stays."""
        done = self._store.compact()
        return CompactReport(store=done["store"], bytes_before=done["bytes_before"],
                             bytes_after=done["bytes_after"], retained=tuple(done.get("retained", ())),
                             checkpointed=done.get("checkpointed"),
                             done=tuple(done["done"]) if "done" in done else None)

    # -- export, import, backup ------------------------------------------------------------
    def export(self, *, all_scopes: bool = False, history: bool = False, include_id_key: bool = True,
               user: str | SameScope | None = SAME_SCOPE, agent: str | SameScope | None = SAME_SCOPE) -> Iterator[str]:
        """This scope's traces (every scope's with ``all_scopes=True``) as JSON lines, streamed:
        a header, one line per trace with its id, text, provenance, metadata (lifecycle flags
        included), attachments and version, then an end line with the counts. ``history=True``
        adds every trace's history events, and deleted traces' history (tombstones).

        Lines come in row order and each ends in ``\\n``; the same store gives the same bytes.
        The store is read page by page in one consistent read, held until the last line (read
        to the end, or ``close()`` the iterator). The header carries the store's secret id key,
        so ``import_export`` can give every trace its id again: an export is as sensitive as
        the store. ``include_id_key=False`` leaves it out (ids are then new on import). The
        format: zeromem.store.portable.
        """
        if not isinstance(all_scopes, bool):
            raise InvalidInput(f"all_scopes must be True or False, got {all_scopes!r}")
        if all_scopes and (user is not SAME_SCOPE or agent is not SAME_SCOPE):
            raise InvalidInput("all_scopes=True exports every scope: leave user and agent out")
        scope = None if all_scopes else self._scope(user, agent)
        return export_lines(self._store, scope, history=history, include_id_key=include_id_key)

    def import_export(self, source: str | Path | Iterable[str | bytes], *, new_ids: bool = False,
                      index: bool = True) -> RestoreReport:
        """Restore an export (a file path, or its lines) into this store, in its own scopes, in
        ONE transaction: a garbled, cut-short or refused line stores nothing (InvalidInput
        names it). Each trace keeps its id, version, times and history: the store must be
        empty (it takes the export's id key) or have that key with the ids free; otherwise
        ``new_ids=True`` gives the traces new ids. Derived indexes are rebuilt from the traces
        (now with ``index=True``, else at the next search)."""
        if not isinstance(index, bool):
            raise InvalidInput(f"index must be True or False, got {index!r}")
        report = restore_export(self._store, source, new_ids=new_ids, check_metadata=check_lifecycle_metadata)
        for scope in report.scopes:
            self._retriever.forget(scope)  # rebuilt from the store, which holds the restored rows
            if index:
                self._derive(scope, force=True)
        return report

    def backup(self, dest: str | Path) -> BackupReport:
        """Copy the whole SQLite store (every scope, derived rows and API keys too) into the new
        file ``dest`` while writers go on: a consistent version of it that opens as a store.
        PostgreSQL: InvalidInput naming ``pg_dump`` (backed up by its own tools)."""
        if not isinstance(dest, (str, Path)):
            raise InvalidInput(f"dest must be a file path, got {type(dest).__name__}")
        return BackupReport(**self._store.backup(Path(dest)))

    # -- reads --------------------------------------------------------------------------
    def get(self, trace_id: str, *, user: str | SameScope | None = SAME_SCOPE,
            agent: str | SameScope | None = SAME_SCOPE) -> Trace:
        """Return one trace by id (NotFound if it is not in this scope)."""
        return self._store.get(trace_id, self._scope(user, agent))

    def list(self, *, session: str | None = None, since: TimeLike = None, until: TimeLike = None,
             filters: Mapping[str, Any] | None = None, limit: int | None = None,
             offset: int = 0, user: str | SameScope | None = SAME_SCOPE,
             agent: str | SameScope | None = SAME_SCOPE) -> list[Trace]:
        """Traces of one scope in conversation order: of one ``session``, between ``since``
        and ``until``, whose metadata equals ``filters``; at most ``limit`` after ``offset``."""
        return self._store.list(self._scope(user, agent), session=session, since=since,
                                until=until, metadata=_as_dict(filters),
                                limit=limit, offset=offset)

    def history(self, trace_id: str, *, user: str | SameScope | None = SAME_SCOPE,
                agent: str | SameScope | None = SAME_SCOPE) -> builtins.list[HistoryEvent]:
        """Every add / update / delete event of a trace, oldest first."""
        return self._store.history(trace_id, self._scope(user, agent))

    def stats(self, *, all_scopes: bool = False, user: str | SameScope | None = SAME_SCOPE,
              agent: str | SameScope | None = SAME_SCOPE) -> Stats:
        """Counts of traces, sessions, characters, speakers, history events and derived units
        of this scope, or of the whole store with ``all_scopes=True``."""
        return Stats(**self._store.stats(None if all_scopes else self._scope(user, agent)))


    # -- derived indexes ----------------------------------------------------------------
    def _derive(self, scope: Scope, *, force: bool = False, written: Sequence[str] | None = None) -> None:
        """After a committed write: derive what it touched (``Config.index_on_write``), and
        compute the lifecycle signals of the traces it ``written`` (None: of every trace of
        the scope that lacks them).

        The write is already stored; a failure here (no model installed, a crash in an
        encoder) must not look like a failed write, so it is logged and the sessions stay
        marked dirty: the next ``index()`` or ``search()`` derives them, or says what is wrong.
        Once an encoder is known to be down, writes do not try again (search answers degraded
        meanwhile, see ``health``); reopening the memory does.
        """
        if not (self.config.index_on_write or force) or self._encoders.failures():
            return
        try:
            self._indexer.refresh(scope)
            parse = self._store.ids.parse
            self._lifecycle.refresh(scope, None if written is None else [int(parse(t)) for t in written])
        except EncoderFailure as exc:  # logged once; the next search derives what it can
            self._encoders.fail(exc.component, exc)
        except Exception as exc:  # noqa: BLE001 - reported, and retried by the next search
            _log.warning("zeromem: indexing after a write was deferred to the next search: %s", exc)

    @traced("zeromem.index", describe_refresh)
    def index(self, *, progress: bool = False, user: str | SameScope | None = SAME_SCOPE,
              agent: str | SameScope | None = SAME_SCOPE) -> RefreshReport:
        """Bring this scope's units, vectors and entity graph up to date with its traces."""
        scope = self._scope(user, agent)
        report = self._indexer.refresh(scope, progress=progress)
        self._lifecycle.refresh(scope)
        self._persist(scope)
        return report

    @traced("zeromem.reindex", describe_refresh)
    def reindex(self, *, progress: bool = False, user: str | SameScope | None = SAME_SCOPE,
                agent: str | SameScope | None = SAME_SCOPE) -> RefreshReport:
        """Throw away every derived unit of this scope and rebuild them from the traces."""
        scope = self._scope(user, agent)
        report = self._indexer.rebuild(scope, progress=progress)
        self._lifecycle.refresh(scope)
        self._persist(scope)
        return report

    def _persist(self, scope: Scope) -> None:
        """After bulk indexing: build the in-memory index of a large scope and persist it, so
        the first search (in this process or the next) does not derive it again."""
        if self._store.count(scope) >= max(1, self.config.retrieval.snapshot_min_turns):
            self._retriever.prepared(scope)
            self._retriever.save(scope)

    def health(self) -> Health:
        """Whether this memory can answer, and with which models (a server's readiness check).

        ``store`` is ``"ok"`` when a read of the store succeeds, else ``"error: <why>"``.
        ``embedder`` and ``ner`` are ``"ok"`` or ``"unavailable: <why>"``: each is loaded on the
        first call (seconds) and the outcome is kept, so later calls cost a store read.
        ``degraded`` has one line per unavailable model saying what searches skip without it.
        ``ready`` is True exactly when the store works: writes are accepted and searches
        answer, possibly degraded (a missing model never makes a write fail or a search
        raise). A model that failed is tried again only by a new ``Memory``. ``index_cache``
        reports the in-memory indexes of this process (``Config.index_cache_mb``).
        """
        return self._retriever.health(self.scope)

    # -- retrieval ------------------------------------------------------------------------
    def search(self, query: str, *, k: int = 10, session: str | None = None, as_of: TimeLike = None,
               filters: Mapping[str, Any] | None = None, user: str | SameScope | None = SAME_SCOPE,
               agent: str | SameScope | None = SAME_SCOPE, now: TimeLike = None) -> builtins.list[Evidence]:
        """Evidence for ``query``: at most ``k`` verbatim turns, best first, with provenance.

        No language model is called. ``as_of`` hides traces after that time; ``filters``
        keeps traces whose metadata equals the given values; ``now`` is when the question is
        asked (default: ``as_of``): "two days ago", "last weekend", 昨天 in the query are counted
        from its calendar day and the turns of that period rank first. Without either, relative
        times in the query are not resolved (the answer never depends on the clock).
        """
        return list(self.search_detailed(query, k=k, session=session, as_of=as_of, filters=filters,
                                         user=user, agent=agent, now=now).evidence)

    @traced("zeromem.search", describe_search)
    def search_detailed(self, query: str, *, k: int = 10, session: str | None = None,
                        as_of: TimeLike = None, filters: Mapping[str, Any] | None = None,
                        user: str | SameScope | None = SAME_SCOPE, agent: str | SameScope | None = SAME_SCOPE,
                        now: TimeLike = None) -> SearchResult:
        """Like ``search`` but also returns the no-answer score and verdict, ``degraded``: what
        the search had to do without (empty when every model works), and ``explain``: the
        route, what it read from the query, its timings and the no-answer inputs.

        When the embedder or the NER pipeline is missing or fails, search still answers from
        what works — BM25 and the hierarchy always, the graph if NER works, dense similarity if
        the embedder works — and ``degraded`` says which component failed, why, and what was
        skipped (docs/design.md#degraded-search).
        """
        found = self._retriever.search(self._scope(user, agent), query, k=k, session=session,
                                      as_of=as_of, filters=_as_dict(filters), now=now)
        return _public_result(found)

    @traced("zeromem.render_context", describe_render)
    def render_context(self, query: str, *, k: int = 10, budget_tokens: int | None = 2000,
                       session: str | None = None, as_of: TimeLike = None,
                       filters: Mapping[str, Any] | None = None, include_active: bool = False,
                       active_share: float = 0.5, user: str | SameScope | None = SAME_SCOPE,
                       agent: str | SameScope | None = SAME_SCOPE, now: TimeLike = None) -> RenderedContext:
        """The prompt block for ``query``: chronological evidence within ``budget_tokens``;
        its ``degraded`` says what the search had to do without (see ``search_detailed``).

        ``include_active``: active memory first (at most ``active_share`` of the budget, see
        ``active``), then the searched evidence it does not already show, all within the one
        budget (``budget_tokens=None`` gives active memory 1000 tokens and evidence no limit).
        """
        validate.clean_budget(budget_tokens)  # before the search: a bad budget costs nothing
        if include_active and (isinstance(active_share, bool) or not isinstance(active_share, (int, float))
                               or not 0.0 <= active_share <= 1.0):
            raise InvalidInput(f"active_share must be a number between 0 and 1, got {active_share!r}")
        result = self.search_detailed(query, k=k, session=session, as_of=as_of, filters=filters,
                                      user=user, agent=agent, now=now)
        if not include_active:
            rendered = self.render(result.evidence, budget_tokens=budget_tokens, user=user, agent=agent)
            return dataclasses.replace(rendered, degraded=tuple(result.degraded))
        cap = 1000 if budget_tokens is None else int(budget_tokens * active_share)
        active = self.active(max(cap, 1), as_of=as_of, user=user, agent=agent) if cap >= 1 else None
        entries = active.entries if active is not None else ()
        head = f"{ACTIVE_HEADING}\n{active.text}\n\n{EVIDENCE_HEADING}\n" if entries and active else ""
        shown = {e.trace_id for e in entries}
        rest = None if budget_tokens is None else budget_tokens - count_budget_tokens(head)
        evidence = [ev for ev in result.evidence if ev.trace_id not in shown]
        rendered = (self.render(evidence, budget_tokens=rest, user=user, agent=agent)
                    if rest is None or rest > 0 else RenderedContext("", (), 0))
        text = head + rendered.text
        return RenderedContext(text, rendered.evidence, count_budget_tokens(text),
                               degraded=tuple(result.degraded), active=tuple(entries))

    def render(self, evidence: Iterable[Evidence], *, budget_tokens: int | None = 2000,
               user: str | SameScope | None = SAME_SCOPE,
               agent: str | SameScope | None = SAME_SCOPE) -> RenderedContext:
        """The prompt block for evidence already retrieved (e.g. by ``search_detailed``)."""
        budget = validate.clean_budget(budget_tokens)
        listed = isinstance(evidence, Iterable) and not isinstance(evidence, (str, bytes, Mapping))
        items: builtins.list[Any] = list(evidence) if listed else [evidence]
        odd = [type(item).__name__ for item in items if not isinstance(item, Evidence)]
        if odd or not listed:
            raise InvalidInput(f"render takes a list of Evidence (what search returns), got "
                               f"{type(evidence).__name__ if not listed else 'a ' + odd[0] + ' in it'}")
        scope = self._scope(user, agent)
        scope_key(scope)  # a bad user / agent is an InvalidInput before it reaches the scope's lock
        return self._retriever.render(scope, items, budget)

    def answer(self, query: str, reader: Reader, *, k: int = 10, budget_tokens: int | None = 2000,
               calibrate: bool = True, user: str | SameScope | None = SAME_SCOPE,
               agent: str | SameScope | None = SAME_SCOPE) -> Answer:
        """The one LLM call of the loop: ``reader.answer(query, context)`` on rendered evidence,
        then deterministic answer calibration (docs/design.md#answer-calibration) against that same evidence: grounded
        or not, which traces support it, normalized to the question's answer type."""
        if not hasattr(reader, "answer"):
            raise InvalidInput("reader must have an answer(question, context) method; see zeromem.reader")
        context = self.render_context(query, k=k, budget_tokens=budget_tokens, user=user, agent=agent)
        reply: Any = reader.answer(query, context)
        raw = getattr(reply, "text", reply)
        if not isinstance(raw, str):
            raise InvalidInput(f"reader.answer must return text or an object with .text, got {type(reply).__name__}")
        if not calibrate:
            return Answer(raw, reply, None, context)
        calibrated = calibrate_answer(raw, query, list(context.evidence))
        return Answer(calibrated.text, reply, calibrated, context)

    # -- browsing (the inspector, MCP resources) ------------------------------------------
    def sessions(self, *, user: str | SameScope | None = SAME_SCOPE,
                 agent: str | SameScope | None = SAME_SCOPE) -> builtins.list[SessionInfo]:
        """The scope's sessions in conversation order: name, trace count, first and last time."""
        return [SessionInfo(**row) for row in self._store.sessions(self._scope(user, agent))]

    def neighbourhood(self, trace_id: str, *, limit: int = 20, user: str | SameScope | None = SAME_SCOPE,
                      agent: str | SameScope | None = SAME_SCOPE) -> Neighbourhood:
        """A trace's place in the entity–context graph: the entities its turn mentions (with
        how many turns of the scope mention each) and up to ``limit`` other traces that share
        an entity with it, most shared first. Derives the trace's session first if needed."""
        limit = validate.clean_int(limit, "limit")  # before any work (a slice bound below)
        scope = self._scope(user, agent)
        trace = self._store.get(trace_id, scope)
        if self._store.dirty_sessions(scope):
            self._derive(scope, force=True)
        entities, neighbours = self._store.trace_entities(scope, self._store.ids.parse(trace_id), limit)
        others = self._store.get_rowids([rowid for rowid, _ in neighbours])
        return Neighbourhood(
            trace=trace,
            entities=tuple(NeighbourEntity(entity=e, label=label, surface=surface, count=count, turns=df)
                           for e, label, surface, count, df in entities),
            neighbours=tuple(Neighbour(trace=others[rowid], shared=tuple(shared))
                             for rowid, shared in neighbours if rowid in others))

    # -- memory lifecycle (DMF: survival score, decay, active memory) ----------------------
    def active(self, budget_tokens: int = 1000, *, as_of: TimeLike = None, now: TimeLike = None,
               user: str | SameScope | None = SAME_SCOPE, agent: str | SameScope | None = SAME_SCOPE) -> ActiveMemory:
        """The active memory: the working set to put in every prompt, within ``budget_tokens``.

        Each trace gets a survival score Ω from its signals (information density, sentiment,
        entities, constraint / preference / state / correction cues, role, attachments,
        ``metadata['importance']``) that decays with the number of newer traces (Ω_eff); the
        highest Ω_eff stay, after pinned traces and the live thread (lifecycle/active.py).
        Superseded states, expired and archived traces leave (``.archived`` says why) but
        stay stored and searchable. Entries come in conversation order with ``trace_id``,
        ``text``, ``tokens`` (words and punctuation, the unit of every zeromem budget),
        ``omega``, ``omega_eff`` and ``signals``; ``.text`` is the prompt block. ``as_of``
        replays the memory as it stood at that time; ``now`` is the clock expiries are
        checked against (default: ``as_of``, else the current time). No LLM is called.
        """
        scope = self._scope(user, agent)
        if self._store.dirty_sessions(scope):
            self._derive(scope, force=True)
        return self._lifecycle.active(scope, budget_tokens, as_of=as_of, now=now)

    def cards(self, *, session: str | None = None, kind: str | None = None, since: TimeLike = None,
              until: TimeLike = None, limit: int | None = None, user: str | SameScope | None = SAME_SCOPE,
              agent: str | SameScope | None = SAME_SCOPE) -> builtins.list[Card]:
        """Cards of the scope's traces in conversation order: conservative subject–predicate–
        object readings (constraint, preference, state, event, relation, fact) from the
        dependency parse, each with its source ``trace_id`` and verbatim ``source_text``.
        Computed from the traces when asked (parsed once per trace version per process),
        never stored; ``limit`` caps the number of cards. No LLM is called."""
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
            raise InvalidInput(f"limit must be a positive int, got {limit!r}")
        scope = self._scope(user, agent)
        traces = self._store.list(scope, session=session, since=since, until=until)
        found = self._lifecycle.cards(scope, traces, kind=kind)
        return found if limit is None else found[:limit]

    def pin(self, trace_id: str, *, user: str | SameScope | None = SAME_SCOPE,
            agent: str | SameScope | None = SAME_SCOPE) -> Trace:
        """Keep a trace in active memory whatever its score (``metadata['pinned']``); an
        archived trace comes back (its ``archived`` flag goes). Returns the updated trace."""
        return self._set_flags(trace_id, {PINNED: True}, drop=ARCHIVED, user=user, agent=agent)

    def unpin(self, trace_id: str, *, user: str | SameScope | None = SAME_SCOPE,
              agent: str | SameScope | None = SAME_SCOPE) -> Trace:
        """Drop a trace's pin: it stays in active memory only while its score keeps it there.
        A trace that is not pinned is returned unchanged (no new version)."""
        return self._set_flags(trace_id, {}, drop=PINNED, user=user, agent=agent)

    def archive(self, trace_id: str, *, user: str | SameScope | None = SAME_SCOPE,
                agent: str | SameScope | None = SAME_SCOPE) -> Trace:
        """Take a trace out of active memory for good (``metadata['archived']``; a pin goes);
        it stays stored and searchable, and ``unarchive`` or ``pin`` bring it back."""
        return self._set_flags(trace_id, {ARCHIVED: True}, drop=PINNED, user=user, agent=agent)

    def unarchive(self, trace_id: str, *, user: str | SameScope | None = SAME_SCOPE,
                  agent: str | SameScope | None = SAME_SCOPE) -> Trace:
        """Drop a trace's ``archived`` flag: active memory may hold it again, by its score.
        A trace that is not archived is returned unchanged (no new version)."""
        return self._set_flags(trace_id, {}, drop=ARCHIVED, user=user, agent=agent)

    def _set_flags(self, trace_id: str, flags: dict[str, bool], *, drop: str,
                   user: str | SameScope | None, agent: str | SameScope | None) -> Trace:
        current = self.get(trace_id, user=user, agent=agent)
        if not flags and drop not in (current.metadata or {}):
            return current  # nothing to drop: no new version, no history event
        metadata = {k: v for k, v in (current.metadata or {}).items() if k != drop}
        return self.update(trace_id, metadata={**metadata, **flags}, user=user, agent=agent)



class ScopedMemory:
    """A ``Memory`` bound to one scope (``Memory.scoped``), without the ``user=`` / ``agent=``
    keywords: ``mem.scoped(user="ana").add("...")`` is ``mem.add("...", user="ana", agent=<mem's
    agent>)``. Each method is the ``Memory`` method of the same name (documented there) with
    the view's scope passed in, so a view does exactly what the memory does with those keywords
    (tests/test_scoped_memory.py checks both, operation by operation). Store-wide operations
    (``close``, ``compact``, ``backup``, ``import_export``, ``health``) stay on the ``Memory``,
    which the view reaches as ``.memory``; the view does not own it and never closes it.

    >>> from zeromem import Memory
    >>> ana = Memory(":memory:").scoped(user="ana")
    >>> tid = ana.add("I moved to Denver last week.", speaker="Ana", session="s1")
    >>> ana.get(tid).user
    'ana'
    """

    __slots__ = ("_memory", "_scope")

    def __init__(self, memory: Memory, scope: Scope) -> None:
        self._memory = memory
        self._scope = scope

    @property
    def memory(self) -> Memory:
        """The ``Memory`` this view reads and writes (store-wide operations live there)."""
        return self._memory

    @property
    def scope(self) -> Scope:
        """The (user, agent) scope of every call."""
        return self._scope

    @property
    def user(self) -> str | None:
        """The scope's user (None: no user)."""
        return self._scope.user

    @property
    def agent(self) -> str | None:
        """The scope's agent (None: no agent)."""
        return self._scope.agent

    def __repr__(self) -> str:
        return f"ScopedMemory({self._memory.path!r}, user={self.user!r}, agent={self.agent!r})"

    # -- writes -------------------------------------------------------------------------
    def add(self, text: str, *, session: str | None = None, speaker: str | None = None,
            role: str | None = None, session_time: TimeLike = None, event_time: TimeLike = None,
            seq: int | None = None, source_id: str | None = None,
            metadata: Mapping[str, Any] | None = None, attachments: Iterable[str] | None = None) -> str:
        """``Memory.add`` in this scope."""
        return self._memory.add(text, session=session, speaker=speaker, role=role, session_time=session_time,
                                event_time=event_time, seq=seq, source_id=source_id, metadata=metadata,
                                attachments=attachments, user=self.user, agent=self.agent)

    def add_many(self, traces: Iterable[Mapping[str, Any] | TraceDraft]) -> builtins.list[str]:
        """``Memory.add_many`` in this scope."""
        return self._memory.add_many(traces, user=self.user, agent=self.agent)

    def import_file(self, path: str | Path, *, format: str | None = None,
                    allow_duplicates: bool = False) -> ImportResult:
        """``Memory.import_file`` into this scope."""
        return self._memory.import_file(path, format=format, allow_duplicates=allow_duplicates,
                                        user=self.user, agent=self.agent)

    def update(self, trace_id: str, *, text: str | None = None, metadata: Mapping[str, Any] | None = None,
               keep_history: bool = True) -> Trace:
        """``Memory.update`` in this scope."""
        return self._memory.update(trace_id, text=text, metadata=metadata, keep_history=keep_history,
                                   user=self.user, agent=self.agent)

    def delete(self, trace_id: str, *, keep_history: bool = False) -> DeleteReceipt:
        """``Memory.delete`` in this scope."""
        return self._memory.delete(trace_id, keep_history=keep_history, user=self.user, agent=self.agent)

    def delete_session(self, session: str, *, keep_history: bool = False) -> DeleteReceipt:
        """``Memory.delete_session`` in this scope."""
        return self._memory.delete_session(session, keep_history=keep_history, user=self.user, agent=self.agent)

    def delete_scope(self) -> DeleteReceipt:
        """``Memory.delete_scope`` of this scope: everything stored for it goes."""
        return self._memory.delete_scope(user=self.user, agent=self.agent)

    def export(self, *, history: bool = False, include_id_key: bool = True) -> Iterator[str]:
        """``Memory.export`` of this scope."""
        return self._memory.export(history=history, include_id_key=include_id_key, user=self.user,
                                   agent=self.agent)

    # -- reads --------------------------------------------------------------------------
    def get(self, trace_id: str) -> Trace:
        """``Memory.get`` in this scope."""
        return self._memory.get(trace_id, user=self.user, agent=self.agent)

    def list(self, *, session: str | None = None, since: TimeLike = None, until: TimeLike = None,
             filters: Mapping[str, Any] | None = None, limit: int | None = None,
             offset: int = 0) -> builtins.list[Trace]:
        """``Memory.list`` of this scope."""
        return self._memory.list(session=session, since=since, until=until, filters=filters, limit=limit,
                                 offset=offset, user=self.user, agent=self.agent)

    def history(self, trace_id: str) -> builtins.list[HistoryEvent]:
        """``Memory.history`` in this scope."""
        return self._memory.history(trace_id, user=self.user, agent=self.agent)

    def stats(self) -> Stats:
        """``Memory.stats`` of this scope."""
        return self._memory.stats(user=self.user, agent=self.agent)

    def sessions(self) -> builtins.list[SessionInfo]:
        """``Memory.sessions`` of this scope."""
        return self._memory.sessions(user=self.user, agent=self.agent)

    def neighbourhood(self, trace_id: str, *, limit: int = 20) -> Neighbourhood:
        """``Memory.neighbourhood`` in this scope."""
        return self._memory.neighbourhood(trace_id, limit=limit, user=self.user, agent=self.agent)

    # -- derived indexes ----------------------------------------------------------------
    def index(self, *, progress: bool = False) -> RefreshReport:
        """``Memory.index`` of this scope."""
        return self._memory.index(progress=progress, user=self.user, agent=self.agent)

    def reindex(self, *, progress: bool = False) -> RefreshReport:
        """``Memory.reindex`` of this scope."""
        return self._memory.reindex(progress=progress, user=self.user, agent=self.agent)

    # -- retrieval ------------------------------------------------------------------------
    def search(self, query: str, *, k: int = 10, session: str | None = None, as_of: TimeLike = None,
               filters: Mapping[str, Any] | None = None, now: TimeLike = None) -> builtins.list[Evidence]:
        """``Memory.search`` in this scope."""
        return self._memory.search(query, k=k, session=session, as_of=as_of, filters=filters, now=now,
                                   user=self.user, agent=self.agent)

    def search_detailed(self, query: str, *, k: int = 10, session: str | None = None, as_of: TimeLike = None,
                        filters: Mapping[str, Any] | None = None, now: TimeLike = None) -> SearchResult:
        """``Memory.search_detailed`` in this scope."""
        return self._memory.search_detailed(query, k=k, session=session, as_of=as_of, filters=filters, now=now,
                                            user=self.user, agent=self.agent)

    def render_context(self, query: str, *, k: int = 10, budget_tokens: int | None = 2000,
                       session: str | None = None, as_of: TimeLike = None,
                       filters: Mapping[str, Any] | None = None, include_active: bool = False,
                       active_share: float = 0.5, now: TimeLike = None) -> RenderedContext:
        """``Memory.render_context`` in this scope."""
        return self._memory.render_context(query, k=k, budget_tokens=budget_tokens, session=session, as_of=as_of,
                                           filters=filters, include_active=include_active,
                                           active_share=active_share, now=now, user=self.user, agent=self.agent)

    def render(self, evidence: Iterable[Evidence], *, budget_tokens: int | None = 2000) -> RenderedContext:
        """``Memory.render`` in this scope."""
        return self._memory.render(evidence, budget_tokens=budget_tokens, user=self.user, agent=self.agent)

    def answer(self, query: str, reader: Reader, *, k: int = 10, budget_tokens: int | None = 2000,
               calibrate: bool = True) -> Answer:
        """``Memory.answer`` in this scope."""
        return self._memory.answer(query, reader, k=k, budget_tokens=budget_tokens, calibrate=calibrate,
                                   user=self.user, agent=self.agent)

    # -- memory lifecycle -----------------------------------------------------------------
    def active(self, budget_tokens: int = 1000, *, as_of: TimeLike = None, now: TimeLike = None) -> ActiveMemory:
        """``Memory.active`` of this scope."""
        return self._memory.active(budget_tokens, as_of=as_of, now=now, user=self.user, agent=self.agent)

    def cards(self, *, session: str | None = None, kind: str | None = None, since: TimeLike = None,
              until: TimeLike = None, limit: int | None = None) -> builtins.list[Card]:
        """``Memory.cards`` of this scope."""
        return self._memory.cards(session=session, kind=kind, since=since, until=until, limit=limit,
                                  user=self.user, agent=self.agent)

    def pin(self, trace_id: str) -> Trace:
        """``Memory.pin`` in this scope."""
        return self._memory.pin(trace_id, user=self.user, agent=self.agent)

    def unpin(self, trace_id: str) -> Trace:
        """``Memory.unpin`` in this scope."""
        return self._memory.unpin(trace_id, user=self.user, agent=self.agent)

    def archive(self, trace_id: str) -> Trace:
        """``Memory.archive`` in this scope."""
        return self._memory.archive(trace_id, user=self.user, agent=self.agent)

    def unarchive(self, trace_id: str) -> Trace:
        """``Memory.unarchive`` in this scope."""
        return self._memory.unarchive(trace_id, user=self.user, agent=self.agent)


def _public_result(found: engine.SearchResult) -> SearchResult:
    """The engine's result (its query profile, route and candidate pool are internal objects)
    as the public, frozen ``SearchResult``; ``no_answer`` is the no-answer model's own cut."""
    profile, inputs = found.profile, found.no_answer_inputs
    query = QuerySummary(subject=profile.subject, answer_type=profile.answer_type,
                         keywords=tuple(profile.keywords), names=tuple(profile.names),
                         time_cues=tuple((cue.first.isoformat(), cue.last.isoformat())
                                         for cue in profile.temporal_cues),
                         asks_time=profile.asks_time, aggregation=profile.aggregation)
    signals = None if inputs is None else NoAnswerSignals(**dataclasses.asdict(inputs))
    explain = SearchExplain(route=found.route.primary, route_weight=float(found.route.rho), query=query,
                            timings={stage: float(ms) for stage, ms in found.timings.items()},
                            no_answer_inputs=signals)
    score = float(found.no_answer_score)
    return SearchResult(evidence=tuple(found.evidence), no_answer_score=score,
                        no_answer=score >= NO_ANSWER_THRESHOLD, degraded=tuple(found.degraded),
                        explain=explain)


def _as_dict(value: Any) -> Any:
    """A metadata filter as a plain dict (None when empty); anything but a mapping goes on
    as it is, for the store's check to refuse with the fix."""
    if isinstance(value, Mapping):
        return dict(value) or None
    return value


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

