"""Mem0's REST routes over zeromem (``zeromem serve --compat mem0``): a Mem0 client changes
only its base URL and key.

Two route families, both answered:

- the hosted platform's, exactly as mem0ai 2.2's ``MemoryClient`` / ``AsyncMemoryClient``
  call them: ``GET /v1/ping/``, ``POST /v3/memories/add/``, ``POST /v3/memories/`` (get_all),
  ``POST /v3/memories/search/``, ``GET|PUT|DELETE /v1/memories/{id}/``,
  ``GET /v1/memories/{id}/history/``, ``DELETE /v1/memories/`` (delete_all),
  ``GET /v1/entities/`` and ``DELETE /v2/entities/{type}/{name}/`` (users, delete_users,
  reset), ``PUT|DELETE /v1/batch/``;
- Mem0's self-hosted server's: ``POST|GET|DELETE /memories``, ``GET|PUT|DELETE
  /memories/{id}``, ``GET /memories/{id}/history``, ``POST /search``, ``POST /reset``
  (``POST /configure`` is refused: ``zeromem serve``'s options configure the server).

None of them clashes with zeromem's own ``/v1`` routes (traces, search, context...), and they
exist only when the server is started with ``--compat mem0``.

The API key decides the scope, as on every zeromem route: ``Authorization: Token <key>``
(what the Mem0 client sends) or ``Bearer <key>``. A request's ``user_id`` / ``agent_id`` (at the
top level, in ``filters`` or in the query) must be the key's own or absent (then the key's
is used), else 403; ``run_id`` is a session of that scope. So a key for alice never reads or
changes bob's memories, whatever ids it sends. The bodies and results are Mem0's
(``zeromem.compat.mem0``); errors keep zeromem's ``{"error": {"type", "message"}}`` body,
which the Mem0 client raises as its own exception with that message.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Annotated, Any

from fastapi import APIRouter, Body, Depends, Query, Request

from ...compat.mem0 import (
    ID_KEYS,
    UNSET,
    Mem0Core,
    check_top_k,
    entity_id,
    metadata_filters,
)
from ...errors import InvalidInput
from ...memory import Memory
from ...types import Scope, Trace
from .auth import Caller
from .errors import ApiError

router = APIRouter(tags=["mem0"])
MAX_PAGE = 1000

# Fields of the hosted add / search / get_all bodies that need a model (refused) and that have
# no effect here (accepted and ignored: output shape versions, async processing, keyword mode).
_LLM_FIELDS = ("custom_categories", "custom_instructions", "agent_custom_instructions",
               "structured_data_schema", "includes", "excludes", "prompt", "memory_type", "llm")
_IGNORED = ("version", "output_format", "async_mode", "rerank", "keyword_search", "latest_only",
            "fields", "delete_linked", "enable_graph", "immutable")


def mem0_caller(request: Request) -> Caller:
    """The key's scope; ``Token <key>`` (the Mem0 client's scheme) is read as ``Bearer <key>``."""
    header = request.headers.get("authorization")
    if header:
        scheme, _, token = header.partition(" ")
        if scheme.lower() == "token":
            header = f"Bearer {token}"
    return request.app.state.auth.caller(header)


def core(request: Request) -> Mem0Core:
    memory: Memory = request.app.state.memory
    return Mem0Core(memory)


CallerDep = Annotated[Caller, Depends(mem0_caller)]
CoreDep = Annotated[Mem0Core, Depends(core)]
JsonBody = Annotated[dict[str, Any], Body()]
IdQuery = Annotated[str | None, Query()]


# -- scope -------------------------------------------------------------------------------------
def scope_for(who: Caller, user_id: Any = None, agent_id: Any = None) -> Scope:
    """The key's scope, after checking that the ids a request names are the key's own."""
    for value, own, name in ((user_id, who.scope.user, "user_id"), (agent_id, who.scope.agent, "agent_id")):
        given = entity_id(value, name)
        if given is not None and given != own:
            raise ApiError(403, "Forbidden",
                           f"this API key reads and writes user_id={who.scope.user!r}, agent_id="
                           f"{who.scope.agent!r}; the request names {name}={given!r}: use a key made for "
                           f"that scope (zeromem keys add) or leave {name} out")
    return who.scope


def ids_of(body: Mapping[str, Any]) -> dict[str, Any]:
    """Mem0's ids from a body: at its top level or in its ``filters`` (the same id in both
    places must agree)."""
    filters = body.get("filters") or {}
    if not isinstance(filters, Mapping):
        raise InvalidInput(f"filters must be an object, got {type(filters).__name__}")
    ids: dict[str, Any] = {}
    for key in (*ID_KEYS, "app_id"):
        top, inner = body.get(key), filters.get(key)
        if top is not None and inner is not None and str(top) != str(inner):
            raise InvalidInput(f"{key} is {top!r} at the top level and {inner!r} in filters: send it once")
        ids[key] = top if top is not None else inner
    if ids.pop("app_id") is not None:
        raise InvalidInput("app_id is not supported: zeromem scopes are user_id / agent_id, sessions run_id")
    return ids


def resolve(who: Caller, body: Mapping[str, Any]) -> tuple[Scope, str | None, dict[str, Any]]:
    """(scope, session, metadata filters) of a body with ids and ``filters``."""
    ids = ids_of(body)
    scope = scope_for(who, ids["user_id"], ids["agent_id"])
    filters = body.get("filters") or {}
    wanted = metadata_filters({k: v for k, v in filters.items() if k not in (*ID_KEYS, "app_id")})
    return scope, entity_id(ids["run_id"], "run_id"), wanted


def check_fields(body: Mapping[str, Any], allowed: tuple[str, ...], what: str) -> None:
    """Refuse fields that need a model, and unknown ones (a typo is not silently ignored)."""
    needs = sorted(k for k in body if k in _LLM_FIELDS and body[k] not in (None, [], {}, ""))
    if needs:
        raise InvalidInput(f"{', '.join(needs)} need a language model, and zeromem makes no LLM calls in "
                           "memory operations: leave them out")
    unknown = sorted(set(body) - set(allowed) - set(_LLM_FIELDS) - set(_IGNORED) - {*ID_KEYS, "app_id", "filters"})
    if unknown:
        raise InvalidInput(f"{what} got unknown fields {unknown}; allowed: {sorted(allowed)}")


def trace_in(mem: Mem0Core, memory_id: str, scope: Scope) -> Trace:
    """The memory with this id in the key's scope; 404 for any other id."""
    return mem.memory.get(memory_id, user=scope.user, agent=scope.agent)


