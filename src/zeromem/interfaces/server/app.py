"""The FastAPI application of ``zeromem serve``: routes, auth, limits, health, the inspector.

One ``Memory`` serves every request (it is thread safe); each request acts in the scope of
its API key. ``create_app`` takes the Memory ready-made, so tests and embedders can build an
app over any store.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio.to_thread
from fastapi import FastAPI
from fastapi.responses import JSONResponse
from fastapi.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ... import __version__
from ..._internals import retriever_of, store_of
from ...memory import Memory
from ...retrieval.snapshots import limit_malloc_arenas
from ...types import Scope as MemoryScope
from . import errors, metrics, otel, timing
from .auth import KeyAuth
from .guard import RequestGuard, allowed_hosts
from .headers import SecurityHeaders
from .options import DEFAULT_MAX_BODY_BYTES, WorkerSpec
from .routes import caller, router

_log = logging.getLogger("zeromem.server")
STATIC_DIR = Path(__file__).with_name("static")


@dataclass(slots=True)
class ServerSettings:
    """How the server behaves; ``zeromem serve`` fills it from its options."""

    require_auth: bool = True
    user: str | None = None  # the scope of every request when auth is off
    agent: str | None = None
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    reader: Any = None  # answers /v1/answer (e.g. an OpenAICompatReader); None: 409 there
    warm_up: bool = True  # load the models at start so the first search is not slow
    threads: int | None = None  # request threads (FastAPI's pool; None: its default of 40)
    preload: bool = False  # build every scope's in-memory index before /readyz says ready
    close_memory: bool = False  # close the Memory when the server stops (it owns it)
    host: str = "127.0.0.1"  # the bound address: a Host the server answers to (guard.py)
    allow_hosts: tuple[str, ...] = ()  # more Host names (--allow-host; "*": any)
    allow_origins: tuple[str, ...] = ()  # web origins that may call the API (--allow-origin)
    metrics: bool = False  # Prometheus metrics at /metrics, no API key needed (--metrics; metrics.py)
    compat_mem0: bool = False  # Mem0's REST routes too (--compat mem0; mem0_routes.py)


def create_app(memory: Memory, settings: ServerSettings | None = None) -> FastAPI:
    settings = settings or ServerSettings()

    warmed = threading.Event()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if settings.threads:
            anyio.to_thread.current_default_thread_limiter().total_tokens = settings.threads
        if settings.warm_up:
            threading.Thread(target=_warm_up, args=(memory, settings.preload, warmed),
                             name="zeromem-warm-up", daemon=True).start()
        else:
            warmed.set()
        try:
            yield
        finally:
            if settings.close_memory:
                memory.close()

    app = FastAPI(title="zeromem", version=__version__, lifespan=lifespan,
                  description="Agent memory where every memory operation is deterministic code: "
                              "zero LLM calls. Traces are kept verbatim; search returns evidence "
                              "with provenance. Authenticate with `Authorization: Bearer <key>`.",
                  **otel.fastapi_options())  # request spans are zeromem's own (otel.py)
    app.state.memory = memory
    app.state.reader = settings.reader
    app.state.auth = KeyAuth(store_of(memory), required=settings.require_auth,
                             default_scope=MemoryScope(settings.user, settings.agent))
    errors.install(app)
    app.include_router(router)
    if settings.compat_mem0:  # Mem0's routes (none clashes with /v1's); before the inspector's mount at /
        from .mem0_routes import router as mem0_router

        app.include_router(mem0_router)
    otel.install(app)  # a span per request while zeromem.tracing is on; before timing: inside its timer
    timing.install(app, memory, caller)
    if settings.metrics:  # before the inspector's mount at / would answer /metrics
        metrics.install(app, memory)

    @app.get("/healthz", tags=["health"], summary="The process is up")
    def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/readyz", tags=["health"], summary="The store answers; which models work")
    def readyz() -> JSONResponse:
        report = dataclasses.asdict(memory.health())
        if settings.preload and not warmed.is_set():
            report.update(ready=False, loading="building the scopes' in-memory indexes (--preload)")
        return JSONResponse(report, status_code=200 if report.get("ready") else 503)

    if STATIC_DIR.is_dir():
        app.mount("/", StaticFiles(directory=STATIC_DIR, html=True), name="inspector")
    app.add_middleware(BodyLimit, limit=settings.max_body_bytes)
    app.add_middleware(RequestGuard, hosts=allowed_hosts(settings.host, settings.allow_hosts),
                       origins=settings.allow_origins)
    app.add_middleware(SecurityHeaders)  # outermost: the guard's refusals carry them too
    return app


ENVIRONMENT = "ZEROMEM_SERVE"


def app_from_environment() -> FastAPI:
    """The app ``zeromem serve`` runs in each worker process: its Config and server options
    arrive as a JSON file named in ``$ZEROMEM_SERVE`` (a worker is started by uvicorn, not by
    the command that parsed them; options.py, cli_service.worker_options)."""
    spec = WorkerSpec.from_json(Path(os.environ[ENVIRONMENT]).read_text(encoding="utf-8"))
    limit_malloc_arenas()  # before the request threads allocate: RSS then follows the index cache
    options = spec.server
    reader = None
    if options.reader_url and options.reader_model:
        from ...reader.openai_compat import OpenAICompatReader
        reader = OpenAICompatReader(options.reader_url, options.reader_model)
    memory = Memory(options.db, user=options.user, agent=options.agent, config=spec.config)
    settings = ServerSettings(require_auth=options.require_auth, user=options.user, agent=options.agent,
                              max_body_bytes=options.max_body_bytes, reader=reader, threads=options.threads,
                              close_memory=True, preload=options.preload, host=options.host,
                              allow_hosts=options.allow_hosts, allow_origins=options.allow_origins,
                              metrics=options.metrics, compat_mem0="mem0" in options.compat)
    return create_app(memory, settings)


def _warm_up(memory: Memory, preload: bool, done: threading.Event) -> None:
    """Load the models (and with ``preload`` every scope's index) before the first request
    needs them; each worker process does its own."""
    try:
        memory.health()
        retriever = retriever_of(memory)
        retriever.engine()
        if preload:  # as many scopes as the index cache holds: more would only be evicted
            for scope in store_of(memory).scopes():
                retriever.prepared(scope)
                if retriever.cache_stats().evictions:
                    break
    except Exception as exc:  # noqa: BLE001 - /readyz reports it
        _log.warning("zeromem server: warm-up failed: %s", exc)
    finally:
        done.set()


class BodyLimit:
    """Refuse request bodies over ``limit`` bytes with 413, by header or while streaming.

    Checked before any handler reads the body, so an oversized upload never reaches memory.
    """

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.limit:
            await _too_large(send, self.limit)
            return
        seen = 0
        refused = False
        started = False
        replaced = False

        async def limited_receive() -> Message:
            nonlocal seen, refused
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.limit:
                    refused = True
                    raise _BodyTooLarge
            return message

        async def tracked_send(message: Message) -> None:
            # A handler that caught the refusal itself (FastAPI turns any error while reading
            # a body into 400 "error parsing the body") answers 413 all the same.
            nonlocal started, replaced
            if replaced:
                return
            if message["type"] == "http.response.start":
                if refused:
                    replaced = True
                    await _too_large(send, self.limit)
                    return
                started = True
            await send(message)

        try:
            await self.app(scope, limited_receive, tracked_send)
        except _BodyTooLarge:
            if not started and not replaced:
                await _too_large(send, self.limit)
        except Exception:
            if refused and not started and not replaced:
                await _too_large(send, self.limit)
            else:
                raise


class _BodyTooLarge(Exception):
    pass


async def _too_large(send: Send, limit: int) -> None:
    response = errors.error_response(413, "PayloadTooLarge",
                                     f"the request body is over the server's limit of {limit} bytes "
                                     "(zeromem serve --max-body-mb); send smaller batches")
    await send({"type": "http.response.start", "status": 413,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(response.body)).encode())]})
    await send({"type": "http.response.body", "body": response.body})
