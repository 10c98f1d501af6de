"""LangGraph's long-term memory store on zeromem: ``ZeromemStore``, a real
``langgraph.store.base.BaseStore`` over a ``zeromem.Memory``. No LLM is called by any of it.

``graph.compile(store=ZeromemStore(memory))`` gives every node (``runtime.store``,
``get_store()``) and LangMem's store tools a store whose items are zeromem traces: kept
verbatim with their history, erased for real by ``delete``, and found by zeromem's retrieval
(``search(..., query=...)``), with no embedding service to configure.

How a LangGraph item becomes a trace (the mapping is reversible: every read rebuilds the
namespace, key, value and times exactly):

- **Scope.** The namespace element at ``user_at`` (default 1: LangMem's
  ``("memories", user_id)``; 0 for ``(user_id, "memories")``; None: never) names the zeromem
  user; a namespace too short to hold it lives in the store's home scope (the memory's own
  user, or the pinned one). The agent is the memory's own agent (or ``agent=``). A store
  pinned with ``user="alice"`` refuses a namespace that names another user (InvalidInput):
  nothing it does can reach another scope.
- **Session.** Each namespace is one zeromem session, named ``langgraph:`` + the namespace as
  a JSON array (``langgraph:["memories","alice"]``): reversible for any label, and never a
  name LangGraph could give (its namespaces cannot start with ``"langgraph"``).
- **Trace.** The text is what the item says: the string leaves of the value in order (LangMem's
  ``{"content": "..."}`` → its content), or the fields named by the store's
  ``index={"fields": [...]}`` or by ``put(..., index=[...])``. The value itself, verbatim, the
  key and the times live in ``metadata["langgraph"]``; the key also in
  ``metadata["langgraph_key"]`` (a ``get`` is one filtered read of the namespace's session).
- **Updates and deletes.** ``put`` on an existing key is ``Memory.update`` (the history keeps
  every version); ``put(ns, key, None)`` and ``delete`` are ``Memory.delete`` (erased).
- **TTL.** ``put(..., ttl=minutes)`` sets the trace's ``expires_at`` (zeromem's own expiry:
  search hides it); expired items are never returned, and ``sweep_ttl`` deletes them.

docs/integrations.md (LangGraph) has the details: ordering, filters, limits.
"""

from __future__ import annotations

import asyncio
import json
import math
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from .._internals import store_of
from ..errors import InvalidInput, NotFound
from ..interfaces.extras import require
from ..memory import Memory
from ..store import validate
from ..types import SAME_SCOPE, Evidence, SameScope, Scope, Trace

# The class below subclasses LangGraph's BaseStore, so the framework is needed to define it:
# without the extra, importing this module says which one to install instead of an ImportError.
require("langgraph", "zeromem.integrations.langgraph")

from langgraph.store.base import (  # noqa: E402 - after the check above, on purpose
    BaseStore,
    GetOp,
    IndexConfig,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    TTLConfig,
    get_text_at_path,
    tokenize_path,
)

__all__ = ["ITEM_KEY", "KEY_FIELD", "SESSION_PREFIX", "InvalidNamespace", "ZeromemItem", "ZeromemSearchItem",
           "ZeromemStore", "namespace_of_session", "session_of_namespace"]

# Reserved metadata keys: a trace carrying ITEM_KEY (in a SESSION_PREFIX session) is an item.
ITEM_KEY = "langgraph"
KEY_FIELD = "langgraph_key"  # the key again, top level: Memory.list can filter on it
EXPIRES_AT = "expires_at"  # zeromem's lifecycle expiry (search hides the trace after it)
SESSION_PREFIX = "langgraph:"
_MAX_SESSION_CHARS = 1000  # a zeromem session name's limit
_OPERATORS = frozenset({"$eq", "$ne", "$gt", "$gte", "$lt", "$lte"})
_TTL_KEYS = frozenset({"refresh_on_read", "default_ttl", "sweep_interval_minutes", "omit_expired"})


class InvalidNamespace(InvalidInput, InvalidNamespaceError):
    """A namespace (or prefix) that cannot be used: catchable as zeromem's InvalidInput and as
    LangGraph's InvalidNamespaceError."""


class ZeromemItem(Item):
    """A LangGraph ``Item`` that also says which zeromem trace holds it (``trace_id``: pass it
    to ``Memory.get`` / ``Memory.history``)."""

    __slots__ = ("trace_id",)

    def __init__(self, *, value: dict[str, Any], key: str, namespace: tuple[str, ...],
                 created_at: datetime, updated_at: datetime, trace_id: str) -> None:
        super().__init__(value=value, key=key, namespace=namespace, created_at=created_at,
                         updated_at=updated_at)
        self.trace_id = trace_id