def one_of(body: Mapping[str, Any], *names: str) -> Any:
    """The first of ``names`` the body has (Mem0's clients name the new text differently)."""
    return next((body[name] for name in names if body.get(name) is not None), None)


# -- the hosted platform's routes (MemoryClient) -------------------------------------------------------
@router.get("/v1/ping/", summary="Mem0 client: check the key")
def ping(who: CallerDep) -> dict[str, Any]:
    # The client refuses to start without an org and a project: zeromem has neither, so the
    # org is "zeromem" and the project the key's id (no route here uses them).
    return {"status": "ok", "org_id": "zeromem", "project_id": who.key_id or "local", "user_email": None,
            "user_id": who.scope.user, "agent_id": who.scope.agent, "key_id": who.key_id}


@router.post("/v3/memories/add/", summary="Mem0 client add: store each message verbatim")
def platform_add(body: JsonBody, who: CallerDep, mem: CoreDep) -> dict[str, Any]:
    return _add(body, who, mem, "add")


@router.post("/v3/memories/", summary="Mem0 client get_all: one page of the scope's memories")
def platform_get_all(body: JsonBody, who: CallerDep, mem: CoreDep,
                     page: Annotated[int, Query(ge=1)] = 1,
                     page_size: Annotated[int, Query(ge=1, le=MAX_PAGE)] = 100) -> dict[str, Any]:
    check_fields(body, ("show_expired", "start_date", "end_date", "categories", "page", "page_size"), "get_all")
    if body.get("categories"):
        raise InvalidInput("categories are assigned by Mem0's LLM; zeromem has none: leave categories out")
    scope, session, wanted = resolve(who, body)
    items, total = mem.list(scope, session, filters=wanted, offset=(page - 1) * page_size, limit=page_size,
                            show_expired=bool(body.get("show_expired")), since=body.get("start_date"),
                            until=body.get("end_date"))
    more = page * page_size < total
    return {"count": total, "next": f"?page={page + 1}&page_size={page_size}" if more else None,
            "previous": f"?page={page - 1}&page_size={page_size}" if page > 1 else None, "results": items}


