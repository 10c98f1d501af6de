"""Prometheus metrics of ``zeromem serve --metrics``, served at ``GET /metrics``.

- ``zeromem_http_requests_total{method, route, status}``: requests answered, by route
  template (``/v1/traces/{trace_id}``, never the path itself: ids and session names stay out,
  and the number of series stays bounded);
- ``zeromem_http_request_duration_seconds{method, route}``: a histogram of the time from the
  request reaching the app to its response's end;
- ``zeromem_index_cache_{bytes,budget_bytes,scopes}`` (gauges) and
  ``zeromem_index_cache_{hits,misses,evictions}_total`` (counters): the in-memory indexes of
  the scopes (``Memory.health().index_cache``, retrieval/cache.py);
- ``zeromem_server_stage_seconds_total{stage}``: the seconds per stage that ``Server-Timing``
  reports (timing.py: auth, store, derive, search, prepare, app, … and their ``-cpu`` twins).

``/metrics`` needs no API key: scrapers rarely carry one, and the page holds only route
templates and numbers (no trace text, scope or key). It exists only when the server was
started with ``--metrics``; the Host and Origin checks (guard.py) apply to it as to every
route. Put the server behind a proxy (or bind to loopback) if even those numbers are private.

One registry per app (not prometheus_client's global one), so several apps in one process
(tests, embedders) do not collide. With ``--workers N`` each worker is its own process:
prometheus_client's multiprocess mode (``$PROMETHEUS_MULTIPROC_DIR``, made by ``zeromem serve``
when it starts more than one worker) sums every worker's requests and latencies into each
scrape, whichever worker answers it; the index cache and stage numbers are the sums over the
live workers as of each worker's last request (a worker updates its share after each request).

Without ``--metrics`` nothing here runs: no middleware, no route, prometheus_client not imported.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import Response
from starlette.routing import Mount
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..._internals import retriever_of
from ..extras import require

MULTIPROCESS = "PROMETHEUS_MULTIPROC_DIR"
UNMATCHED = "unmatched"  # the route label of a request no route matched
METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
# Seconds: a cached GET takes about a millisecond, a search tens, a write that derives its
# session a second or more (models loading on the first one).
BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
_CACHE_GAUGES = (("bytes", "Bytes the in-memory scope indexes hold"),
                 ("budget_bytes", "The index cache's budget (--index-cache-mb)"),
                 ("scopes", "Scopes whose index is held in memory"))
_CACHE_COUNTERS = (("hits", "Searches that found their scope's index in memory"),
                   ("misses", "Scope indexes built or read from their snapshot"),
                   ("evictions", "Scope indexes dropped to stay within the budget"))


def route_template(scope: Scope) -> str:
    """The template of the route a request matched (``/v1/traces/{trace_id}``), the mount of
    the inspector as ``/{path}``, or ``unmatched``: a label with a bounded set of values."""
    route = scope.get("route")
    path = getattr(route, "path", None)
    if not isinstance(path, str):
        return UNMATCHED
    if isinstance(route, Mount):
        return f"{path}/{{path}}"
    return path or "/"


class _Metrics:
    """This app's metric objects, and the sync of the numbers other parts of the server count."""

    def __init__(self, memory: Any, totals: Any, multiprocess: bool) -> None:
        from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

        self.multiprocess = multiprocess
        # In multiprocess mode the values live in files; the scrape reads them all back through
        # MultiProcessCollector, so the objects must not also sit in the registry scraped.
        self.registry = CollectorRegistry()
        own = None if multiprocess else self.registry
        self.requests = Counter("zeromem_http_requests", "HTTP requests answered, by route template",
                                ("method", "route", "status"), registry=own)
        self.latency = Histogram("zeromem_http_request_duration_seconds",
                                 "Time from a request reaching the app to its response's end",
                                 ("method", "route"), buckets=BUCKETS, registry=own)
        self.cache_gauges = {name: Gauge(f"zeromem_index_cache_{name}", text, registry=own,
                                         multiprocess_mode="livesum")
                             for name, text in _CACHE_GAUGES}
        self.cache_counters = {name: Counter(f"zeromem_index_cache_{name}", text, registry=own)
                               for name, text in _CACHE_COUNTERS}
        self.stages = Counter("zeromem_server_stage_seconds", "Seconds spent per request stage "
                              "(the Server-Timing stages)", ("stage",), registry=own)
        if multiprocess:
            from prometheus_client import multiprocess as mp

            mp.MultiProcessCollector(self.registry)
            atexit.register(mp.mark_process_dead, os.getpid())  # its live gauges leave the sums
        self._memory = memory
        self._totals = totals
        self._seen: dict[str, float] = {}  # the counts already added to the counters
        self._lock = threading.Lock()

    def sync(self) -> None:
        """Bring the index-cache and stage metrics up to the server's own counts: gauges are
        set, counters grow by what was counted since the last sync."""
        stats = retriever_of(self._memory).cache_stats()
        with self._lock:
            for name, gauge in self.cache_gauges.items():
                gauge.set(getattr(stats, name))
            for name, counter in self.cache_counters.items():
                self._advance(counter, name, getattr(stats, name))
            if self._totals is not None:
                for stage, seconds in self._totals.snapshot()["seconds"].items():
                    self._advance(self.stages.labels(stage), f"stage:{stage}", seconds)

    def _advance(self, counter: Any, key: str, total: float) -> None:
        delta = total - self._seen.get(key, 0)
        if delta > 0:
            counter.inc(delta)
            self._seen[key] = total

    def observe(self, method: str, route: str, status: int, seconds: float) -> None:
        method = method if method in METHODS else "other"
        self.requests.labels(method, route, str(status)).inc()
        self.latency.labels(method, route).observe(seconds)
        if self.multiprocess:  # a scrape reaches one worker: each keeps its share current
            self.sync()

    def exposition(self) -> tuple[bytes, str]:
        from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

        self.sync()
        return generate_latest(self.registry), CONTENT_TYPE_LATEST