class ZeromemSearchItem(SearchItem):
    """A LangGraph ``SearchItem`` with its zeromem provenance: ``trace_id``, and for a query
    search the ``evidence`` zeromem ranked it by (its ``score``, ``session``, ``time``,
    ``why``); ``evidence`` is None for a search without a query. ``dict()`` is LangGraph's."""

    __slots__ = ("evidence", "trace_id")

    def __init__(self, namespace: tuple[str, ...], key: str, value: dict[str, Any], created_at: datetime,
                 updated_at: datetime, score: float | None = None, *, trace_id: str,
                 evidence: Evidence | None = None) -> None:
        super().__init__(namespace, key, value, created_at, updated_at, score)
        self.trace_id = trace_id
        self.evidence = evidence


def session_of_namespace(namespace: tuple[str, ...]) -> str:
    """The zeromem session that holds a namespace's items: ``langgraph:`` + a JSON array."""
    return SESSION_PREFIX + json.dumps(list(namespace), ensure_ascii=False, separators=(",", ":"))


def namespace_of_session(session: str | None) -> tuple[str, ...] | None:
    """The namespace a session holds (``session_of_namespace`` reversed); None for a session
    the adapter did not name."""
    if not session or not session.startswith(SESSION_PREFIX):
        return None
    try:
        parts = json.loads(session[len(SESSION_PREFIX):])
    except ValueError:
        return None
    if not isinstance(parts, list) or not parts or not all(isinstance(p, str) and p for p in parts):
        return None
    return tuple(parts)


@dataclass(frozen=True, slots=True)
class _Stored:
    """One item as a trace holds it."""

    trace: Trace
    namespace: tuple[str, ...]
    key: str
    value: dict[str, Any]
    created_at: datetime
    updated_at: datetime
    indexed: bool
    ttl: float | None
    expires_at: datetime | None

    def expired(self, now: datetime) -> bool:
        return self.expires_at is not None and self.expires_at <= now


@dataclass(frozen=True, slots=True)
class _Put:
    """A checked PutOp: where it goes and what the trace will hold (value None: delete)."""

    scope: Scope
    session: str
    namespace: tuple[str, ...]
    key: str
    value: dict[str, Any] | None
    text: str
    indexed: bool
    ttl: float | None


@dataclass(frozen=True, slots=True)
class _Search:
    prefix: tuple[str, ...]
    scopes: tuple[Scope, ...] | None  # None: every scope the store reaches (read when run)
    filter: dict[str, Any]
    limit: int
    offset: int
    query: str | None
    refresh: bool