@router.post("/v3/memories/search/", summary="Mem0 client search: evidence as Mem0 memories, best first")
def platform_search(body: JsonBody, who: CallerDep, mem: CoreDep) -> dict[str, Any]:
    check_fields(body, ("query", "top_k", "threshold", "show_expired", "reference_date", "categories",
                        "explain", "limit"), "search")
    if body.get("categories"):
        raise InvalidInput("categories are assigned by Mem0's LLM; zeromem has none: leave categories out")
    if body.get("show_expired"):
        raise InvalidInput("zeromem's search always hides expired memories: list them with get_all "
                           "(show_expired)")
    scope, session, wanted = resolve(who, body)
    top_k = _top_k(body, default=10)  # the platform's default
    return {"results": mem.search(body.get("query"), scope, session, filters=wanted, top_k=top_k,
                                  threshold=body.get("threshold"), explain=bool(body.get("explain")),
                                  now=body.get("reference_date"))}


@router.get("/v1/memories/{memory_id}/", summary="Mem0 client get")
def platform_get(memory_id: str, who: CallerDep, mem: CoreDep) -> dict[str, Any]:
    return mem.item(trace_in(mem, memory_id, scope_for(who)))


@router.put("/v1/memories/{memory_id}/", summary="Mem0 client update: new text and/or metadata")
def platform_update(memory_id: str, body: JsonBody, who: CallerDep, mem: CoreDep) -> dict[str, Any]:
    check_fields(body, ("text", "metadata", "expiration_date", "timestamp", "data", "memory"), "update")
    if body.get("timestamp") is not None:
        raise InvalidInput("a memory's time is kept as it was stored: zeromem's update changes text and "
                           "metadata only")
    trace = mem.update(trace_in(mem, memory_id, scope_for(who)), text=one_of(body, "text", "data", "memory"),
                       metadata=body.get("metadata"),
                       expiration_date=body.get("expiration_date", UNSET))
    return {"message": "Memory updated successfully!", **mem.item(trace)}


@router.delete("/v1/memories/{memory_id}/", summary="Mem0 client delete: delete one memory, erase its text")
def platform_delete(memory_id: str, who: CallerDep, mem: CoreDep, delete_linked: bool = False) -> dict[str, str]:
    scope = scope_for(who)
    mem.memory.delete(memory_id, user=scope.user, agent=scope.agent)
    return {"message": "Memory deleted successfully!"}


@router.delete("/v1/memories/", summary="Mem0 client delete_all: the key's scope, or one run of it")
def platform_delete_all(who: CallerDep, mem: CoreDep, user_id: IdQuery = None, agent_id: IdQuery = None,
                        run_id: IdQuery = None, app_id: IdQuery = None,
                        filters: Annotated[str | None, Query()] = None) -> dict[str, str]:
    wanted = _json_object(filters) if filters else {}
    ids = ids_of({"user_id": user_id, "agent_id": agent_id, "run_id": run_id, "app_id": app_id,
                  "filters": wanted})
    if all(value is None for value in ids.values()):
        raise InvalidInput("name the memories to delete: user_id, agent_id or run_id (the key's own)")
    scope = scope_for(who, ids["user_id"], ids["agent_id"])
    mem.delete_all(scope, entity_id(ids["run_id"], "run_id"))
    return {"message": "Memories deleted successfully!"}