class RequestMetrics:
    """ASGI middleware: count each HTTP request and time it, labelled by route template."""

    def __init__(self, app: ASGIApp, metrics: _Metrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        status = 500  # what the client gets when the app raises before answering

        async def counted_send(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, counted_send)
        finally:
            self.metrics.observe(scope.get("method", ""), route_template(scope), status,
                                 time.perf_counter() - start)


def install(app: FastAPI, memory: Any) -> None:
    """Count this app's requests and serve ``GET /metrics`` (see the module docstring)."""
    require("otel", "zeromem serve --metrics")
    metrics = _Metrics(memory, getattr(app.state, "timings", None), multiprocess=bool(os.environ.get(MULTIPROCESS)))
    app.state.metrics = metrics

    @app.get("/metrics", include_in_schema=False)
    def prometheus(request: Request) -> Response:
        body, content_type = request.app.state.metrics.exposition()
        return Response(body, media_type=content_type)

    app.add_middleware(RequestMetrics, metrics=metrics)


@contextmanager
def multiprocess_dir(workers: int) -> Iterator[None]:
    """For ``zeromem serve --metrics --workers N`` (N > 1): a fresh, private directory for
    prometheus_client's multiprocess files in ``$PROMETHEUS_MULTIPROC_DIR`` (the workers
    inherit it), removed at exit. One the caller set already is used as it is (emptying it
    between runs is then the caller's job); one worker needs none."""
    if workers <= 1 or os.environ.get(MULTIPROCESS):
        yield
        return
    path = tempfile.mkdtemp(prefix="zeromem-metrics-")  # mode 0700
    os.environ[MULTIPROCESS] = path
    try:
        yield
    finally:
        os.environ.pop(MULTIPROCESS, None)
        shutil.rmtree(path, ignore_errors=True)