class ZeromemStore(BaseStore):
    """A LangGraph ``BaseStore`` whose items are traces of a zeromem ``Memory``.

    ``memory``: the Memory to keep items in (the store does not close it).
    ``user_at``: the position of the user id in a namespace (1: ``("memories", user)``, as
    LangMem; 0: ``(user, ...)``; None: namespaces never name a user).
    ``user``: pin the store to one user: every namespace lands in that user's scope and one
    that names another user is refused (what a server gives each tenant). Default: not pinned;
    the home scope (of namespaces too short to name a user) is then the memory's own.
    ``agent``: the agent of every scope (default: the memory's own).
    ``index``: ``{"fields": [...]}``, the value paths whose text is indexed (LangGraph's path
    syntax; ``"$"`` is the whole value). Default: every string in the value, in order. zeromem
    embeds with its own models, so ``dims`` and ``embed`` are refused.
    ``ttl``: LangGraph's ``TTLConfig`` (``default_ttl`` and ``refresh_on_read`` as LangGraph
    defines them; ``sweep_interval_minutes``: ``sweep_ttl`` runs at the end of a batch when
    that long has passed since the last; expired items are always left out of reads).

    Ops of a batch run in order (consecutive puts as one step: the last put of a key wins,
    new items of a scope are added in one transaction). ``abatch`` runs ``batch`` in a worker
    thread, so an event loop is never blocked by the store or the models.
    """

    supports_ttl = True

    def __init__(self, memory: Memory, *, user_at: int | None = 1, user: str | None = None,
                 agent: str | SameScope | None = SAME_SCOPE, index: IndexConfig | None = None,
                 ttl: TTLConfig | None = None) -> None:
        if not isinstance(memory, Memory):
            raise InvalidInput(f"ZeromemStore needs a zeromem Memory, got {type(memory).__name__}")
        if user_at is not None and (isinstance(user_at, bool) or not isinstance(user_at, int) or user_at < 0):
            raise InvalidInput(f"user_at must be a namespace position (an int >= 0) or None, got {user_at!r}")
        self.memory = memory
        self.user_at = user_at
        self.user = validate.clean_scope_part(user, "user")
        self.agent = validate.clean_scope_part(memory.scope.agent if agent is SAME_SCOPE else agent, "agent")
        self.home = Scope(self.user if self.user is not None else memory.scope.user, self.agent)
        self.fields = _index_fields(index)
        self.ttl_config = _ttl_config(ttl)
        self._lock = threading.RLock()  # puts and TTL refreshes: read-then-write of one key
        self._last_sweep = time.monotonic()

    def __repr__(self) -> str:
        pinned = f", user={self.user!r}" if self.user is not None else ""
        return f"ZeromemStore({self.memory.path!r}, user_at={self.user_at!r}{pinned}, agent={self.agent!r})"

    # -- BaseStore ------------------------------------------------------------------------
    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run get / put / search / list-namespaces ops in order; one result per op."""
        if isinstance(ops, (str, bytes, Mapping)) or not isinstance(ops, Iterable):
            raise InvalidInput(f"batch takes a list of LangGraph ops, got {type(ops).__name__}")
        listed = list(ops)
        checked = [self._check(op) for op in listed]  # every op is checked before any runs
        results: list[Result] = [None] * len(listed)
        start = 0
        while start < len(listed):
            if isinstance(checked[start], _Put):
                end = start
                while end < len(listed) and isinstance(checked[end], _Put):
                    end += 1
                self._put_all([p for p in checked[start:end] if isinstance(p, _Put)])
                start = end
                continue
            results[start] = self._run(listed[start], checked[start])
            start += 1
        self._sweep_if_due()
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """``batch`` in a worker thread (the store and the models are blocking code)."""
        listed = list(ops) if isinstance(ops, Iterable) and not isinstance(ops, (str, bytes, Mapping)) else ops
        return await asyncio.to_thread(self.batch, listed)

    # -- TTL ------------------------------------------------------------------------------
    def sweep_ttl(self) -> int:
        """Delete (erase, as ``delete`` does) every expired item the store can reach; returns
        how many. Reads never return expired items, so this only frees their space."""
        store = store_of(self.memory)
        now = _now()
        deleted = 0
        for scope in self._reachable_scopes():
            expiring = store.expiring(scope)  # traces with an expiry only (an indexed read)
            for trace in store.get_rowids(sorted(expiring)).values():
                stored = self._read(trace, scope)
                if stored is None or stored.ttl is None or not stored.expired(now):
                    continue
                with self._lock:  # a put or refresh since the read gave it a new expiry: keep it
                    try:
                        if self.memory.get(trace.id, user=scope.user, agent=scope.agent).version != trace.version:
                            continue
                        self.memory.delete(trace.id, user=scope.user, agent=scope.agent)
                    except NotFound:  # deleted meanwhile (another process): nothing to do
                        continue
                deleted += 1
        return deleted

    async def asweep_ttl(self) -> int:
        """``sweep_ttl`` in a worker thread."""
        return await asyncio.to_thread(self.sweep_ttl)

    def _sweep_if_due(self) -> None:
        interval = (self.ttl_config or {}).get("sweep_interval_minutes")
        if interval and time.monotonic() - self._last_sweep >= interval * 60:
            self._last_sweep = time.monotonic()
            self.sweep_ttl()

    # -- checking -------------------------------------------------------------------------
    def _check(self, op: Any) -> object:
        if isinstance(op, GetOp):
            namespace = self._namespace(op.namespace)
            return (self._scope_of(namespace), _session(namespace), _key(op.key), _flag(op.refresh_ttl))
        if isinstance(op, PutOp):
            return self._check_put(op)
        if isinstance(op, SearchOp):
            prefix = self._namespace(op.namespace_prefix, what="namespace_prefix", empty_ok=True)
            query = op.query
            if query is not None and not isinstance(query, str):
                raise InvalidInput(f"query must be text or None, got {type(query).__name__}")
            return _Search(prefix, self._scopes_under(prefix, wildcards=False), _check_filter(op.filter),
                           _count(op.limit, "limit"), _count(op.offset, "offset"),
                           query if query and query.strip() else None,
                           _flag(op.refresh_ttl))
        if isinstance(op, ListNamespacesOp):
            conditions = op.match_conditions or ()
            if not isinstance(conditions, (tuple, list)) or not all(isinstance(c, MatchCondition)
                                                                    for c in conditions):
                raise InvalidInput("match_conditions must be a tuple of MatchCondition")
            for condition in conditions:
                if condition.match_type not in ("prefix", "suffix"):
                    raise InvalidInput(f"match_type must be 'prefix' or 'suffix', got {condition.match_type!r}")
                self._namespace(condition.path, what=f"{condition.match_type} path", empty_ok=True)
            depth = op.max_depth
            if depth is not None and (isinstance(depth, bool) or not isinstance(depth, int) or depth < 1):
                raise InvalidInput(f"max_depth must be an int >= 1 or None, got {depth!r}")
            # a prefix that names the user narrows the listing to that scope (refused if not the pin)
            reach = [self._scopes_under(tuple(c.path), wildcards=True) for c in conditions if c.match_type == "prefix"]
            return _count(op.limit, "limit"), _count(op.offset, "offset"), reach[-1] if reach else None
        raise InvalidInput(f"unknown LangGraph op {type(op).__name__}: expected GetOp, PutOp, SearchOp "
                           "or ListNamespacesOp")

    def _check_put(self, op: PutOp) -> _Put:
        namespace = self._namespace(op.namespace)
        if namespace[0] == "langgraph":
            raise InvalidNamespace(f'a namespace cannot start with "langgraph" (LangGraph reserves it): {namespace}')
        key = _key(op.key)
        scope, session = self._scope_of(namespace), _session(namespace)
        if op.value is None:
            return _Put(scope, session, namespace, key, None, "", False, None)
        if not isinstance(op.value, Mapping):
            raise InvalidInput(f"an item's value must be a dict (or None to delete it), got {type(op.value).__name__}")
        value = dict(op.value)
        validate.clean_metadata(value, "value")  # JSON at every depth: kept and given back verbatim
        ttl = op.ttl
        if ttl is not None and (isinstance(ttl, bool) or not isinstance(ttl, (int, float))
                                or not math.isfinite(ttl) or ttl <= 0):
            raise InvalidInput(f"ttl must be a positive number of minutes or None, got {ttl!r}")
        fields = self.fields if op.index is None or op.index is False else _paths(op.index)
        text = "" if op.index is False else _indexed_text(value, fields)
        indexed = bool(text)
        if not indexed:
            # The trace needs a text; this one says what the trace is and matches no query.
            text = f"(not indexed) LangGraph item {json.dumps(key, ensure_ascii=False)}"
        text = validate.clean_text(text, field=f"the indexed text of item {key!r}",
                                   max_chars=self.memory.config.max_text_chars)
        checked = _Put(scope, session, namespace, key, value, text, indexed, None if ttl is None else float(ttl))
        now = _now()
        validate.clean_metadata(_metadata(checked, now, now), "metadata")  # its size, before any write
        return checked

    def _namespace(self, namespace: Any, *, what: str = "namespace", empty_ok: bool = False) -> tuple[str, ...]:
        if not isinstance(namespace, tuple):
            raise InvalidNamespace(f"{what} must be a tuple of strings, e.g. ('memories', 'alice'), "
                                   f"got {type(namespace).__name__}")
        if not namespace and not empty_ok:
            raise InvalidNamespace(f"{what} is empty: name at least one label, e.g. ('memories',)")
        for label in namespace:
            if not isinstance(label, str):
                raise InvalidNamespace(f"{what} {namespace!r} has the {type(label).__name__} label {label!r}: "
                                       "labels are strings")
            if not label or "." in label or "\x00" in label:
                raise InvalidNamespace(f"{what} {namespace!r} has the label {label!r}: labels are non-empty and "
                                       "hold no period or NUL (LangGraph's rule)")
        return namespace

    def _scope_of(self, namespace: tuple[str, ...]) -> Scope:
        """The scope of a namespace (or of a prefix long enough to name the user)."""
        if self.user_at is None or len(namespace) <= self.user_at:
            return self.home
        named = namespace[self.user_at]
        if self.user is not None and named != self.user:
            raise InvalidInput(f"namespace {namespace!r} names the user {named!r}, but this store is pinned to "
                               f"user {self.user!r}: it cannot read or write another user's memory")
        try:
            return Scope(validate.clean_scope_part(named, "user"), self.agent)
        except InvalidInput as exc:
            raise InvalidNamespace(f"namespace {namespace!r} names the user at position {self.user_at}, "
                                   f"which is not a usable zeromem user: {exc}") from None

    def _maps_to(self, namespace: tuple[str, ...], scope: Scope) -> bool:
        """Whether this store puts ``namespace`` in ``scope`` (an item it did not, under another
        ``user_at``, say, is not one this store can see)."""
        try:
            return self._scope_of(namespace) == scope
        except InvalidInput:
            return False

    def _scopes_under(self, prefix: tuple[str, ...], *, wildcards: bool) -> tuple[Scope, ...] | None:
        """The scopes a prefix can reach: one when it names the user (or the store is pinned or
        namespaces never name one), else None: every scope of the store's agent."""
        named = self.user_at is not None and len(prefix) > self.user_at
        if named and not (wildcards and prefix[self.user_at or 0] == "*"):
            return (self._scope_of(prefix),)
        if self.user is not None or self.user_at is None:
            return (self.home,)
        return None

    def _reachable_scopes(self, scopes: tuple[Scope, ...] | None = None) -> list[Scope]:
        if scopes is not None:
            return list(scopes)
        if self.user is not None or self.user_at is None:
            return [self.home]
        found = {scope for scope in store_of(self.memory).scopes() if scope.agent == self.agent}
        found.add(self.home)
        return sorted(found, key=lambda scope: scope.key)

    # -- running --------------------------------------------------------------------------
    def _run(self, op: Op, checked: Any) -> Result:
        if isinstance(op, GetOp):
            scope, session, key, refresh = checked
            return self._get(scope, session, op.namespace, key, refresh)
        if isinstance(op, SearchOp):
            return self._search_query(checked) if checked.query else self._search_all(checked)
        if isinstance(op, ListNamespacesOp):
            limit, offset, scopes = checked
            return self._list_namespaces(tuple(op.match_conditions or ()), scopes, op.max_depth, limit, offset)
        raise AssertionError(op)  # puts run in _put_all

    def _get(self, scope: Scope, session: str, namespace: tuple[str, ...], key: str,
             refresh: bool) -> ZeromemItem | None:
        found = self._versions(scope, session, namespace, key)
        if not found or found[0].expired(_now()):
            return None
        stored = self._refreshed(found[0], scope) if refresh else found[0]
        return ZeromemItem(value=stored.value, key=key, namespace=namespace, created_at=stored.created_at,
                           updated_at=stored.updated_at, trace_id=stored.trace.id)

    def _versions(self, scope: Scope, session: str, namespace: tuple[str, ...], key: str) -> list[_Stored]:
        """The traces holding (namespace, key), newest first (one, unless two processes
        created the key at once): one read of the session, filtered on the key in SQL."""
        traces = self.memory.list(session=session, filters={KEY_FIELD: key}, user=scope.user, agent=scope.agent)
        found = [s for s in (self._read(t, scope) for t in traces)
                 if s is not None and s.namespace == namespace and s.key == key]
        return sorted(found, key=lambda s: (s.updated_at, s.trace.seq), reverse=True)

    def _put_all(self, puts: Sequence[_Put]) -> None:
        last: dict[tuple[tuple[str, ...], str], _Put] = {}
        for put in puts:  # the last put of a key wins, as if each had run in turn
            last.pop((put.namespace, put.key), None)
            last[(put.namespace, put.key)] = put
        with self._lock:
            added: dict[Scope, list[dict[str, Any]]] = {}
            for put in last.values():
                scope = put.scope
                found = self._versions(scope, put.session, put.namespace, put.key)
                now = _now()
                if put.value is None:
                    for stored in found:
                        self.memory.delete(stored.trace.id, user=scope.user, agent=scope.agent)
                    continue
                metadata = _metadata(put, found[0].created_at if found else now, now)
                if not found:
                    added.setdefault(scope, []).append({"text": put.text, "session": put.session,
                                                        "metadata": metadata})
                    continue
                self.memory.update(found[0].trace.id, text=put.text, metadata=metadata,
                                   user=scope.user, agent=scope.agent)
                for stale in found[1:]:  # a duplicate from a concurrent create: one item remains
                    self.memory.delete(stale.trace.id, user=scope.user, agent=scope.agent)
            for scope, drafts in added.items():
                self.memory.add_many(drafts, user=scope.user, agent=scope.agent)

    def _refreshed(self, stored: _Stored, scope: Scope) -> _Stored:
        """Push back the expiry of an item just read (TTL refresh on read).

        Each refresh is a metadata update, so it is skipped while the expiry would move by
        less than a tenth of the TTL (at most a minute): a burst of reads costs one write.
        """
        if stored.ttl is None:
            return stored
        ttl = timedelta(minutes=stored.ttl)
        expires = _now() + ttl
        if stored.expires_at is not None and expires - stored.expires_at < min(ttl / 10, timedelta(minutes=1)):
            return stored
        with self._lock:
            current = self.memory.get(stored.trace.id, user=scope.user, agent=scope.agent)
            if current.version != stored.trace.version:
                return stored  # written since it was read: that write set a fresh expiry
            metadata = {**current.metadata, EXPIRES_AT: _iso(expires)}
            trace = self.memory.update(current.id, metadata=metadata, user=scope.user, agent=scope.agent)
        return self._read(trace, scope) or stored

    def _sessions(self, scope: Scope, prefix: tuple[str, ...]) -> list[tuple[str, tuple[str, ...]]]:
        """(session, namespace) of the scope's namespaces under ``prefix``."""
        found = []
        for info in self.memory.sessions(user=scope.user, agent=scope.agent):
            namespace = namespace_of_session(info.session)
            if (namespace is not None and namespace[:len(prefix)] == prefix
                    and self._maps_to(namespace, scope) and info.session is not None):
                found.append((info.session, namespace))
        return found

    def _search_all(self, search: _Search) -> list[SearchItem]:
        """No query: the items under the prefix that pass the filter, most recently updated
        first (ties: namespace, then key), paged."""
        now = _now()
        items: list[_Stored] = []
        for scope in self._reachable_scopes(search.scopes):
            for session, _ in self._sessions(scope, search.prefix):
                for trace in self.memory.list(session=session, user=scope.user, agent=scope.agent):
                    stored = self._read(trace, scope)
                    if stored is not None and not stored.expired(now) and _passes(stored.value, search.filter):
                        items.append(stored)
        newest = _newest_per_key(items)
        newest.sort(key=lambda s: (s.namespace, s.key))
        newest.sort(key=lambda s: s.updated_at, reverse=True)
        page = newest[search.offset:search.offset + search.limit]
        return [self._search_item(self._refreshed(s, s.trace.scope) if search.refresh else s, None)
                for s in page]

    def _search_query(self, search: _Search) -> list[SearchItem]:
        """A query: zeromem's retrieval ranks the scope's traces; the indexed items under the
        prefix that pass the filter are kept, best score first, paged. The search widens
        (k x4) until it has ``offset + limit`` of them or has seen the whole scope."""
        assert search.query is not None
        want = search.offset + search.limit
        if search.limit == 0:
            return []
        now = _now()
        hits: list[tuple[float, _Stored, Evidence]] = []
        for scope in self._reachable_scopes(search.scopes):
            sessions = dict(self._sessions(scope, search.prefix))
            if not sessions:
                continue
            only = next(iter(sessions)) if len(sessions) == 1 else None  # one namespace: search its session
            total = store_of(self.memory).count(scope)
            k = min(max(2 * want, 10), total)
            read: dict[str, _Stored | None] = {}
            while True:
                evidence = self.memory.search(search.query, k=k, session=only, user=scope.user, agent=scope.agent)
                found: dict[str, tuple[float, _Stored, Evidence]] = {}
                for ev in evidence:
                    if ev.session not in sessions or ev.trace_id in found:
                        continue
                    if ev.trace_id not in read:
                        read[ev.trace_id] = self._read(self.memory.get(ev.trace_id, user=scope.user,
                                                                       agent=scope.agent), scope)
                    stored = read[ev.trace_id]
                    if (stored is not None and stored.indexed and not stored.expired(now)
                            and _passes(stored.value, search.filter)):
                        found[ev.trace_id] = (ev.score, stored, ev)
                if len(found) >= want or k >= total or len(evidence) < k:
                    break
                k = min(k * 4, total)
            hits.extend(found.values())
        hits.sort(key=lambda hit: (hit[1].namespace, hit[1].key))
        hits.sort(key=lambda hit: hit[0], reverse=True)
        page = hits[search.offset:want]
        return [self._search_item(self._refreshed(s, s.trace.scope) if search.refresh else s, ev)
                for _, s, ev in page]

    def _search_item(self, stored: _Stored, evidence: Evidence | None) -> ZeromemSearchItem:
        return ZeromemSearchItem(stored.namespace, stored.key, stored.value, stored.created_at, stored.updated_at,
                                 None if evidence is None else float(evidence.score),
                                 trace_id=stored.trace.id, evidence=evidence)

    def _list_namespaces(self, conditions: tuple[MatchCondition, ...], scopes: tuple[Scope, ...] | None,
                         max_depth: int | None, limit: int, offset: int) -> list[tuple[str, ...]]:
        """Namespaces holding at least one unexpired item, matching every condition ("*" matches
        any label), cut to ``max_depth``, sorted, paged."""
        found: set[tuple[str, ...]] = set()
        for scope in self._reachable_scopes(scopes):
            expired = self._expired_per_session(scope)
            for info in self.memory.sessions(user=scope.user, agent=scope.agent):
                namespace = namespace_of_session(info.session)
                if (namespace is None or not self._maps_to(namespace, scope)
                        or info.traces <= expired.get(info.session or "", 0)):
                    continue
                if all(_matches(condition, namespace) for condition in conditions):
                    found.add(namespace[:max_depth] if max_depth is not None else namespace)
        return sorted(found)[offset:offset + limit]

    def _expired_per_session(self, scope: Scope) -> dict[str, int]:
        store = store_of(self.memory)
        now = _now()
        counts: dict[str, int] = {}
        for trace in store.get_rowids(sorted(store.expiring(scope))).values():
            stored = self._read(trace, scope)
            if stored is not None and stored.expired(now) and trace.session is not None:
                counts[trace.session] = counts.get(trace.session, 0) + 1
        return counts

    def _read(self, trace: Trace, scope: Scope) -> _Stored | None:
        """The item a trace holds, or None for a trace that is not one this store can see."""
        namespace = namespace_of_session(trace.session)
        meta = trace.metadata or {}
        item = meta.get(ITEM_KEY)
        if namespace is None or not isinstance(item, dict) or not self._maps_to(namespace, scope):
            return None
        key, value = item.get("key"), item.get("value")
        if not isinstance(key, str) or not isinstance(value, dict) or meta.get(KEY_FIELD) != key:
            return None
        recorded = _parse_time(trace.recorded_at) or _now()
        ttl = item.get("ttl")
        return _Stored(trace, namespace, key, value,
                       _parse_time(item.get("created_at")) or recorded,
                       _parse_time(item.get("updated_at")) or recorded,
                       item.get("indexed") is not False,
                       float(ttl) if isinstance(ttl, (int, float)) and not isinstance(ttl, bool) else None,
                       _parse_time(meta.get(EXPIRES_AT)))