@router.get("/v1/memories/{memory_id}/history/", summary="Mem0 client history")
def platform_history(memory_id: str, who: CallerDep, mem: CoreDep) -> list[dict[str, Any]]:
    return mem.history(memory_id, scope_for(who))


@router.get("/v1/entities/", summary="Mem0 client users: the key's own scope, if it holds memories")
def platform_entities(who: CallerDep, mem: CoreDep) -> dict[str, Any]:
    scope = scope_for(who)
    count = mem.memory.stats(user=scope.user, agent=scope.agent).traces
    kind, name = ("user", scope.user) if scope.user is not None else ("agent", scope.agent)
    results = [{"id": name, "name": name, "type": kind, "total_memories": count}] if count and name else []
    return {"count": len(results), "results": results}


@router.delete("/v2/entities/{kind}/{name}/", summary="Mem0 client delete_users / reset: the key's scope")
def platform_delete_entity(kind: str, name: str, who: CallerDep, mem: CoreDep) -> dict[str, str]:
    if kind == "user":
        scope, session = scope_for(who, user_id=name), None
    elif kind == "agent":
        scope, session = scope_for(who, agent_id=name), None
    elif kind == "run":
        scope, session = scope_for(who), entity_id(name, "run_id")
    else:
        raise InvalidInput(f"entity type {kind!r}: zeromem has user, agent and run")
    mem.delete_all(scope, session)
    return {"message": "Entity deleted successfully!"}


@router.put("/v1/batch/", summary="Mem0 client batch_update: every memory is checked before any changes")
def platform_batch_update(body: JsonBody, who: CallerDep, mem: CoreDep) -> dict[str, str]:
    scope = scope_for(who)
    items = _batch(body)
    traces = [trace_in(mem, _memory_id(item), scope) for item in items]
    for trace, item in zip(traces, items):
        mem.update(trace, text=one_of(item, "text", "memory"), metadata=item.get("metadata"))
    return {"message": f"Successfully updated {len(items)} memories"}


@router.delete("/v1/batch/", summary="Mem0 client batch_delete: every memory is checked before any goes")
def platform_batch_delete(body: JsonBody, who: CallerDep, mem: CoreDep) -> dict[str, str]:
    scope = scope_for(who)
    items = _batch(body)
    traces = [trace_in(mem, _memory_id(item), scope) for item in items]
    for trace in traces:
        mem.memory.delete(trace.id, user=scope.user, agent=scope.agent)
    return {"message": f"Successfully deleted {len(items)} memories"}


# -- Mem0's self-hosted server's routes --------------------------------------------------------------
@router.post("/memories", summary="Mem0 server: store each message verbatim")
def server_add(body: JsonBody, who: CallerDep, mem: CoreDep) -> dict[str, Any]:
    return _add(body, who, mem, "POST /memories")


def _add(body: dict[str, Any], who: Caller, mem: Mem0Core, call: str) -> dict[str, Any]:
    """Both families' add: every message stored verbatim in the key's scope (run_id: the session)."""
    check_fields(body, ("messages", "metadata", "infer", "timestamp", "expiration_date"), call)
    scope, session, _ = resolve(who, body)
    return mem.add(body.get("messages"), scope, session, metadata=body.get("metadata"),
                   timestamp=body.get("timestamp"), expiration_date=body.get("expiration_date"),
                   infer=_infer(body))


@router.get("/memories", summary="Mem0 server: the scope's memories (run_id: one session)")
def server_get_all(who: CallerDep, mem: CoreDep, user_id: IdQuery = None, agent_id: IdQuery = None,
                   run_id: IdQuery = None,
                   top_k: Annotated[int, Query(ge=1, le=MAX_PAGE)] = 100) -> dict[str, Any]:
    scope = scope_for(who, user_id, agent_id)
    items, _ = mem.list(scope, entity_id(run_id, "run_id"), filters=None, limit=top_k)
    return {"results": items}


