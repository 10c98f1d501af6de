"""Mem0's Python API over zeromem: ``from zeromem.compat.mem0 import Memory`` instead of
``from mem0 import Memory``, with zero LLM calls.

``Memory`` and ``AsyncMemory`` have the method names, keyword arguments and return shapes of
mem0ai 2.2's ``mem0.Memory`` / ``mem0.AsyncMemory`` (add, search, get_all, get, update, delete,
delete_all, history, reset), over a ``zeromem.Memory``. What changes is what ``add`` does:
Mem0 asks an LLM to extract "facts" from the messages; zeromem stores every message verbatim,
one trace per message, and finds them again with its deterministic retrieval. ``infer=True``
(Mem0's default) therefore stores exactly what ``infer=False`` stores, and the result says so
in a top-level ``"note"``.

Mapping (docs/integrations.md has the full table):

- ``user_id`` → the zeromem scope's user, ``agent_id`` → its agent, ``run_id`` → the session.
  A zeromem scope is the (user, agent) pair: memories added with ``user_id="alice",
  agent_id="bot"`` are found by filters naming both, not by ``{"user_id": "alice"}`` alone.
- a message's ``role`` → the trace's role, its ``name`` → the speaker (Mem0's ``actor_id``);
  system messages are not memories and are skipped, as Mem0's ``infer=False`` skips them.
- ``metadata`` → the trace's metadata; other ``filters`` keys are metadata equality filters.
- ``timestamp`` → the trace's event time (Mem0's OSS refuses it; its platform takes it);
  ``expiration_date`` (YYYY-MM-DD) → ``metadata["expires_at"]``, the start of the next day in
  UTC: zeromem's search and active memory drop the trace from then on, as Mem0 hides it.
- ids are zeromem's trace ids (``"t4k2x9q7m"``); each result also carries ``"provenance"``
  (session, speaker, role, time, source id, seq, version, when it was recorded).

Refused with ``InvalidInput`` (a ``ValueError``, as Mem0 raises): anything that needs an LLM
(``memory_type="procedural_memory"``, ``prompt``, an ``llm`` / ``embedder`` / ``graph_store``
/ ``reranker`` / custom-prompt config), Mem0's advanced filter operators (zeromem filters
metadata by equality), and top-level ``user_id`` in ``search`` / ``get_all`` (Mem0 2.x refuses
those too: use ``filters``). A missing memory in update / delete is ``MemoryNotFound`` (a
``NotFound`` that is also a ``ValueError``, which is what Mem0 raises).
"""

from __future__ import annotations

import asyncio
import builtins
import datetime as dt
import hashlib
import logging
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from .._internals import store_of
from ..errors import InvalidInput, NotFound
from ..lifecycle.service import is_expired
from ..memory import Memory as ZeromemMemory
from ..store import validate
from ..types import Evidence, HistoryEvent, Scope, Trace

__all__ = ["INFER_NOTE", "UNSET", "AsyncMemory", "Mem0Core", "Memory", "MemoryNotFound", "check_config"]

_log = logging.getLogger("zeromem.compat.mem0")

INFER_NOTE = ("zeromem stored each message verbatim with zero LLM calls: infer=True extracts no "
              "facts and stores what infer=False stores")
ID_KEYS = ("user_id", "agent_id", "run_id")
# Identity fields Mem0 keeps out of metadata: the scope is set by the ids, never by metadata.
_IDENTITY_KEYS = (*ID_KEYS, "actor_id")
_EXPIRES = "expires_at"  # zeromem's lifecycle key (lifecycle/service.py)
_NEEDS_LLM = "needs a language model, and zeromem makes no LLM calls in memory operations"
# Mem0 config sections: ignored (zeromem keeps its own store) or refused (they need a model).
_IGNORED_CONFIG = ("vector_store", "history_db_path", "version")
_REFUSED_CONFIG = ("llm", "embedder", "graph_store", "reranker", "custom_instructions",
                   "custom_fact_extraction_prompt", "custom_update_memory_prompt")
UNSET: Any = object()  # "not given" where None means something (expiration_date=None clears)


class MemoryNotFound(NotFound, ValueError):
    """No memory with that id (in the scope asked): a zeromem ``NotFound`` and, as Mem0's own
    "Memory with id ... not found", a ``ValueError``."""


