"""Where a request's time goes: per-stage timers of ``zeromem serve``.

Every response carries a ``Server-Timing`` header (W3C Server Timing) with the milliseconds
the request spent in each stage that it used:

- ``auth``: resolving the API key to its scope (``KeyAuth.caller``: hash, cache, store read);
- ``store``: the write transaction that stores traces (``store.add_many``);
- ``derive``: deriving what a write touched, right after it commits (``Memory._derive``:
  segmentation, encoders, unit commit, lifecycle);
- ``search``: the whole search (``Retriever.search``: the query profile, the scope's index,
  the engine), of which ``prepare`` is getting the scope's prepared index (``ScopeIndexes
  .prepared``: ~0 when it is cached and current, the cold build or refresh otherwise);
- ``app``: the request inside the ASGI application, from the first middleware to the response
  start. ``app`` minus the stages above is HTTP work: routing, body parsing and validation,
  the thread-pool hops (waits for a free request thread included), serializing the answer;
- of that, for a search or a write: ``before``, from the request's start to its first store
  or search call (auth excluded: body, validation, the hops to the key lookup and to the
  handler), and ``after``, from its last store or search call to the response start (derive
  excluded: building and serializing the answer, the hop back).

Each timed stage also reports ``<stage>-cpu``: the CPU time of the thread that ran it
(``time.thread_time``), so a stage's wall time can be told from its waits (the GIL, locks).

The same numbers are summed per process (``GET /v1/timings``: requests, and seconds per
stage). The timers wrap the methods of this app's ``Memory`` (instance attributes, nothing
global) and cost a few ``time.perf_counter`` calls per request.
"""

from __future__ import annotations

import contextvars
import functools
import threading
import time
from collections.abc import Callable
from typing import Any

from fastapi import APIRouter, Depends, FastAPI, Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..._internals import retriever_of, store_of

STAGES = ("auth", "store", "derive", "search", "prepare")
WORK = ("store", "search")  # the first stage of a write / a search, inside its handler
# The stages of the request now running; a dict shared with the worker thread that runs the
# handler (anyio copies the context into it, and the copy refers to the same dict).
_spent: contextvars.ContextVar[dict[str, float] | None] = contextvars.ContextVar("zeromem_spent", default=None)


def _timed(stage: str, method: Callable[..., Any]) -> Callable[..., Any]:
    if getattr(method, "_zeromem_stage", None) == stage:  # a second app on the same Memory
        return method

    @functools.wraps(method)
    def timed(*args: Any, **kwargs: Any) -> Any:
        spent = _spent.get()
        if spent is None:
            return method(*args, **kwargs)
        start, cpu = time.perf_counter(), time.thread_time()
        try:
            return method(*args, **kwargs)
        finally:
            end = time.perf_counter()
            spent[stage] = spent.get(stage, 0.0) + end - start
            spent[f"{stage}-cpu"] = spent.get(f"{stage}-cpu", 0.0) + time.thread_time() - cpu
            if stage in WORK:
                spent.setdefault("@work_start", start)
                spent["@work_end"] = end
    timed._zeromem_stage = stage  # type: ignore[attr-defined]
    return timed


class Totals:
    """Requests and seconds per stage, summed over this process's life."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.requests = 0
        self.seconds: dict[str, float] = {}

    def add(self, spent: dict[str, float]) -> None:
        with self._lock:
            self.requests += 1
            for stage, seconds in spent.items():
                self.seconds[stage] = self.seconds.get(stage, 0.0) + seconds

    def snapshot(self) -> dict[str, Any]:
        with self._lock:
            return {"requests": self.requests,
                    "seconds": {stage: round(value, 6) for stage, value in self.seconds.items()}}


class StageTimer:
    """ASGI middleware: start a request's stage record, send it as ``Server-Timing``."""

    def __init__(self, app: ASGIApp, totals: Totals) -> None:
        self.app = app
        self.totals = totals

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        spent: dict[str, float] = {}
        token = _spent.set(spent)
        start = time.perf_counter()

        async def timed_send(message: Message) -> None:
            if message["type"] == "http.response.start":
                now = time.perf_counter()
                spent["app"] = now - start
                work_start, work_end = spent.pop("@work_start", None), spent.pop("@work_end", None)
                if work_start is not None and work_end is not None:
                    spent["before"] = work_start - start - spent.get("auth", 0.0)
                    spent["after"] = now - work_end - spent.get("derive", 0.0)
                header = ", ".join(f"{stage};dur={seconds * 1000:.2f}" for stage, seconds in spent.items())
                message["headers"] = [*message.get("headers", []), (b"server-timing", header.encode())]
                self.totals.add(dict(spent))
            await send(message)

        try:
            await self.app(scope, receive, timed_send)
        finally:
            _spent.reset(token)


def install(app: FastAPI, memory: Any, caller: Callable[..., Any]) -> None:
    """Time this app's stages (see the module docstring) and serve the totals at /v1/timings
    to any authenticated caller (``caller``: the routes' key dependency)."""
    auth = app.state.auth
    auth.caller = _timed("auth", auth.caller)
    store, retriever = store_of(memory), retriever_of(memory)
    store.add_many = _timed("store", store.add_many)  # type: ignore[method-assign]
    memory._derive = _timed("derive", memory._derive)
    retriever.search = _timed("search", retriever.search)  # type: ignore[method-assign]
    scopes = getattr(retriever, "scopes", None)
    if scopes is not None and callable(getattr(scopes, "prepared", None)):
        scopes.prepared = _timed("prepare", scopes.prepared)
    totals = Totals()
    app.state.timings = totals
    router = APIRouter(prefix="/v1")

    @router.get("/timings", tags=["scope"], dependencies=[Depends(caller)],
                summary="This server process's time per stage, summed over its requests")
    def timings(request: Request) -> dict[str, Any]:
        return request.app.state.timings.snapshot()

    app.include_router(router)
    app.add_middleware(StageTimer, totals=totals)