# -- helpers ---------------------------------------------------------------------------------
def _now() -> datetime:
    return datetime.now(UTC)


def _iso(when: datetime) -> str:
    return when.astimezone(UTC).isoformat(timespec="microseconds")


def _parse_time(value: Any) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    return parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed


def _metadata(put: _Put, created: datetime, updated: datetime) -> dict[str, Any]:
    """A trace's metadata for an item: the item verbatim under ITEM_KEY, its key under
    KEY_FIELD, and zeromem's ``expires_at`` when it has a TTL."""
    item: dict[str, Any] = {"namespace": list(put.namespace), "key": put.key, "value": put.value,
                            "indexed": put.indexed, "created_at": _iso(created), "updated_at": _iso(updated)}
    metadata: dict[str, Any] = {KEY_FIELD: put.key, ITEM_KEY: item}
    if put.ttl is not None:
        item["ttl"] = put.ttl
        metadata[EXPIRES_AT] = _iso(updated + timedelta(minutes=put.ttl))
    return metadata


def _session(namespace: tuple[str, ...]) -> str:
    session = session_of_namespace(namespace)
    if len(session) > _MAX_SESSION_CHARS:
        raise InvalidNamespace(f"namespace {namespace!r} is too long: as a zeromem session it takes "
                               f"{len(session)} characters, over the limit of {_MAX_SESSION_CHARS}")
    return session