# -- the operations, in an explicit scope -------------------------------------------------------
class Mem0Core:
    """Mem0's operations over one ``zeromem.Memory``, each in an explicit (user, agent) scope.

    The Python ``Memory`` below finds the scope from the ids a call names (or from the stored
    memory, for calls by id); the REST routes (``interfaces/server/mem0_routes.py``) take it
    from the API key. Either way, nothing here reads or writes outside the scope it is given.
    """

    def __init__(self, memory: ZeromemMemory) -> None:
        self.memory = memory

    # -- writes ----------------------------------------------------------------------------------
    def add(self, messages: Any, scope: Scope, session: str | None, *,
            metadata: Mapping[str, Any] | None = None, timestamp: Any = None,
            expiration_date: Any = None, infer: bool = True) -> dict[str, Any]:
        """Store each message verbatim (one trace each, one transaction); Mem0's add result."""
        if not isinstance(infer, bool):
            raise InvalidInput(f"infer must be True or False, got {infer!r}")
        extra = clean_metadata(metadata, scope, session)
        expires = expires_at(expiration_date)
        if expires is not None:
            extra = {**(extra or {}), _EXPIRES: expires}
        event_time = validate.clean_time(timestamp, "timestamp") if timestamp is not None else None
        drafts = [{"text": msg["content"], "role": msg["role"], "speaker": msg.get("name"),
                   "session": session, "event_time": event_time, "metadata": extra}
                  for msg in messages_of(messages) if msg["role"] != "system"]
        ids = self.memory.add_many(drafts, user=scope.user, agent=scope.agent) if drafts else []
        results = [{"id": tid, "memory": d["text"], "event": "ADD", "actor_id": d["speaker"],
                    "role": d["role"]} for tid, d in zip(ids, drafts)]
        out: dict[str, Any] = {"results": results}
        if infer:
            out["note"] = INFER_NOTE
        return out

    def update(self, trace: Trace, *, text: str | None = None, metadata: Mapping[str, Any] | None = None,
               expiration_date: Any = UNSET) -> Trace:
        """Mem0's update: new text and/or metadata merged into the old (the old version stays in
        the history); ``expiration_date=None`` clears the expiry."""
        if text is None and metadata is None and expiration_date is UNSET:
            raise InvalidInput("At least one of text, metadata, or expiration_date must be provided.")
        if text is not None and not isinstance(text, str):
            raise InvalidInput(f"text must be a string, got {type(text).__name__}")
        merged: dict[str, Any] | None = None
        if metadata is not None or expiration_date is not UNSET:
            merged = dict(trace.metadata)
            merged.update(clean_metadata(metadata, trace.scope, trace.session) or {})
            if expiration_date is not UNSET:
                expires = expires_at(expiration_date)
                merged.pop(_EXPIRES, None)
                if expires is not None:
                    merged[_EXPIRES] = expires
        return self.memory.update(trace.id, text=text, metadata=merged, user=trace.user, agent=trace.agent)

    def delete_all(self, scope: Scope, session: str | None) -> int:
        """Delete every memory of the scope, or of one session of it; how many went."""
        if session is None:
            return self.memory.delete_scope(user=scope.user, agent=scope.agent).traces
        try:
            return self.memory.delete_session(session, user=scope.user, agent=scope.agent).traces
        except NotFound:
            return 0  # nothing stored for that run: Mem0 deletes nothing and says done

    # -- reads -----------------------------------------------------------------------------------
    def search(self, query: Any, scope: Scope, session: str | None, *, filters: Mapping[str, Any] | None,
               top_k: int, threshold: float | None = None, explain: bool = False,
               now: Any = None) -> builtins.list[dict[str, Any]]:
        """Mem0's search results: zeromem's evidence, best first, as Mem0 memories with a score."""
        top_k = check_top_k(top_k)
        if threshold is not None and (isinstance(threshold, bool) or not isinstance(threshold, (int, float))
                                      or not 0 <= threshold <= 1):
            raise InvalidInput(f"Invalid threshold: {threshold!r}. Must be between 0 and 1 (inclusive).")
        if not isinstance(query, str) or not query.strip():
            raise InvalidInput("Invalid query: must be a non-empty string.")
        if top_k == 0:
            return []
        result = self.memory.search_detailed(query.strip(), k=top_k, session=session, filters=filters or None,
                                             now=now, user=scope.user, agent=scope.agent)
        items = []
        for ev in result.evidence:
            if threshold is not None and ev.score < threshold:
                continue
            trace = self.memory.get(ev.trace_id, user=scope.user, agent=scope.agent)
            items.append(self.item(trace, evidence=ev, explain=explain))
        return items

    def list(self, scope: Scope, session: str | None, *, filters: Mapping[str, Any] | None,
             offset: int = 0, limit: int | None = None, show_expired: bool = False,
             since: Any = None, until: Any = None) -> tuple[builtins.list[dict[str, Any]], int]:
        """One page of the scope's memories in conversation order, and how many there are in
        all (expired ones left out unless ``show_expired``)."""
        traces = self.memory.list(session=session, filters=filters or None, since=since, until=until,
                                  user=scope.user, agent=scope.agent)
        if not show_expired:
            clock = _now().isoformat()
            traces = [t for t in traces if not is_expired(t.metadata.get(_EXPIRES), clock)]
        page = traces[offset:] if limit is None else traces[offset:offset + limit]
        return [self.item(t, with_score=False) for t in page], len(traces)

    def history(self, trace_id: str, scope: Scope) -> builtins.list[dict[str, Any]]:
        """Mem0's history rows of one memory, oldest first (NotFound outside the scope)."""
        events = self.memory.history(trace_id, user=scope.user, agent=scope.agent)
        try:
            trace: Trace | None = self.memory.get(trace_id, user=scope.user, agent=scope.agent)
        except NotFound:
            trace = None  # deleted: its history stays (tombstones unless kept)
        return history_rows(trace_id, events, trace)

    def item(self, trace: Trace, *, evidence: Evidence | None = None, explain: bool = False,
             with_score: bool = True) -> dict[str, Any]:
        """One memory as Mem0 shows it (``MemoryItem`` plus its promoted payload keys), with
        zeromem's provenance added."""
        metadata = {k: v for k, v in trace.metadata.items() if k != _EXPIRES}
        created = trace.event_time or trace.recorded_at
        updated = created
        if trace.version > 1:  # the time of the last change is in the history
            events = self.memory.history(trace.id, user=trace.user, agent=trace.agent)
            updated = events[-1].at if events else created
        out: dict[str, Any] = {"id": trace.id, "memory": trace.text, "hash": _md5(trace.text),
                               "metadata": metadata or None}
        if with_score:
            out["score"] = evidence.score if evidence is not None else None
        out.update(created_at=created, updated_at=updated)
        for key, value in (("user_id", trace.user), ("agent_id", trace.agent), ("run_id", trace.session),
                           ("actor_id", trace.speaker), ("role", trace.role),
                           ("expiration_date", expiration_date_of(trace.metadata.get(_EXPIRES)))):
            if value is not None:
                out[key] = value
        if explain and evidence is not None:
            out["score_details"] = dict(evidence.why)
        out["provenance"] = {"session": trace.session, "speaker": trace.speaker, "role": trace.role,
                             "time": trace.event_time or trace.session_time, "source_id": trace.source_id,
                             "seq": trace.seq, "version": trace.version, "recorded_at": trace.recorded_at}
        return out