@router.get("/memories/{memory_id}", summary="Mem0 server: one memory")
def server_get(memory_id: str, who: CallerDep, mem: CoreDep) -> dict[str, Any]:
    return platform_get(memory_id, who, mem)


@router.put("/memories/{memory_id}", summary="Mem0 server: new text and/or metadata")
def server_update(memory_id: str, body: JsonBody, who: CallerDep, mem: CoreDep) -> dict[str, Any]:
    result = platform_update(memory_id, body, who, mem)
    return {"message": result["message"]}


@router.get("/memories/{memory_id}/history", summary="Mem0 server: a memory's history")
def server_history(memory_id: str, who: CallerDep, mem: CoreDep) -> list[dict[str, Any]]:
    return mem.history(memory_id, scope_for(who))


@router.delete("/memories/{memory_id}", summary="Mem0 server: delete one memory")
def server_delete(memory_id: str, who: CallerDep, mem: CoreDep) -> dict[str, str]:
    platform_delete(memory_id, who, mem)
    return {"message": "Memory deleted successfully"}


@router.delete("/memories", summary="Mem0 server: delete the scope's memories (run_id: one session)")
def server_delete_all(who: CallerDep, mem: CoreDep, user_id: IdQuery = None, agent_id: IdQuery = None,
                      run_id: IdQuery = None) -> dict[str, str]:
    platform_delete_all(who, mem, user_id, agent_id, run_id)
    return {"message": "All relevant memories deleted"}


@router.post("/search", summary="Mem0 server: search the scope's memories")
def server_search(body: JsonBody, who: CallerDep, mem: CoreDep) -> dict[str, Any]:
    check_fields(body, ("query", "top_k", "limit", "threshold", "reference_date", "explain"), "POST /search")
    scope, session, wanted = resolve(who, body)
    top_k = _top_k(body, default=20)  # mem0.Memory.search's default
    return {"results": mem.search(body.get("query"), scope, session, filters=wanted, top_k=top_k,
                                  threshold=body.get("threshold"), explain=bool(body.get("explain")),
                                  now=body.get("reference_date"))}


@router.post("/reset", summary="Mem0 server: delete every memory of the key's scope (only there)")
def server_reset(who: CallerDep, mem: CoreDep) -> dict[str, str]:
    scope = scope_for(who)
    mem.memory.delete_scope(user=scope.user, agent=scope.agent)
    return {"message": "All memories reset"}


@router.post("/configure", summary="Mem0 server: refused (zeromem serve's options configure it)")
def server_configure(who: CallerDep) -> dict[str, str]:
    raise InvalidInput("zeromem's server is configured by `zeromem serve` options, not over HTTP, and needs no "
                       "LLM, embedder or vector store settings")


# -- helpers ------------------------------------------------------------------------------------------
def _infer(body: Mapping[str, Any]) -> Any:
    return True if body.get("infer") is None else body["infer"]  # Mem0's default; checked by add


def _top_k(body: Mapping[str, Any], *, default: int) -> int:
    value = body.get("top_k") if body.get("top_k") is not None else body.get("limit")
    top_k = check_top_k(default if value is None else value)
    if top_k > MAX_PAGE:
        raise InvalidInput(f"top_k is at most {MAX_PAGE} here, got {top_k}")
    return top_k


def _batch(body: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    items = body.get("memories")
    if not isinstance(items, list) or not items or not all(isinstance(i, Mapping) for i in items):
        raise InvalidInput("send {\"memories\": [{\"memory_id\": ...}, ...]}")
    if len(items) > MAX_PAGE:
        raise InvalidInput(f"at most {MAX_PAGE} memories per batch")
    return items


def _memory_id(item: Mapping[str, Any]) -> str:
    value = item.get("memory_id")
    if not isinstance(value, str):
        raise InvalidInput("every batch item needs a memory_id (a string)")
    return value


def _json_object(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except (json.JSONDecodeError, RecursionError):
        raise InvalidInput("filters must be a JSON object") from None
    if not isinstance(value, dict):
        raise InvalidInput("filters must be a JSON object")
    return value