def _key(key: Any) -> str:
    if not isinstance(key, str):
        raise InvalidInput(f"an item's key must be a string, got {type(key).__name__}")
    validate.check_unicode(key, "key")
    return key


def _flag(value: Any) -> bool:
    if not isinstance(value, bool):
        raise InvalidInput(f"refresh_ttl must be True or False, got {value!r}")
    return value


def _count(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidInput(f"{name} must be an int >= 0, got {value!r}")
    return value


def _index_fields(index: Any) -> list[str] | None:
    if index is None:
        return None
    if not isinstance(index, Mapping):
        raise InvalidInput(f"index must be a dict like {{'fields': ['content']}}, got {type(index).__name__}")
    extra = sorted(set(index) - {"fields"})
    if extra:
        raise InvalidInput(f"index takes only 'fields' (got {extra}): zeromem indexes with its own models, "
                           "so there is no embedding function or dimension to configure")
    fields = index.get("fields")
    return None if fields is None else _paths(fields)


def _paths(paths: Any) -> list[str]:
    if (isinstance(paths, (str, bytes)) or not isinstance(paths, (list, tuple))
            or not all(isinstance(p, str) and p for p in paths)):
        raise InvalidInput(f"index fields must be a list of value paths like ['content', 'notes[*].text'], "
                           f"got {paths!r}")
    for path in paths:
        if path != "$":
            try:
                tokenize_path(path)
            except Exception as exc:  # noqa: BLE001 - LangGraph's parser: any failure is a bad path
                raise InvalidInput(f"index field {path!r} is not a LangGraph path: {exc}") from None
    return list(paths)


def _ttl_config(ttl: Any) -> TTLConfig | None:
    if ttl is None:
        return None
    if not isinstance(ttl, Mapping):
        raise InvalidInput(f"ttl must be a LangGraph TTLConfig dict, got {type(ttl).__name__}")
    unknown = sorted(set(ttl) - _TTL_KEYS)
    if unknown:
        raise InvalidInput(f"ttl has unknown keys {unknown}; allowed: {sorted(_TTL_KEYS)}")
    for name in ("default_ttl", "sweep_interval_minutes"):
        value = ttl.get(name)
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))
                                  or not math.isfinite(value) or value <= 0):
            raise InvalidInput(f"ttl[{name!r}] must be a positive number of minutes or None, got {value!r}")
    for name in ("refresh_on_read", "omit_expired"):
        if name in ttl and not isinstance(ttl[name], bool):
            raise InvalidInput(f"ttl[{name!r}] must be True or False, got {ttl[name]!r}")
    config: TTLConfig = {}
    config.update(ttl)  # type: ignore[typeddict-item]
    return config