# -- Mem0's Python API -----------------------------------------------------------------------------
class Memory:
    """Mem0's ``Memory`` over zeromem: same methods, keyword arguments and return shapes.

    ``store`` is a zeromem store path (a SQLite file, ``":memory:"``, a ``postgresql://`` URL;
    default: zeromem's default path) or a ``zeromem.Memory`` to share (then ``close`` leaves
    it open). ``config`` is a Mem0 config (a dict or a ``mem0.configs.base.MemoryConfig``),
    checked by ``check_config``: sections that need a model are refused, ``vector_store``,
    ``history_db_path`` and ``version`` are ignored (zeromem keeps one store of its own).
    Mem0's positional ``Memory(config)`` works too.

    >>> m = Memory(":memory:")
    >>> added = m.add("I'm vegetarian and allergic to nuts.", user_id="alice")
    >>> m.search("What can Alice eat?", filters={"user_id": "alice"})["results"][0]["memory"]
    "I'm vegetarian and allergic to nuts."
    """

    def __init__(self, store: str | Path | ZeromemMemory | None = None, config: Any = None) -> None:
        if config is None and (isinstance(store, Mapping) or hasattr(store, "model_dump")):
            store, config = None, store  # Mem0's Memory(config)
        check_config(config)
        if isinstance(store, ZeromemMemory):
            self._memory, self._owned = store, False
        elif store is None or isinstance(store, (str, Path)):
            self._memory, self._owned = ZeromemMemory(store), True
        else:
            raise InvalidInput(f"store must be a path, a URL or a zeromem.Memory, got {type(store).__name__}")
        self._core = Mem0Core(self._memory)
        # The scope of memories this instance deleted: Mem0's history(id) still answers for them.
        self._deleted: dict[str, Scope] = {}

    @classmethod
    def from_config(cls, config_dict: Mapping[str, Any], *, store: str | Path | ZeromemMemory | None = None
                    ) -> Memory:
        """Mem0's ``Memory.from_config``: the config is checked (see the class), the store is
        ``store`` (zeromem's default path when None)."""
        return cls(store, config=config_dict if config_dict is not None else {})

    @property
    def zeromem(self) -> ZeromemMemory:
        """The zeromem ``Memory`` underneath (for search_detailed, render_context, active...)."""
        return self._memory

    def close(self) -> None:
        """Close the store (unless it was a ``zeromem.Memory`` passed in: its owner closes it)."""
        if self._owned:
            self._memory.close()

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- writes ----------------------------------------------------------------------------------
    def add(self, messages: Any, *, user_id: str | None = None, agent_id: str | None = None,
            run_id: str | None = None, metadata: dict[str, Any] | None = None, timestamp: Any = None,
            expiration_date: Any = None, infer: bool = True, memory_type: str | None = None,
            prompt: str | None = None) -> dict[str, Any]:
        """Store ``messages`` (a string, a message dict, or a list of {"role", "content"[,
        "name"]}) verbatim, one memory per message; ``{"results": [{"id", "memory", "event":
        "ADD", "actor_id", "role"}], "note": ...}``. At least one of the ids is required."""
        refuse_llm_options(memory_type=memory_type, prompt=prompt)
        scope, session = scope_of(user_id, agent_id, run_id)
        return self._core.add(messages, scope, session, metadata=metadata, timestamp=timestamp,
                              expiration_date=expiration_date, infer=infer)

    def update(self, memory_id: str, text: str | None = None, metadata: dict[str, Any] | None = None,
               expiration_date: Any = UNSET, data: str | None = None) -> dict[str, str]:
        """Replace a memory's text and/or merge into its metadata; the old version stays in its
        history. ``data`` is Mem0's deprecated name of ``text``."""
        if data is not None and text is None:
            text = data
        if text is None and metadata is None and expiration_date is UNSET:  # before the lookup, as Mem0
            raise InvalidInput("At least one of text, metadata, or expiration_date must be provided.")
        self._core.update(self._locate(memory_id, "update"), text=text, metadata=metadata,
                          expiration_date=expiration_date)
        return {"message": "Memory updated successfully!"}

    def delete(self, memory_id: str) -> dict[str, str]:
        """Delete one memory and erase its text (zeromem's delete: the history keeps the events,
        without the text)."""
        trace = self._locate(memory_id, "delete")
        self._memory.delete(trace.id, user=trace.user, agent=trace.agent)
        self._deleted[trace.id] = trace.scope
        return {"message": "Memory deleted successfully!"}

    def delete_all(self, user_id: str | None = None, agent_id: str | None = None,
                   run_id: str | None = None) -> dict[str, str]:
        """Delete every memory of the (user, agent) scope the ids name, or of its ``run_id``
        session only."""
        if all(value is None for value in (user_id, agent_id, run_id)):
            raise InvalidInput("At least one filter is required to delete all memories. If you want to "
                               "delete all memories, use the `reset()` method.")
        scope, session = scope_of(user_id, agent_id, run_id)
        self._core.delete_all(scope, session)
        return {"message": "Memories deleted successfully!"}

    def reset(self) -> None:
        """Delete everything in the store, every scope (as Mem0's reset wipes its collection).
        API keys of ``zeromem serve`` stay."""
        for scope in store_of(self._memory).scopes():
            self._memory.delete_scope(user=scope.user, agent=scope.agent)
        self._deleted.clear()

    # -- reads -----------------------------------------------------------------------------------
    def get(self, memory_id: str) -> dict[str, Any] | None:
        """One memory by id, or None if there is none."""
        trace = self._find(memory_id)
        return self._core.item(trace) if trace is not None else None

    def get_all(self, *, filters: dict[str, Any] | None = None, top_k: int = 20, show_expired: bool = False,
                **kwargs: Any) -> dict[str, Any]:
        """``{"results": [...]}``: at most ``top_k`` memories of the scope ``filters`` names, in
        conversation order (``run_id`` narrows to one session, other keys match metadata)."""
        top_k = check_top_k(kwargs.pop("limit", top_k))  # `limit`: its name before Mem0 2.0
        reject_kwargs(kwargs, "get_all")
        scope, session, wanted = split_filters(filters)
        items, _ = self._core.list(scope, session, filters=wanted, limit=top_k, show_expired=show_expired)
        return {"results": items}

    def search(self, query: str, *, top_k: int = 20, filters: dict[str, Any] | None = None,
               threshold: float | None = None, rerank: bool = False, explain: bool = False,
               reference_date: Any = None, show_expired: bool = False, **kwargs: Any) -> dict[str, Any]:
        """``{"results": [...]}``: at most ``top_k`` memories for ``query``, best first, each with
        its ``score`` (zeromem's, in [0, 1]; ``threshold`` keeps those at or above it, none by
        default). ``reference_date`` is when the question is asked ("last week" counts from
        it); ``explain`` adds ``score_details`` (zeromem's ``why``); ``rerank`` changes
        nothing (zeromem's ranking is the one it has)."""
        top_k = check_top_k(kwargs.pop("limit", top_k))
        reject_kwargs(kwargs, "search")
        if show_expired:
            raise InvalidInput("zeromem's search always hides expired memories: list them with "
                               "get_all(..., show_expired=True)")
        scope, session, wanted = split_filters(filters)
        return {"results": self._core.search(query, scope, session, filters=wanted, top_k=top_k,
                                             threshold=threshold, explain=explain, now=reference_date)}

    def history(self, memory_id: str) -> builtins.list[dict[str, Any]]:
        """Every change of a memory, oldest first, as Mem0's history rows; [] for an unknown id.
        A memory deleted through another ``Memory`` instance has no scope left to find it by."""
        trace = self._find(memory_id)
        scope = trace.scope if trace is not None else self._deleted.get(memory_id)
        if scope is None:
            return []
        try:
            return self._core.history(memory_id, scope)
        except NotFound:
            return []

    def chat(self, query: str) -> Any:
        """Not implemented (as in Mem0)."""
        raise NotImplementedError("Chat function not implemented yet.")

    # -- helpers ---------------------------------------------------------------------------------
    def _find(self, memory_id: Any) -> Trace | None:
        """The stored trace with this id, in whatever scope it lives (the Python API is one
        tenant's, as Mem0's is: ids alone name memories), or None."""
        store = store_of(self._memory)
        try:
            rowid = store.ids.parse(memory_id)
        except NotFound:
            return None
        return store.get_rowids([rowid]).get(rowid)

    def _locate(self, memory_id: Any, action: str) -> Trace:
        trace = self._find(memory_id)
        if trace is None:
            raise MemoryNotFound(f"Memory with id {memory_id} not found. Please provide a valid 'memory_id' "
                                 f"to {action}")
        return trace


