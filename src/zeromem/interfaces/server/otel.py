"""One OpenTelemetry span per HTTP request of ``zeromem serve``, while zeromem.tracing is on.

The span (kind SERVER) is named ``"<METHOD> <route template>"`` (``POST /v1/search``), after
OpenTelemetry's HTTP conventions, and carries ``http.request.method``, ``http.route``,
``http.response.status_code`` and the request's ``Server-Timing`` stages in milliseconds
(``zeromem.server.<stage>_ms``, timing.py). A 5xx answer sets its status to ERROR (a 4xx is
the client's error, not the server's). The memory operations the handler runs
(``zeromem.search``, …) are its children: FastAPI runs handlers on threads that inherit the
request's context. No path, query string, header or body goes on the span: paths hold trace
ids and session names, bodies hold text.

Installed only when tracing is on as the app is created (``zeromem.tracing.enable()`` or
``ZEROMEM_OTEL=1``, which ``zeromem serve``'s workers inherit); otherwise nothing is added.

FastAPI 0.165 and later trace requests themselves whenever a global tracer provider is set,
with the path (``url.path``: trace ids, session names) on the span and unhandled exceptions'
messages in OpenTelemetry logs. zeromem's app turns that tracing and those logs off
(``fastapi_options``), so a request has one server span, this one, under zeromem's switch.
"""

from __future__ import annotations

import inspect
from typing import Any

from fastapi import FastAPI
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ... import tracing
from . import timing
from .metrics import UNMATCHED, route_template


class ServerSpans:
    """ASGI middleware: a SERVER span around each HTTP request (see the module docstring)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        tracer = tracing.tracer()
        if tracer is None or scope["type"] != "http":  # tracing turned off since: pass through
            await self.app(scope, receive, send)
            return
        from opentelemetry.trace import SpanKind, Status, StatusCode

        method = scope.get("method", "")
        with tracer.start_as_current_span(method, kind=SpanKind.SERVER, record_exception=False,
                                          set_status_on_exception=False,
                                          attributes={"http.request.method": method}) as span:
            status: int | None = None

            async def traced_send(message: Message) -> None:
                nonlocal status
                if message["type"] == "http.response.start":
                    status = int(message["status"])
                await send(message)

            try:
                await self.app(scope, receive, traced_send)
            except BaseException as exc:
                tracing.record_error(span, exc)
                raise
            finally:
                route = route_template(scope)  # known once the router has matched
                if route != UNMATCHED:  # else the name stays the method (OpenTelemetry's HTTP rule)
                    span.update_name(f"{method} {route}")
                    span.set_attribute("http.route", route)
                if status is not None:
                    span.set_attribute("http.response.status_code", status)
                    if status >= 500:
                        span.set_status(Status(StatusCode.ERROR))
                # The stage timer (outside this middleware) shares its record through a context
                # variable; "app" and the before/after split are added as the response starts.
                spent = timing._spent.get()
                for stage, seconds in (spent or {}).items():
                    if not stage.startswith("@"):
                        span.set_attribute(f"zeromem.server.{stage.replace('-', '_')}_ms", seconds * 1000)


def install(app: FastAPI) -> None:
    """Add the span middleware when tracing is on; call it before ``timing.install`` so the
    stage timer wraps it (its stages are then readable here)."""
    if tracing.enabled():
        app.add_middleware(ServerSpans)


def fastapi_options() -> dict[str, Any]:
    """``FastAPI(...)`` keyword arguments that turn off FastAPI's own request tracing and
    OpenTelemetry logs where FastAPI has them (0.165+; see the module docstring); FastAPI's
    OpenTelemetry metrics, which carry no paths, stay as FastAPI sets them."""
    if "telemetry" not in inspect.signature(FastAPI.__init__).parameters:
        return {}
    return {"telemetry": {"tracing": False, "logs": False}}