def _indexed_text(value: dict[str, Any], fields: list[str] | None) -> str:
    """What zeromem indexes for a value: the strings at ``fields`` ("$": the whole value), or
    every string of the value in order when no fields are set; blank strings are left out."""
    texts: list[str] = []
    for path in fields if fields is not None else ["$"]:
        texts += _strings(value) if path == "$" else get_text_at_path(value, tokenize_path(path))
    return "\n".join(text for text in texts if text.strip())


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [text for part in value.values() for text in _strings(part)]
    if isinstance(value, (list, tuple)):
        return [text for part in value for text in _strings(part)]
    return []


def _check_filter(filter: Any) -> dict[str, Any]:
    if filter is None:
        return {}
    if not isinstance(filter, Mapping):
        raise InvalidInput(f"filter must be a dict like {{'kind': 'note'}}, got {type(filter).__name__}")
    _check_condition(dict(filter), "filter")
    return dict(filter)


def _check_condition(condition: Any, where: str) -> None:
    if isinstance(condition, Mapping):
        keys = list(condition)
        if not all(isinstance(k, str) for k in keys):
            raise InvalidInput(f"{where} has a non-string key: filter keys are value field names")
        operators = [k for k in keys if k.startswith("$")]
        if operators and len(operators) != len(keys):
            raise InvalidInput(f"{where} mixes operators and fields ({keys}): use one or the other")
        for key in keys:
            if key.startswith("$"):
                if key not in _OPERATORS:
                    raise InvalidInput(f"{where} uses the unknown operator {key!r}; known: {sorted(_OPERATORS)}")
                if key in ("$gt", "$gte", "$lt", "$lte") and not _orderable(condition[key]):
                    raise InvalidInput(f"{where}[{key!r}] must be a number or a string, got {condition[key]!r}")
            else:
                _check_condition(condition[key], f"{where}[{key!r}]")
    elif isinstance(condition, (list, tuple)):
        for index, part in enumerate(condition):
            _check_condition(part, f"{where}[{index}]")