class AsyncMemory:
    """Mem0's ``AsyncMemory``: ``Memory``'s methods as coroutines, each run on a worker thread
    (``asyncio.to_thread``; zeromem's ``Memory`` is thread safe)."""

    def __init__(self, store: str | Path | ZeromemMemory | None = None, config: Any = None) -> None:
        self._sync = Memory(store, config)

    @classmethod
    def from_config(cls, config_dict: Mapping[str, Any], *, store: str | Path | ZeromemMemory | None = None
                    ) -> AsyncMemory:
        """As ``Memory.from_config``."""
        return cls(store, config=config_dict if config_dict is not None else {})

    @property
    def zeromem(self) -> ZeromemMemory:
        """The zeromem ``Memory`` underneath."""
        return self._sync.zeromem

    def close(self) -> None:
        """As ``Memory.close``."""
        self._sync.close()

    async def __aenter__(self) -> AsyncMemory:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.close()

    async def add(self, messages: Any, *, user_id: str | None = None, agent_id: str | None = None,
                  run_id: str | None = None, metadata: dict[str, Any] | None = None, timestamp: Any = None,
                  expiration_date: Any = None, infer: bool = True, memory_type: str | None = None,
                  prompt: str | None = None, llm: Any = None) -> dict[str, Any]:
        """As ``Memory.add`` (``llm``, a model for procedural memory, is refused)."""
        refuse_llm_options(llm=llm)
        return await asyncio.to_thread(
            self._sync.add, messages, user_id=user_id, agent_id=agent_id, run_id=run_id, metadata=metadata,
            timestamp=timestamp, expiration_date=expiration_date, infer=infer, memory_type=memory_type,
            prompt=prompt)

    async def get(self, memory_id: str) -> dict[str, Any] | None:
        """As ``Memory.get``."""
        return await asyncio.to_thread(self._sync.get, memory_id)

    async def get_all(self, *, filters: dict[str, Any] | None = None, top_k: int = 20,
                      show_expired: bool = False, **kwargs: Any) -> dict[str, Any]:
        """As ``Memory.get_all``."""
        return await asyncio.to_thread(self._sync.get_all, filters=filters, top_k=top_k,
                                       show_expired=show_expired, **kwargs)

    async def search(self, query: str, *, top_k: int = 20, filters: dict[str, Any] | None = None,
                     threshold: float | None = None, rerank: bool = False, explain: bool = False,
                     reference_date: Any = None, show_expired: bool = False, **kwargs: Any) -> dict[str, Any]:
        """As ``Memory.search``."""
        return await asyncio.to_thread(self._sync.search, query, top_k=top_k, filters=filters,
                                       threshold=threshold, rerank=rerank, explain=explain,
                                       reference_date=reference_date, show_expired=show_expired, **kwargs)

    async def update(self, memory_id: str, text: str | None = None, metadata: dict[str, Any] | None = None,
                     expiration_date: Any = UNSET, data: str | None = None) -> dict[str, str]:
        """As ``Memory.update``."""
        return await asyncio.to_thread(self._sync.update, memory_id, text, metadata, expiration_date, data)

    async def delete(self, memory_id: str) -> dict[str, str]:
        """As ``Memory.delete``."""
        return await asyncio.to_thread(self._sync.delete, memory_id)

    async def delete_all(self, user_id: str | None = None, agent_id: str | None = None,
                         run_id: str | None = None) -> dict[str, str]:
        """As ``Memory.delete_all``."""
        return await asyncio.to_thread(self._sync.delete_all, user_id, agent_id, run_id)

    async def history(self, memory_id: str) -> builtins.list[dict[str, Any]]:
        """As ``Memory.history``."""
        return await asyncio.to_thread(self._sync.history, memory_id)

    async def reset(self) -> None:
        """As ``Memory.reset``."""
        await asyncio.to_thread(self._sync.reset)

    async def chat(self, query: str) -> Any:
        """Not implemented (as in Mem0)."""
        raise NotImplementedError("Chat function not implemented yet.")


