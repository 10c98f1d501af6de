"""OpenTelemetry spans around the memory operations, free while tracing is off.

``Memory.add``, ``add_many``, ``update``, ``delete``, ``search`` (and ``search_detailed``),
``render_context``, ``index`` and ``reindex`` each open a span (``zeromem.add``,
``zeromem.search``, …) when tracing is on; ``zeromem serve`` adds one span per HTTP request
(interfaces/server/otel.py), the memory spans as its children.

Turning it on: ``zeromem.tracing.enable()`` (optionally with a ``TracerProvider``; without
one the spans go to OpenTelemetry's global provider, e.g. the one ``opentelemetry-instrument``
or your own ``trace.set_tracer_provider`` installs), or ``ZEROMEM_OTEL=1`` in the environment,
read once, at the first traced call. Only the API package (``opentelemetry-api``, the ``otel``
extra) is needed; exporting is the application's choice of SDK.

Off (the default) costs one function call and two global reads per traced method:
OpenTelemetry is not even imported.

Privacy: a span carries numbers and fixed labels only: timings, ``k``, counts of evidence and
written traces, the route, which components were degraded, whether the scope has a user /
an agent. Never trace text, queries, user or agent names, session names or ids. A failed call
sets the span's status to ERROR and records the exception's type only, since zeromem's error
messages may quote input; ``enable(exception_details=True)`` records message and stack too.

A leaf module (ARCHITECTURE.md, layer 0): it imports nothing from zeromem but the other
leaves, and reads the results it describes by attribute name.
"""

from __future__ import annotations

import functools
import inspect
import os
import sys
from collections.abc import Callable, Mapping
from typing import Any, ParamSpec, TypeVar

from .errors import InvalidInput, ModelUnavailable
from .types import SAME_SCOPE

ENVIRONMENT = "ZEROMEM_OTEL"
INSTALL = "pip install 'zeromem[otel]'"
_ON = frozenset({"1", "true", "yes", "on"})
_OFF = frozenset({"", "0", "false", "no", "off"})

P = ParamSpec("P")
R = TypeVar("R")
Attributes = dict[str, Any]  # OpenTelemetry attribute values: str, bool, int, float, sequences of one

# The tracer while tracing is on, else None; `_decided` turns True once enable() / disable() or
# the environment has decided, so the common path (off, decided) is two global reads.
_tracer: Any = None
_decided = False
_details = False


def enable(tracer_provider: Any = None, *, exception_details: bool = False) -> None:
    """Trace zeromem's operations from now on, in this process.

    ``tracer_provider``: an OpenTelemetry ``TracerProvider`` to take the tracer from (default:
    the global one, which may be set later: OpenTelemetry's proxy tracer follows it).
    ``exception_details``: record a failed call's exception message and stack trace on its
    span (they may contain trace text or scope names; by default only the type is recorded).
    Raises ModelUnavailable naming ``pip install 'zeromem[otel]'`` when OpenTelemetry's API
    is not installed.
    """
    global _tracer, _decided, _details
    if not isinstance(exception_details, bool):
        raise InvalidInput(f"exception_details must be True or False, got {exception_details!r}")
    trace = _opentelemetry_trace()
    version = getattr(sys.modules.get("zeromem"), "__version__", None)  # the package root, loaded first
    _tracer = trace.get_tracer("zeromem", version, tracer_provider=tracer_provider)
    _details = exception_details
    _decided = True


def disable() -> None:
    """Stop tracing (spans already open still end); ``ZEROMEM_OTEL`` is not read again."""
    global _tracer, _decided
    _tracer = None
    _decided = True


def enabled() -> bool:
    """Whether zeromem's operations open spans now (reads ``ZEROMEM_OTEL`` if nothing decided yet)."""
    return tracer() is not None


def tracer() -> Any:
    """The OpenTelemetry tracer while tracing is on, else None (the server's spans use it)."""
    if not _decided:
        _from_environment()
    return _tracer


def _from_environment() -> None:
    global _decided
    value = os.environ.get(ENVIRONMENT, "").strip().lower()
    if value in _ON:
        enable()
    elif value in _OFF:
        _decided = True
    else:
        raise InvalidInput(f"${ENVIRONMENT} must be 1 (trace zeromem's operations) or 0, got {value!r}")


def _opentelemetry_trace() -> Any:
    try:
        from opentelemetry import trace
    except ImportError as exc:
        raise ModelUnavailable(f"tracing needs the otel extra (OpenTelemetry's API), which is not installed "
                               f"(missing: {exc.name or 'opentelemetry'}): {INSTALL}") from exc
    return trace


def record_error(span: Any, exc: BaseException) -> None:
    """Mark ``span`` failed by ``exc``: ERROR status and ``error.type``, plus an exception
    event (type only, unless ``enable(exception_details=True)``)."""
    from opentelemetry.trace import Status, StatusCode

    kind = type(exc).__qualname__
    span.set_attribute("error.type", kind)
    if _details:
        span.record_exception(exc, escaped=True)
        span.set_status(Status(StatusCode.ERROR, f"{kind}: {exc}"))
    else:
        span.add_event("exception", {"exception.type": kind, "exception.escaped": True})
        span.set_status(Status(StatusCode.ERROR, kind))