def _orderable(value: Any) -> bool:
    return isinstance(value, str) or (isinstance(value, (int, float)) and not isinstance(value, bool))


def _passes(value: Any, condition: Any) -> bool:
    """Whether a value (or a field of it) meets a filter condition: a dict of fields is matched
    field by field (nested), a dict of operators applies each, a list matches item by item,
    anything else must be equal (JSON equality: true is not 1)."""
    if isinstance(condition, Mapping):
        if condition and all(key.startswith("$") for key in condition):
            return all(_apply(value, op, operand) for op, operand in condition.items())
        return isinstance(value, dict) and all(_passes(value.get(k), v) for k, v in condition.items())
    if isinstance(condition, (list, tuple)):
        return (isinstance(value, list) and len(value) == len(condition)
                and all(_passes(v, c) for v, c in zip(value, condition)))
    return _equal(value, condition)


def _equal(value: Any, other: Any) -> bool:
    if isinstance(value, bool) or isinstance(other, bool):
        return isinstance(value, bool) and isinstance(other, bool) and value == other
    return bool(value == other)


def _apply(value: Any, operator: str, operand: Any) -> bool:
    if operator == "$eq":
        return _passes(value, operand)
    if operator == "$ne":
        return not _passes(value, operand)
    # Ordering compares numbers with numbers and strings with strings; any other pair fails.
    number = _orderable(value) and not isinstance(value, str)
    if not _orderable(value) or number != (not isinstance(operand, str)):
        return False
    if operator == "$gt":
        return bool(value > operand)
    if operator == "$gte":
        return bool(value >= operand)
    if operator == "$lt":
        return bool(value < operand)
    return bool(value <= operand)


def _matches(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    path = tuple(condition.path)
    if len(namespace) < len(path):
        return False
    part = namespace[:len(path)] if condition.match_type == "prefix" else namespace[len(namespace) - len(path):]
    return all(want in ("*", have) for want, have in zip(path, part))


def _newest_per_key(items: list[_Stored]) -> list[_Stored]:
    newest: dict[tuple[tuple[str, ...], str], _Stored] = {}
    for stored in items:
        seen = newest.get((stored.namespace, stored.key))
        if seen is None or (stored.updated_at, stored.trace.seq) > (seen.updated_at, seen.trace.seq):
            newest[(stored.namespace, stored.key)] = stored
    return list(newest.values())