# -- shared checks and conversions (the REST routes use them too) ----------------------------------
def check_config(config: Any) -> None:
    """Refuse a Mem0 config that needs a model; log the sections zeromem ignores.

    A ``MemoryConfig`` object counts only where it differs from its defaults (Mem0 fills in an
    OpenAI LLM and embedder that nobody asked for). A zeromem ``Config`` belongs on the
    ``zeromem.Memory`` passed as the store, not here.
    """
    if config is None:
        return
    if hasattr(config, "model_dump") and not isinstance(config, Mapping):
        try:
            defaults = type(config)().model_dump(warnings=False)
        except Exception:  # noqa: BLE001 - a config class without defaults: every field counts
            defaults = {}
        given = {k: v for k, v in config.model_dump(warnings=False).items() if v != defaults.get(k, UNSET)}
    elif isinstance(config, Mapping):
        given = {k: v for k, v in config.items() if v is not None}
    else:
        raise InvalidInput(f"config must be a Mem0 config (a dict or MemoryConfig), got {type(config).__name__}: "
                           "a zeromem Config goes on the zeromem.Memory passed as the store")
    refused = [k for k in given if k in _REFUSED_CONFIG and given[k] not in ({}, "")]
    if refused:
        raise InvalidInput(f"the Mem0 config's {', '.join(sorted(refused))} {_NEEDS_LLM} (zeromem stores "
                           "messages verbatim and retrieves them with its own shipped models): remove "
                           "it; to choose zeromem's encoders pass a zeromem.Memory(config=zeromem.Config(...))")
    unknown = [k for k in given if k not in _REFUSED_CONFIG + _IGNORED_CONFIG]
    if unknown:
        raise InvalidInput(f"unknown Mem0 config keys {sorted(unknown)}; known: "
                           f"{sorted(_REFUSED_CONFIG + _IGNORED_CONFIG)}")
    ignored = sorted(k for k in given if k in _IGNORED_CONFIG)
    if ignored:
        _log.info("zeromem.compat.mem0: ignoring the Mem0 config's %s: memories live in the zeromem "
                  "store given as `store`", ", ".join(ignored))