def traced(name: str, describe: Callable[[Any], Attributes] | None = None
           ) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Decorate a ``Memory`` method: while tracing is on, each call runs in a span ``name``
    with the request's attributes (``k``, budget, scope presence) and, on success, what
    ``describe(result)`` says about the result."""
    def decorate(method: Callable[P, R]) -> Callable[P, R]:
        signature: inspect.Signature | None = None

        @functools.wraps(method)
        def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
            nonlocal signature
            current = _tracer if _decided else tracer()
            if current is None:
                return method(*args, **kwargs)
            if signature is None:  # the first traced call, not at import: off costs nothing
                signature = inspect.signature(method)
            attributes = _request_attributes(signature, args, kwargs)
            with current.start_as_current_span(name, attributes=attributes, record_exception=False,
                                               set_status_on_exception=False) as span:
                try:
                    result = method(*args, **kwargs)
                except BaseException as exc:
                    record_error(span, exc)
                    raise
                if describe is not None and span.is_recording():
                    span.set_attributes(describe(result))
                return result
        return wrapper
    return decorate


def _request_attributes(signature: inspect.Signature, args: tuple[Any, ...],
                        kwargs: Mapping[str, Any]) -> Attributes:
    """What a call asked for, without its text: ``k``, the token budget, and whether the
    scope it acts in has a user / an agent (never their names)."""
    try:
        bound = signature.bind(*args, **kwargs)
    except TypeError:
        return {}  # the call itself raises the same TypeError, recorded on the span
    arguments = bound.arguments
    attributes: Attributes = {}
    memory = arguments.get("self")
    own = getattr(memory, "scope", None)
    for part in ("user", "agent"):
        value = arguments.get(part, SAME_SCOPE)
        if value is SAME_SCOPE:
            value = getattr(own, part, None)
        attributes[f"zeromem.scope.has_{part}"] = value is not None
    for parameter in ("k", "budget_tokens", "include_active"):
        if parameter not in signature.parameters:
            continue
        value = arguments.get(parameter, signature.parameters[parameter].default)
        if isinstance(value, (bool, int)):  # not a bad value, which the call refuses
            attributes[f"zeromem.{parameter}"] = value
    return attributes


# -- what a span says about each kind of result (read by attribute name: layer 0) -------------

def describe_write(result: Any) -> Attributes:
    """A write: how many traces it stored or changed (an id, a list of ids, a trace)."""
    count = len(result) if isinstance(result, list) else 1
    return {"zeromem.traces.written": count}


def describe_delete(result: Any) -> Attributes:
    """A delete: how many traces it removed (``DeleteReceipt.traces``)."""
    return {"zeromem.traces.deleted": int(getattr(result, "traces", 0))}


def describe_search(result: Any) -> Attributes:
    """A search (``SearchResult``): evidence count, route, no-answer score, degraded
    components, and the engine's timings in milliseconds."""
    attributes: Attributes = {"zeromem.evidence.count": len(result.evidence),
                              "zeromem.no_answer_score": float(result.no_answer_score)}
    explain = result.explain
    attributes["zeromem.route"] = str(explain.route)
    attributes["zeromem.route.rho"] = float(explain.route_weight)
    attributes["zeromem.query.answer_type"] = str(explain.query.answer_type)  # a fixed category, not the query
    attributes.update(_degraded(result.degraded))
    for stage, milliseconds in explain.timings.items():
        attributes[f"zeromem.timing.{stage}"] = float(milliseconds)
    return attributes


def describe_render(result: Any) -> Attributes:
    """A rendered context (``RenderedContext``): evidence shown, tokens, active entries, degraded."""
    return {"zeromem.evidence.count": len(result.evidence), "zeromem.tokens": int(result.tokens),
            "zeromem.active.count": len(result.active), **_degraded(result.degraded)}


def describe_refresh(result: Any) -> Attributes:
    """An ``index`` / ``reindex`` (``RefreshReport``): sessions, units, texts encoded, seconds."""
    attributes: Attributes = {"zeromem.index.sessions": int(result.sessions),
                              "zeromem.index.units": int(result.units),
                              "zeromem.index.encoded_texts": int(result.encoded_texts),
                              "zeromem.index.ner_texts": int(result.ner_texts),
                              "zeromem.index.seconds": float(result.seconds)}
    for encoder, seconds in result.encoder_seconds.items():
        attributes[f"zeromem.index.encoder_seconds.{encoder}"] = float(seconds)
    return attributes


def _degraded(notes: Any) -> Attributes:
    """``degraded`` as a flag and the failed components' names ("embedder: <why>; skipped: …"
    gives "embedder"; the why may quote paths, so it stays out)."""
    components = sorted({str(note).split(":", 1)[0].strip() for note in notes})
    attributes: Attributes = {"zeromem.degraded": bool(components)}
    if components:
        attributes["zeromem.degraded.components"] = components
    return attributes
