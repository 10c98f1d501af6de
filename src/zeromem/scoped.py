"""``ScopedMemory``: one (user, agent) scope of a ``Memory``, without the ``user=`` / ``agent=``
keywords every ``Memory`` method takes.

``Memory.scoped(user="ana")`` returns one. Each method is the ``Memory`` method of the same
name with the view's scope passed in, so a view does exactly what the memory does with those
keywords (tests/test_scoped_memory.py checks both, operation by operation). Store-wide
operations (``close``, ``compact``, ``backup``, ``import_export``, ``health``) stay on the
``Memory``, which the view reaches as ``.memory``; the view does not own it and never closes it.
"""

from __future__ import annotations

import builtins
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .indexes.indexer import RefreshReport
from .ingest import ImportResult
from .lifecycle.active import ActiveMemory
from .lifecycle.cards import Card
from .results import Neighbourhood, SearchResult, SessionInfo, Stats
from .retrieval.answer_calibration import Answer
from .retrieval.reading import Reader
from .retrieval.render import RenderedContext
from .store.base import DeleteReceipt, TraceDraft
from .types import Evidence, HistoryEvent, Scope, TimeLike, Trace

if TYPE_CHECKING:
    from .memory import Memory


class ScopedMemory:
    """A ``Memory`` bound to one scope: ``mem.scoped(user="ana").add("...")`` is
    ``mem.add("...", user="ana", agent=<mem's agent>)``. Every method is documented on the
    ``Memory`` method of the same name.

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