def refuse_llm_options(*, memory_type: Any = None, prompt: Any = None, llm: Any = None) -> None:
    """InvalidInput for Mem0's ``add`` options that only make sense with an LLM."""
    if memory_type is not None:
        if memory_type != "procedural_memory":
            raise InvalidInput("Invalid 'memory_type'. Please pass procedural_memory to create procedural "
                               "memories.")
        raise InvalidInput(f"memory_type='procedural_memory' (an LLM's summary of the run) {_NEEDS_LLM}: "
                           "add the messages themselves")
    if prompt is not None:
        raise InvalidInput(f"prompt (instructions for Mem0's fact-extraction LLM) {_NEEDS_LLM}: leave it out; "
                           "every message is stored verbatim")
    if llm is not None:
        raise InvalidInput(f"llm (a model for procedural memory) {_NEEDS_LLM}: leave it out")


def entity_id(value: Any, name: str) -> str | None:
    """An id as Mem0 takes it: None, or text (an int becomes text) without spaces."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise InvalidInput(f"Invalid {name}: must be a string, got {type(value).__name__}")
    text = str(value).strip()
    if not text:
        raise InvalidInput(f"Invalid {name}: cannot be empty or whitespace-only. Provide a valid identifier.")
    if any(char.isspace() for char in text):
        raise InvalidInput(f"Invalid {name}: cannot contain whitespace. Provide a valid identifier without "
                           "spaces.")
    return text


def scope_of(user_id: Any, agent_id: Any, run_id: Any) -> tuple[Scope, str | None]:
    """Mem0's ids → (zeromem scope, session); at least one is required, as Mem0 requires."""
    user, agent, run = (entity_id(user_id, "user_id"), entity_id(agent_id, "agent_id"),
                        entity_id(run_id, "run_id"))
    if user is None and agent is None and run is None:
        raise InvalidInput("At least one of 'user_id', 'agent_id', or 'run_id' must be provided.")
    return Scope(user, agent), run


def split_filters(filters: Any) -> tuple[Scope, str | None, dict[str, Any]]:
    """Mem0's ``filters`` → (scope, session, metadata equality filters)."""
    if filters is None:
        filters = {}
    if not isinstance(filters, Mapping):
        raise InvalidInput(f"filters must be a dict, got {type(filters).__name__}")
    if not any(filters.get(key) is not None for key in ID_KEYS):
        raise InvalidInput("filters must contain at least one of: user_id, agent_id, run_id. "
                           "Example: filters={'user_id': 'u1'}")
    scope, session = scope_of(*(filters.get(key) for key in ID_KEYS))
    return scope, session, metadata_filters({k: v for k, v in filters.items() if k not in ID_KEYS})


def metadata_filters(filters: Mapping[str, Any]) -> dict[str, Any]:
    """Mem0 metadata filters zeromem can apply: equality (``{"k": v}`` or ``{"k": {"eq": v}}``)."""
    out: dict[str, Any] = {}
    for key, value in filters.items():
        if key in ("AND", "OR", "NOT"):
            raise InvalidInput(f"zeromem filters metadata by equality only: {key} is not supported; "
                               "pass {'key': value, ...} (every pair must match)")
        if key in ("actor_id", "app_id"):
            raise InvalidInput(f"filters[{key!r}] is not supported: zeromem scopes are user_id / agent_id, "
                               "sessions are run_id")
        if isinstance(value, Mapping):
            if set(value) == {"eq"}:
                value = value["eq"]
            else:
                raise InvalidInput(f"zeromem filters metadata by equality only: filters[{key!r}] = {value!r} "
                                   "is not supported; pass the value itself (or {'eq': value})")
        if value == "*":
            raise InvalidInput(f"zeromem filters metadata by equality only: the wildcard in filters[{key!r}] "
                               "is not supported; leave the key out")
        out[key] = value
    return out


def check_top_k(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInput("top_k must be a valid integer")
    if value < 0:
        raise InvalidInput(f"Invalid top_k: {value}. Must be a non-negative integer.")
    return value


def reject_kwargs(kwargs: Mapping[str, Any], method: str) -> None:
    """Mem0 2.x refuses ids as keyword arguments of search / get_all; zeromem refuses every
    other unknown keyword too, instead of ignoring a typo."""
    ids = sorted(set(kwargs) & {*ID_KEYS, "app_id"})
    if ids:
        raise InvalidInput(f"Top-level entity parameters {set(ids)} are not supported in {method}(). "
                           "Use filters={'user_id': '...'} instead.")
    if kwargs:
        raise InvalidInput(f"{method}() got unexpected keyword arguments {sorted(kwargs)}")


def messages_of(messages: Any) -> builtins.list[dict[str, Any]]:
    """Mem0's ``messages`` (a string, one message dict, or a list of them) as checked
    ``{"role", "content"[, "name"]}`` dicts; text content only."""
    if isinstance(messages, str):
        messages = [{"role": "user", "content": messages}]
    elif isinstance(messages, Mapping):
        messages = [messages]
    elif not isinstance(messages, list):
        raise InvalidInput(f"messages must be str, dict, or list[dict], got {type(messages).__name__}")
    out = []
    for index, message in enumerate(messages):
        if not isinstance(message, Mapping) or "role" not in message or "content" not in message:
            raise InvalidInput(f"message #{index} must be a dict with 'role' and 'content', got {message!r:.80}")
        role, content, name = message["role"], message["content"], message.get("name")
        if not isinstance(role, str):
            raise InvalidInput(f"message #{index}: role must be a string (user, assistant, tool or system), "
                               f"got {role!r}")
        if not isinstance(content, str):
            raise InvalidInput(f"message #{index}: content must be text, got {type(content).__name__}: images "
                               "and other parts are read by Mem0's vision LLM, and zeromem calls no LLM")
        if name is not None and not isinstance(name, str):
            raise InvalidInput(f"message #{index}: name must be a string, got {type(name).__name__}")
        out.append({"role": role, "content": content, "name": name})
    return out


def clean_metadata(metadata: Any, scope: Scope, session: str | None) -> dict[str, Any] | None:
    """The caller's metadata without Mem0's identity keys: one that repeats the memory's own id
    is dropped (as Mem0 accepts it), one that names another is refused (Mem0 drops it with a
    warning; zeromem does not lose what it was given)."""
    if metadata is None:
        return None
    if not isinstance(metadata, Mapping):
        raise InvalidInput(f"metadata must be a dict, got {type(metadata).__name__}")
    own = {"user_id": scope.user, "agent_id": scope.agent, "run_id": session, "actor_id": None}
    out = {}
    for key, value in metadata.items():
        if key in _IDENTITY_KEYS:
            if value == own[key]:
                continue
            hint = ("the message's 'name'" if key == "actor_id" else f"{key}=...")
            raise InvalidInput(f"metadata[{key!r}] = {value!r}: identity fields cannot be set through metadata; "
                               f"use {hint}")
        out[key] = value
    return out


def expires_at(value: Any) -> str | None:
    """Mem0's ``expiration_date`` (a YYYY-MM-DD date, a date or a datetime) as zeromem's
    ``expires_at``: the start of the next day, UTC (Mem0 hides a memory once its date is past)."""
    if value is None:
        return None
    if isinstance(value, dt.datetime):
        day = value.date()
    elif isinstance(value, dt.date):
        day = value
    elif isinstance(value, str):
        try:
            day = dt.date.fromisoformat(value)
        except ValueError:
            raise InvalidInput("expiration_date must be a valid date in YYYY-MM-DD format.") from None
    else:
        raise InvalidInput("expiration_date must be a date string in YYYY-MM-DD format.")
    return dt.datetime.combine(day + dt.timedelta(days=1), dt.time(), tzinfo=dt.UTC).isoformat()


def expiration_date_of(expires: Any) -> str | None:
    """``expires_at`` back as Mem0's ``expiration_date`` (the last day it is shown)."""
    if expires is None:
        return None
    try:
        when = dt.datetime.fromisoformat(str(validate.clean_time(expires, "expires_at")))
    except (InvalidInput, ValueError):
        return None
    if when.tzinfo is not None:
        when = when.astimezone(dt.UTC)
    day = when.date() - dt.timedelta(days=1) if when.time() == dt.time() else when.date()
    return day.isoformat()


def history_rows(trace_id: str, events: Iterable[HistoryEvent], trace: Trace | None
                 ) -> builtins.list[dict[str, Any]]:
    """zeromem history events as Mem0's history rows (``created_at``: the memory's, as its
    results show it; ``updated_at``: when this change happened)."""
    events = builtins.list(events)
    created = (trace.event_time or trace.recorded_at) if trace is not None else events[0].at if events else None
    return [{"id": f"{trace_id}:{index}", "memory_id": trace_id, "old_memory": ev.old_text,
             "new_memory": ev.new_text, "event": ev.event.upper(), "created_at": created,
             "updated_at": ev.at, "is_deleted": ev.event == "delete",
             "actor_id": trace.speaker if trace is not None else None,
             "role": trace.role if trace is not None else None}
            for index, ev in enumerate(events)]


def _md5(text: str) -> str:
    # Mem0's "hash" of a memory is the MD5 of its text; a checksum, not security.
    return hashlib.md5(text.encode("utf-8", "surrogatepass"), usedforsecurity=False).hexdigest()


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)
